// The native loop resumed from durable state through the real stack (Engine + in-memory store, the real `ollama`
// client against the fake Ollama server, the Lua tool executor): which calls of the last model turn were handed out
// follows from the task history, so a restart in the middle of a turn, a memory written by an earlier build
// (version 1, with per-call statuses) and a memory that had to start afresh all continue without repeating or
// skipping a call, and the model sees every result next to the call that produced it.
import { mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  Engine,
  InMemoryTaskStore,
  type CommandCallRecord,
  type HistoryEntryBody,
  type JsonValue,
  type Task,
} from '@ccagent/engine';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { createNativeToolStrategy } from '../src/index.js';
import { createLuaToolExecutor, startModels } from '@ccagent/agent/testing';

let models: Awaited<ReturnType<typeof startModels>>;
let root: string;
beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

type WireMessage = { role: string; content: string; tool_name?: string };
const ALLOWED = ['fs_read', 'fs_write', 'fs_list', 'run_program', 'shell_exec'];

/** An engine over `store` running the native loop with model `name`; `settled` resolves when task `id` ends. */
async function startEngine(store: InMemoryTaskStore, name: string, id: string) {
  const executor = createLuaToolExecutor({ root });
  const engine = new Engine({
    store,
    strategies: { native: createNativeToolStrategy({ model: models.role(name) }) },
    executor,
    tickIntervalMs: 0,
  });
  const dispatched: CommandCallRecord[] = [];
  engine.on('commandDispatched', ({ call }) => dispatched.push(call));
  let timer: NodeJS.Timeout | undefined;
  const settled = new Promise<Task>((resolve, reject) => {
    timer = setTimeout(() => reject(new Error('the task did not finish within 15 s')), 15_000);
    engine.on('taskUpdated', ({ task }) => {
      if (task.id !== id || !['completed', 'failed', 'cancelled'].includes(task.status)) return;
      clearTimeout(timer);
      resolve(task);
    });
  });
  settled.catch(() => {});
  await engine.start();
  const stop = async () => {
    clearTimeout(timer);
    await engine.stop();
  };
  return { engine, executor, dispatched, settled, stop };
}

/** A task row as stored by an earlier run: `running`, with `memory`, `toolCalls` calls made, `steps` steps done. */
function storedTask(id: string, memory: JsonValue, toolCalls: number, steps: number): Task {
  return {
    id,
    kind: 'native',
    status: 'running',
    clientId: null,
    prompt: 'Look around.',
    allowedCommands: ALLOWED,
    memory,
    metadata: {},
    budgets: {},
    counters: { steps, toolCalls, questions: 0 },
    createdAt: 1,
    updatedAt: 1,
  };
}

/** History of calls that completed, as the engine writes them (one step each). */
function completed(id: string, calls: Array<[string, JsonValue, JsonValue]>) {
  return calls.flatMap(
    ([command, args, result], i): Array<HistoryEntryBody & { step: number; at: number }> => [
      { type: 'tool_call', callId: `${id}:call:${i + 1}`, command, args, step: i + 1, at: 1 },
      {
        type: 'tool_result',
        callId: `${id}:call:${i + 1}`,
        command,
        outcome: { ok: true, result },
        step: i + 1,
        at: 1,
      },
    ],
  );
}

const toolMessages = (name: string, request: number) =>
  (models.fake.chatRequests(name)[request]?.body as { messages: WireMessage[] }).messages
    .filter((m) => m.role === 'tool')
    .map((m) => ({ tool: m.tool_name, content: JSON.parse(m.content) as unknown }));

describe('native loop resumed from durable state', () => {
  it('a restart in the middle of a turn re-sends the pending call and goes on with the next one (guards against a restart repeating or skipping a call of the turn)', async () => {
    root = await mkdtemp(path.join(tmpdir(), 'ccagent-native-resume-'));
    await writeFile(path.join(root, 'spin.lua'), 'while true do end\n');
    const name = 'native-restart';
    models.fake.script(name, [
      {
        content: '',
        toolCalls: [
          { name: 'fs_list', arguments: { path: '/' } },
          { name: 'fs_read', arguments: { path: 'spin.lua' } },
          { name: 'run_program', arguments: { path: 'spin.lua' } },
          { name: 'fs_read', arguments: { path: 'spin.lua' } },
        ],
      },
      'Looked around.',
    ]);
    const store = new InMemoryTaskStore();
    const id = 'native-restart-1';
    const first = await startEngine(store, name, id);
    const spinning = new Promise<void>((resolve) =>
      first.engine.on('commandDispatched', ({ call }) => {
        if (call.command === 'run_program') resolve();
      }),
    );
    await first.engine.createTask({ id, kind: 'native', prompt: 'Look around.', allowedCommands: ALLOWED });
    await spinning;
    await first.stop();
    expect((await store.getTask(id))?.status).toBe('waiting_for_command');
    expect(first.executor.calls.map((c) => c.command)).toEqual(['fs_list', 'fs_read']);

    // The program is fixed while the orchestrator is down; the pending call runs it when re-sent.
    await writeFile(path.join(root, 'spin.lua'), 'print("done")\n');
    const second = await startEngine(store, name, id);
    const task = await second.settled;
    await second.stop();
    expect(task.status).toBe('completed');
    expect(second.dispatched.map((c) => [c.callId, c.command, c.dispatchCount])).toEqual([
      [`${id}:call:3`, 'run_program', 2],
      [`${id}:call:4`, 'fs_read', 1],
    ]);
    expect(second.executor.calls.map((c) => c.command)).toEqual(['run_program', 'fs_read']);
    const tools = toolMessages(name, 1);
    expect(tools.map((t) => t.tool)).toEqual(['fs_list', 'fs_read', 'run_program', 'fs_read']);
    // The first read saw the old program, the one after the run the fixed one: each result is its own call's.
    expect(tools[1]?.content).toMatchObject({ content: 'while true do end\n' });
    expect(tools[2]?.content).toMatchObject({ ok: true, output: 'done' });
    expect(tools[3]?.content).toMatchObject({ content: 'print("done")\n' });
    expect(models.fake.chatRequests(name)).toHaveLength(2);
  });

  it('resumes a version 1 memory written by an earlier build: its dispatched calls keep their results, its queued calls run once each (guards against an upgrade breaking stored tasks)', async () => {
    root = await mkdtemp(path.join(tmpdir(), 'ccagent-native-v1-'));
    await writeFile(path.join(root, 'hello.lua'), 'print("hi")\n');
    const name = 'native-v1';
    models.fake.script(name, ['Done.']);
    const id = 'native-v1-1';
    const v1: JsonValue = {
      v: 1,
      strategy: 'native',
      turns: [
        {
          content: 'First, the root.',
          calls: [{ name: 'fs_list', arguments: { path: '/' }, status: 'dispatched' }],
        },
        {
          content: 'Now the files.',
          calls: [
            { name: 'fs_list', arguments: { path: 'a' }, status: 'dispatched' },
            { name: 'cat', arguments: {}, status: 'rejected', error: 'unknown tool "cat"' },
            { name: 'fs_read', arguments: { path: 'hello.lua' }, status: 'queued' },
            { name: 'fs_list', arguments: { path: 'b' }, status: 'queued' },
          ],
        },
      ],
      modelFailures: 0,
    };
    const store = new InMemoryTaskStore();
    await store.commit({
      task: storedTask(id, v1, 2, 2),
      create: true,
      history: completed(id, [
        ['fs_list', { path: '/' }, { seeded: 1 }],
        ['fs_list', { path: 'a' }, { seeded: 2 }],
      ]),
    });
    const run = await startEngine(store, name, id);
    const task = await run.settled;
    await run.stop();
    expect(task.status).toBe('completed');
    expect(run.executor.calls.map((c) => [c.command, c.args])).toEqual([
      ['fs_read', { path: 'hello.lua' }],
      ['fs_list', { path: 'b' }],
    ]);
    const request = models.fake.chatRequests(name)[0]?.body as { messages: WireMessage[] };
    expect(request.messages.map((m) => m.tool_name ?? m.role)).toEqual([
      'system',
      'user',
      'assistant',
      'fs_list',
      'assistant',
      'fs_list',
      'cat',
      'fs_read',
      'fs_list',
    ]);
    const tools = toolMessages(name, 0);
    expect(tools.slice(0, 3).map((t) => t.content)).toEqual([
      { seeded: 1 },
      { seeded: 2 },
      { error: 'unknown tool "cat"' },
    ]);
    expect(tools[3]?.content).toMatchObject({ content: 'print("hi")\n' });
    // The model step wrote the memory anew, as version 2.
    expect((await store.getTask(id))?.memory).toMatchObject({ v: 2, turns: [{}, {}, { content: 'Done.' }] });
  });

  it('a memory that starts afresh over an existing history counts its calls from there (guards against old tool_call entries making the new turn skip calls)', async () => {
    root = await mkdtemp(path.join(tmpdir(), 'ccagent-native-fresh-'));
    await writeFile(path.join(root, 'hello.lua'), 'print("hi")\n');
    const name = 'native-fresh';
    models.fake.script(name, [
      {
        content: '',
        toolCalls: [
          { name: 'fs_read', arguments: { path: 'hello.lua' } },
          { name: 'fs_list', arguments: { path: '/' } },
        ],
      },
      'Done.',
    ]);
    const id = 'native-fresh-1';
    const store = new InMemoryTaskStore();
    await store.commit({
      task: storedTask(id, { v: 99, unreadable: true }, 2, 2),
      create: true,
      history: completed(id, [
        ['fs_list', { path: 'old' }, { seeded: 1 }],
        ['fs_list', { path: 'older' }, { seeded: 2 }],
      ]),
    });
    const run = await startEngine(store, name, id);
    const task = await run.settled;
    await run.stop();
    expect(task.status).toBe('completed');
    expect(run.executor.calls.map((c) => c.command)).toEqual(['fs_read', 'fs_list']);
    const tools = toolMessages(name, 1);
    expect(tools.map((t) => t.tool)).toEqual(['fs_read', 'fs_list']);
    expect(tools[0]?.content).toMatchObject({ content: 'print("hi")\n' });
  });
});
