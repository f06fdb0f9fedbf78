// Issue 36 item 4: a Minecraft instance's state, its mod's `log` lines and each action with its outcome and duration
// pushed on `GET /api/events` as they happen, and the dashboard's instance page following them. The built server
// with a token, a mod on real sockets (the bridge's protocol client with a scripted runner), a viewer key reading the
// stream and watching the page in real Chromium. Hostile text from the mod (log lines, item and dimension names, an
// action's error and result) must stay text; the page's lists stay bounded.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { ModClient, type ActionRunner, type PlayerState, type RunOutcome } from '@ccagent/minecraft';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, signIn, type Browser } from './support/browser.js';
import { serve, type Served } from './support/spawn.js';
import { freePort } from './support/minecraft.js';

const TOKEN = 'operator-token-live';
const MODEL = 'mc-live';
const HOSTILE = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>\u001b[31mred';

let dir: string;
let fake: FakeOllama;
let orch: Served;
let mcPort: number;
let viewerKey: string;
let mod: ModClient;
let browser: Browser;

/** The scripted player: its state is set by the test; a `chat` action completes, a `place` fails after 300 ms. */
let state: PlayerState = {
  position: { x: 1.5, y: 64, z: -2.5 },
  health: 20,
  hunger: 18,
  saturation: 5,
  inventory: [{ slot: 36, item: HOSTILE, count: 3 }],
  dimension: `overworld ${HOSTILE}`,
  gameMode: 'survival',
};
const runner: ActionRunner = {
  state: () => state,
  run: async (action): Promise<RunOutcome> => {
    await new Promise((r) => setTimeout(r, 300));
    if (action.type === 'place') return { ok: false, error: `no block to place against ${HOSTILE}` };
    return { ok: true, result: { said: HOSTILE } };
  },
};

async function http(p: string, key: string, body?: unknown): Promise<Response> {
  return fetch(`${orch.url}${p}`, {
    method: body === undefined ? 'GET' : 'POST',
    headers: {
      authorization: `Bearer ${key}`,
      ...(body !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(body !== undefined ? { body: JSON.stringify(body) } : {}),
  });
}

/** Read `GET /api/events` as `key` until `done` says so (or 20 s); returns the records of the `mc_*` kinds. */
async function collect(
  key: string,
  act: () => Promise<void>,
  done: (records: Array<{ event: string; data: Record<string, unknown> }>) => boolean,
): Promise<Array<{ event: string; data: Record<string, unknown> }>> {
  const ctl = new AbortController();
  const res = await fetch(`${orch.url}/api/events`, {
    headers: { authorization: `Bearer ${key}`, accept: 'text/event-stream' },
    signal: ctl.signal,
  });
  expect(res.status).toBe(200);
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const records: Array<{ event: string; data: Record<string, unknown> }> = [];
  let buf = '';
  const deadline = Date.now() + 20_000;
  await act();
  try {
    while (!done(records) && Date.now() < deadline) {
      const { value, done: ended } = await reader.read();
      if (ended) break;
      buf += value;
      let cut: number;
      while ((cut = buf.indexOf('\n\n')) >= 0) {
        const block = buf.slice(0, cut);
        buf = buf.slice(cut + 2);
        const event = /^event: (.*)$/m.exec(block)?.[1];
        const data = /^data: (.*)$/m.exec(block)?.[1];
        if (event?.startsWith('mc_') && data !== undefined)
          records.push({ event, data: JSON.parse(data) as Record<string, unknown> });
      }
    }
  } finally {
    ctl.abort();
  }
  return records;
}

async function runTask(actions: unknown[], prompt: string): Promise<string> {
  fake.script(MODEL, [{ json: { actions } }]);
  const r = await http('/api/minecraft/tasks', TOKEN, {
    instance_id: 'Evil',
    prompt,
    mode: 'low-level',
    model: MODEL,
  });
  expect(r.status).toBe(201);
  return ((await r.json()) as { task: { id: string } }).task.id;
}

async function taskStatus(id: string): Promise<string> {
  const r = await http(`/api/tasks/${id}?steps=0`, TOKEN);
  return ((await r.json()) as { task: { status: string } }).task.status;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'mc-live-'));
  fake = await startFakeOllama({ installed: [MODEL] });
  mcPort = await freePort();
  orch = await serve([
    '--port',
    '0',
    '--db',
    path.join(dir, 'mc.db'),
    '--mc-port',
    String(mcPort),
    '--ollama-url',
    fake.url,
    '--token',
    TOKEN,
    '--log-level',
    'warn',
  ]);
  const key = await http('/api/credentials/keys', TOKEN, { role: 'viewer', name: 'wall screen' });
  expect(key.status).toBe(201);
  viewerKey = ((await key.json()) as { key: string }).key;
  mod = new ModClient({
    url: `ws://127.0.0.1:${mcPort}`,
    instanceId: 'Evil',
    token: TOKEN,
    runner,
    version: '1.20.1',
    platform: HOSTILE,
    reconnectDelayMs: 200,
  });
  await mod.start();
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  mod?.close();
  await browser?.close();
  await orch?.kill9();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('a Minecraft instance live on the event stream', () => {
  it('streams state, log lines and each action with its outcome and duration to a viewer key; at most one state record per 250 ms however many updates arrive', async () => {
    let taskId = '';
    const records = await collect(
      viewerKey,
      async () => {
        // 50 state updates at once: coalesced; the last position is the one that must arrive.
        for (let n = 1; n <= 50; n++) {
          state = { ...state, position: { x: 1.5 + n, y: 64, z: -2.5 } };
          mod.sendState();
        }
        mod.log('pathfinder: 40 nodes');
        taskId = await runTask([{ type: 'chat', message: 'hi' }], 'SAY HI');
      },
      (rs) =>
        rs.some((r) => r.event === 'mc_action' && r.data['ok'] === true) &&
        rs.some((r) => r.event === 'mc_log') &&
        rs.some(
          (r) =>
            r.event === 'mc_instance' && (r.data['last_state'] as PlayerState | null)?.position.x === 51.5,
        ),
    );
    const states = records.filter((r) => r.event === 'mc_instance');
    expect(states.length).toBeGreaterThanOrEqual(1);
    // 50 updates within a few ms: the leading record and the trailing one, not 50.
    expect(states.length).toBeLessThanOrEqual(4);
    expect(states.at(-1)?.data).toMatchObject({ instance_id: 'Evil', connected: true, status: 'connected' });
    expect(records.find((r) => r.event === 'mc_log')?.data).toMatchObject({
      instance_id: 'Evil',
      message: 'pathfinder: 40 nodes',
    });
    const actions = records.filter((r) => r.event === 'mc_action').map((r) => r.data);
    expect(actions[0]).toMatchObject({
      instance_id: 'Evil',
      type: 'chat',
      task_id: taskId,
      ok: null,
      ended_at: null,
      duration_ms: null,
    });
    const ended = actions.find((a) => a['ok'] === true);
    expect(ended).toMatchObject({ type: 'chat', task_id: taskId, result: JSON.stringify({ said: HOSTILE }) });
    expect(ended?.['action_id']).toBe(actions[0]?.['action_id']);
    // The scripted player takes 300 ms; the duration is the endpoint's, from sending to the outcome.
    expect(ended?.['duration_ms']).toBeGreaterThanOrEqual(290);
    expect(ended?.['duration_ms']).toBe((ended?.['ended_at'] as number) - (ended?.['started_at'] as number));
    await expect.poll(() => taskStatus(taskId), { timeout: 15_000 }).toBe('completed');
  });

  it('answers the activity route to a viewer (state, logs, actions), 404 for an unknown instance, 403 without the view role', async () => {
    const r = await http('/api/minecraft/instances/Evil/activity', viewerKey);
    expect(r.status).toBe(200);
    const body = (await r.json()) as {
      instance: { instance_id: string };
      logs: Array<{ message: string }>;
      actions: Array<{ type: string; ok: boolean | null }>;
    };
    expect(body.instance.instance_id).toBe('Evil');
    expect(body.logs.map((l) => l.message)).toContain('pathfinder: 40 nodes');
    expect(body.actions).toContainEqual(expect.objectContaining({ type: 'chat', ok: true }));
    const missing = await http('/api/minecraft/instances/Nobody/activity', viewerKey);
    expect(missing.status).toBe(404);
    expect(((await missing.json()) as { error: { code: string } }).error.code).toBe('not_found');
    expect((await fetch(`${orch.url}/api/minecraft/instances/Evil/activity`)).status).toBe(401);
  });

  it('the instance page shows a viewer the state, log lines and actions as they happen, hostile text as text, lists bounded (guards against a page that updates only on reload)', async () => {
    const page: Page = await browser.page();
    const urls: string[] = [];
    page.on('framenavigated', (f) => {
      if (f === page.mainFrame()) urls.push(f.url());
    });
    await signIn(page, `${orch.url}/`, viewerKey);
    await page.goto(`${orch.url}/#/minecraft/Evil`);
    const navigations = urls.length;
    await page.waitForSelector('[data-testid="mci-position"]');

    // State: moved after the page loaded.
    state = { ...state, position: { x: 100.25, y: 70, z: -40 }, health: 7, hunger: 3 };
    mod.sendState();
    await expect
      .poll(() => page.getByTestId('mci-position').textContent(), { timeout: 10_000 })
      .toBe('100.3 70 -40');
    expect(await page.getByTestId('mci-health').textContent()).toContain('7 / 20');
    expect(await page.getByTestId('mci-hunger').textContent()).toContain('3 / 20');

    // Hostile log lines, item, dimension and platform names: shown as text, nothing run, no element made.
    mod.log(HOSTILE);
    const log = page.locator('ol.mc-log > li').first();
    await expect.poll(() => log.textContent(), { timeout: 10_000 }).toContain('<img src=x onerror=');
    expect(await log.textContent()).toContain('␛[31mred');
    expect(await page.getByTestId('mci-dimension').textContent()).toContain('<script>');
    expect(await page.locator('.mc-inventory').textContent()).toContain('<img src=x');

    // An action that fails, with its error (hostile) and duration, appears while the page stays open.
    const failed = await runTask([{ type: 'place', block: 'stone', x: 0, y: 90, z: 0 }], 'PLACE HIGH');
    const row = page.locator('table.mc-actions tbody tr').filter({ hasText: 'place' }).first();
    await expect.poll(() => row.textContent(), { timeout: 15_000 }).toMatch(/running/);
    await expect
      .poll(() => row.locator('.mc-outcome').textContent(), { timeout: 15_000 })
      .toMatch(/action_failed/);
    expect(await row.locator('.mc-outcome').textContent()).toContain('no block to place against <img');
    expect(await row.locator('.mc-duration').textContent()).toMatch(/^\d+ ms$|^\d+\.\d s$/);
    expect(await row.locator(`a[href="#/tasks/${failed}"]`).count()).toBe(1);

    // 300 more log lines (paced under the mod endpoint's 50 frames/s, which drops the excess): the page keeps 200.
    for (let n = 1; n <= 300; n++) {
      mod.log(`line ${n}`);
      if (n % 20 === 0) await new Promise((r) => setTimeout(r, 500));
    }
    await expect.poll(() => log.textContent(), { timeout: 10_000 }).toContain('line 300');
    expect(await page.locator('ol.mc-log > li').count()).toBe(200);

    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('.mc-instance img, .mc-instance script').count()).toBe(0);
    // Everything came over the stream: the page was not navigated again.
    expect(urls.length).toBe(navigations);
    await page.close();
  }, 90_000);
});
