/**
 * Steering a task, end to end: the built `cc-orchestrator serve` as a child process, a temp SQLite file, the fake
 * model server from @ccagent/testkit behind the real strategies and Ollama adapter, real HTTP and `ws` clients.
 * Per-task settings at creation (what reaches the model request, what the operator's maximums refuse); follow-up
 * messages to a running and to a finished task; retry of a failed task.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serve, type Served } from './support/spawn.js';
import { TestClient } from './support/ws-test-client.js';

type Rec = Record<string, unknown>;
interface Detail {
  task: Rec & { id: string; status: string; result?: Rec; error?: Rec; budgets: Rec; settings?: Rec };
  steps: Array<Rec & { kind: string }>;
  history: Array<Rec & { type: string }>;
  command_calls: Rec[];
}

let dir: string;
let fake: FakeOllama;
const servers: Served[] = [];
const clients: TestClient[] = [];

/** The operator's configuration of these tests: one extra model a request may pick, and low maximums. */
const CONFIG = {
  limits: {
    models: ['qwen3:8b', 'big-model:14b'],
    maxSteps: 50,
    maxDeadlineMs: 86_400_000,
    maxNumCtx: 32_768,
  },
  taskKinds: {
    // A long-lived kind: the model may sleep until an event or a time; budgets of days.
    watcher: {
      strategy: 'native',
      waitTool: true,
      maxIterations: 10_000,
      budgets: { maxSteps: 100_000, deadlineMs: 7 * 86_400_000 },
    },
  },
};

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-steer-'));
  fake = await startFakeOllama({ installed: ['qwen3:8b', 'big-model:14b'] });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  for (const s of servers.splice(0)) await s.kill9();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(port = '0'): Promise<Served> {
  const config = path.join(dir, 'ccagent.json');
  writeFileSync(config, JSON.stringify(CONFIG));
  const s = await serve([
    '--port',
    port,
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

async function post(s: Served, route: string, body: unknown): Promise<{ status: number; body: Rec }> {
  const res = await fetch(`${s.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: res.status, body: (await res.json()) as Rec };
}

async function detail(s: Served, id: string): Promise<Detail> {
  return (await (await fetch(`${s.url}/api/tasks/${id}`)).json()) as Detail;
}

/** Poll the task until `check` holds (50 ms steps, 20 s). */
async function until(s: Served, id: string, check: (d: Detail) => boolean): Promise<Detail> {
  const end = Date.now() + 20_000;
  let last: Detail | undefined;
  while (Date.now() < end) {
    last = await detail(s, id);
    if (check(last)) return last;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out; last seen: ${JSON.stringify(last?.task)}`);
}

describe('per-task settings', () => {
  it('settings given at creation reach the model request and are stored and shown with the task (guards: settings only from the config file)', async () => {
    fake.script('big-model:14b', ['Hello from the big model.']);
    const s = await start();
    const settings = {
      models: { native: 'big-model:14b' },
      temperature: 0.7,
      num_ctx: 4096,
      budgets: { max_steps: 7, max_tool_calls: 3, deadline_ms: 7_200_000 },
    };
    const created = await post(s, '/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'Say hello.',
      settings,
    });
    expect(created.status).toBe(201);
    const id = (created.body.task as Rec).id as string;
    const done = await until(s, id, (d) => d.task.status === 'completed');
    expect(done.task.result).toMatchObject({ message: 'Hello from the big model.' });
    const [req] = fake.chatRequests('big-model:14b');
    expect(req?.body).toMatchObject({ model: 'big-model:14b', options: { temperature: 0.7, num_ctx: 4096 } });
    expect(fake.chatRequests('qwen3:8b')).toHaveLength(0);
    expect(done.task.settings).toEqual(settings);
    expect(done.task.budgets).toMatchObject({ max_steps: 7, max_tool_calls: 3 });
    const deadline = (done.task.budgets as { deadline_at: number }).deadline_at;
    expect(Math.abs(deadline - (Date.now() + 7_200_000))).toBeLessThan(60_000);
  });

  it('a budget above the operator maximum, or a model not allowed, is refused with a structured error and creates nothing', async () => {
    const s = await start();
    const above = await post(s, '/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'Run for ever.',
      settings: { budgets: { max_steps: 51 } },
    });
    expect(above.status).toBe(403);
    expect(above.body.error).toEqual({
      code: 'forbidden',
      message: "max_steps 51 is above the server's maximum 50 (limits.maxSteps)",
      path: '$.settings.budgets.max_steps',
    });
    const model = await post(s, '/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'x',
      settings: { models: { native: 'secret-model' } },
    });
    expect(model.status).toBe(403);
    expect(model.body.error).toMatchObject({ code: 'forbidden', path: '$.settings.models.native' });
    const wrongRole = await post(s, '/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'x',
      settings: { executor_mode: 'parser' },
    });
    expect(wrongRole.status).toBe(400);
    expect(wrongRole.body.error).toMatchObject({ code: 'invalid_body', path: '$.settings.executor_mode' });
    const shape = await post(s, '/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'x',
      settings: { temperature: 9 },
    });
    expect(shape.status).toBe(400);
    expect(shape.body.error).toMatchObject({ path: '$.settings.temperature' });
    // over WebSocket: the same check, answered with a protocol error naming the field
    const c = await TestClient.connect(s.url, 'pc-1', { commands: [{ name: 'fs_list' }] });
    clients.push(c);
    c.send({
      type: 'create_task',
      request_id: 'r-big',
      task_kind: 'general_agent',
      client_id: 'pc-1',
      prompt: 'x',
      allowed_commands: [],
      settings: { budgets: { deadline_ms: 86_400_001 } },
    });
    expect(await c.waitFor('error', { request_id: 'r-big' })).toMatchObject({
      code: 'forbidden',
      path: '$.settings.budgets.deadline_ms',
    });
    const list = (await (await fetch(`${s.url}/api/tasks`)).json()) as { tasks: unknown[] };
    expect(list.tasks).toEqual([]);
  });
});

/** The text of every message of a recorded chat request, in order. */
const contents = (req: { body: unknown } | undefined): string[] =>
  ((req?.body as { messages?: Array<{ content: string }> }).messages ?? []).map((m) => m.content);

/** A computer offering fs_write and run_program whose calls the test answers by hand. */
async function computer(s: Served, id = 'pc-1'): Promise<TestClient> {
  const c = await TestClient.connect(s.url, id, {
    commands: [
      { name: 'fs_write', args_schema: { type: 'object', required: ['path', 'content'] } },
      { name: 'run_program', args_schema: { type: 'object', required: ['path'] } },
    ],
  });
  clients.push(c);
  return c;
}

const ok = (c: TestClient, call: Rec, result: unknown = { ok: true }) =>
  c.send({ type: 'command_result', task_id: call.task_id, call_id: call.call_id, ok: true, result });

describe('follow-up messages', () => {
  it('a message to a running task changes what its next step does (HTTP and WS) (guards: every prompt a new task)', async () => {
    // The model writes oak.lua, unless the last thing it was told mentions birch.
    fake.script('qwen3:8b', (req) => {
      const all = contents(req).join('\n');
      if (all.includes('Wrote birch.lua')) return 'Done: birch.lua written as you asked.';
      if (all.includes('use birch')) {
        return { toolCalls: [{ name: 'fs_write', arguments: { path: '/birch.lua', content: 'x' } }] };
      }
      return { toolCalls: [{ name: 'fs_write', arguments: { path: '/oak.lua', content: 'x' } }] };
    });
    const s = await start();
    const c = await computer(s);
    c.send({
      type: 'create_task',
      request_id: 'r1',
      task_kind: 'general_agent',
      client_id: 'pc-1',
      prompt: 'Write the wood program.',
      allowed_commands: [],
    });
    const id = String((await c.waitFor('task_created', { request_id: 'r1' })).task_id);
    const first = await c.waitFor('command_call', { task_id: id });
    expect(first.args).toMatchObject({ path: '/oak.lua' });
    // While the call runs, the person says something (over WS; HTTP below for the finished task).
    c.send({ type: 'task_message', task_id: id, text: 'Actually, use birch.', request_id: 'm1' });
    expect(await c.waitFor('task_update', { task_id: id, status: 'waiting_for_command' })).toBeTruthy();
    ok(c, first, { ok: true, note: 'Wrote oak.lua' });
    const second = await c.waitFor('command_call', { call_id: `${id}:call:2` });
    expect(second.args).toEqual({ path: '/birch.lua', content: 'x' });
    ok(c, second, { ok: true, note: 'Wrote birch.lua' });
    const done = await until(s, id, (d) => d.task.status === 'completed');
    expect(done.task.result).toMatchObject({ message: 'Done: birch.lua written as you asked.' });
    const req2 = contents(fake.chatRequests('qwen3:8b')[1]);
    expect(req2.at(-1)).toBe('Actually, use birch.'); // right after the first call's result
    expect(done.history.find((h) => h.type === 'message')).toMatchObject({
      text: 'Actually, use birch.',
      from: 'pc-1',
    });
  });

  it('a message to a running planner/executor task changes what its planner writes next (guards: messages only reaching the native loop)', async () => {
    // The planner writes oak.lua, unless it has been told about birch.
    const write = (file: string) =>
      `WRITE_FILE\nPATH: ${file}\nLANGUAGE: lua\nCONTENT:\n\`\`\`lua\nprint("${file}")\n\`\`\`\nTHEN:\n`;
    fake.script('qwen3:8b', (req) =>
      contents(req).join('\n').includes('use birch') ? write('birch.lua') : write('oak.lua'),
    );
    const s = await start();
    const c = await computer(s);
    c.send({
      type: 'create_task',
      request_id: 'p1',
      task_kind: 'code_job',
      client_id: 'pc-1',
      prompt: 'Write the wood program.',
      allowed_commands: [],
    });
    const id = String((await c.waitFor('task_created', { request_id: 'p1' })).task_id);
    const first = await c.waitFor('command_call', { task_id: id });
    expect(first).toMatchObject({ command: 'fs_write', args: { path: 'oak.lua' } });
    c.send({ type: 'task_message', task_id: id, text: 'Actually, use birch.', request_id: 'pm1' });
    expect(await c.waitFor('task_update', { task_id: id, status: 'waiting_for_command' })).toBeTruthy();
    ok(c, first, { ok: true });
    const second = await c.waitFor('command_call', { call_id: `${id}:call:2` });
    expect(second).toMatchObject({ command: 'fs_write', args: { path: 'birch.lua' } });
    // The planner's request after the message carries it; the one before did not.
    const planner = fake.chatRequests('qwen3:8b').map((r) => contents(r).join('\n'));
    expect(planner[0]).not.toContain('use birch');
    expect(planner.at(-1)).toContain('Actually, use birch.');
    const cancelled = await post(s, `/api/tasks/${id}/cancel`, {});
    expect(cancelled.status).toBe(200);
  });

  it('a message to a finished task continues it: same task and memory, fresh budgets, completes again (guards: a finished task being final)', async () => {
    fake.script('qwen3:8b', ['The answer is 4.', 'Doubled, it is 8.']);
    const s = await start();
    const created = await post(s, '/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'What is 2+2?',
      settings: { budgets: { max_steps: 3 } },
    });
    const id = (created.body.task as Rec).id as string;
    await until(s, id, (d) => d.task.status === 'completed');
    const m = await post(s, `/api/tasks/${id}/messages`, { text: 'Now double it.' });
    expect(m.status).toBe(200);
    expect((m.body.task as Rec).status).toBe('queued');
    expect((m.body.task as Rec).budgets).toMatchObject({ max_steps: 4 }); // 1 step used + 3 fresh
    const again = await until(
      s,
      id,
      (d) => d.task.status === 'completed' && d.task.result?.message !== 'The answer is 4.',
    );
    expect(again.task.id).toBe(id);
    expect(again.task.result).toMatchObject({ message: 'Doubled, it is 8.' });
    // The second request carries the first exchange (the task's memory) and then the message.
    expect(contents(fake.chatRequests('qwen3:8b')[1]).slice(-3)).toEqual([
      'The answer is 4.',
      '[The task was completed; it continues with the message below and a fresh budget.]',
      'Now double it.',
    ]);
    expect(again.history.map((h) => h.type)).toEqual(['complete', 'resume', 'message', 'complete']);
    // an event cannot go to a finished task; a message to an unknown task is not_found
    const ev = await post(s, `/api/tasks/${id}/events`, { name: 'redstone' });
    expect(ev.status).toBe(409);
    expect((await post(s, '/api/tasks/nope/messages', { text: 'hi' })).status).toBe(404);
    expect((await post(s, `/api/tasks/${id}/messages`, { text: '' })).status).toBe(400);
  });
});

describe('retry', () => {
  it('a failed task retried over HTTP resumes from its memory with fresh budgets, linked in the step log (guards: a failure being final)', async () => {
    // First run: one model call allowed; the final summary is empty, so it fails with max_iterations.
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'run_program', arguments: { path: '/a.lua' } }] },
      '',
      'a.lua printed 42; done.',
    ]);
    const s = await start();
    const c = await computer(s);
    const created = await post(s, '/api/tasks', {
      task_kind: 'general_agent',
      prompt: 'Run a.lua.',
      client_id: 'pc-1',
      settings: { budgets: { max_model_calls: 1 } },
    });
    const id = (created.body.task as Rec).id as string;
    const call = await c.waitFor('command_call', { task_id: id });
    ok(c, call, { ok: true, output: '42' });
    const failed = await until(s, id, (d) => d.task.status === 'failed');
    expect(failed.task.error).toMatchObject({ code: 'max_iterations' });
    expect((await post(s, `/api/tasks/nope/retry`, {})).status).toBe(404);
    const r = await post(s, `/api/tasks/${id}/retry`, {});
    expect(r.status).toBe(200);
    expect((r.body.task as Rec).status).toBe('queued');
    const done = await until(s, id, (d) => d.task.status === 'completed');
    expect(done.task.result).toMatchObject({ message: 'a.lua printed 42; done.' });
    // resumed with its memory: the retried request shows the earlier call and its result
    const req = contents(fake.chatRequests('qwen3:8b')[2]);
    expect(req).toContain(JSON.stringify({ ok: true, output: '42' }));
    expect(req.at(-1)).toContain('retried with a fresh budget');
    expect(done.steps.find((x) => x.kind === 'reopened')).toMatchObject({
      directive: { reason: 'retry', from: 'failed', previousError: { code: 'max_iterations' } },
    });
    // a completed task cannot be retried
    const again = await post(s, `/api/tasks/${id}/retry`, {});
    expect(again.status).toBe(409);
  });
});

describe('events and long-lived tasks', () => {
  it('a task waiting for an event sleeps without a busy loop, survives kill -9 and a restart, and an event wakes it (guards: Engine.trigger/wakeAfterMs unused, a timer-only wake)', async () => {
    fake.script('qwen3:8b', (req) => {
      const all = contents(req).join('\n');
      if (all.includes('[event "redstone"')) return 'The lever was pulled: the door is open.';
      return { toolCalls: [{ name: 'wait', arguments: { seconds: 3600, reason: 'the lever' } }] };
    });
    let s = await start();
    const port = new URL(s.url).port;
    const created = await post(s, '/api/tasks', {
      task_kind: 'watcher',
      prompt: 'Open the door when the lever is pulled.',
    });
    expect(created.status, JSON.stringify(created.body)).toBe(201);
    const id = (created.body.task as Rec).id as string;
    const asleep = await until(s, id, (d) =>
      d.steps.some((x) => x.kind === 'decision' && (x.directive as Rec).type === 'continue'),
    );
    expect(asleep.task.status).toBe('running');
    expect(asleep.steps.find((x) => x.kind === 'decision')?.directive).toMatchObject({
      wakeAfterMs: 3_600_000,
    });
    const tools = (fake.chatRequests('qwen3:8b')[0]?.body as { tools: Array<{ function: { name: string } }> })
      .tools;
    expect(tools.map((t) => t.function.name)).toContain('wait');
    // asleep: no model call, no step while nothing happens
    await new Promise((r) => setTimeout(r, 1500));
    expect(fake.chatRequests('qwen3:8b')).toHaveLength(1);
    expect((await detail(s, id)).steps.length).toBe(asleep.steps.length);

    await servers.splice(servers.indexOf(s), 1)[0]?.kill9();
    s = await start(port);
    await new Promise((r) => setTimeout(r, 500));
    expect(fake.chatRequests('qwen3:8b')).toHaveLength(1); // still asleep after the restart
    const ev = await post(s, `/api/tasks/${id}/events`, {
      name: 'redstone',
      data: { side: 'left', on: true },
    });
    expect(ev.status).toBe(200);
    const done = await until(s, id, (d) => d.task.status === 'completed');
    expect(done.task.result).toMatchObject({ message: 'The lever was pulled: the door is open.' });
    const reqs = fake.chatRequests('qwen3:8b');
    expect(reqs).toHaveLength(2);
    expect(contents(reqs[1]).slice(-2)).toEqual([
      JSON.stringify({ waited_up_to_seconds: 3600, note: 'woke up: see what follows' }),
      '[event "redstone": {"side":"left","on":true}]',
    ]);
    expect(done.history.filter((h) => h.type === 'event')).toHaveLength(1);
  });
});
