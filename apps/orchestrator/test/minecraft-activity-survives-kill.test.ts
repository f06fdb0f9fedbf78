// Issue 36 item 4, durable: a Minecraft instance's mod `log` lines and its ended actions are kept in the database, so
// the activity route (and the instance page reading it) shows them after the server is killed with SIGKILL and
// started again on the same file — trimmed to the kept number, hostile text intact as data — and the mod's new lines
// after the restart are numbered after the stored ones. The built server, a temp SQLite file, a mod on real sockets
// (the bridge's protocol client with a scripted runner), the model double planning the actions.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ModClient, type ActionRunner, type RunOutcome } from '@ccagent/minecraft';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from './support/browser.js';
import { serve, type Served } from './support/spawn.js';
import { freePort } from './support/minecraft.js';

const MODEL = 'mc-durable';
const HOSTILE = `<img src=x onerror="window.__pwned=1"><script>1</script>\u001b[31mred '; DROP TABLE minecraft_logs; --`;
const KEEP_ACTIONS = 3;
const KEEP_LINES = 50;

let dir: string;
let fake: FakeOllama;
let mcPort: number;
let orch: Served | undefined;
let mod: ModClient | undefined;

const runner: ActionRunner = {
  state: () => ({
    position: { x: 0.5, y: 64, z: 0.5 },
    health: 20,
    hunger: 20,
    saturation: 5,
    inventory: [],
    dimension: 'overworld',
    gameMode: 'survival',
  }),
  run: async (action): Promise<RunOutcome> => {
    await new Promise((r) => setTimeout(r, 20));
    if (action.type === 'place') return { ok: false, error: `cannot place ${HOSTILE}` };
    return { ok: true, result: { said: HOSTILE } };
  },
};

interface Activity {
  instance: { instance_id: string } | null;
  logs: Array<{ seq: number; message: string }>;
  actions: Array<{ action_id: string; type: string; ok: boolean | null; error?: string; result?: string }>;
}

async function start(): Promise<Served> {
  orch = await serve(
    [
      '--port',
      '0',
      '--db',
      path.join(dir, 'mc.db'),
      '--mc-port',
      String(mcPort),
      '--ollama-url',
      fake.url,
      '--log-level',
      'warn',
    ],
    { CCAGENT_MC_KEEP_ACTIONS: String(KEEP_ACTIONS), CCAGENT_MC_KEEP_LOG_LINES: String(KEEP_LINES) },
  );
  return orch;
}

async function connectMod(): Promise<ModClient> {
  mod = new ModClient({
    url: `ws://127.0.0.1:${mcPort}`,
    instanceId: 'Evil',
    runner,
    version: '1.20.1',
    reconnectDelayMs: 200,
  });
  await mod.start();
  return mod;
}

async function activity(s: Served, id = 'Evil'): Promise<{ status: number; body: Activity }> {
  const r = await fetch(`${s.url}/api/minecraft/instances/${id}/activity`);
  return { status: r.status, body: (await r.json()) as Activity };
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'mc-durable-'));
  fake = await startFakeOllama({ installed: [MODEL] });
  mcPort = await freePort();
}, 60_000);

afterAll(async () => {
  mod?.close();
  await orch?.kill9();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('Minecraft activity survives kill -9', () => {
  it('serves the kept lines and ended actions after a SIGKILL and a restart, trimmed, hostile text intact, numbering resumed (guards against an empty page after a restart)', async () => {
    let s = await start();
    const m = await connectMod();
    await expect.poll(async () => (await activity(s)).status, { timeout: 15_000 }).toBe(200);
    // 120 lines (over the 50 kept), the last one hostile.
    for (let i = 1; i < 120; i++) m.log(`line ${i}`);
    m.log(HOSTILE);
    // Five actions (over the 3 kept): four say something, the last fails to place.
    fake.script(MODEL, [
      {
        json: {
          actions: [
            { type: 'chat', message: 'a' },
            { type: 'chat', message: 'b' },
            { type: 'chat', message: 'c' },
            { type: 'chat', message: 'd' },
            { type: 'place', block: 'stone', x: 0, y: 90, z: 0 },
          ],
        },
      },
    ]);
    const task = await fetch(`${s.url}/api/minecraft/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ instance_id: 'Evil', prompt: 'DO FIVE', mode: 'low-level', model: MODEL }),
    });
    expect(task.status).toBe(201);
    await expect
      .poll(async () => (await activity(s)).body.actions.filter((a) => a.ok !== null).length, {
        timeout: 20_000,
      })
      .toBe(5);
    const before = (await activity(s)).body;
    expect(before.logs.at(-1)).toMatchObject({ seq: 120, message: HOSTILE });
    // Lines are written at most every 500 ms: past one window they are on disk.
    await new Promise((r) => setTimeout(r, 1_500));
    m.close();
    await s.kill9();

    s = await start();
    // The mod is not back: the route answers from the database alone.
    const after = await activity(s);
    expect(after.status).toBe(200);
    expect(after.body.instance).toBeNull();
    expect(after.body.logs.map((l) => l.seq)).toEqual(Array.from({ length: KEEP_LINES }, (_, i) => 71 + i));
    expect(after.body.logs.at(-1)?.message).toBe(HOSTILE);
    expect(after.body.actions).toHaveLength(KEEP_ACTIONS);
    expect(after.body.actions).toEqual(before.actions.slice(-KEEP_ACTIONS));
    const failed = after.body.actions.at(-1);
    expect(failed).toMatchObject({ type: 'place', ok: false, code: 'action_failed' });
    expect(failed?.error).toContain(HOSTILE);
    expect(after.body.actions[0]?.result).toContain('onerror');
    // An instance neither the endpoint nor the database knows is still 404.
    expect((await activity(s, 'Nobody')).status).toBe(404);

    // The instance page shows them, as text, before the mod is back.
    const browser = await launchBrowser();
    try {
      const page = await browser.page();
      await page.goto(`${s.url}/#/minecraft/Evil`);
      await expect
        .poll(() => page.getByTestId('mci-status').textContent(), { timeout: 10_000 })
        .toBe('not connected since the server started');
      const lines = page.locator('ol.mc-log > li');
      await expect.poll(() => lines.count(), { timeout: 10_000 }).toBe(KEEP_LINES);
      expect(await lines.first().textContent()).toContain('<img src=x onerror=');
      expect(await lines.first().textContent()).toContain('␛[31mred');
      expect(await page.locator('table.mc-actions tbody tr').count()).toBe(KEEP_ACTIONS);
      expect(await page.locator('table.mc-actions').textContent()).toContain('action_failed');
      expect(await page.locator('.mc-instance img, .mc-instance script').count()).toBe(0);
      expect(await page.evaluate(() => (window as { __pwned?: unknown }).__pwned)).toBeUndefined();
    } finally {
      await browser.close();
    }

    // The mod comes back: its new lines continue after the stored ones and both show.
    const back = await connectMod();
    await expect
      .poll(async () => (await activity(s)).body.instance?.instance_id, { timeout: 15_000 })
      .toBe('Evil');
    back.log('after the restart');
    await expect
      .poll(async () => (await activity(s)).body.logs.at(-1), { timeout: 10_000 })
      .toEqual({ instance_id: 'Evil', seq: 121, at: expect.any(Number), message: 'after the restart' });
    const merged = (await activity(s)).body;
    expect(merged.logs.at(-2)?.message).toBe(HOSTILE);
    expect(merged.actions).toHaveLength(KEEP_ACTIONS);
  });
});
