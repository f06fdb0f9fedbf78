/**
 * Durable schedules through the built `cc-orchestrator serve` (a child process, a temp SQLite file, real HTTP): a
 * schedule added over the API fires on its own, keeps firing after the process is killed with SIGKILL and started
 * again on the same file, and never fires one occurrence twice — each recorded firing is unique per (schedule, due
 * time) and made exactly one task. Also: the API refuses a bad cron expression and an unknown kind, changing nothing.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serve, type Served } from './support/spawn.js';

type Rec = Record<string, unknown>;
let dir: string;
const servers: Served[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'ccagent-schedules-'));
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.kill9().catch(() => {});
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<Served> {
  // No model server: the created tasks fail at their first model call, which is fine — the firings are the subject.
  const s = await serve(['--port', '0', '--db', path.join(dir, 'ccagent.db'), '--log-level', 'warn']);
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

describe('schedules survive kill -9', () => {
  it('fires once per occurrence across a SIGKILL and a restart (guards against double firing and lost schedules)', async () => {
    let s = await start();
    const bad = await api(s, 'POST', '/api/schedules', {
      cron: '61 * * * *',
      task: { task_kind: 'chat', prompt: 'x' },
    });
    expect(bad.status).toBe(400);
    const unknownKind = await api(s, 'POST', '/api/schedules', {
      every_ms: 1000,
      task: { task_kind: 'nope', prompt: 'x' },
    });
    expect(unknownKind.status).toBe(400);
    expect(((await api(s, 'GET', '/api/schedules')).json['schedules'] as unknown[]).length).toBe(0);

    const added = await api(s, 'POST', '/api/schedules', {
      id: 'pulse',
      name: 'every second',
      every_ms: 1000,
      missed: 'run_once',
      task: { task_kind: 'chat', prompt: 'tick' },
    });
    expect(added.status).toBe(201);
    expect(added.json['schedule']).toMatchObject({
      id: 'pulse',
      every_ms: 1000,
      missed: 'run_once',
      paused: false,
    });
    await sleep(3500);
    await s.kill9();
    // two or three occurrences pass while no server runs; each is seconds late, inside the 60 s grace, so it is not
    // missed (the policy is for longer downtimes): the restarted server fires each of them once, late, in order
    await sleep(2500);
    s = await start();
    await sleep(3000);
    const list = await api(s, 'GET', '/api/schedules');
    const firings = (list.json['firings'] as Rec[]).filter((f) => f['schedule_id'] === 'pulse');
    const dues = firings.map((f) => f['due_at'] as number);
    expect(new Set(dues).size).toBe(dues.length);
    // every occurrence from the first to the last, each once: none dropped across the kill, none twice
    expect(firings.length).toBeGreaterThanOrEqual(3); // fewer on a loaded machine: timers run late
    const sorted = [...dues].sort((a, b) => a - b);
    expect(sorted).toEqual(sorted.map((_, i) => (sorted[0] as number) + i * 1000));
    const done = firings.filter((f) => f['status'] === 'done');
    expect(done.length).toBeGreaterThanOrEqual(firings.length - 1); // the last may still be in flight
    const tasks = (await api(s, 'GET', '/api/tasks?kind=chat&limit=100')).json['tasks'] as Rec[];
    const ids = new Set(tasks.map((t) => t['id']));
    for (const f of done) expect(ids.has(f['task_id'])).toBe(true);
    expect(new Set(done.map((f) => f['task_id'])).size).toBe(done.length);
    expect(tasks.length).toBeLessThanOrEqual(firings.length);
    // the schedule itself survived the kill
    expect((list.json['schedules'] as Rec[]).map((x) => x['id'])).toEqual(['pulse']);

    const paused = await api(s, 'POST', '/api/schedules/pulse/pause', {});
    expect(paused.json['schedule']).toMatchObject({ paused: true });
    const removed = await api(s, 'POST', '/api/schedules/pulse/remove', {});
    expect(removed.json).toEqual({ removed: 'pulse' });
    expect((await api(s, 'POST', '/api/schedules/pulse/remove', {})).status).toBe(404);
  }, 60_000);
});
