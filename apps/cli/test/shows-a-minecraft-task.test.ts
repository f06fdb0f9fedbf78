// `ccagent tasks show` of a minecraft_agent task, on the SQLite file of a REAL run: @ccagent/minecraft's agent
// (mod endpoint, strategy, action executor) with a real Engine and store, the real ollama client against the fake
// Ollama server, and a mod (ModClient, the bridge's client) whose game is scripted: the first `place` fails, so the
// log has a plan, actions, results, a failure, a re-plan and state snapshots. A person reading the output must be
// able to tell what the model planned, what the player did, what came back and where the player was.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  Engine,
  systemClock,
  TaskOperations,
  type CommandOutcome,
  type Task,
  type ToolExecutor,
} from '@ccagent/engine';
import {
  createMinecraftAgent,
  minecraftTaskKinds,
  ModClient,
  type Action,
  type PlayerState,
} from '@ccagent/minecraft';
import { openSqliteStore } from '@ccagent/store';
import { startFakeOllama, type FakeChatRequest, type FakeReply } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { runCli } from './support/run-cli.js';

const MODEL = 'mc-planner';
let dir: string;
let db: string;
let task: Task;

const PLAN = {
  actions: [
    { type: 'goto', x: 10, y: 64, z: 5 },
    { type: 'place', block: 'stone', x: 10, y: 70, z: 5 },
  ],
};
const REPLAN = {
  actions: [
    { type: 'place', block: 'stone', x: 10, y: 64, z: 6 },
    { type: 'chat', message: 'placed it lower' },
  ],
};

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'ccagent-cli-mc-'));
  db = path.join(dir, 'mc.db');
  const fake = await startFakeOllama();
  fake.script(MODEL, (req: FakeChatRequest): FakeReply => {
    const text = (req.body['messages'] as Array<{ content: string }>).map((m) => m.content).join('\n');
    return { json: /did not work out/.test(text) ? REPLAN : PLAN };
  });
  const mc = createMinecraftAgent({ port: 0, ollamaUrl: fake.url });
  const url = await mc.start();
  let state: PlayerState = {
    position: { x: 0.5, y: 64, z: 0.5 },
    health: 20,
    hunger: 18,
    saturation: 5,
    inventory: [{ slot: 36, item: 'stone', count: 12 }],
    dimension: 'overworld',
    gameMode: 'survival',
  };
  const mod = new ModClient({
    url,
    instanceId: 'Bot',
    runner: {
      state: () => state,
      run: (a: Action) => {
        if (a.type === 'goto') {
          // This world's plans walk by coordinates (a goto by target would keep the player where it is).
          const { x, y, z } = state.position;
          state = { ...state, position: { x: a.x ?? x, y: a.y ?? y, z: a.z ?? z } };
          return Promise.resolve({ ok: true, result: { arrived: true } });
        }
        if (a.type === 'place' && a.y > 64) {
          return Promise.resolve({ ok: false, error: `no solid block next to ${a.x} ${a.y} ${a.z}` });
        }
        return Promise.resolve({ ok: true, result: { done: a.type } });
      },
    },
  });
  await mod.start();
  const store = openSqliteStore({ path: db });
  const none: ToolExecutor = {
    execute: (): Promise<CommandOutcome> =>
      Promise.resolve({ ok: false, error: { code: 'unknown_command', message: 'no CC computer here' } }),
  };
  const engine = new Engine({
    store,
    strategies: mc.withStrategy(() => undefined),
    executor: mc.routeExecutor(none),
    tickIntervalMs: 0,
  });
  try {
    await engine.start();
    const done = new Promise<Task>((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('the minecraft task did not settle')), 30_000);
      engine.on('taskUpdated', ({ task: t }) => {
        if (['completed', 'failed', 'cancelled'].includes(t.status)) {
          clearTimeout(timer);
          resolve(t);
        }
      });
    });
    const ops = new TaskOperations({
      engine,
      store,
      kinds: minecraftTaskKinds({
        limits: {
          maxSteps: 100,
          maxToolCalls: 200,
          maxModelCalls: 50,
          maxPromptTokens: 100_000,
          maxOutputTokens: 50_000,
          maxDeadlineMs: 7_200_000,
          maxNumCtx: 32_768,
          maxTemperature: 1,
          models: [],
        },
        providers: ['ollama'],
      }),
      clock: systemClock,
    });
    const created = await mc.createTask(engine, ops, {
      prompt: 'place a stone block next to the tree and say so',
      settings: { instanceId: 'Bot', model: MODEL, mode: 'low-level' },
    });
    if (!created.ok) throw new Error(created.message);
    task = await done;
  } finally {
    mod.close();
    await engine.stop();
    await store.close();
    await mc.close();
    await fake.close();
  }
}, 60_000);

afterAll(() => {
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('tasks show of a minecraft_agent task', () => {
  it('shows the plan, each action with its result, the failure, the re-plan and the player state readably (guards against a step log only --json can read)', async () => {
    expect(task.status).toBe('completed');
    const r = await runCli(['--db', db, 'tasks', 'show', task.id]);
    expect(r).toMatchObject({ code: 0, stderr: '' });
    const out = r.stdout;
    // The plan: the model call with its messages and the JSON it answered, then the plan taken.
    expect(out).toMatch(/#\d+ {2}mc_plan {2}mc-planner {2}\d\d:\d\d:\d\d {2}took/);
    expect(out).toContain('TASK: place a stone block next to the tree and say so');
    expect(out).toContain(JSON.stringify(PLAN));
    expect(out).toMatch(/mc_plan_accepted[\s\S]*plan: 1\n\s+mode: low-level/);
    // Each action as a decision and its result, the failure with the mod's words.
    expect(out.match(/decision: tool_call minecraft_action/g)).toHaveLength(4);
    expect(out).toContain('tool result: failed\n      action_failed: no solid block next to 10 70 5');
    expect(out).toMatch(/tool result: ok\n\s+\{"done":"chat"\}/);
    // The re-plan: why, and the model call that made the new plan.
    expect(out).toContain(
      'problem: action {"type":"place","block":"stone","x":10,"y":70,"z":5} failed: no solid block next to 10 70 5',
    );
    expect(out).toMatch(/#\d+ {2}mc_replan {2}mc-planner/);
    expect(out).toContain(JSON.stringify(REPLAN));
    // The player's state at each step, said as the player's state (not as a command's result).
    expect(out.match(/player state: Bot connected/g)?.length).toBeGreaterThanOrEqual(4);
    expect(out).toContain('position: {"x":10,"y":64,"z":5}');
    expect(out).not.toMatch(/mc_state {2}\S+\n\s+tool result/);
    expect(out).toContain('replans: 1');
  });
});
