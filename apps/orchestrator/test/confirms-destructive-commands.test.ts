/**
 * Destructive commands of a kind with a `confirm` setting wait for a person's yes: the built server as a child
 * process, a temp SQLite file, the fake model behind the real native strategy, and a real `ws` client. A yes runs the
 * call; a no is the call's result the model sees (and the command never reaches the computer); a kill -9 while the
 * question is open leaves it open, and nothing is sent before the yes.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { serve, type Served } from './support/spawn.js';
import { TestClient, type Msg } from './support/ws-test-client.js';

let dir: string;
let fake: FakeOllama;
const servers: Served[] = [];
const clients: TestClient[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-confirm-'));
  fake = await startFakeOllama();
});
afterEach(async () => {
  for (const c of clients.splice(0)) c.terminate();
  for (const s of servers.splice(0)) await s.kill9();
  await fake.close();
  rmSync(dir, { recursive: true, force: true });
});

async function start(): Promise<Served> {
  const cfg = path.join(dir, 'ccagent.config.json');
  writeFileSync(
    cfg,
    JSON.stringify({
      taskKinds: {
        careful: {
          strategy: 'native',
          confirm: { sandbox: '/work', shellPatterns: ['^\\s*(rm|delete)\\b'] },
        },
      },
    }),
  );
  const s = await serve([
    '--port',
    '0',
    '--db',
    path.join(dir, 'ccagent.db'),
    '--ollama-url',
    fake.url,
    '--config',
    cfg,
    '--log-level',
    'warn',
  ]);
  servers.push(s);
  return s;
}

const COMMANDS = ['fs_write', 'fs_delete', 'shell_exec'].map((name) => ({ name }));

/** A computer that answers every command_call with success. */
async function computer(url: string): Promise<TestClient> {
  const c = await TestClient.connect(url, 'turtle-1', { commands: COMMANDS });
  clients.push(c);
  c.ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8')) as Msg;
    if (m.type !== 'command_call') return;
    c.send({
      type: 'command_result',
      task_id: m.task_id,
      call_id: m.call_id,
      ok: true,
      result: { ok: true },
    });
  });
  return c;
}

async function createTask(c: TestClient, prompt: string): Promise<string> {
  c.send({
    type: 'create_task',
    request_id: 'r1',
    task_kind: 'careful',
    client_id: 'turtle-1',
    prompt,
    allowed_commands: [],
  });
  return String((await c.waitFor('task_created', { request_id: 'r1' })).task_id);
}

interface Detail {
  task: { status: string; result?: unknown };
  command_calls: Array<{ command: string; status: string }>;
  questions?: Array<{ question_id: string; question: string; answer?: string }>;
}

async function detail(url: string, id: string): Promise<Detail> {
  return (await (await fetch(`${url}/api/tasks/${id}`)).json()) as Detail;
}

const sent = (c: TestClient, command: string) =>
  c.messages.filter((m) => m.type === 'command_call' && m.command === command);

describe('confirmation of destructive commands (built server)', () => {
  it('holds a delete outside the sandbox until the computer user says yes, then runs it', async () => {
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'fs_delete', arguments: { path: '/startup.lua' } }] },
      'Deleted /startup.lua.',
    ]);
    const s = await start();
    const c = await computer(s.url);
    const taskId = await createTask(c, 'delete the startup file');
    const ask = await c.waitFor('ask_user', { task_id: taskId }, 20_000);
    expect(String(ask.question)).toContain('fs_delete');
    expect(String(ask.question)).toContain('outside the task');
    await new Promise((r) => setTimeout(r, 300));
    expect(sent(c, 'fs_delete')).toHaveLength(0);
    c.send({ type: 'user_answer', task_id: taskId, question_id: ask.question_id, text: 'yes' });
    await c.waitFor('task_completed', { task_id: taskId }, 20_000);
    expect(sent(c, 'fs_delete').map((m) => m.args)).toEqual([{ path: '/startup.lua' }]);
    const d = await detail(s.url, taskId);
    expect(d.command_calls).toEqual([expect.objectContaining({ command: 'fs_delete', status: 'succeeded' })]);
  });

  it('sends a refusal back to the model as the result: the command never runs and the task goes on (a write inside the sandbox needs no yes)', async () => {
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'shell_exec', arguments: { command: 'rm /rom/../disk' } }] },
      { toolCalls: [{ name: 'fs_write', arguments: { path: '/work/notes.txt', content: 'kept' } }] },
      'I left the disk alone and wrote a note instead.',
    ]);
    const s = await start();
    const c = await computer(s.url);
    const taskId = await createTask(c, 'clean up');
    const ask = await c.waitFor('ask_user', { task_id: taskId }, 20_000);
    expect(String(ask.question)).toContain('shell_exec');
    c.send({ type: 'user_answer', task_id: taskId, question_id: ask.question_id, text: 'no, not the disk' });
    const done = await c.waitFor('task_completed', { task_id: taskId }, 20_000);
    expect(done.result).toMatchObject({ message: 'I left the disk alone and wrote a note instead.' });
    expect(sent(c, 'shell_exec')).toHaveLength(0);
    expect(sent(c, 'fs_write')).toHaveLength(1);
    // The model's second request carries the refusal as the shell_exec call's result.
    const second = fake.chatRequests('qwen3:8b')[1];
    const text = JSON.stringify(second?.body);
    expect(text).toContain('refused');
    expect(text).toContain('no, not the disk');
    const d = await detail(s.url, taskId);
    expect(d.command_calls.map((x) => [x.command, x.status])).toEqual([
      ['shell_exec', 'failed'],
      ['fs_write', 'succeeded'],
    ]);
  });

  it('keeps the question open across a kill -9: nothing is sent after the restart until the yes (answered over HTTP)', async () => {
    fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'fs_write', arguments: { path: '/startup.lua', content: 'evil()' } }] },
      'Replaced startup.lua.',
    ]);
    const s1 = await start();
    const c1 = await computer(s1.url);
    const taskId = await createTask(c1, 'replace startup');
    await c1.waitFor('ask_user', { task_id: taskId }, 20_000);
    await s1.kill9();
    await c1.whenClosed();

    const s2 = await start();
    const c2 = await computer(s2.url);
    // The reconnecting computer is asked again (its question is still open) and gets no call.
    const ask = await c2.waitFor('ask_user', { task_id: taskId }, 10_000);
    await new Promise((r) => setTimeout(r, 1000));
    expect(sent(c2, 'fs_write')).toHaveLength(0);
    const before = await detail(s2.url, taskId);
    expect(before.task.status).toBe('waiting_for_user');
    expect(before.command_calls).toEqual([
      expect.objectContaining({ command: 'fs_write', status: 'awaiting_confirmation' }),
    ]);
    const res = await fetch(`${s2.url}/api/tasks/${taskId}/answer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ question_id: ask.question_id, text: 'yes' }),
    });
    expect(res.status).toBe(200);
    await c2.waitFor('task_completed', { task_id: taskId }, 20_000);
    expect(sent(c2, 'fs_write').map((m) => m.args)).toEqual([{ path: '/startup.lua', content: 'evil()' }]);
  });
});
