/**
 * Calls of a task bound to no client: the client chosen for a call is recorded in the database before the call is
 * sent, and after a restart the call goes to that client only. Real sockets, a real SQLite file, the in-process
 * server restarted on the same file (the kill -9 form is in tools/resilience/test/unbound-call-restart.test.ts).
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Decision, JsonValue, TaskStrategy } from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';
import Database from 'better-sqlite3';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, everyKind, results, startHarness, strategyOf, type Harness } from './support/harness.js';
import { TestClient, type Msg } from './support/ws-test-client.js';

/** One `fs_write`, then complete with its outcome. */
const oneCall = everyKind(
  strategyOf((_task, history): Decision => {
    const r = results(history);
    if (r.length === 0) return { type: 'tool_call', command: 'fs_write', args: { path: '/a', content: 'x' } };
    return { type: 'complete', result: r[0]?.outcome as unknown as JsonValue };
  }),
);

let dir: string;
let servers: Harness[] = [];
const clients: TestClient[] = [];
let locker: Database.Database | undefined;

afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  if (locker?.inTransaction) locker.exec('ROLLBACK');
  locker?.close();
  locker = undefined;
  for (const s of servers.splice(0)) await s.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function start(opts: Parameters<typeof startHarness>[0] = {}): Promise<Harness> {
  const h = await startHarness({ dir, strategies: oneCall, ...opts });
  servers.push(h);
  return h;
}

async function stop(h: Harness): Promise<void> {
  servers = servers.filter((s) => s !== h);
  await h.close();
}

async function connect(h: Harness, clientId: string): Promise<TestClient> {
  const c = await TestClient.connect(h.url, clientId);
  clients.push(c);
  return c;
}

async function createUnbound(h: Harness): Promise<string> {
  const res = await h.http('/api/tasks', { method: 'POST', json: { task_kind: 'code_job', prompt: 'p' } });
  expect(res.status).toBe(201);
  const { task } = (await res.json()) as { task: { id: string; client_id: string | null } };
  expect(task.client_id).toBeNull();
  return task.id;
}

/** The client recorded for a call, as it is on disk (read through a read-only store of its own, like the CLI). */
async function sentTo(h: Harness, callId: string): Promise<string | null> {
  const reader = openSqliteStore({ path: h.dbPath, readonly: true });
  try {
    const call = await reader.getCommandCall(callId);
    if (!call) throw new Error(`no call ${callId} on disk`);
    return call.sentTo ?? null;
  } finally {
    await reader.close();
  }
}

function answer(c: TestClient, call: Msg): void {
  c.send({ type: 'command_result', task_id: call.task_id, call_id: call.call_id, ok: true, result: 'w' });
}

const callsTo = (c: TestClient, callId: unknown): Msg[] =>
  c.messages.filter((m) => m.type === 'command_call' && m.call_id === callId);

const sleep = (ms: number): Promise<void> => new Promise((r) => setTimeout(r, ms));

describe('calls of a task bound to no client', () => {
  it('records the chosen client before the call reaches it, keeps it when the call closes, and records nothing for a bound task (guards against a routing choice that lives only in memory, and an extra write on the bound hot path)', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cco-unbound-'));
    const h = await start();
    const a = await connect(h, 'pc-a');
    const taskId = await createUnbound(h);
    const call = await a.waitFor('command_call', { task_id: taskId });
    // Write-ahead: by the time the frame is here, the binding is on disk.
    expect(await sentTo(h, String(call.call_id))).toBe('pc-a');
    answer(a, call);
    await a.waitFor('command_ack', { call_id: call.call_id });
    const detail = (await (await h.http(`/api/tasks/${taskId}`)).json()) as { task: { status: string } };
    expect(['running', 'completed']).toContain(detail.task.status);
    expect(await sentTo(h, String(call.call_id))).toBe('pc-a'); // the closing commit kept it

    a.send({
      type: 'create_task',
      request_id: 'bound',
      task_kind: 'code_job',
      client_id: 'pc-a',
      prompt: 'p',
      allowed_commands: [],
    });
    const bound = String((await a.waitFor('task_created', { request_id: 'bound' })).task_id);
    const boundCall = await a.waitFor('command_call', { task_id: bound });
    expect(await sentTo(h, String(boundCall.call_id))).toBeNull();
  });

  it('after a restart goes only to the client it was sent to: another client connecting first gets nothing and may not answer it, the first gets the same call_id, and only it may repeat its result after another restart (guards against a duplicate execution on a second computer)', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cco-unbound-'));
    const h1 = await start();
    const a1 = await connect(h1, 'pc-a');
    const taskId = await createUnbound(h1);
    const call = await a1.waitFor('command_call', { task_id: taskId });
    await stop(h1); // A never answered

    const h2 = await start();
    const b = await connect(h2, 'pc-b');
    await sleep(300);
    expect(callsTo(b, call.call_id)).toEqual([]);
    answer(b, call); // a forged answer from the other computer
    expect(await b.waitFor('error', { call_id: call.call_id })).toMatchObject({ code: 'forbidden' });
    const a2 = await connect(h2, 'pc-a');
    const again = await a2.waitFor('command_call', { call_id: call.call_id });
    expect(again).toMatchObject({ task_id: taskId, args: call.args });
    answer(a2, again);
    await a2.waitFor('command_ack', { call_id: call.call_id });
    const done = await eventually(async () => {
      const d = (await (await h2.http(`/api/tasks/${taskId}`)).json()) as {
        task: { status: string; result?: unknown };
      };
      return d.task.status === 'completed' ? d : undefined;
    });
    expect(done.task.result).toEqual({ ok: true, result: 'w' });
    expect(callsTo(b, call.call_id)).toEqual([]);
    await stop(h2);

    // The ack of A's result was lost, say: after yet another restart A's repeat is acknowledged again, B's is not.
    const h3 = await start();
    const b3 = await connect(h3, 'pc-b');
    answer(b3, call);
    expect(await b3.waitFor('error', { call_id: call.call_id })).toMatchObject({
      code: 'forbidden',
      message: expect.stringContaining('sent to another client'),
    });
    expect(b3.messages.some((m) => m.type === 'command_ack')).toBe(false);
    const a3 = await connect(h3, 'pc-a');
    answer(a3, call);
    await a3.waitFor('command_ack', { call_id: call.call_id });
  });

  it('under disconnectPolicy wait stays with its client past the grace period after a restart: another client never gets it, and the first gets it whenever it returns (guards against falling back to any client once the grace is over)', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cco-unbound-'));
    const config = { server: { reconnectGraceMs: 200, disconnectPolicy: 'wait' } };
    const h1 = await start({ config });
    const a1 = await connect(h1, 'pc-a');
    const taskId = await createUnbound(h1);
    const call = await a1.waitFor('command_call', { task_id: taskId });
    await stop(h1);

    const h2 = await start({ config });
    const b = await connect(h2, 'pc-b');
    await sleep(600); // the startup grace (200 ms) is over
    expect(callsTo(b, call.call_id)).toEqual([]);
    const waiting = (await (await h2.http(`/api/tasks/${taskId}`)).json()) as { task: { status: string } };
    expect(waiting.task.status).toBe('waiting_for_command');
    const a2 = await connect(h2, 'pc-a');
    const again = await a2.waitFor('command_call', { call_id: call.call_id });
    answer(a2, again);
    await a2.waitFor('command_ack', { call_id: call.call_id });
    expect(callsTo(b, call.call_id)).toEqual([]);
  });

  it('offers, in a step taken after a restart before any computer is back, the commands of the computers known from before (guards against a step that sees no tools and makes the model fail its calls)', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cco-unbound-'));
    const seen: string[][] = [];
    let hold = true;
    const probe: TaskStrategy = {
      decide: (_task, _history, ctx) => {
        seen.push(ctx.availableCommands().map((c) => c.name));
        if (!hold) return Promise.resolve({ type: 'complete', result: null });
        // The first server stops in the middle of this step.
        return new Promise((_resolve, reject) =>
          ctx.signal.addEventListener('abort', () => reject(ctx.signal.reason as Error)),
        );
      },
    };
    const h1 = await start({ strategies: everyKind(probe) });
    await connect(h1, 'pc-a');
    const taskId = await createUnbound(h1);
    await eventually(async () => seen.length === 1);
    expect(seen[0]).toContain('fs_write');
    await stop(h1);

    hold = false;
    const h2 = await start({ strategies: everyKind(probe) }); // nobody connects
    const done = await eventually(async () => {
      const d = (await (await h2.http(`/api/tasks/${taskId}`)).json()) as { task: { status: string } };
      return d.task.status === 'completed' ? d : undefined;
    });
    expect(done.task.status).toBe('completed');
    expect(seen).toHaveLength(2);
    expect(seen[1]).toEqual(seen[0]);
  });

  it('is not sent while its client cannot be recorded (database locked by another process), and is sent once the lock is gone (guards against a call on the wire without its record)', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cco-unbound-'));
    const dbPath = path.join(dir, 'ccagent.db');
    // A short lock wait, so the refused write and its retry happen within the test.
    const store = openSqliteStore({ path: dbPath, busyTimeoutMs: 150 });
    const h = await start({ store, config: { server: { reconnectGraceMs: 20_000 } } });
    const taskId = await createUnbound(h); // no client yet: the call waits (startup grace)
    const callId = await eventually(async () => {
      const reader = openSqliteStore({ path: dbPath, readonly: true });
      const [call] = await reader.listCommandCalls({ taskId });
      await reader.close();
      return call?.callId;
    });
    locker = new Database(dbPath);
    locker.exec('BEGIN IMMEDIATE');
    locker.exec('CREATE TABLE IF NOT EXISTS probe (x INTEGER); INSERT INTO probe VALUES (1)');
    const a = await connect(h, 'pc-a');
    await sleep(700); // several refused attempts (150 ms each, with backoff)
    expect(callsTo(a, callId)).toEqual([]);
    expect(await sentTo(h, callId)).toBeNull();
    locker.exec('ROLLBACK');
    const call = await a.waitFor('command_call', { call_id: callId }, 5000);
    expect(await sentTo(h, callId)).toBe('pc-a');
    answer(a, call);
    await a.waitFor('command_ack', { call_id: callId });
    expect(callsTo(a, callId)).toHaveLength(1);
  });
});
