// The minecraft_agent strategy's model requests as a model server's prompt cache sees them: the real Engine, the
// mod endpoint with a scripted mod over a real WebSocket, the real `ollama` client against the fake Ollama server
// (which models Ollama's prompt cache with the real Qwen tokenizer).
import { Engine, InMemoryTaskStore, type Task } from '@ccagent/engine';
import { OllamaChatModel } from '@ccagent/models';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { ModClient, type ActionRunner, type RunOutcome } from '../bridge/mod-client.js';
import { MinecraftActionExecutor } from '../endpoint/action-executor.js';
import { MinecraftEndpoint } from '../endpoint/mc-endpoint.js';
import type { Action, PlayerState } from '../protocol/messages.js';
import { createMinecraftStrategy, type MinecraftStrategyOptions } from './minecraft-strategy.js';
import { defaultModelFactory, MINECRAFT_TASK_KIND } from './settings.js';

const MODEL = 'qwen3:8b';

type Body = { messages: { role: string; content: string }[] };

/** goto moves the player, place fails at x = 3 (no support block there), everything else succeeds. */
class World implements ActionRunner {
  position = { x: 0, y: 64, z: 0 };
  run(action: Action): Promise<RunOutcome> {
    if (action.type === 'place' && action.x === 3)
      return Promise.resolve({ ok: false, error: 'no solid block next to 3 64 0' });
    if (action.type === 'goto' && action.x !== undefined && action.y !== undefined && action.z !== undefined)
      this.position = { x: action.x + 0.5, y: action.y, z: action.z + 0.5 };
    return Promise.resolve({ ok: true, result: `${action.type} done` });
  }
  state(): PlayerState {
    return {
      position: this.position,
      health: 20,
      hunger: 20,
      saturation: 5,
      inventory: [{ slot: 36, item: 'cobblestone', count: 8 }],
      dimension: 'overworld',
      gameMode: 'survival',
    };
  }
}

/** A hybrid plan with a goal to expand, whose place fails, then a re-plan that works. */
const REPLIES = [
  {
    json: {
      goals: [
        { goal: 'walk to the wall', actions: [{ type: 'goto', x: 2, y: 64, z: 0 }] },
        { goal: 'close the gap in the wall' },
      ],
    },
  },
  { json: { actions: [{ type: 'place', block: 'cobblestone', x: 3, y: 64, z: 0 }] } },
  {
    json: {
      goals: [
        {
          goal: 'close the gap from below',
          actions: [
            { type: 'place', block: 'cobblestone', x: 4, y: 63, z: 0 },
            { type: 'chat', message: 'gap closed' },
          ],
        },
      ],
    },
  },
];

let fake: FakeOllama | undefined;
let endpoint: MinecraftEndpoint | undefined;
let engine: Engine | undefined;
let mod: ModClient | undefined;

afterEach(() => teardown());

async function teardown(): Promise<void> {
  await engine?.stop();
  mod?.close();
  await endpoint?.close();
  await fake?.close();
  engine = undefined;
  mod = undefined;
  endpoint = undefined;
  fake = undefined;
}

async function play(
  options: Partial<MinecraftStrategyOptions> = {},
  around: { before?: (f: FakeOllama) => Promise<void>; after?: (f: FakeOllama) => Promise<void> } = {},
): Promise<{ task: Task; fake: FakeOllama }> {
  const f = await startFakeOllama({ tokenizer: 'auto' });
  fake = f;
  // The Minecraft requests get the scripted plans; any other request (a ComputerCraft planner's) a directive.
  let mc = 0;
  f.script(MODEL, (req) => {
    const first = (req.body as Body).messages[0]?.content ?? '';
    if (/^You control a Minecraft player/.test(first)) return REPLIES[mc++] ?? 'no more plans';
    return 'RUN\nPATH: a.lua';
  });
  const ep = new MinecraftEndpoint({ port: 0 });
  endpoint = ep;
  const { url } = await ep.start();
  mod = new ModClient({ url, instanceId: 'steve', runner: new World() });
  await mod.start();
  const e = new Engine({
    store: new InMemoryTaskStore(),
    strategies: {
      [MINECRAFT_TASK_KIND]: createMinecraftStrategy({
        states: ep,
        modelFor: defaultModelFactory(),
        ...options,
      }),
    },
    executor: new MinecraftActionExecutor(ep),
  });
  engine = e;
  await e.start();
  await around.before?.(f);
  const created = await e.createTask({
    kind: MINECRAFT_TASK_KIND,
    prompt: 'close the gap in the wall at 3 64 0',
    // No waiting for the state: the first plan is made before the mod reported one (its text says so).
    context: { instanceId: 'steve', model: MODEL, ollamaUrl: f.url, mode: 'hybrid', stateWaitMs: 0 },
  });
  const task = await new Promise<Task>((resolve) => {
    const done = ({ task: t }: { task: Task }): void => {
      if (t.id === created.id) resolve(t);
    };
    e.on('taskCompleted', done);
    e.on('taskFailed', done);
  });
  await around.after?.(f);
  return { task, fake: f };
}

describe('minecraft_agent prompt layout', () => {
  it('a plan, an expansion and a re-plan are one append-only conversation and the server evaluates only the new message (guards against every request rebuilt from the top)', async () => {
    const { task, fake: f } = await play();
    expect(task.status).toBe('completed');
    const reqs = f.chatRequests(MODEL);
    expect(reqs).toHaveLength(3);
    const bodies = reqs.map((r) => r.body as Body);
    expect(bodies[0]?.messages.map((m) => m.role)).toEqual(['system', 'user']);
    expect(bodies[0]?.messages[1]?.content).toMatch(/^TASK: close the gap/);
    for (let i = 1; i < bodies.length; i++) {
      const before = bodies[i - 1]?.messages ?? [];
      const now = bodies[i]?.messages ?? [];
      expect(now.slice(0, before.length)).toEqual(before);
      expect(now).toHaveLength(before.length + 2);
      expect(now[before.length]?.role).toBe('assistant');
      expect(JSON.parse(now[before.length]?.content ?? '')).toEqual(REPLIES[i - 1]?.json);
      const previous = reqs[i - 1]?.modelCall;
      expect(reqs[i]?.modelCall?.cachedTokens).toBeGreaterThanOrEqual(
        (previous?.promptTokens ?? 0) + (previous?.outputTokens ?? 0) - 2,
      );
    }
    // Each new message has the state and only the results since the message before, each said once and tersely:
    // the first state shown has the vitals, later ones only position and inventory while the vitals stay the same.
    expect(bodies[0]?.messages[1]?.content).toMatch(
      /CURRENT STATE \(from the game\):\nno state reported yet/,
    );
    const expansion = bodies[1]?.messages.at(-1)?.content ?? '';
    expect(expansion).toMatch(
      /^CURRENT STATE \(from the game\):\nposition 2\.5 64\.0 0\.5; inventory: cobblestone x8; health 20, hunger 20, saturation 5; dimension overworld, game mode survival\n\n/,
    );
    expect(expansion).toMatch(/RESULTS SINCE THE LAST MESSAGE:\n- goto 2 64 0 → done \(goto done\)\n/);
    expect(expansion).toMatch(/GOAL NOW: close the gap in the wall\nTurn this goal into actions\.$/);
    const replan = bodies[2]?.messages.at(-1)?.content ?? '';
    expect(replan).toMatch(
      /RESULTS SINCE THE LAST MESSAGE:\n- place cobblestone at 3 64 0 → FAILED: no solid block next to 3 64 0\n/,
    );
    expect(replan).toMatch(
      /^CURRENT STATE \(from the game\):\nposition 2\.5 64\.0 0\.5; inventory: cobblestone x8\n\n/,
    );
    expect(replan).not.toContain('goto 2 64 0');
    expect(replan).toMatch(
      /The plan did not work out: the last action \(place cobblestone at 3 64 0\) failed, see its result above\.\nMake a new plan for what is left of the task\.$/,
    );
    // The error is in the message once, not again in the re-plan note.
    expect(replan.split('no solid block next to 3 64 0')).toHaveLength(2);
    // The re-plan rules are in the system message, which is the same in every request.
    expect(bodies[2]?.messages[0]?.content).toMatch(
      /When an action of a plan fails[\s\S]*try a\ndifferent way/,
    );
    expect((task.result as { replans: number }).replans).toBe(1);
  });

  it('restarts an outgrown conversation from one message with the task, the state and the results, and counts it (guards against a conversation passing the context)', async () => {
    const { task, fake: f } = await play({ conversationChars: 800 });
    expect(task.status).toBe('completed');
    const bodies = f.chatRequests(MODEL).map((r) => r.body as Body);
    expect(bodies.map((b) => b.messages.length)).toEqual([2, 4, 2]);
    expect(bodies[2]?.messages[1]?.content).toMatch(
      /^TASK: close the gap[\s\S]*RESULTS SO FAR:\n- goto 2 64 0 → done \(goto done\)\n- place cobblestone at 3 64 0 → FAILED/,
    );
    const steps = await engine?.getSteps(task.id);
    const layouts = (steps ?? [])
      .filter((s) => s.kind.startsWith('mc_') && s.model !== undefined)
      .map((s) => (s.input as { layout?: unknown }).layout);
    expect(layouts).toEqual([
      { conversation: true, turn: 1, restarted: false, restarts: 0 },
      { conversation: true, turn: 2, restarted: false, restarts: 0 },
      { conversation: true, turn: 1, restarted: true, restarts: 1 },
    ]);
  });

  it('the single layout still sends one rebuilt message per request (guards against the baseline changing under the bench)', async () => {
    const { task, fake: f } = await play({ layout: 'single' });
    expect(task.status).toBe('completed');
    const bodies = f.chatRequests(MODEL).map((r) => r.body as Body);
    expect(bodies.map((b) => b.messages.map((m) => m.role))).toEqual([['user'], ['user'], ['user', 'user']]);
    expect(bodies[1]?.messages[0]?.content).toMatch(
      /^You control a Minecraft player[\s\S]*GOAL NOW: close the gap/,
    );
  });

  it('asks for the num_ctx the composition root gives its model, so a ComputerCraft role on the same model is not reloaded between them (guards against every switch of task kind reloading the model)', async () => {
    // A planner request of a ComputerCraft task (16k context, as the orchestrator's default roles ask), then a
    // Minecraft task on the same model and server, then the planner again.
    const plannerCall = async (f: FakeOllama): Promise<void> => {
      const planner = new OllamaChatModel({ host: f.url, retry: { retries: 0 } });
      await planner.chat({
        model: MODEL,
        messages: [
          { role: 'system', content: 'You are the PLANNER.' },
          { role: 'user', content: 'Fix a.lua.' },
        ],
        options: { temperature: 0.2, numCtx: 16384 },
        stream: false,
      });
    };
    const around = { before: plannerCall, after: plannerCall };

    const unset = await play({}, around);
    expect(unset.task.status).toBe('completed');
    expect(unset.fake.modelStats(MODEL).loads).toBe(3);
    await teardown();

    const given = await play({ numCtxFor: (s) => (s.model === MODEL ? 16384 : undefined) }, around);
    expect(given.task.status).toBe('completed');
    expect(given.fake.modelStats(MODEL)).toMatchObject({ requests: 5, loads: 1 });
    const options = given.fake
      .chatRequests(MODEL)
      .map((r) => (r.body as { options?: { num_ctx?: number } }).options?.num_ctx);
    expect(options).toEqual([16384, 16384, 16384, 16384, 16384]);
  });
});
