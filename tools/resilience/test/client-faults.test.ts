/**
 * A CC computer dies in the middle of a command (socket aborted, no close handshake) and comes back within the
 * reconnect grace period, or after it. Guards against: a pending call lost or re-issued under a new call_id; a
 * command executed twice; a task that hangs forever on a client that never returns; a late result for a call the
 * server already closed being accepted.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jobPrompt, jobScript, MODEL } from './support/model.js';
import { eventually, faultConfig, sleep, startServer, taskDetail, type Server } from './support/server.js';
import { SimClient } from './support/sim-client.js';

const GRACE_MS = 1500;
let dir: string;
let fake: FakeOllama;
let server: Server | undefined;

beforeAll(async () => {
  fake = await startFakeOllama({ installed: [MODEL] });
  fake.script(MODEL, jobScript());
});
afterEach(async () => {
  await server?.kill9();
  server = undefined;
  if (dir) rmSync(dir, { recursive: true, force: true });
});
afterAll(async () => {
  await fake.close();
});

async function start(): Promise<Server> {
  dir = mkdtempSync(path.join(tmpdir(), 'resilience-client-'));
  server = await startServer({
    db: path.join(dir, 'ccagent.db'),
    config: faultConfig({ reconnectGraceMs: GRACE_MS, disconnectPolicy: 'fail' }),
    ollamaUrl: fake.url,
  });
  return server;
}

describe('a client dies mid-command', () => {
  it('reconnecting within the grace period gets the same call_id again, runs it once, and the task completes', async () => {
    const s = await start();
    const c = new SimClient('turtle-1', { autoAnswer: false });
    await c.connect(s.url);
    c.createTask('r1', jobPrompt('grace', 2));
    const taskId = String((await c.waitFor('task_created')).task_id);
    const call = await c.waitFor('command_call', { task_id: taskId });
    c.kill(); // dies with the command in hand, before answering
    await c.whenClosed();
    await sleep(GRACE_MS / 3);
    const from = c.messages.length;
    await c.connect(s.url);
    const again = await c.next((m) => m.type === 'command_call' && m.task_id === taskId, 5000, from);
    expect(again.call_id).toBe(call.call_id);
    expect(again.args).toEqual(call.args);
    c.answer(again);
    await c.waitFor('command_ack', { call_id: call.call_id });
    const second = await c.next(
      (m) => m.type === 'command_call' && m.task_id === taskId && m.call_id !== call.call_id,
    );
    c.answer(second);
    await c.waitFor('task_completed', { task_id: taskId });
    const d = await taskDetail(s, taskId);
    expect(d.task).toMatchObject({ status: 'completed', result: { message: 'finished grace' } });
    // Every delivery counts: the re-send on reconnect is the call's second dispatch.
    expect(d.command_calls.map((x) => [x.call_id, x.status, x.dispatch_count])).toEqual([
      [call.call_id, 'succeeded', 2],
      [second.call_id, 'succeeded', 1],
    ]);
    expect(c.executions.map((e) => e.callId)).toEqual([call.call_id, second.call_id]);
  });

  it('a result sent just before the crash is not applied twice: the repeat after reconnecting is acknowledged', async () => {
    const s = await start();
    const c = new SimClient('turtle-2', { autoAnswer: false });
    await c.connect(s.url);
    c.createTask('r1', jobPrompt('ack', 1));
    const taskId = String((await c.waitFor('task_created')).task_id);
    const call = await c.waitFor('command_call', { task_id: taskId });
    c.answer(call); // result on the wire…
    c.kill(); // …and the computer dies before the ack can arrive
    await c.whenClosed();
    const from = c.messages.length;
    await c.connect(s.url); // re-sends the unacknowledged result
    await c.next((m) => m.type === 'command_ack' && m.call_id === call.call_id, 5000, from);
    // Whether the task ended while it was away (replayed after welcome) or after it came back (live), the returning
    // client learns the outcome without subscribing.
    await eventually(async () => (await taskDetail(s, taskId)).task.status === 'completed', 10_000);
    await c.next((m) => m.type === 'task_completed' && m.task_id === taskId, 5000, from);
    const d = await taskDetail(s, taskId);
    expect(d.command_calls).toEqual([
      expect.objectContaining({ call_id: call.call_id, status: 'succeeded' }),
    ]);
    expect(c.executions).toHaveLength(1);
  });

  it('staying away past the grace period fails the call with client_disconnected; the task ends, never hangs', async () => {
    const s = await start();
    const c = new SimClient('turtle-3', { autoAnswer: false });
    await c.connect(s.url);
    c.createTask('r1', jobPrompt('gone', 2));
    const taskId = String((await c.waitFor('task_created')).task_id);
    const call = await c.waitFor('command_call', { task_id: taskId });
    c.kill();
    await c.whenClosed();
    // The task must reach an end on its own, bounded by grace + a model step.
    const d = await eventually(
      async () => {
        const x = await taskDetail(s, taskId);
        return ['completed', 'failed'].includes(x.task.status) ? x : undefined;
      },
      GRACE_MS + 10_000,
      'the task ends after the grace period',
    );
    const first = d.command_calls.find((x) => x.call_id === call.call_id);
    expect(first).toMatchObject({
      status: 'failed',
      outcome: { ok: false, error: { code: 'client_disconnected' } },
    });
    expect(first?.outcome?.error?.message).toContain('turtle-3');
    // The computer comes back late: the closed call is not sent again and its late result is refused.
    const from = c.messages.length;
    await c.connect(s.url);
    c.answer(call);
    const refused = await c.next((m) => m.type === 'error' && m.call_id === call.call_id, 5000, from);
    expect(refused.code).toBe('unknown_call');
    expect(c.messages.slice(from).some((m) => m.type === 'command_call' && m.call_id === call.call_id)).toBe(
      false,
    );
    expect((await taskDetail(s, taskId)).command_calls.find((x) => x.call_id === call.call_id)?.status).toBe(
      'failed',
    );
    expect(s.alive()).toBe(true);
  });

  it('many clients dying and returning at random leave every task completed with each call run once', async () => {
    const s = await start();
    const clients = Array.from({ length: 5 }, (_, i) => new SimClient(`pc-${i}`));
    await Promise.all(clients.map((c) => c.connect(s.url)));
    for (const c of clients)
      for (let t = 0; t < 2; t++) c.createTask(`r${t}`, jobPrompt(`${c.clientId}-${t}`, 5));
    // Each client drops its socket twice at some point and reconnects within the grace period.
    await Promise.all(
      clients.map(async (c, i) => {
        for (let k = 0; k < 2; k++) {
          await sleep(40 + ((i * 37 + k * 53) % 120));
          c.kill();
          await c.whenClosed();
          await sleep(50);
          await c.connect(s.url);
        }
      }),
    );
    await eventually(
      async () => {
        const body = (await (await s.http('/api/tasks?limit=100')).json()) as {
          tasks: Array<{ status: string }>;
        };
        return body.tasks.length === 10 && body.tasks.every((t) => t.status === 'completed');
      },
      20_000,
      'all tasks completed',
    );
    for (const c of clients) {
      const ids = c.executions.map((e) => e.callId);
      expect(new Set(ids).size).toBe(ids.length);
      expect(ids).toHaveLength(10);
    }
  });
});
