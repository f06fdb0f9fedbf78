import { Engine, InMemoryTaskStore, MODEL_REQUEST_KIND, type Task } from '@ccagent/engine';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { MinecraftActionExecutor } from '../endpoint/action-executor.js';
import { MinecraftEndpoint } from '../endpoint/mc-endpoint.js';
import { ModClient, type ActionRunner, type RunOutcome } from '../bridge/mod-client.js';
import type { Action, PlayerState } from '../protocol/messages.js';
import { createMinecraftStrategy } from './minecraft-strategy.js';
import { defaultModelFactory, MINECRAFT_TASK_KIND, type MinecraftTaskSettingsInput } from './settings.js';

/** A game stand-in: goto moves the player (unless `stuck`), chat is recorded, `failWhen` actions fail. */
class ScriptedWorld implements ActionRunner {
  position = { x: 0, y: 64, z: 0 };
  readonly chat: string[] = [];
  readonly ran: Action[] = [];
  stuck = false;
  /** Actions of this type are never answered (a mod that hangs). */
  hangOn: Action['type'] | null = null;
  failWhen: (a: Action) => string | null = () => null;
  run(action: Action): Promise<RunOutcome> {
    this.ran.push(action);
    if (action.type === this.hangOn) return new Promise<RunOutcome>(() => undefined);
    const why = this.failWhen(action);
    if (why !== null) return Promise.resolve({ ok: false, error: why });
    if (
      action.type === 'goto' &&
      action.x !== undefined &&
      action.y !== undefined &&
      action.z !== undefined &&
      !this.stuck
    )
      this.position = { x: action.x + 0.5, y: action.y, z: action.z + 0.5 };
    if (action.type === 'chat') this.chat.push(action.message);
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

let fake: FakeOllama;
let endpoint: MinecraftEndpoint;
let engine: Engine;
let mod: ModClient;
let world: ScriptedWorld;

/** The instances' allow/deny lists the strategy reads (set by a test; read at every step). */
const lists = new Map<string, { allow?: string[]; deny?: string[] }>();

async function setup(): Promise<void> {
  lists.clear();
  fake = await startFakeOllama();
  endpoint = new MinecraftEndpoint({ port: 0 });
  const { url } = await endpoint.start();
  world = new ScriptedWorld();
  mod = new ModClient({ url, instanceId: 'steve', runner: world });
  await mod.start();
  engine = new Engine({
    store: new InMemoryTaskStore(),
    strategies: {
      [MINECRAFT_TASK_KIND]: createMinecraftStrategy({
        states: endpoint,
        modelFor: defaultModelFactory(),
        actionListsOf: (id) => lists.get(id),
      }),
    },
    executor: new MinecraftActionExecutor(endpoint),
  });
  await engine.start();
}

afterEach(async () => {
  await engine?.stop();
  mod?.close();
  await endpoint?.close();
  await fake?.close();
});

async function run(settings: Partial<MinecraftTaskSettingsInput>, prompt = 'walk and greet'): Promise<Task> {
  const s = { instanceId: 'steve', model: 'qwen3:8b', ollamaUrl: fake.url, ...settings };
  const task = await engine.createTask({ kind: MINECRAFT_TASK_KIND, prompt, context: s });
  const terminal = new Promise<Task>((resolve) => {
    const done = ({ task: t }: { task: Task }): void => {
      if (t.id === task.id) resolve(t);
    };
    engine.on('taskCompleted', done);
    engine.on('taskFailed', done);
  });
  return terminal;
}

function userText(i: number, model = 'qwen3:8b'): string {
  const body = fake.chatRequests(model)[i]?.body as { messages: Array<{ role: string; content: string }> };
  return body.messages.map((m) => m.content).join('\n');
}

describe('minecraft_agent strategy', () => {
  it('low-level: runs the plan one action at a time and completes, with plan, state and results in the step log', async () => {
    await setup();
    fake.script('qwen3:8b', [
      {
        json: {
          actions: [
            { type: 'goto', x: 10, y: 64, z: 5 },
            { type: 'chat', message: 'hello there' },
          ],
        },
      },
    ]);
    const done = await run({ mode: 'low-level' });
    expect(done.status).toBe('completed');
    expect(world.ran.map((a) => a.type)).toEqual(['goto', 'chat']);
    expect(world.chat).toEqual(['hello there']);
    expect(world.position).toEqual({ x: 10.5, y: 64, z: 5.5 });
    expect(mod.executed).toEqual([`${done.id}:p1:g0:a0`, `${done.id}:p1:g0:a1`]);
    // Constrained decoding: the low-level plan's JSON Schema went out as `format`.
    const req = fake.chatRequests('qwen3:8b')[0]?.body as { format: { properties: object } };
    expect(Object.keys(req.format.properties)).toEqual(['actions']);
    const kinds = (await engine.getSteps(done.id)).map((s) => s.kind);
    for (const k of ['mc_state', 'mc_plan', 'mc_plan_accepted', 'decision', 'tool_result'])
      expect(kinds).toContain(k);
    expect(kinds.filter((k) => k === 'tool_result')).toHaveLength(2);
  });

  it('repairs an invalid plan once, then re-asks, and fails with plan_invalid when both are invalid', async () => {
    await setup();
    fake.script('qwen3:8b', [
      { json: { actions: [{ type: 'goto', x: 'ten' }] } },
      { json: { actions: [{ type: 'chat', message: 'repaired' }] } },
    ]);
    const ok = await run({ mode: 'low-level' });
    expect(ok.status).toBe('completed');
    expect(world.chat).toEqual(['repaired']);
    // The repair request carried the validation error back to the model.
    expect(userText(1)).toMatch(/not a valid plan: actions\.0\.x/);

    fake.script('qwen3:8b', ['no json here', 'still none', '{"actions": []}']);
    const bad = await run({ mode: 'low-level' });
    expect(bad.status).toBe('failed');
    expect(bad.error?.code).toBe('plan_invalid');
    const kinds = (await engine.getSteps(bad.id)).map((s) => s.kind);
    expect(kinds).toEqual(expect.arrayContaining(['mc_plan', 'mc_plan_repair', 'mc_plan_reask']));
  });

  it('re-plans from the current state after a failed action instead of moving on', async () => {
    await setup();
    world.failWhen = (a) => (a.type === 'place' && a.x === 3 ? 'no solid block next to 3 64 0' : null);
    fake.script('qwen3:8b', [
      {
        json: {
          actions: [
            { type: 'place', block: 'cobblestone', x: 3, y: 64, z: 0 },
            { type: 'chat', message: 'placed' },
          ],
        },
      },
      {
        json: {
          actions: [
            { type: 'place', block: 'cobblestone', x: 4, y: 63, z: 0 },
            { type: 'chat', message: 'placed' },
          ],
        },
      },
    ]);
    const done = await run({ mode: 'low-level' }, 'place a block');
    expect(done.status).toBe('completed');
    expect(world.ran.map((a) => `${a.type}${'x' in a ? a.x : ''}`)).toEqual(['place3', 'place4', 'chat']);
    // The first chat of plan 1 was never sent: the failure stopped the plan.
    expect(userText(1)).toMatch(/FAILED: no solid block next to 3 64 0/);
    expect(userText(1)).toMatch(/position 0\.0 64\.0 0\.0/);
    expect((done.result as { replans: number }).replans).toBe(1);
  });

  it('re-plans when the state contradicts a completed goto, and fails after the re-plan budget', async () => {
    await setup();
    world.stuck = true;
    fake.script('qwen3:8b', [{ json: { actions: [{ type: 'goto', x: 20, y: 64, z: 20 }] } }], {
      repeat: true,
    });
    const done = await run({ mode: 'low-level', maxReplans: 2 });
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('action_failed');
    expect(done.error?.message).toMatch(/contradicts the plan.*20 64 20/);
    expect(world.ran).toHaveLength(3);
    expect(fake.chatRequests('qwen3:8b')).toHaveLength(3);
  });

  it('a retry of a task that failed on exhausted re-plans starts with the re-plan budget fresh and plans again from the failure (it does not send the failed action again)', async () => {
    await setup();
    world.failWhen = (a) => (a.type === 'place' ? 'no solid block next to 3 64 0' : null);
    const place = { json: { actions: [{ type: 'place', block: 'cobblestone', x: 3, y: 64, z: 0 }] } };
    fake.script('qwen3:8b', [place, place]);
    const failed = await run({ mode: 'low-level', maxReplans: 1 }, 'place a block');
    expect(failed.status).toBe('failed');
    expect(failed.error?.message).toMatch(/no re-plans left: 1 used/);
    expect(world.ran.map((a) => a.type)).toEqual(['place', 'place']);
    const calls = fake.chatRequests('qwen3:8b').length;
    // The retry: the model plans from the failure (a place again, which fails again) and then re-plans once more
    // within the fresh budget of 1, to a chat.
    fake.script('qwen3:8b', [place, { json: { actions: [{ type: 'chat', message: 'gave up placing' }] } }]);
    const ended = new Promise<Task>((resolve) => {
      const done = ({ task: t }: { task: Task }): void => {
        if (t.id === failed.id) resolve(t);
      };
      engine.on('taskCompleted', done);
      engine.on('taskFailed', done);
    });
    await engine.reopenTask(failed.id, { reason: 'retry', budgets: failed.budgets });
    const retried = await ended;
    expect(retried.status, JSON.stringify(retried.error)).toBe('completed');
    expect(world.chat).toEqual(['gave up placing']);
    expect(world.ran.map((a) => a.type)).toEqual(['place', 'place', 'place', 'chat']);
    // Each action sent had an id of its own: the failed one was not sent again under its old id.
    expect(new Set(mod.executed).size).toBe(mod.executed.length);
    expect(fake.chatRequests('qwen3:8b')).toHaveLength(calls + 2);
    // The retry's first request told the model what the task had failed on.
    expect(userText(calls)).toMatch(/no solid block next to 3 64 0/);
    expect((retried.result as { replans: number }).replans).toBe(1);
    const steps = await engine.getSteps(failed.id);
    expect(steps.filter((st) => st.kind === 'mc_retry').map((st) => st.directive)).toEqual([
      { retry: 1, after: expect.stringMatching(/no solid block/) as unknown },
    ]);
  });

  it('puts the instance’s allow/deny lists in the prompt (only the actions they let through, the refused ones named), read again at every step, so a change reaches the next request', async () => {
    await setup();
    const systemOf = (i: number): string =>
      (fake.chatRequests('qwen3:8b')[i]?.body as { messages: Array<{ role: string; content: string }> })
        .messages[0]?.content ?? '';
    const offers = (text: string, type: string): boolean => text.includes(`- {"type": "${type}"`);
    // The action types the constrained-decoding schema sent on the wire (`format`) lets the model write.
    const formatTypes = (i: number): string[] => {
      const found: string[] = [];
      const walk = (n: unknown): void => {
        if (Array.isArray(n)) n.forEach(walk);
        else if (n !== null && typeof n === 'object') {
          const t = (n as { properties?: { type?: { const?: unknown } } }).properties?.type?.const;
          if (typeof t === 'string') found.push(t);
          Object.values(n).forEach(walk);
        }
      };
      walk((fake.chatRequests('qwen3:8b')[i]?.body as { format: unknown }).format);
      return found.sort();
    };
    const ALL = ['chat', 'craft', 'goto', 'interact', 'mine', 'open_inventory', 'place', 'smelt'];
    // No lists: the whole catalogue, no refusal line.
    fake.script('qwen3:8b', [{ json: { actions: [{ type: 'chat', message: 'one' }] } }]);
    expect((await run({ mode: 'low-level' })).status).toBe('completed');
    expect(offers(systemOf(0), 'chat')).toBe(true);
    expect(systemOf(0)).not.toMatch(/Refused on instance/);
    expect(formatTypes(0)).toEqual(ALL);
    // A deny list: chat is not offered and is named as refused; the rest stays.
    lists.set('steve', { deny: ['chat', 'place'] });
    fake.script('qwen3:8b', [{ json: { actions: [{ type: 'goto', x: 1, y: 64, z: 1 }] } }]);
    expect((await run({ mode: 'low-level' })).status).toBe('completed');
    expect(offers(systemOf(1), 'chat')).toBe(false);
    expect(offers(systemOf(1), 'place')).toBe(false);
    expect(offers(systemOf(1), 'goto')).toBe(true);
    expect(systemOf(1)).toContain('Refused on instance steve (its deny list), never plan them: place, chat.');
    // …and the schema the model is constrained by has no refused type either
    expect(formatTypes(1)).toEqual(ALL.filter((t) => t !== 'chat' && t !== 'place'));
    // The lists change while a task runs: its re-plan request offers what the new lists allow.
    // The lists change while a task runs (as its first action runs): its re-plan request offers what they allow now.
    world.failWhen = (a) => {
      if (a.type !== 'goto' || a.x !== 2) return null;
      lists.set('steve', { allow: ['goto'] });
      return 'path blocked';
    };
    fake.script('qwen3:8b', [
      { json: { actions: [{ type: 'goto', x: 2, y: 64, z: 2 }] } },
      { json: { actions: [{ type: 'goto', x: 3, y: 64, z: 3 }] } },
    ]);
    const mid = fake.chatRequests('qwen3:8b').length;
    const t = await run({ mode: 'low-level' });
    expect(t.status).toBe('completed');
    expect(offers(systemOf(mid), 'chat')).toBe(false);
    expect(offers(systemOf(mid), 'mine')).toBe(true);
    const after = systemOf(mid + 1);
    expect(offers(after, 'goto')).toBe(true);
    expect(offers(after, 'mine')).toBe(false);
    expect(after).toMatch(
      /Refused on instance steve \(its allow list\), never plan them: mine, place, craft, smelt, interact, chat\./,
    );
    // the running task's re-plan schema follows the new lists
    expect(formatTypes(mid)).toEqual(ALL.filter((t) => t !== 'chat' && t !== 'place'));
    expect(formatTypes(mid + 1)).toEqual(['goto']);
  });

  it('constrains a hybrid plan and a goal’s expansion to the allowed actions too (every action union in the schema)', async () => {
    await setup();
    lists.set('steve', { allow: ['goto', 'chat'], deny: ['chat'] });
    fake.script('qwen3:8b', [
      { json: { goals: [{ goal: 'walk over there' }] } },
      { json: { actions: [{ type: 'goto', x: 4, y: 64, z: 4 }] } },
    ]);
    expect((await run({ mode: 'hybrid' })).status).toBe('completed');
    const reqs = fake.chatRequests('qwen3:8b');
    expect(reqs.length).toBe(2);
    for (const r of reqs) {
      const text = JSON.stringify((r.body as { format: unknown }).format);
      expect(text).toContain('"const":"goto"');
      for (const refused of ['chat', 'mine', 'place', 'craft', 'smelt', 'interact', 'open_inventory'])
        expect(text).not.toContain(`"const":"${refused}"`);
    }
    expect(JSON.stringify((reqs[0]?.body as { format: unknown }).format)).toContain('"goals"');
  });

  it('fails an action that is not answered within its timeout and re-plans instead of waiting for ever', async () => {
    await setup();
    world.hangOn = 'interact';
    fake.script('qwen3:8b', [
      {
        json: {
          actions: [
            { type: 'interact', target: 'lever', x: 1, y: 64, z: 1 },
            { type: 'chat', message: 'never' },
          ],
        },
      },
      { json: { actions: [{ type: 'chat', message: 'lever skipped' }] } },
    ]);
    const started = Date.now();
    const done = await run({ mode: 'low-level', actionTimeoutMs: 1_000 });
    expect(done.status).toBe('completed');
    expect(Date.now() - started).toBeGreaterThanOrEqual(1_000);
    expect(world.chat).toEqual(['lever skipped']);
    expect(userText(1)).toMatch(/timed out after 1000 ms/);
  });

  it('high-level: expands each goal into actions when it is reached, with the state at that moment', async () => {
    await setup();
    fake.script('qwen3:8b', [
      { json: { goals: [{ goal: 'go to the well' }, { goal: 'greet' }] } },
      { json: { actions: [{ type: 'goto', x: 7, y: 64, z: 7 }] } },
      { json: { actions: [{ type: 'chat', message: 'at the well' }] } },
    ]);
    const done = await run({ mode: 'high-level' });
    expect(done.status).toBe('completed');
    expect(world.chat).toEqual(['at the well']);
    expect(userText(1)).toMatch(/GOAL NOW: go to the well/);
    expect(userText(2)).toMatch(/GOAL NOW: greet/);
    expect(userText(2)).toMatch(/position 7\.5 64\.0 7\.5/);
  });

  it('hybrid: runs given actions directly and expands only the goals without them', async () => {
    await setup();
    fake.script('qwen3:8b', [
      {
        json: {
          goals: [
            { goal: 'walk', actions: [{ type: 'goto', x: 2, y: 64, z: 2 }] },
            { goal: 'say where I am' },
          ],
        },
      },
      { json: { actions: [{ type: 'chat', message: 'I am at 2 64 2' }] } },
    ]);
    const done = await run({ mode: 'hybrid' });
    expect(done.status).toBe('completed');
    expect(world.ran.map((a) => a.type)).toEqual(['goto', 'chat']);
    expect(fake.chatRequests('qwen3:8b')).toHaveLength(2);
  });

  it('fails the task with the model error shown when the model API fails', async () => {
    await setup();
    fake.script('other-model', ['x']);
    const done = await run({ mode: 'low-level', model: 'missing-model' });
    expect(done.status).toBe('failed');
    expect(done.error?.code).toBe('model_failed');
    expect(done.error?.message).toMatch(/missing-model/);
    expect(world.ran).toEqual([]);
  });

  it('uses an OpenAI-compatible server (LM Studio) when the task chooses it, with the plan schema as response_format', async () => {
    await setup();
    fake.script('lmstudio-model', [{ json: { actions: [{ type: 'chat', message: 'from lm studio' }] } }]);
    const done = await run({
      mode: 'low-level',
      provider: 'lmstudio',
      model: 'lmstudio-model',
      lmStudioUrl: `${fake.url}/v1`,
    });
    expect(done.status).toBe('completed');
    expect(world.chat).toEqual(['from lm studio']);
    const req = fake.chatRequests('lmstudio-model')[0];
    expect(req?.path).toBe('/v1/chat/completions');
    expect((req?.body as { response_format: { type: string } }).response_format.type).toBe('json_schema');
  });

  it('writes each model call ahead of the request as a model_request record and counts its usage, as CC tasks do (guards against a copy of the model call that logs only after the reply)', async () => {
    await setup();
    fake.script('qwen3:8b', [
      { json: { actions: [{ type: 'chat', message: 'logged first' }] }, fault: { latencyMs: 400 } },
    ]);
    const done = run({ mode: 'low-level' });
    await expect.poll(() => fake.chatRequests('qwen3:8b').length).toBe(1);
    const [task] = await engine.listTasks({ kind: MINECRAFT_TASK_KIND });
    const inFlight = await engine.getSteps(task?.id ?? '');
    // While the model is still answering, the request it received is already in the step log.
    const ahead = inFlight.filter((s) => s.kind === MODEL_REQUEST_KIND);
    expect(ahead).toHaveLength(1);
    expect(inFlight.some((s) => s.kind === 'mc_plan')).toBe(false);
    const sent = fake.chatRequests('qwen3:8b')[0]?.body as {
      messages: Array<{ role: string; content: string }>;
    };
    expect(ahead[0]).toMatchObject({ model: 'qwen3:8b', output: { role: 'mc_plan' } });
    expect((ahead[0]?.input as { messages: unknown[]; provider: string }).messages).toEqual(
      sent.messages.map((m) => ({ role: m.role, content: m.content })),
    );
    expect((ahead[0]?.input as { provider: string }).provider).toBe('ollama');
    expect((await done).status).toBe('completed');
    const steps = await engine.getSteps(task?.id ?? '');
    const finished = steps.find((s) => s.kind === 'mc_plan');
    // The finished record follows with the same start and the server's token counts.
    expect(finished?.startedAt).toBe(ahead[0]?.startedAt);
    expect(finished?.usage?.promptTokens).toBeGreaterThan(0);
    expect(finished?.usage?.completionTokens).toBeGreaterThan(0);
  });

  it('fails with invalid_settings (and runs nothing) when the task settings are bad', async () => {
    await setup();
    const task = await engine.createTask({ kind: MINECRAFT_TASK_KIND, prompt: 'x', context: { model: 'm' } });
    await expect.poll(async () => (await engine.getTask(task.id))?.status).toBe('failed');
    expect((await engine.getTask(task.id))?.error?.code).toBe('invalid_settings');
  });
});
