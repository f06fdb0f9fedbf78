/**
 * Writes a second CLI test database by a REAL native tool-calling run: @ccagent/agent's native strategy calling the
 * model through the real `ollama` client against the scripted fake Ollama server, a real Engine and the SQLite store.
 * The step log it leaves is what the agent really writes (tools as `{name, description, parameters}`), so renderer
 * tests read the shapes the product produces instead of a hand-made fixture.
 */
import { Engine, type CommandOutcome, type JsonValue, type Task, type ToolExecutor } from '@ccagent/engine';
import { createNativeToolStrategy } from '@ccagent/agent';
import { OllamaChatModel } from '@ccagent/models';
import { openSqliteStore } from '@ccagent/store';
import { startFakeOllama } from '@ccagent/testkit';
import { CLIENT_ID, CORE_COMMANDS, FIXTURE_T0 } from './fixture-db.js';

/** The native task's id. */
export const NATIVE_TASK_ID = '5a1d0c3e-7b2f-4e9a-8c6d-1f0e2d3c4b05';
/** The native loop's model. */
export const NATIVE_MODEL = 'qwen2.5:7b-instruct';
/** What the model answers last: the task's final text. */
export const NATIVE_FINAL = 'startup.lua has 3 lines; the last one starts the farm loop.';

/** Runs one native task to completion into a new database at `path`. */
export async function writeNativeFixtureDb(path: string): Promise<Task> {
  const fake = await startFakeOllama({ now: () => new Date(FIXTURE_T0) });
  fake.script(NATIVE_MODEL, [
    { content: '', toolCalls: [{ name: 'fs_read', arguments: { path: 'startup.lua' } }] },
    { content: '', toolCalls: [{ name: 'fs_list', arguments: { path: '/' } }] },
    { content: NATIVE_FINAL },
  ]);
  const model = new OllamaChatModel({ host: fake.url, retry: { retries: 0 }, timeoutMs: 10_000 });
  const store = openSqliteStore({ path });
  const files: Record<string, string> = { 'startup.lua': 'print("farm")\nsleep(1)\nshell.run("farm")\n' };
  const computer: ToolExecutor = {
    listCommands: () => CORE_COMMANDS,
    execute: (call): Promise<CommandOutcome> => {
      const a = call.args as Record<string, JsonValue>;
      if (call.command === 'fs_read') {
        const content = files[String(a.path)] ?? '';
        return Promise.resolve({ ok: true, result: { path: String(a.path), content } });
      }
      return Promise.resolve({ ok: true, result: { path: '/', entries: Object.keys(files) } });
    },
  };
  const engine = new Engine({
    store,
    strategies: { native_job: createNativeToolStrategy({ model: { model, name: NATIVE_MODEL } }) },
    executor: computer,
    tickIntervalMs: 0,
  });
  try {
    const done = new Promise<Task>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('native fixture task did not settle')), 20_000);
      engine.on('taskUpdated', ({ task }) => {
        if (task.id === NATIVE_TASK_ID && ['completed', 'failed', 'cancelled'].includes(task.status)) {
          clearTimeout(timer);
          resolve(task);
        }
      });
    });
    await store.upsertClient({
      clientId: CLIENT_ID,
      commands: CORE_COMMANDS,
      connected: true,
      seenAt: FIXTURE_T0,
      clientVersion: '0.1.0',
    });
    await engine.start();
    await engine.createTask({
      id: NATIVE_TASK_ID,
      kind: 'native_job',
      prompt: 'How many lines does startup.lua have, and what does its last line do?',
      clientId: CLIENT_ID,
      allowedCommands: ['fs_read', 'fs_list'],
    });
    return await done;
  } finally {
    await engine.stop();
    await store.close();
    await fake.close();
  }
}
