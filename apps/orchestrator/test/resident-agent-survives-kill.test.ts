/**
 * A resident agent woken by a schedule, across kill -9, with its hourly budget enforced: the built `cc-orchestrator
 * serve` (child process, temp SQLite file) runs a `resident_agent` task (the native loop with the `wait` tool) whose
 * model — the testkit's fake Ollama, scripted to answer every wake with `wait` — is woken by an event from a 1 s
 * schedule. With `periodBudgets.hour.maxSteps` 3 it makes three model calls in the hour and then sleeps until the
 * hour ends, however many events arrive; killed with SIGKILL and started again it still does (the usage is on disk),
 * and the schedule goes on posting events to it, each firing once.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serve, type Served } from './support/spawn.js';

type Rec = Record<string, unknown>;
const HOUR = 3_600_000;
let dir: string;
let fake: FakeOllama;
const servers: Served[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ccagent-resident-'));
  fake = await startFakeOllama({ installed: ['qwen3:8b'] });
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.kill9().catch(() => {});
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<Served> {
  const config = path.join(dir, 'ccagent.json');
  writeFileSync(
    config,
    JSON.stringify({ taskKinds: { resident_agent: { periodBudgets: { hour: { maxSteps: 3 } } } } }),
  );
  const s = await serve([
    '--port',
    '0',
    '--db',
    path.join(dir, 'ccagent.db'),
    '--ollama-url',
    fake.url,
    '--config',
    config,
    '--log-level',
    'warn',
  ]);
  servers.push(s);
  return s;
}

async function api(
  s: Served,
  method: string,
  p: string,
  body?: unknown,
): Promise<{ status: number; json: Rec }> {
  const r = await fetch(`${s.url}${p}`, {
    method,
    headers: { 'content-type': 'application/json' },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
  return { status: r.status, json: (await r.json()) as Rec };
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** The task's detail once `ok` holds (polled; bounded: a loaded machine can hold a 1 s schedule back by seconds). */
async function until(s: Served, id: string, ok: (d: Rec) => boolean, ms = 30_000): Promise<Rec> {
  const end = Date.now() + ms;
  for (;;) {
    const d = (await api(s, 'GET', `/api/tasks/${id}`)).json;
    if (ok(d) || Date.now() > end) return d;
    await sleep(200);
  }
}
const events = (d: Rec) => (d['history'] as Rec[]).filter((h) => h['type'] === 'event');
const slept = (d: Rec) => (d['steps'] as Rec[]).some((x) => x['kind'] === 'period_budget');

describe('a resident agent woken by a schedule', () => {
  it('keeps to its hourly step budget across kill -9 while the schedule keeps posting events (guards against a restart resetting the budget, and an event flood spending it)', async () => {
    fake.script('qwen3:8b', () => ({
      toolCalls: [{ name: 'wait', arguments: { seconds: 86_400, reason: 'events' } }],
    }));
    let s = await start();
    const created = await api(s, 'POST', '/api/tasks', {
      task_kind: 'resident_agent',
      prompt: 'Watch the farm; harvest when an event says it is ripe.',
      request_id: 'farm-watcher',
    });
    expect(created.status).toBe(201);
    const id = String((created.json['task'] as Rec)['id']);
    await fake.waitForRequests(1, 10_000);
    const added = await api(s, 'POST', '/api/schedules', {
      id: 'farm-tick',
      every_ms: 1000,
      missed: 'skip',
      event: { task_id: id, name: 'tick', data: { zone: 'wheat' } },
    });
    expect(added.status).toBe(201);
    await fake.waitForRequests(3, 20_000);
    const hourOf = (t: number) => Math.floor(t / HOUR);
    const startHour = hourOf(Date.now());
    // events go on arriving; the fourth step is not a model call but a sleep until the hour ends
    let detail = await until(s, id, (d) => slept(d) && events(d).length >= 4);
    expect(slept(detail)).toBe(true);
    expect(events(detail).length).toBeGreaterThanOrEqual(4);
    expect((detail['task'] as Rec)['status']).toBe('running');
    const before = events(detail).length;

    await s.kill9();
    s = await start();
    // the schedule goes on posting into the sleeping agent after the restart
    detail = await until(s, id, (d) => events(d).length >= before + 2);
    expect(events(detail).length).toBeGreaterThanOrEqual(before + 2);
    const firings = events(detail).map((e) => (e['data'] as Rec)['schedule_firing']);
    expect(new Set(firings).size).toBe(firings.length); // each firing posted once
    expect((detail['task'] as Rec)['status']).toBe('running');
    if (hourOf(Date.now()) === startHour) {
      // still three model calls in this hour: neither the events nor the restart reset the budget
      expect(fake.chatRequests('qwen3:8b')).toHaveLength(3);
    }
  }, 60_000);
});
