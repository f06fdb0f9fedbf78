// The Minecraft API's task operations on the real engine and the in-memory store: a minecraft_agent task is created
// and retried by the engine's TaskOperations (the `minecraft_agent` kind of minecraftTaskKinds), so it gets the same
// rules as every task — run budgets stored, the input limits, a retry that reopens the same task with fresh budgets
// and refuses one in another state with `conflict`.
import {
  Engine,
  InMemoryTaskStore,
  TaskOperations,
  systemClock,
  TASK_METADATA_KEYS,
  type Decision,
  type Task,
  type TaskKindCatalogue,
} from '@ccagent/engine';
import { afterEach, describe, expect, it } from 'vitest';
import { MINECRAFT_TASK_KIND } from '../agent/settings.js';
import { createMinecraftAgent, minecraftTaskKinds, type MinecraftAgent } from './minecraft-agent.js';

const LIMITS: TaskKindCatalogue['limits'] = {
  maxSteps: 100,
  maxToolCalls: 200,
  maxModelCalls: 50,
  maxPromptTokens: 10_000,
  maxOutputTokens: 5_000,
  maxDeadlineMs: 7_200_000,
  maxNumCtx: 32_768,
  maxTemperature: 1,
  models: ['qwen3:8b'],
};

let engine: Engine;
let mc: MinecraftAgent;
let ops: TaskOperations;
let store: InMemoryTaskStore;

/** The engine with a stand-in for the minecraft_agent strategy that fails each task at once (no model, no game). */
async function setup(): Promise<void> {
  store = new InMemoryTaskStore();
  mc = createMinecraftAgent({ port: 0 });
  const failing = {
    decide: (task: Task): Promise<Decision> =>
      Promise.resolve(
        task.prompt === 'sleep'
          ? { type: 'continue', wakeAfterMs: 3_600_000 }
          : { type: 'fail', error: { code: 'action_failed', message: 'the goto did not arrive' } },
      ),
  };
  engine = new Engine({ store, strategies: { [MINECRAFT_TASK_KIND]: failing, other: failing } });
  await engine.start();
  ops = new TaskOperations({
    engine,
    store,
    kinds: minecraftTaskKinds({ limits: LIMITS, providers: ['ollama'] }),
    clock: systemClock,
  });
}

afterEach(async () => {
  await engine?.stop();
});

async function ended(id: string): Promise<Task> {
  await expect
    .poll(async () => (await engine.getTask(id))?.status, { timeout: 5_000 })
    .toMatch(/failed|cancelled|completed/);
  return (await engine.getTask(id)) as Task;
}

const input = { prompt: 'walk to the tree', settings: { instanceId: 'steve', model: 'qwen3:8b' } };

describe('Minecraft tasks through TaskOperations', () => {
  it('creates a minecraft_agent task with its settings as context, the instance and the run budgets in metadata', async () => {
    await setup();
    const r = await mc.createTask(engine, ops, input);
    expect(r.ok).toBe(true);
    const task = r.ok ? await store.getTask(r.value.id) : undefined;
    expect(task).toMatchObject({
      kind: MINECRAFT_TASK_KIND,
      clientId: null,
      allowedCommands: ['minecraft_action'],
      context: { instanceId: 'steve', model: 'qwen3:8b', mode: 'hybrid' },
      metadata: { instanceId: 'steve', [TASK_METADATA_KEYS.runBudgets]: {} },
    });
  });

  it('refuses bad settings and a prompt over the input limits with the field, and stores nothing', async () => {
    await setup();
    const bad = await mc.createTask(engine, ops, {
      ...input,
      settings: { ...input.settings, mode: 'sideways' },
    });
    expect(bad).toMatchObject({ ok: false, code: 'invalid_input', path: ['settings', 'mode'] });
    const before = (await store.listTasks()).length;
    const limited = new Engine({
      store,
      strategies: {},
      inputLimits: { maxPromptBytes: 100 },
    });
    const limitedOps = new TaskOperations({
      engine: limited,
      store,
      kinds: minecraftTaskKinds({ limits: LIMITS, providers: ['ollama'] }),
      clock: systemClock,
    });
    const over = await mc.createTask(engine, limitedOps, { ...input, prompt: 'y'.repeat(101) });
    expect(over).toMatchObject({ ok: false, code: 'invalid_input', path: ['prompt'] });
    expect(await store.listTasks()).toHaveLength(before);
  });

  it('retries a failed task by reopening it (same id, fresh run, a resume in its history); refuses a task that has not ended with conflict and another kind with not_found', async () => {
    await setup();
    const r = await mc.createTask(engine, ops, input);
    const id = r.ok ? r.value.id : '';
    expect((await ended(id)).status).toBe('failed');
    const retried = await mc.retryTask(engine, ops, id);
    expect(retried).toMatchObject({ ok: true, value: { id } });
    expect(await store.listTasks()).toHaveLength(1);
    const history = await store.getHistory(id);
    expect(history.some((e) => e.type === 'resume' && e.reason === 'retry')).toBe(true);
    expect((await ended(id)).status).toBe('failed');

    const other = await engine.createTask({ kind: 'other', prompt: 'x' });
    expect(await mc.retryTask(engine, ops, other.id)).toMatchObject({ ok: false, code: 'not_found' });
    expect(await mc.retryTask(engine, ops, 'no-such-task')).toMatchObject({ ok: false, code: 'not_found' });
    // A task that has not ended (asleep for an hour) is not retried, and stays as it was.
    const sleeping = await mc.createTask(engine, ops, { ...input, prompt: 'sleep' });
    const sid = sleeping.ok ? sleeping.value.id : '';
    await expect.poll(async () => (await store.getTask(sid))?.counters.steps).toBeGreaterThan(0);
    const before = await store.getTask(sid);
    const refused = await mc.retryTask(engine, ops, sid);
    expect(refused).toMatchObject({ ok: false, code: 'conflict' });
    expect(await store.getTask(sid)).toEqual(before);
  });
});
