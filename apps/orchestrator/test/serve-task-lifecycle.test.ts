/**
 * Acceptance: the built `cc-orchestrator serve` as a child process, a temp SQLite file, the fake model server from
 * @ccagent/testkit behind the real agent strategies and Ollama adapter, and real `ws` clients — through whole tasks,
 * a cancel, a kill -9 and a graceful restart.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeChatRequest, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serve, type Served } from './support/spawn.js';
import { TestClient, type Msg } from './support/ws-test-client.js';

let dir: string;
let fake: FakeOllama;
const servers: Served[] = [];
const clients: TestClient[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-accept-'));
  fake = await startFakeOllama();
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  for (const s of servers.splice(0)) await s.kill9();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(extra: string[] = [], env: NodeJS.ProcessEnv = {}): Promise<Served> {
  const args = [
    '--port',
    '0',
    '--db',
    path.join(dir, 'ccagent.db'),
    '--ollama-url',
    fake.url,
    '--log-level',
    'warn',
  ];
  const s = await serve([...args, ...extra], env);
  servers.push(s);
  return s;
}

async function connect(url: string, id = 'turtle-1'): Promise<TestClient> {
  const c = await TestClient.connect(url, id, {
    commands: [
      { name: 'fs_write', args_schema: { type: 'object', required: ['path', 'content'] } },
      { name: 'fs_read', args_schema: { type: 'object', required: ['path'] } },
      { name: 'run_program', args_schema: { type: 'object', required: ['path'] } },
    ],
  });
  clients.push(c);
  return c;
}

/** Answer command_calls like a CC agent host would: writes succeed, reads of unknown files fail, runs print "hi". */
function autoAnswer(c: TestClient): void {
  c.ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8')) as Msg;
    if (m.type !== 'command_call') return;
    const base = { type: 'command_result', task_id: m.task_id, call_id: m.call_id };
    if (m.command === 'fs_read')
      c.send({ ...base, ok: false, error: { code: 'not_found', message: 'no such file' } });
    else if (m.command === 'run_program') c.send({ ...base, ok: true, result: { ok: true, output: 'hi\n' } });
    else c.send({ ...base, ok: true, result: { ok: true } });
  });
}

/** `create_task` (request `r1`) for turtle-1 over `c`; resolves with the task id from `task_created`. */
async function createTask(c: TestClient, prompt: string, kind: string): Promise<string> {
  c.send({
    type: 'create_task',
    request_id: 'r1',
    task_kind: kind,
    client_id: 'turtle-1',
    prompt,
    allowed_commands: [],
  });
  return String((await c.waitFor('task_created', { request_id: 'r1' })).task_id);
}

type Rec = Record<string, unknown>;
interface Detail {
  task: Rec & { status: string };
  steps: Rec[];
  history: Rec[];
  command_calls: Rec[];
}

async function getTask(url: string, id: string): Promise<Detail> {
  return (await (await fetch(`${url}/api/tasks/${id}`)).json()) as Detail;
}

describe('cc-orchestrator serve: whole tasks', () => {
  it('runs a native (general_agent) task: create → command_calls answered → completed, with progress', async () => {
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'fs_write', arguments: { path: '/hello.lua', content: 'print("hi")' } }] },
      { toolCalls: [{ name: 'run_program', arguments: { path: '/hello.lua' } }] },
      'Wrote /hello.lua and ran it; it printed hi.',
    ]);
    const s = await start();
    const c = await connect(s.url);
    autoAnswer(c);
    const taskId = await createTask(c, 'Write hello.lua and run it', 'general');
    const done = await c.waitFor('task_completed', { task_id: taskId }, 20_000);
    expect(done.result).toMatchObject({ message: 'Wrote /hello.lua and ran it; it printed hi.' });
    const calls = c.messages.filter((m) => m.type === 'command_call');
    expect(calls.map((m) => m.command)).toEqual(['fs_write', 'run_program']);
    expect(calls[0]?.args).toEqual({ path: '/hello.lua', content: 'print("hi")' });
    expect(c.messages.filter((m) => m.type === 'command_ack')).toHaveLength(2);
    // progress: the share of the run's budgets used (general_agent: 40 steps, 60 tool calls)
    const calling = c.messages.find(
      (m) => m.type === 'task_update' && String(m.message).startsWith('calling fs_write'),
    );
    expect(calling).toMatchObject({
      message: 'calling fs_write · step 1/40 · 1/60 tool calls',
      progress: 0.025,
    });
    const detail = await getTask(s.url, taskId);
    expect(detail.task).toMatchObject({ kind: 'general_agent', status: 'completed' });
    // What the model saw and said is on record.
    const modelSteps = detail.steps.filter((x) => x.kind === 'native');
    expect(modelSteps).toHaveLength(3);
    expect(modelSteps[0]).toMatchObject({ model: 'qwen3:8b' });
    expect(JSON.stringify(modelSteps[0]?.input)).toContain('Write hello.lua and run it');
    expect(fake.chatRequests('qwen3:8b')).toHaveLength(3);
    const metrics = await (await fetch(`${s.url}/metrics`)).text();
    expect(metrics).toMatch(
      /^ccagent_model_call_duration_seconds_count\{model="qwen3:8b",kind="native"\} 3$/m,
    );
  });

  it('runs a native task through an openai-compatible provider from the config file (API key from env)', async () => {
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'fs_write', arguments: { path: '/o.lua', content: 'x' } }] },
      'written via the OpenAI-compatible API',
    ]);
    const cfg = path.join(dir, 'ccagent.json');
    writeFileSync(
      cfg,
      JSON.stringify({
        models: {
          native: {
            name: 'qwen3:8b',
            provider: 'openai-compatible',
            baseUrl: `${fake.url}/v1`,
            apiKeyEnv: 'MY_LLM_KEY',
          },
        },
        taskKinds: { code_job: { strategy: 'native' } },
      }),
    );
    const s = await start(['--config', cfg], { MY_LLM_KEY: 'sk-test-123' });
    const c = await connect(s.url);
    autoAnswer(c);
    const taskId = await createTask(c, 'write o', 'general_agent');
    expect(await c.waitFor('task_completed', { task_id: taskId }, 20_000)).toMatchObject({
      result: { message: 'written via the OpenAI-compatible API' },
    });
    const chats = fake.chatRequests('qwen3:8b');
    expect(chats.every((r) => r.path === '/v1/chat/completions')).toBe(true);
    expect(chats[0]?.headers.authorization).toBe('Bearer sk-test-123');
    const health = (await (await fetch(`${s.url}/health`)).json()) as {
      model_servers: Array<{ provider: string; present: string[] }>;
    };
    expect(health.model_servers).toEqual(
      expect.arrayContaining([
        expect.objectContaining({ provider: 'openai-compatible', present: ['qwen3:8b'] }),
      ]),
    );
  });

  it('runs a planner/executor (code_job) task with the real agent and parser', async () => {
    let plannerCalls = 0;
    fake.script('qwen3:8b', (req: FakeChatRequest) => {
      const text = JSON.stringify(req.body);
      if (!text.includes('PLANNER'))
        return {
          json: {
            kind: 'final',
            explanation: 'unexpected',
            result: { success: false, message: 'x', details: '' },
          },
        };
      plannerCalls++;
      if (plannerCalls === 1) {
        return 'PLAN:\n1. write and run\nWRITE_FILE\nPATH: /hello.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint("hi")\n```\nTHEN:\n- /hello.lua\n';
      }
      return 'DONE\nSUMMARY: /hello.lua printed hi\nNOTES: none';
    });
    const s = await start();
    const c = await connect(s.url);
    autoAnswer(c);
    const taskId = await createTask(c, 'Make a program that prints hi', 'code_job');
    const end = await c.next(
      (m) => (m.type === 'task_completed' || m.type === 'task_failed') && m.task_id === taskId,
      20_000,
    );
    const detail = await getTask(s.url, taskId);
    expect(end.type, JSON.stringify(detail.task)).toBe('task_completed');
    const cmds = c.messages.filter((m) => m.type === 'command_call').map((m) => m.command);
    expect(cmds).toContain('fs_write');
    expect(cmds).toContain('run_program');
    expect(detail.steps.some((x) => x.kind === 'planner')).toBe(true);
  });
});

describe('cc-orchestrator serve: cancel and restart', () => {
  it('cancels a task mid-command over HTTP; the computer is told to stop the call (command_cancel) and the call is closed', async () => {
    fake.script('qwen3:8b', [{ toolCalls: [{ name: 'run_program', arguments: { path: '/long.lua' } }] }]);
    const s = await start();
    const c = await connect(s.url);
    const taskId = await createTask(c, 'run long', 'general_agent');
    const call = await c.waitFor('command_call', { task_id: taskId });
    const res = await fetch(`${s.url}/api/tasks/${taskId}/cancel`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"reason":"user changed mind"}',
    });
    expect(res.status).toBe(200);
    expect(await c.waitFor('task_update', { task_id: taskId, status: 'cancelled' })).toBeTruthy();
    expect(await c.waitFor('command_cancel', { call_id: call.call_id })).toEqual({
      type: 'command_cancel',
      task_id: taskId,
      call_id: call.call_id,
      reason: 'task cancelled',
    });
    // The client's one answer to the cancel is acknowledged (so it stops re-sending it) and changes nothing.
    c.send({
      type: 'command_result',
      task_id: taskId,
      call_id: call.call_id,
      ok: false,
      error: { code: 'cancelled', message: 'task cancelled' },
    });
    expect(await c.waitFor('command_ack', { call_id: call.call_id })).toBeTruthy();
    const detail = await getTask(s.url, taskId);
    expect(detail.task.status).toBe('cancelled');
    expect(detail.command_calls[0]).toMatchObject({ status: 'cancelled' });
    expect(detail.history.at(-1)).toMatchObject({ type: 'cancel', reason: 'user changed mind' });
  });

  it('resumes after kill -9 mid-task: the reconnecting client gets the same call_id and the task completes', async () => {
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'fs_write', arguments: { path: '/a.lua', content: 'x' } }] },
      'done after restart',
    ]);
    const s1 = await start();
    const c1 = await connect(s1.url);
    const taskId = await createTask(c1, 'write a', 'general_agent');
    const call = await c1.waitFor('command_call', { task_id: taskId });
    await s1.kill9();
    await c1.whenClosed();

    const s2 = await start();
    expect(s2.stdout()).toMatch(/1 unfinished tasks resumed/);
    const c2 = await connect(s2.url);
    const again = await c2.waitFor('command_call', { task_id: taskId });
    expect(again.call_id).toBe(call.call_id);
    expect(again.args).toEqual({ path: '/a.lua', content: 'x' });
    c2.send({
      type: 'command_result',
      task_id: taskId,
      call_id: call.call_id,
      ok: true,
      result: { ok: true },
    });
    await c2.waitFor('command_ack', { call_id: call.call_id });
    const detail = await (async () => {
      for (let i = 0; i < 100; i++) {
        const d = await getTask(s2.url, taskId);
        if (d.task.status === 'completed') return d;
        await new Promise((r) => setTimeout(r, 50));
      }
      return getTask(s2.url, taskId);
    })();
    expect(detail.task).toMatchObject({ status: 'completed', result: { message: 'done after restart' } });
    expect(detail.command_calls).toEqual([
      expect.objectContaining({ call_id: call.call_id, status: 'succeeded', dispatch_count: 2 }),
    ]);
  });

  it('shuts down cleanly on SIGTERM (clients get 1001) and resumes the waiting task after a clean restart', async () => {
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'fs_write', arguments: { path: '/b.lua', content: 'y' } }] },
      'ok',
    ]);
    const s1 = await start();
    const c1 = await connect(s1.url);
    const taskId = await createTask(c1, 'write b', 'general_agent');
    const call = await c1.waitFor('command_call', { task_id: taskId });
    const [code, closed] = await Promise.all([s1.term(), c1.whenClosed()]);
    servers.splice(servers.indexOf(s1), 1);
    expect(code).toBe(0);
    expect(closed.code).toBe(1001);
    expect(s1.stdout()).toMatch(/SIGTERM received/);

    const s2 = await start();
    const c2 = await connect(s2.url);
    const again = await c2.waitFor('command_call', { task_id: taskId });
    expect(again.call_id).toBe(call.call_id);
    c2.send({ type: 'command_result', task_id: taskId, call_id: call.call_id, ok: true, result: {} });
    expect(await c2.waitFor('task_completed', { task_id: taskId }, 15_000)).toMatchObject({
      result: { message: 'ok' },
    });
  });
});
