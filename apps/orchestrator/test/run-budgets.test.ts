/**
 * Token budgets and progress of a run, end to end: the built `cc-orchestrator serve`, a temp SQLite file, the real
 * `ollama` client against the fake model server (which reports `prompt_eval_count` / `eval_count` as scripted), a
 * computer answering command calls over WebSocket. The counts come from the server's reports; a run that used its
 * tokens ends with a final message, like a run that used its model calls; a follow-up message gives fresh counts;
 * `task_update.progress` says how much of the run's budgets is used.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { serve, type Served } from './support/spawn.js';
import { TestClient } from './support/ws-test-client.js';

type Rec = Record<string, unknown>;

let dir: string;
let fake: FakeOllama;
const servers: Served[] = [];
const clients: TestClient[] = [];

const CONFIG = {
  limits: { maxPromptTokens: 5000, maxOutputTokens: 5000 },
  taskKinds: {
    // A kind whose runs may write 120 output tokens.
    frugal: { strategy: 'native', budgets: { maxSteps: 20, maxOutputTokens: 120 } },
  },
};

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-budget-'));
  fake = await startFakeOllama({ installed: ['qwen3:8b'] });
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  for (const s of servers.splice(0)) await s.kill9();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<Served> {
  const config = path.join(dir, 'ccagent.json');
  writeFileSync(config, JSON.stringify(CONFIG));
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

async function computer(s: Served): Promise<TestClient> {
  const c = await TestClient.connect(s.url, 'pc-1', {
    commands: [{ name: 'fs_write', args_schema: { type: 'object', required: ['path', 'content'] } }],
  });
  clients.push(c);
  return c;
}

const write = (p: string, tokens: { prompt?: number; output?: number }) => ({
  toolCalls: [{ name: 'fs_write', arguments: { path: p, content: 'x' } }],
  ...(tokens.prompt !== undefined ? { promptEvalCount: tokens.prompt } : {}),
  ...(tokens.output !== undefined ? { evalCount: tokens.output } : {}),
});

/** Answer the next `n` command calls of task `id` with success. */
async function answer(c: TestClient, id: string, n: number): Promise<void> {
  for (let i = 1; i <= n; i++) {
    const call = await c.waitFor('command_call', { call_id: `${id}:call:${i}` });
    c.send({ type: 'command_result', task_id: id, call_id: call.call_id, ok: true, result: { ok: true } });
  }
}

it('a run that used its prompt tokens (per task, counted from the server’s reports) ends with a final message, progress says what is used, and a message continues with fresh counts (guards: budgets only in steps and calls, progress never set)', async () => {
  fake.script('qwen3:8b', [
    write('/a.lua', { prompt: 600, output: 20 }),
    write('/b.lua', { prompt: 700, output: 20 }),
    { content: 'Both files are written.', promptEvalCount: 800, evalCount: 10 },
  ]);
  const s = await start();
  const c = await computer(s);
  c.send({
    type: 'create_task',
    request_id: 'r1',
    task_kind: 'general_agent',
    client_id: 'pc-1',
    prompt: 'Write a.lua and b.lua.',
    allowed_commands: [],
    settings: { budgets: { max_prompt_tokens: 1000 } },
  });
  const id = String((await c.waitFor('task_created', { request_id: 'r1' })).task_id);
  await answer(c, id, 2);
  const done = await c.waitFor('task_completed', { task_id: id }, 20_000);
  const result = done.result as Rec;
  expect(result.stopped).toBe('token_budget');
  expect(result.tokens).toEqual({ prompt: 1300, output: 40 });
  expect(result.message).toContain('1300 of its 1000 prompt tokens');
  expect(result.message).toContain('fs_write ×2');
  expect(result.message).toContain('Send it a message to continue');
  // The model was not asked a third time once the budget was used.
  expect(fake.chatRequests('qwen3:8b')).toHaveLength(2);

  // Progress after each step: the largest share of a budget used (prompt tokens here), and what is used of each.
  const progress = c.messages.filter(
    (m) => m.type === 'task_update' && m.task_id === id && m.progress !== undefined,
  );
  const first = progress.find((m) => String(m.message).startsWith('calling fs_write'));
  expect(first?.progress).toBeCloseTo(0.6, 5);
  expect(first?.message).toBe('calling fs_write · step 1/40 · 1/60 tool calls · 600/1000 prompt tokens');
  expect(
    progress.some((m) => m.progress === 1 && String(m.message).includes('1300/1000 prompt tokens')),
  ).toBe(true);

  // A follow-up message: a new run with fresh counts; the model answers and the task completes again.
  const again = c.nextNew('task_completed', { task_id: id }, 20_000);
  const res = await fetch(`${s.url}/api/tasks/${id}/messages`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ text: 'Are you done?' }),
  });
  expect(res.status).toBe(200);
  expect((await again).result).toMatchObject({ message: 'Both files are written.' });
  expect(fake.chatRequests('qwen3:8b')).toHaveLength(3);
});

it('a kind’s output-token budget ends its runs, and a request above the operator maximum is refused with a structured error', async () => {
  fake.script('qwen3:8b', [write('/a.lua', { output: 70 }), write('/b.lua', { output: 70 }), 'not reached']);
  const s = await start();
  const c = await computer(s);
  c.send({
    type: 'create_task',
    request_id: 'r1',
    task_kind: 'frugal',
    client_id: 'pc-1',
    prompt: 'Write files.',
    allowed_commands: [],
  });
  const id = String((await c.waitFor('task_created', { request_id: 'r1' })).task_id);
  await answer(c, id, 2);
  const done = await c.waitFor('task_completed', { task_id: id }, 20_000);
  expect(done.result).toMatchObject({ stopped: 'token_budget', tokens: { output: 140 } });
  expect((done.result as Rec).message).toContain('140 of its 120 output tokens');
  expect(fake.chatRequests('qwen3:8b')).toHaveLength(2);

  const above = await fetch(`${s.url}/api/tasks`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({
      task_kind: 'general_agent',
      prompt: 'x',
      settings: { budgets: { max_output_tokens: 5001 } },
    }),
  });
  expect(above.status).toBe(403);
  expect(((await above.json()) as { error: Rec }).error).toEqual({
    code: 'forbidden',
    message: "max_output_tokens 5001 is above the server's maximum 5000 (limits.maxOutputTokens)",
    path: '$.settings.budgets.max_output_tokens',
  });
});
