// Issue 36 item 4 on the whole stack: a real Minecraft server (flying-squid, loopback, offline mode), the bridge bot
// (the built `ccagent-mc-bridge`, a separate process), the built orchestrator and a scripted model. The dashboard's
// instance page is open in real Chromium while tasks run: the player's position, each action with its outcome and
// duration, and the mod's log lines (what the bot reads in the game's chat) must appear without a reload.
import type { ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startTestServer, type TestMinecraftServer } from '@ccagent/minecraft/testing';
import { startFakeOllama, type FakeChatRequest, type FakeOllama, type FakeReply } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { serve, type Served } from './support/spawn.js';
import { freePort, spawnBridge, waitForInstance } from './support/minecraft.js';

const MODEL = 'mc-live-planner';

let squid: TestMinecraftServer;
let fake: FakeOllama;
let orch: Served;
let bridge: ChildProcess;
let bridgeLog = '';
let dir: string;
let spawnAt: { x: number; y: number; z: number };

/** Plans by task prompt; a re-plan request (it says the plan did not work out) gets `replan`. */
const plans = new Map<string, { plan: unknown; replan?: unknown }>();
function reply(req: FakeChatRequest): FakeReply {
  const messages = req.body['messages'] as Array<{ content: string }>;
  const text = messages.map((m) => m.content).join('\n');
  const task = /TASK: (\S+)/.exec(text)?.[1] ?? '';
  const p = plans.get(task);
  if (p === undefined) return { content: `no plan scripted for ${task}` };
  return { json: /did not work out/.test(text) && p.replan !== undefined ? p.replan : p.plan };
}

async function api<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${orch.url}${p}`, {
    method,
    ...(method === 'POST'
      ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) }
      : {}),
  });
  return { status: res.status, body: (await res.json()) as T };
}

async function startTask(name: string): Promise<string> {
  const created = await api<{ task: { id: string } }>('POST', '/api/minecraft/tasks', {
    instance_id: 'Bot',
    prompt: name,
    mode: 'low-level',
    model: MODEL,
  });
  expect(created.status).toBe(201);
  return created.body.task.id;
}

async function waitForEnd(id: string): Promise<string> {
  let status = '';
  await expect
    .poll(
      async () => {
        status = (await api<{ task: { status: string } }>('GET', `/api/tasks/${id}?steps=0`)).body.task
          .status;
        return ['completed', 'failed', 'cancelled'].includes(status);
      },
      { timeout: 60_000, interval: 200 },
    )
    .toBe(true);
  return status;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'mc-live-page-'));
  squid = await startTestServer();
  fake = await startFakeOllama();
  fake.script(MODEL, reply);
  const mcPort = await freePort();
  orch = await serve([
    '--port',
    '0',
    '--db',
    path.join(dir, 'mc.db'),
    '--mc-port',
    String(mcPort),
    '--ollama-url',
    fake.url,
  ]);
  bridge = spawnBridge(squid, mcPort);
  bridge.stderr?.on('data', (b: Buffer) => (bridgeLog += b.toString()));
  spawnAt = await waitForInstance(orch.url, bridge, () => bridgeLog);
}, 120_000);

afterAll(async () => {
  bridge?.kill('SIGKILL');
  await orch?.kill9();
  await fake?.close();
  await squid?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe('the Minecraft instance page on a real server', () => {
  it('shows the bot walking, each action with its outcome and duration, and the game chat as log lines, as they happen (guards against a page that only shows the state at load)', async () => {
    const target = { x: spawnAt.x + 6, y: spawnAt.y, z: spawnAt.z + 4 };
    plans.set('LIVEWALK', {
      plan: {
        actions: [
          { type: 'goto', ...target },
          { type: 'place', block: 'oak_planks', x: target.x - 2, y: target.y, z: target.z - 2 },
          { type: 'chat', message: 'hello from the live page' },
        ],
      },
    });
    const floating = { x: spawnAt.x - 3, y: spawnAt.y + 6, z: spawnAt.z };
    plans.set('LIVEFAIL', {
      plan: { actions: [{ type: 'place', block: 'stone', ...floating }] },
      replan: { actions: [{ type: 'chat', message: 'nothing to lean the block on' }] },
    });
    const browser = await launchBrowser();
    try {
      const page = await browser.page(1280, 900);
      let navigations = 0;
      page.on('framenavigated', (f) => {
        if (f === page.mainFrame()) navigations++;
      });
      await page.goto(`${orch.url}/#/minecraft/Bot`);
      const position = page.getByTestId('mci-position');
      await expect.poll(() => position.textContent(), { timeout: 15_000 }).toMatch(/^-?\d/);
      const startX = Math.floor(Number((await position.textContent())?.split(' ')[0]));
      expect(startX).toBe(spawnAt.x);
      expect(await page.getByTestId('mci-dimension').textContent()).toMatch(/overworld/);
      const before = navigations;

      const walk = await startTask('LIVEWALK');
      const gotoRow = page.locator('table.mc-actions tr').filter({ hasText: 'goto' });
      // The walk is seen while it runs, then with its outcome and duration.
      await expect.poll(() => gotoRow.textContent(), { timeout: 20_000, interval: 50 }).toMatch(/running/);
      await expect.poll(() => gotoRow.textContent(), { timeout: 30_000 }).toMatch(/done/);
      expect(await gotoRow.locator('.mc-duration').textContent()).toMatch(/^\d+(\.\d)? (ms|s)$/);
      expect(await gotoRow.locator(`a[href="#/tasks/${walk}"]`).count()).toBe(1);
      // The position shown is where the server has the player.
      await expect
        .poll(
          async () =>
            (await position.textContent())
              ?.split(' ')
              .filter((_, n) => n !== 1)
              .map((v) => Math.floor(Number(v))),
          { timeout: 10_000 },
        )
        .toEqual([target.x, target.z]);
      const server = await squid.playerPosition('Bot');
      expect([Math.floor(server?.x ?? NaN), Math.floor(server?.z ?? NaN)]).toEqual([target.x, target.z]);
      // The chat action, and the game's chat echoed back to the bot as the mod's log line.
      await expect
        .poll(() => page.locator('table.mc-actions tr').filter({ hasText: 'chat' }).textContent(), {
          timeout: 15_000,
        })
        .toMatch(/done/);
      await expect
        .poll(() => page.locator('ol.mc-log').textContent(), { timeout: 15_000 })
        .toContain('hello from the live page');
      expect(await waitForEnd(walk)).toBe('completed');
      expect(await squid.blockAt(target.x - 2, target.y, target.z - 2)).toBe('oak_planks');
      await expect
        .poll(() => page.locator('table.mc-inventory').textContent(), { timeout: 10_000 })
        .toContain('oak_planks');

      // A failing action: its code and the mod's reason, then the re-plan's action.
      const fail = await startTask('LIVEFAIL');
      const placeRow = page
        .locator('table.mc-actions tr')
        .filter({ hasText: 'place' })
        .filter({ hasText: 'action_failed' });
      await expect.poll(() => placeRow.textContent(), { timeout: 30_000 }).toMatch(/action_failed/);
      expect(await placeRow.textContent()).toMatch(/no solid block next to/);
      await expect
        .poll(() => page.locator('ol.mc-log').textContent(), { timeout: 15_000 })
        .toContain('nothing to lean the block on');
      expect(await waitForEnd(fail)).toBe('completed');
      // Nothing above came from a reload.
      expect(navigations).toBe(before);
      await screenshot(page, 'minecraft-instance-live');
    } finally {
      await browser.close();
    }
  }, 150_000);
});
