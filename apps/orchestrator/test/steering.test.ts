/**
 * Steering a task, end to end: the built `cc-orchestrator serve` as a child process, a temp SQLite file, the fake
 * model server from @ccagent/testkit behind the real strategies and Ollama adapter, real HTTP and `ws` clients.
 * Per-task settings at creation (what reaches the model request, what the operator's maximums refuse).
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
