import type { Decision } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { everyKind, eventually, results, strategyOf, writeThenRun } from './support/harness.js';
import { useHarness } from './support/session.js';
import { type TestClient, type Msg } from './support/ws-test-client.js';

const t = useHarness();

const connect = t.connect;

const createTask = (
  c: TestClient,
  clientId: string,
  requestId = 'req-1',
  kind = 'code_job',
): Promise<string> => t.createTask(c, clientId, { requestId, kind, prompt: 'write and run hello' });

async function taskDetail(taskId: string): Promise<{
  task: { status: string; result?: unknown };
  history: Array<Record<string, unknown>>;
  command_calls: Array<Record<string, unknown>>;
}> {
  const res = await t.h.http(`/api/tasks/${taskId}`);
  expect(res.status).toBe(200);
  return (await res.json()) as never;
}

function answer(c: TestClient, call: Msg, result: unknown = { ok: 1 }): void {
  c.send({ type: 'command_result', task_id: call.task_id, call_id: call.call_id, ok: true, result });
}

describe('command routing and results', () => {
  it('runs a whole task over the socket: created, calls answered and acked, progress, completed', async () => {
    await t.start({ strategies: everyKind(writeThenRun) });
    const c = await connect('pc-1');
    const taskId = await createTask(c, 'pc-1');
    const first = await c.waitFor('command_call', { command: 'fs_write' });
    expect(first).toMatchObject({ task_id: taskId, args: { path: '/hello.lua', content: 'print("hi")' } });
    expect(typeof first.timeout_ms).toBe('number');
    answer(c, first, { bytes: 11 });
    expect(await c.waitFor('command_ack', { call_id: first.call_id })).toMatchObject({ task_id: taskId });
    const second = await c.waitFor('command_call', { command: 'run_program' });
    answer(c, second, { output: 'hi' });
    const done = await c.waitFor('task_completed', { task_id: taskId });
    expect(done.result).toEqual({
      outcomes: [
        { ok: true, result: { bytes: 11 } },
        { ok: true, result: { output: 'hi' } },
      ],
    });
    const updates = c.messages.filter((m) => m.type === 'task_update' && m.task_id === taskId);
    expect(updates.map((u) => u.status)).toEqual(
      expect.arrayContaining(['running', 'waiting_for_command', 'completed']),
    );
    expect(updates.some((u) => u.message === 'writing /hello.lua' && u.progress === 0.25)).toBe(true);
    // task_created comes before any event of the task.
    const idx = (pred: (m: Msg) => boolean) => c.messages.findIndex(pred);
    expect(idx((m) => m.type === 'task_created')).toBeLessThan(idx((m) => m.type === 'task_update'));
    const d = await taskDetail(taskId);
    expect(d.task.status).toBe('completed');
    expect(d.command_calls.map((x) => x.status)).toEqual(['succeeded', 'succeeded']);
  });

  it('a repeated create_task request_id returns the same task instead of a second one', async () => {
    const h = await t.start({ strategies: everyKind(writeThenRun) });
    const c = await connect('pc-1');
    const a = await createTask(c, 'pc-1', 'same');
    c.send({
      type: 'create_task',
      request_id: 'same',
      task_kind: 'code_job',
      client_id: 'pc-1',
      prompt: 'x',
      allowed_commands: [],
    });
    await eventually(async () => c.messages.filter((m) => m.type === 'task_created').length === 2);
    const both = c.messages.filter((m) => m.type === 'task_created');
    expect(both[1]?.task_id).toBe(a);
    const list = (await (await h.http('/api/tasks')).json()) as { total: number };
    expect(list.total).toBe(1);
  });

  it('routes a task bound to a client only to that client', async () => {
    await t.start({
      strategies: everyKind(writeThenRun),
      config: { server: { crossClientAccess: true } },
    });
    const a = await connect('turtle-a');
    const b = await connect('turtle-b');
    const taskId = await createTask(a, 'turtle-b');
    const call = await b.waitFor('command_call', { task_id: taskId });
    expect(a.messages.some((m) => m.type === 'command_call')).toBe(false);
    answer(b, call);
    await b.waitFor('command_ack', { call_id: call.call_id });
  });

  it('routes a task bound to no client to a connected client that registered the command', async () => {
    const h = await t.start({ strategies: everyKind(writeThenRun) });
    const plain = await connect('no-fs', { commands: [{ name: 'other' }] });
    const fs = await connect('has-fs');
    const res = await h.http('/api/tasks', { method: 'POST', json: { task_kind: 'code_job', prompt: 'p' } });
    expect(res.status).toBe(201);
    const { task } = (await res.json()) as { task: { id: string; client_id: null } };
    expect(task.client_id).toBeNull();
    const call = await fs.waitFor('command_call', { task_id: task.id });
    expect(call.command).toBe('fs_write');
    expect(plain.messages.some((m) => m.type === 'command_call')).toBe(false);
  });

  it('checks args against the command schema before sending; the call fails with invalid_args, nothing is sent', async () => {
    const bad = strategyOf((_t, history): Decision => {
      const r = results(history);
      if (r.length === 0) return { type: 'tool_call', command: 'fs_write', args: { path: 7, extra: true } };
      return { type: 'complete', result: null };
    });
    await t.start({ strategies: everyKind(bad) });
    const c = await connect('pc-1');
    const taskId = await createTask(c, 'pc-1');
    await c.waitFor('task_completed', { task_id: taskId });
    expect(c.messages.some((m) => m.type === 'command_call')).toBe(false);
    const d = await taskDetail(taskId);
    const r = d.history.find((x) => x.type === 'tool_result') as {
      outcome: { ok: boolean; error: { code: string; message: string } };
    };
    expect(r.outcome.ok).toBe(false);
    expect(r.outcome.error.code).toBe('invalid_args');
    expect(r.outcome.error.message).toMatch(/\$\.path: must be string/);
    expect(r.outcome.error.message).toMatch(/content/);
  });

  it('fails a call for a command the client did not register, naming what it offers', async () => {
    const s = strategyOf((_t, history): Decision =>
      results(history).length === 0
        ? { type: 'tool_call', command: 'turtle_dig', args: {} }
        : { type: 'complete', result: null },
    );
    await t.start({ strategies: everyKind(s) });
    const c = await connect('pc-1');
    const taskId = await createTask(c, 'pc-1', 'r', 'general_agent');
    await c.waitFor('task_completed', { task_id: taskId });
    const d = await taskDetail(taskId);
    const r = d.history.find((x) => x.type === 'tool_result') as {
      outcome: { error: { code: string; message: string } };
    };
    expect(r.outcome.error.code).toBe('unknown_command');
    expect(r.outcome.error.message).toMatch(/fs_write/);
  });

  it('refuses a command_result from a client the call was not sent to; the call stays open', async () => {
    await t.start({
      strategies: everyKind(writeThenRun),
      config: { server: { crossClientAccess: true } },
    });
    const owner = await connect('owner');
    const thief = await connect('thief');
    const taskId = await createTask(owner, 'owner');
    const call = await owner.waitFor('command_call');
    answer(thief, call, { forged: true });
    const err = await thief.waitFor('error');
    expect(err).toMatchObject({ code: 'forbidden', call_id: call.call_id, task_id: taskId });
    let d = await taskDetail(taskId);
    expect(d.task.status).toBe('waiting_for_command');
    expect(d.history.filter((x) => x.type === 'tool_result')).toHaveLength(0);
    answer(owner, call, { real: true });
    await owner.waitFor('command_ack', { call_id: call.call_id });
    d = await taskDetail(taskId);
    const r = d.history.find((x) => x.type === 'tool_result') as { outcome: unknown };
    expect(r.outcome).toEqual({ ok: true, result: { real: true } });
  });

  it('answers a result for an unknown call_id with unknown_call and changes nothing', async () => {
    await t.start({ strategies: everyKind(writeThenRun) });
    const c = await connect('pc-1');
    const taskId = await createTask(c, 'pc-1');
    const call = await c.waitFor('command_call');
    c.send({ type: 'command_result', task_id: taskId, call_id: 'forged-call', ok: true, result: 1 });
    expect(await c.waitFor('error')).toMatchObject({ code: 'unknown_call', call_id: 'forged-call' });
    c.send({ type: 'command_result', task_id: 'other-task', call_id: call.call_id, ok: true, result: 1 });
    expect(await c.next((m) => m.type === 'error' && m.task_id === 'other-task')).toMatchObject({
      code: 'unknown_call',
    });
    const d = await taskDetail(taskId);
    expect(d.task.status).toBe('waiting_for_command');
    expect(d.command_calls[0]).toMatchObject({ status: 'pending' });
  });

  it('acknowledges a repeated result again without recording it twice (lost-ack recovery)', async () => {
    await t.start({ strategies: everyKind(writeThenRun) });
    const c = await connect('pc-1');
    const taskId = await createTask(c, 'pc-1');
    const call = await c.waitFor('command_call');
    answer(c, call, { n: 1 });
    answer(c, call, { n: 2 });
    await eventually(async () => c.messages.filter((m) => m.type === 'command_ack').length >= 2);
    const d = await taskDetail(taskId);
    const r = d.history.filter((x) => x.type === 'tool_result');
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ outcome: { ok: true, result: { n: 1 } } });
    expect(c.messages.some((m) => m.type === 'error')).toBe(false);
  });

  it('maps a failed command_result (string or object error) onto the history', async () => {
    await t.start({ strategies: everyKind(writeThenRun) });
    const c = await connect('pc-1');
    const taskId = await createTask(c, 'pc-1');
    const call = await c.waitFor('command_call');
    c.send({
      type: 'command_result',
      task_id: taskId,
      call_id: call.call_id,
      ok: false,
      error: { code: 'disk_full', message: 'Out of space', traceback: 'fs.lua:3' },
    });
    await c.waitFor('command_ack');
    const d = await taskDetail(taskId);
    const r = d.history.find((x) => x.type === 'tool_result');
    expect(r).toMatchObject({
      outcome: { ok: false, error: { code: 'disk_full', message: 'Out of space', traceback: 'fs.lua:3' } },
    });
  });
});

describe('task access and events', () => {
  it('forbids creating, subscribing to, cancelling or answering another client’s task by default', async () => {
    await t.start({ strategies: everyKind(writeThenRun) });
    const owner = await connect('owner');
    const other = await connect('other');
    const taskId = await createTask(owner, 'owner');
    other.send({
      type: 'create_task',
      request_id: 'x',
      task_kind: 'code_job',
      client_id: 'owner',
      prompt: 'p',
      allowed_commands: [],
    });
    expect(await other.nextNew('error', { request_id: 'x' })).toMatchObject({
      code: 'forbidden',
      path: '$.client_id',
    });
    for (const msg of [
      { type: 'subscribe', task_id: taskId },
      { type: 'cancel_task', task_id: taskId },
      { type: 'user_answer', task_id: taskId, question_id: 'q', text: 'x' },
    ]) {
      const before = other.messages.length;
      other.send(msg);
      const err = await other.next((m) => m.type === 'error', 5000, before);
      expect(err).toMatchObject({ code: 'forbidden', task_id: taskId });
    }
    const d = await taskDetail(taskId);
    expect(d.task.status).not.toBe('cancelled');
    expect(other.messages.some((m) => m.type === 'task_update')).toBe(false);
  });

  it('delivers events to subscribers when cross-client access is on; subscribe replies with the status', async () => {
    await t.start({
      strategies: everyKind(writeThenRun),
      config: { server: { crossClientAccess: true } },
    });
    const owner = await connect('owner');
    const watcher = await connect('watcher');
    const taskId = await createTask(owner, 'owner');
    const call = await owner.waitFor('command_call');
    watcher.send({ type: 'subscribe', task_id: taskId });
    expect(await watcher.waitFor('task_update', { task_id: taskId })).toMatchObject({
      status: 'waiting_for_command',
    });
    answer(owner, call);
    const second = await owner.waitFor('command_call', { command: 'run_program' });
    answer(owner, second);
    expect(await watcher.waitFor('task_completed', { task_id: taskId })).toBeTruthy();
  });

  it('cancel_task ends the task as cancelled for its creator, and a cancelled task stays cancelled', async () => {
    await t.start({ strategies: everyKind(writeThenRun) });
    const c = await connect('pc-1');
    const taskId = await createTask(c, 'pc-1');
    await c.waitFor('command_call');
    c.send({ type: 'cancel_task', task_id: taskId, request_id: 'cx' });
    expect(await c.waitFor('task_update', { task_id: taskId, status: 'cancelled' })).toBeTruthy();
    const d = await taskDetail(taskId);
    expect(d.task.status).toBe('cancelled');
    expect(d.command_calls[0]).toMatchObject({ status: 'cancelled' });
    // Cancelling again repeats the status to the canceller instead of failing or staying silent.
    const before = c.messages.length;
    c.send({ type: 'cancel_task', task_id: taskId });
    const again = await c.next((m) => m.type === 'task_update' || m.type === 'error', 5000, before);
    expect(again).toMatchObject({ type: 'task_update', status: 'cancelled' });
  });

  it('ask_user reaches the task’s client; user_answer resumes it; a second answer is a duplicate', async () => {
    const asking = strategyOf((_t, history): Decision => {
      const a = history.find((x) => x.type === 'answer');
      if (!a) return { type: 'ask_user', question: 'Which wood?', why: 'two kinds in the chest' };
      return { type: 'complete', result: { answer: a.type === 'answer' ? a.answer : null } };
    });
    await t.start({ strategies: everyKind(asking) });
    const c = await connect('pc-1');
    const taskId = await createTask(c, 'pc-1');
    const q = await c.waitFor('ask_user', { task_id: taskId });
    expect(q).toMatchObject({ question: 'Which wood?', why: 'two kinds in the chest' });
    c.send({ type: 'user_answer', task_id: taskId, question_id: q.question_id, text: 'oak' });
    expect(await c.waitFor('task_completed', { task_id: taskId })).toMatchObject({
      result: { answer: 'oak' },
    });
    c.send({ type: 'user_answer', task_id: taskId, question_id: q.question_id, text: 'birch' });
    expect(await c.waitFor('error', { task_id: taskId })).toMatchObject({ code: 'duplicate' });
  });

  it('persists tools_update and hello.tools snapshots, served by GET /api/tools', async () => {
    const h = await t.start();
    const c = await connect('pc-1', { tools: [{ name: 'miner', status: 'draft', version: 1 }] });
    let tools = (await (await h.http('/api/tools')).json()) as { tools: unknown[] };
    expect(tools.tools).toEqual([
      expect.objectContaining({ client_id: 'pc-1', name: 'miner', status: 'draft', version: 1 }),
    ]);
    c.send({
      type: 'tools_update',
      tools: [
        {
          name: 'miner',
          status: 'active',
          version: 2,
          description: 'mines',
          file: '/tools/miner.lua',
          updated_at: 5,
        },
        { name: 'farmer', status: 'test', version: 1 },
      ],
    });
    await eventually(async () => {
      tools = (await (await h!.http('/api/tools?client=pc-1')).json()) as { tools: unknown[] };
      return tools.tools.length === 2;
    });
    expect(tools.tools).toEqual([
      expect.objectContaining({ name: 'farmer', status: 'test' }),
      expect.objectContaining({
        name: 'miner',
        status: 'active',
        version: 2,
        file: '/tools/miner.lua',
        updated_at: 5,
      }),
    ]);
    const active = (await (await h.http('/api/tools?status=active')).json()) as { tools: unknown[] };
    expect(active.tools).toHaveLength(1);
    // A snapshot naming a tool twice is refused and the stored list stays as it was.
    c.send({
      type: 'tools_update',
      tools: [
        { name: 'a', status: 'draft', version: 1 },
        { name: 'a', status: 'test', version: 1 },
      ],
    });
    expect(await c.waitFor('error')).toMatchObject({ code: 'invalid_field', path: '$.tools[1].name' });
    const after = (await (await h.http('/api/tools?client=pc-1')).json()) as { tools: unknown[] };
    expect(after.tools).toHaveLength(2);
  });
});
