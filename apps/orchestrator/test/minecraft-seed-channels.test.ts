/**
 * Seed 003's backend channels over HTTP (detect-instances, connect-instance, send-prompt, stop-task, get-status) and
 * the per-instance action lists, behind the same roles and audit as the rest of the API; one task per instance; and
 * after a restart, a "resumed" record for the action that was open and the step that waits for the mod to be back.
 * In process, real sockets, a scripted mod (ModClient) whose walk is held until the test releases it.
 */
import { readFileSync, rmSync } from 'node:fs';
import { ModClient, type ActionRunner, type PlayerState, type RunOutcome } from '@ccagent/minecraft';
import type { FakeChatRequest, FakeReply } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from './support/harness.js';
import { useHarness } from './support/session.js';
import { freePort } from './support/minecraft.js';

const t = useHarness();
const TOKEN = 'operator-token-1';
const MODEL = 'qwen3:8b';

/** A player whose walks wait for `release()` (or stop); everything else is done at once. */
class HeldWalks implements ActionRunner {
  position = { x: 0.5, y: 64, z: 0.5 };
  ran: string[] = [];
  stopped = 0;
  private releases: Array<() => void> = [];
  release(): void {
    for (const r of this.releases.splice(0)) r();
  }
  run(action: Parameters<ActionRunner['run']>[0], signal: AbortSignal): Promise<RunOutcome> {
    this.ran.push(action.id);
    if (action.type !== 'goto') return Promise.resolve({ ok: true, result: `${action.type} done` });
    return new Promise<RunOutcome>((resolve) => {
      signal.addEventListener('abort', () => {
        this.stopped++;
        resolve({ ok: false, error: 'stopped' });
      });
      this.releases.push(() => {
        if (action.x !== undefined && action.z !== undefined)
          this.position = { x: action.x + 0.5, y: 64, z: action.z + 0.5 };
        resolve({ ok: true, result: { position: this.position } });
      });
    });
  }
  state(): PlayerState {
    return {
      position: this.position,
      health: 20,
      hunger: 20,
      saturation: 5,
      inventory: [],
      dimension: 'overworld',
      gameMode: 'survival',
    };
  }
}

/** The seed's high-level shape: a walk, then a chat line. */
function seedPlan(req: FakeChatRequest): FakeReply {
  const text = JSON.stringify(req.body['messages']);
  if (/did not work out/.test(text)) return { json: { commands: [{ action: 'chat', message: 'again' }] } };
  return {
    json: {
      commands: [
        { action: 'goto', x: 5, y: 64, z: 5 },
        { action: 'chat', message: 'arrived' },
      ],
    },
  };
}

const mods: ModClient[] = [];
afterEach(() => {
  for (const m of mods.splice(0)) m.close();
});

async function connectMod(
  h: Harness,
  runner: ActionRunner,
  more: Partial<ConstructorParameters<typeof ModClient>[0]> = {},
): Promise<ModClient> {
  const mc = h.running.report.minecraft;
  if (mc === undefined || !('url' in mc)) throw new Error('no mod endpoint');
  const m = new ModClient({ url: mc.url, instanceId: 'Bot', runner, token: TOKEN, ...more });
  mods.push(m);
  await m.start();
  return m;
}

function as(h: Harness, key: string, p: string, json?: unknown): Promise<Response> {
  return fetch(`${h.url}${p}`, {
    method: json === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      ...(json !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(json !== undefined ? { body: JSON.stringify(json) } : {}),
  });
}
async function body<T>(r: Promise<Response>): Promise<{ status: number; body: T }> {
  const res = await r;
  return { status: res.status, body: (await res.json()) as T };
}

describe("seed 003's channels over HTTP", () => {
  it('detect, connect, send-prompt (the task id back), get-status through a task, stop-task, one task per instance; viewers read, operators act, all audited', async () => {
    const h = await t.start({ token: TOKEN, minecraft: true });
    h.fake.script(MODEL, seedPlan);
    const viewer = (
      (await (
        await h.http('/api/credentials/keys', { method: 'POST', json: { role: 'viewer' } })
      ).json()) as {
        key: string;
      }
    ).key;
    const world = new HeldWalks();
    await connectMod(h, world, { version: '1.20.1', name: 'fabric-agent', platform: 'fabric' });

    const detected = await body<{ instances: Array<Record<string, unknown>>; active_instance: null }>(
      as(h, viewer, '/api/minecraft/detect-instances'),
    );
    expect(detected.status).toBe(200);
    expect(detected.body.active_instance).toBeNull();
    expect(detected.body.instances[0]).toMatchObject({
      instance_id: 'Bot',
      connected: true,
      version: '1.20.1',
      protocol_version: '1.0',
      name: 'fabric-agent',
      platform: 'fabric',
    });
    expect((await body(as(h, viewer, '/api/minecraft/get-status'))).body).toEqual({
      status: 'idle',
      current_task: null,
      connected_instances: ['Bot'],
      active_instance: null,
    });

    const prompt = { prompt: 'walk to 5 64 5', model: MODEL, mode: 'low-level', constrained: false };
    const none = await body<{ error: { code: string } }>(as(h, TOKEN, '/api/minecraft/send-prompt', prompt));
    expect([none.status, none.body.error.code]).toEqual([409, 'no_instance']);
    // A viewer reads but does not act.
    for (const [p, json] of [
      ['/api/minecraft/connect-instance', { instance_id: 'Bot' }],
      ['/api/minecraft/send-prompt', prompt],
      ['/api/minecraft/stop-task', {}],
      ['/api/minecraft/instances/Bot/actions', { deny: ['chat'] }],
    ] as const) {
      expect((await as(h, viewer, p, json)).status, p).toBe(403);
    }
    expect(
      (await body(as(h, TOKEN, '/api/minecraft/connect-instance', { instance_id: 'Bot' }))).body,
    ).toEqual({ active_instance: 'Bot', connected: true });

    const sent = await body<{ task_id: string; instance_id: string }>(
      as(h, TOKEN, '/api/minecraft/send-prompt', prompt),
    );
    expect(sent.status).toBe(201);
    expect(sent.body.instance_id).toBe('Bot');
    const id = sent.body.task_id;
    await eventually(async () => (world.ran.length > 0 ? true : undefined));
    const busy = await body<{ status: string; current_task: { id: string; status: string } }>(
      as(h, viewer, '/api/minecraft/get-status'),
    );
    expect(busy.body.status).toBe('processing');
    expect(busy.body.current_task).toMatchObject({ id, prompt: 'walk to 5 64 5' });
    // One task per instance: a second prompt is refused and creates nothing.
    const second = await body<{ error: { code: string; message: string } }>(
      as(h, TOKEN, '/api/minecraft/send-prompt', { ...prompt, prompt: 'another' }),
    );
    expect([second.status, second.body.error.code]).toEqual([409, 'instance_busy']);
    expect(second.body.error.message).toContain(id);
    const tasks = (await (await h.http('/api/tasks?kind=minecraft_agent')).json()) as { total: number };
    expect(tasks.total).toBe(1);

    const stopped = await body(as(h, TOKEN, '/api/minecraft/stop-task', {}));
    expect(stopped.body).toEqual({ instance_id: 'Bot', stopped_task: id, stop_sent: true });
    await eventually(async () => (world.stopped === 1 ? true : undefined));
    expect((await body<{ status: string }>(as(h, viewer, '/api/minecraft/get-status'))).body.status).toBe(
      'idle',
    );

    // After the stop, the next prompt runs to the end: complete.
    const again = await body<{ task_id: string }>(as(h, TOKEN, '/api/minecraft/send-prompt', prompt));
    await eventually(async () => (world.ran.length > 1 ? true : undefined));
    world.release();
    const done = await eventually(async () => {
      const s = (
        await body<{ status: string; current_task: { id: string } }>(
          as(h, viewer, '/api/minecraft/get-status'),
        )
      ).body;
      return s.status === 'complete' ? s : undefined;
    }, 10_000);
    expect(done.current_task.id).toBe(again.body.task_id);

    const audited = await eventually(async () => {
      const rows = (await h.running.security.listAudit({}))
        .filter((e) => e.action.startsWith('minecraft.'))
        .map((e) => `${e.action} ${e.target ?? ''}`);
      return rows.length >= 4 ? rows : undefined;
    });
    expect(audited).toEqual(
      expect.arrayContaining([
        'minecraft.connect Bot',
        `minecraft.prompt ${id}`,
        'minecraft.stop_task Bot',
        `minecraft.prompt ${again.body.task_id}`,
      ]),
    );
  });

  it('sets an instance’s allow/deny lists (validated, on disk before the answer), read by viewers', async () => {
    const h = await t.start({ token: TOKEN, minecraft: true });
    const set = await body(as(h, TOKEN, '/api/minecraft/instances/Bot/actions', { deny: ['chat', 'mine'] }));
    expect(set).toEqual({ status: 200, body: { instance_id: 'Bot', allow: null, deny: ['chat', 'mine'] } });
    const file = JSON.parse(readFileSync(`${h.dbPath}.minecraft.json`, 'utf8')) as Record<string, unknown>;
    expect(file['actions']).toEqual({ Bot: { deny: ['chat', 'mine'] } });
    const bad = await body<{ error: { code: string } }>(
      as(h, TOKEN, '/api/minecraft/instances/Bot/actions', { deny: ['fly'] }),
    );
    expect([bad.status, bad.body.error.code]).toEqual([400, 'invalid_body']);
    expect((await body(as(h, TOKEN, '/api/minecraft/instances/Bot/actions'))).body).toMatchObject({
      deny: ['chat', 'mine'],
    });
    const audit = await eventually(async () =>
      (await h.running.security.listAudit({})).find((e) => e.action === 'minecraft.set_actions'),
    );
    expect(audit?.target).toBe('Bot');
  });
});

describe('a Minecraft task across a restart', () => {
  it('leaves a "resumed" record for the action that was open, does not run it twice, and a step waits for the mod to be back before it plans', async () => {
    const port = await freePort();
    const first = await startHarness({ token: TOKEN, minecraft: true, minecraftPort: port });
    const dir = first.dir;
    let second: Harness | undefined;
    try {
      first.fake.script(MODEL, seedPlan);
      const world = new HeldWalks();
      const mod = await connectMod(first, world, { reconnectDelayMs: 1_500 });
      const made = await body<{ task_id: string }>(
        as(first, TOKEN, '/api/minecraft/send-prompt', {
          instance_id: 'Bot',
          prompt: 'walk to 5 64 5',
          model: MODEL,
          mode: 'low-level',
          constrained: false,
        }),
      );
      const id = made.body.task_id;
      await eventually(async () => (world.ran.length === 1 ? true : undefined));
      await first.running.close();

      second = await startHarness({ token: TOKEN, minecraft: true, minecraftPort: port, dir });
      second.fake.script(MODEL, seedPlan);
      const h2 = second;
      const steps = async (): Promise<Array<{ kind: string; output?: unknown }>> =>
        (
          (await (await h2.http(`/api/tasks/${id}/steps`)).json()) as {
            steps: Array<{ kind: string; output?: unknown }>;
          }
        ).steps;
      const resumed = await eventually(async () => (await steps()).find((s) => s.kind === 'resumed'));
      expect(JSON.stringify(resumed.output)).toMatch(/call open/);
      // The mod is back (1.5 s later); the open walk is sent again with its id and not run twice.
      await eventually(async () => (mod.duplicatesDropped.length > 0 ? true : undefined), 10_000);
      world.release();
      const task = await eventually(async () => {
        const r = (await (await h2.http(`/api/tasks/${id}`)).json()) as { task: { status: string } };
        return r.task.status === 'completed' ? r.task : undefined;
      }, 10_000);
      expect(task.status).toBe('completed');
      expect(world.ran.filter((a) => a === world.ran[0])).toHaveLength(1);

      // A task created while the mod is away waits for it before planning (bounded), and plans with its state.
      mod.close();
      await eventually(async () => {
        const r = (await (await h2.http('/api/minecraft/instances')).json()) as {
          instances: Array<{ connected: boolean }>;
        };
        return r.instances[0]?.connected === false ? true : undefined;
      });
      const later = await body<{ task_id: string }>(
        as(h2, TOKEN, '/api/minecraft/send-prompt', {
          instance_id: 'Bot',
          prompt: 'walk to 5 64 5 again',
          model: MODEL,
          mode: 'low-level',
          constrained: false,
        }),
      );
      await new Promise((r) => setTimeout(r, 1_000));
      const back = new HeldWalks();
      await connectMod(h2, back);
      await eventually(async () => (back.ran.length > 0 ? true : undefined), 10_000);
      back.release();
      const waited = await eventually(async () =>
        (
          (await (await h2.http(`/api/tasks/${later.body.task_id}/steps`)).json()) as {
            steps: Array<{ kind: string; output?: { connected?: boolean; waitedMs?: number } }>;
          }
        ).steps.find((s) => s.kind === 'mc_state_wait'),
      );
      expect(waited.output?.connected).toBe(true);
      expect(waited.output?.waitedMs).toBeGreaterThanOrEqual(900);
      const plan = h2.fake
        .chatRequests(MODEL)
        .map((r) => JSON.stringify((r.body as Record<string, unknown>)['messages']))
        .find((m) => m.includes('walk to 5 64 5 again'));
      expect(plan).not.toMatch(/unknown \(the instance has not connected yet\)|no state reported yet/);
      expect(plan).toMatch(/position/);
    } finally {
      await second?.close();
      await first.close().catch(() => undefined);
      rmSync(dir, { recursive: true, force: true });
    }
  }, 60_000);
});
