/**
 * A task bound to no client (created over HTTP) has its call routed to a computer that registered the command. The
 * orchestrator is killed (-9) while that computer holds the call unanswered; after the restart another computer
 * offering the same command connects first. Guards against: the call being handed to the second computer (it would
 * run a command the first may already have run — a duplicate execution visible to clients); the call being lost
 * or re-issued under a new call_id; a call waiting forever for a computer that never comes back.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jobPrompt, jobScript, MODEL } from './support/model.js';
import { eventually, faultConfig, sleep, startServer, taskDetail, type Server } from './support/server.js';
import { SimClient } from './support/sim-client.js';

/** How long the second computer is watched for a call it must not get. */
const QUIET_MS = 1500;
let dir: string;
let fake: FakeOllama;
let server: Server | undefined;
const clients: SimClient[] = [];

beforeAll(async () => {
  fake = await startFakeOllama({ installed: [MODEL] });
  fake.script(MODEL, jobScript());
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.kill();
  await server?.kill9();
  server = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  await fake.close();
});

async function start(graceMs: number): Promise<Server> {
  server = await startServer({
    db: path.join(dir, 'ccagent.db'),
    config: faultConfig({ reconnectGraceMs: graceMs, disconnectPolicy: 'fail' }),
    ollamaUrl: fake.url,
  });
  return server;
}

function client(id: string, autoAnswer: boolean): SimClient {
  const c = new SimClient(id, { autoAnswer });
  clients.push(c);
  return c;
}

/** A task bound to no client, over HTTP; resolves with its id. */
async function createUnbound(s: Server, tag: string, steps: number): Promise<string> {
  const res = await s.http('/api/tasks', {
    method: 'POST',
    json: { task_kind: 'general_agent', prompt: jobPrompt(tag, steps) },
  });
  expect(res.status).toBe(201);
  const { task } = (await res.json()) as { task: { id: string; client_id: string | null } };
  expect(task.client_id).toBeNull();
  return task.id;
}

/**
 * Computer A gets the task's first call and holds it; B (answering everything at once) connects too; kill -9. Resolves
 * with the call A holds.
 */
async function callHeldByAThenKill(
  graceMs: number,
  tag: string,
  steps: number,
): Promise<{ taskId: string; callId: string; a: SimClient; b: SimClient }> {
  dir = mkdtempSync(path.join(tmpdir(), 'resilience-unbound-'));
  const s1 = await start(graceMs);
  const a = client('pc-a', false);
  await a.connect(s1.url);
  const taskId = await createUnbound(s1, tag, steps);
  const call = await a.waitFor('command_call', { task_id: taskId });
  const b = client('pc-b', true);
  await b.connect(s1.url);
  await s1.kill9();
  await Promise.all([a.whenClosed(), b.whenClosed()]);
  return { taskId, callId: String(call.call_id), a, b };
}

describe('a call of a task bound to no client, across kill -9', () => {
  it('goes after the restart only to the computer it was sent to, under the same call_id, even when another computer offering the command connects first', async () => {
    const { taskId, callId, a, b } = await callHeldByAThenKill(5000, 'unbound', 1);
    const s2 = await start(5000);
    await b.connect(s2.url); // B is back first
    await sleep(QUIET_MS);
    expect(b.callsSeen.has(callId)).toBe(false);
    expect(b.executions).toEqual([]);
    const from = a.messages.length;
    await a.connect(s2.url);
    const again = await a.next((m) => m.type === 'command_call' && m.call_id === callId, 10_000, from);
    expect(again.task_id).toBe(taskId);
    a.answer(again);
    await a.next((m) => m.type === 'command_ack' && m.call_id === callId, 10_000, from);
    const d = await eventually(
      async () => {
        const x = await taskDetail(s2, taskId);
        return x.task.status === 'completed' ? x : undefined;
      },
      15_000,
      'the task completes',
    );
    expect(d.task).toMatchObject({ client_id: null, result: { message: 'finished unbound' } });
    expect(d.command_calls.map((x) => [x.call_id, x.status])).toEqual([[callId, 'succeeded']]);
    // Executed once, on A; B never saw it.
    expect(a.executions.map((e) => e.callId)).toEqual([callId]);
    expect(b.callsSeen.has(callId)).toBe(false);
    expect(b.executions).toEqual([]);
    expect(s2.alive()).toBe(true);
  });

  it('fails with client_disconnected after the grace period when that computer never returns, is never handed to the other one, and the task goes on with a new call', async () => {
    const GRACE_MS = 1500;
    const { taskId, callId, b } = await callHeldByAThenKill(GRACE_MS, 'orphan', 2);
    const s2 = await start(GRACE_MS);
    await b.connect(s2.url); // A never comes back
    const d = await eventually(
      async () => {
        const x = await taskDetail(s2, taskId);
        return x.task.status === 'completed' ? x : undefined;
      },
      GRACE_MS + 15_000,
      'the task ends on its own',
    );
    const first = d.command_calls.find((x) => x.call_id === callId);
    expect(first).toMatchObject({
      status: 'failed',
      outcome: { ok: false, error: { code: 'client_disconnected' } },
    });
    expect(first?.outcome?.error?.message).toContain('pc-a');
    expect(first?.outcome?.error?.message).toContain('bound to no client');
    // The strategy's next call (a new call_id) may go to B; the one held by A never did.
    expect(b.callsSeen.has(callId)).toBe(false);
    const others = d.command_calls.filter((x) => x.call_id !== callId);
    expect(others.map((x) => x.status)).toEqual(['succeeded']);
    expect(b.executions.map((e) => e.callId)).toEqual(others.map((x) => x.call_id));
    expect(d.task.result?.message).toBe('finished orphan');
  });
});
