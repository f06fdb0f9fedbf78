// Seed 003 end to end: a real Minecraft server (flying-squid, loopback, offline mode), the bridge bot (the built
// `ccagent-mc-bridge`, a separate process) joined as a player, the built orchestrator with its mod endpoint, and a
// scripted model (the testkit's fake Ollama). Everything the tasks did is checked from the server's side: the
// player's position, the chat log, the blocks of the world. The dashboard's Minecraft page in real Chromium. Then
// kill -9 of the orchestrator mid-action, and mid model call (the step log keeps the request, as a CC task's does).
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

const MODEL = 'mc-planner';

let squid: TestMinecraftServer;
let fake: FakeOllama;
let orch: Served;
let bridge: ChildProcess;
let bridgeLog = '';
let mcPort: number;
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
  // A task named in `hanging` gets no reply in time: a kill -9 lands while its model call is in flight.
  const hang = hanging.has(task) ? { fault: { latencyMs: 60_000 } } : {};
  return { json: /did not work out/.test(text) && p.replan !== undefined ? p.replan : p.plan, ...hang };
}
const hanging = new Set<string>();

function startOrchestrator(): Promise<Served> {
  return serve([
    '--port',
    '0',
    '--db',
    path.join(dir, 'mc.db'),
    '--mc-port',
    String(mcPort),
    '--ollama-url',
    fake.url,
  ]);
}

async function api<T>(method: string, p: string, body?: unknown): Promise<{ status: number; body: T }> {
  const res = await fetch(`${orch.url}${p}`, {
    method,
    // Every POST carries a JSON body (the server refuses a POST without Content-Type: application/json).
    ...(method === 'POST'
      ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body ?? {}) }
      : {}),
  });
  return { status: res.status, body: (await res.json()) as T };
}

interface WireTask {
  id: string;
  status: string;
  result?: { replans: number; actionsCompleted: number };
  error?: unknown;
}
interface WireInstance {
  instance_id: string;
  connected: boolean;
  open_action_id: string | null;
  last_state: { position: { x: number; y: number; z: number } } | null;
}

async function runTask(name: string, mode = 'low-level'): Promise<WireTask> {
  const created = await api<{ task: WireTask }>('POST', '/api/minecraft/tasks', {
    instance_id: 'Bot',
    prompt: name,
    mode,
    model: MODEL,
  });
  expect(created.status).toBe(201);
  return waitForEnd(created.body.task.id);
}

async function waitForEnd(id: string): Promise<WireTask> {
  let t: WireTask | undefined;
  await expect
    .poll(
      async () => {
        t = (await api<{ task: WireTask }>('GET', `/api/tasks/${id}`)).body.task;
        return ['completed', 'failed', 'cancelled'].includes(t.status);
      },
      { timeout: 60_000, interval: 200 },
    )
    .toBe(true);
  return t as WireTask;
}

async function instance(): Promise<WireInstance | undefined> {
  const r = await api<{ instances: WireInstance[] }>('GET', '/api/minecraft/instances');
  return r.body.instances.find((i) => i.instance_id === 'Bot');
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'mc-e2e-'));
  squid = await startTestServer();
  fake = await startFakeOllama();
  fake.script(MODEL, reply);
  mcPort = await freePort();
  orch = await startOrchestrator();
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

describe('minecraft_agent through the whole stack on a real server', () => {
  it('lists the bridge as a connected instance with its version and last state', async () => {
    const i = await instance();
    expect(i).toMatchObject({ instance_id: 'Bot', connected: true });
    const server = await squid.playerPosition('Bot');
    expect(Math.floor(server?.x ?? NaN)).toBe(spawnAt.x);
  });

  it('walks to a coordinate and says something in chat: the server sees the position and the message', async () => {
    const target = { x: spawnAt.x + 5, y: spawnAt.y, z: spawnAt.z + 3 };
    plans.set('WALK', {
      plan: {
        actions: [
          { type: 'goto', ...target },
          { type: 'chat', message: `arrived at ${target.x} ${target.z}` },
        ],
      },
    });
    const t = await runTask('WALK');
    expect(t.status).toBe('completed');
    const p = await squid.playerPosition('Bot');
    expect([Math.floor(p?.x ?? NaN), Math.floor(p?.z ?? NaN)]).toEqual([target.x, target.z]);
    expect(await squid.chat()).toContainEqual({
      username: 'Bot',
      message: `arrived at ${target.x} ${target.z}`,
    });
    // Plan, action, result and state are steps of the task's step log.
    const steps = await api<{ steps: Array<{ kind: string }> }>('GET', `/api/tasks/${t.id}/steps`);
    const kinds = steps.body.steps.map((s) => s.kind);
    for (const k of ['mc_state', 'mc_plan', 'mc_plan_accepted', 'decision', 'tool_result'])
      expect(kinds).toContain(k);
  });

  it('places a block: it is in the server world afterwards', async () => {
    const at = { x: spawnAt.x + 2, y: spawnAt.y, z: spawnAt.z - 2 };
    expect(await squid.blockAt(at.x, at.y, at.z)).toBe('air');
    plans.set('PLACE', { plan: { actions: [{ type: 'place', block: 'oak_planks', ...at }] } });
    const t = await runTask('PLACE');
    expect(t.status).toBe('completed');
    expect(await squid.blockAt(at.x, at.y, at.z)).toBe('oak_planks');
  });

  it('a failing action makes the agent re-plan from the current state, and the new plan is carried out', async () => {
    const floating = { x: spawnAt.x - 2, y: spawnAt.y + 6, z: spawnAt.z };
    const ground = { x: spawnAt.x - 2, y: spawnAt.y, z: spawnAt.z + 1 };
    plans.set('REPLAN', {
      plan: {
        actions: [
          { type: 'place', block: 'stone', ...floating },
          { type: 'chat', message: 'not reached' },
        ],
      },
      replan: {
        actions: [
          { type: 'place', block: 'stone', ...ground },
          { type: 'chat', message: 'placed it lower' },
        ],
      },
    });
    const t = await runTask('REPLAN');
    expect(t.status).toBe('completed');
    expect(t.result?.replans).toBe(1);
    expect(await squid.blockAt(floating.x, floating.y, floating.z)).toBe('air');
    expect(await squid.blockAt(ground.x, ground.y, ground.z)).toBe('stone');
    const chat = (await squid.chat()).map((c) => c.message);
    expect(chat).toContain('placed it lower');
    expect(chat).not.toContain('not reached');
    const steps = await api<{
      steps: Array<{ kind: string; input?: { messages: Array<{ content: string }> } }>;
    }>('GET', `/api/tasks/${t.id}/steps`);
    const replan = steps.body.steps.find((s) => s.kind === 'mc_replan');
    expect(JSON.stringify(replan?.input)).toMatch(/no solid block next to/);
  });

  it('a task on the model the planner role uses asks for the planner num_ctx, so the server does not reload the model between task kinds', async () => {
    // The default configuration's planner is qwen3:8b at 16384 (no config file, no model environment here).
    fake.script('qwen3:8b', reply);
    plans.set('SAME-MODEL', { plan: { actions: [{ type: 'chat', message: 'same model' }] } });
    const created = await api<{ task: WireTask }>('POST', '/api/minecraft/tasks', {
      instance_id: 'Bot',
      prompt: 'SAME-MODEL',
      mode: 'low-level',
      model: 'qwen3:8b',
    });
    expect(created.status).toBe(201);
    expect((await waitForEnd(created.body.task.id)).status).toBe('completed');
    const numCtx = (r: { body: unknown }): number | undefined =>
      (r.body as { options?: { num_ctx?: number } }).options?.num_ctx;
    expect(fake.chatRequests('qwen3:8b').map(numCtx)).toEqual([16384]);
    // A model no role uses gets no num_ctx: the server's default, as before.
    expect(fake.chatRequests(MODEL).map(numCtx)).toContain(undefined);
  });

  it('refuses a bad task body with the path of the field and creates no task', async () => {
    const before = (await api<{ tasks: unknown[] }>('GET', '/api/tasks?kind=minecraft_agent&limit=1000')).body
      .tasks;
    const r = await api<{ error: { code: string; path: string } }>('POST', '/api/minecraft/tasks', {
      instance_id: 'Bot',
      prompt: 'x',
      model: MODEL,
      mode: 'sideways',
    });
    expect(r.status).toBe(400);
    expect(r.body.error).toMatchObject({ code: 'invalid_body', path: '$.mode' });
    const after = (await api<{ tasks: unknown[] }>('GET', '/api/tasks?kind=minecraft_agent&limit=1000')).body
      .tasks;
    expect(after).toHaveLength(before.length);
  });

  it('the dashboard lists the bridge with its state, starts a task from its form, stops it and retries it (guards against a seed UI that is only an API)', async () => {
    const far = { x: spawnAt.x + 12, y: spawnAt.y, z: spawnAt.z + 12 };
    plans.set('DASHWALK', { plan: { actions: [{ type: 'goto', ...far }] } });
    const browser = await launchBrowser();
    try {
      const page = await browser.page();
      await page.goto(`${orch.url}/#/minecraft`);
      const card = page.locator('[data-instance-id="Bot"]');
      await expect.poll(() => card.textContent(), { timeout: 15_000 }).toMatch(/connected · protocol 1\.0/);
      const shown = await card.getByTestId('mc-position').textContent();
      const server = await squid.playerPosition('Bot');
      expect(Math.floor(Number(shown?.split(' ')[0]))).toBe(Math.floor(server?.x ?? NaN));

      await page.locator('select[name="instance"]').selectOption('Bot');
      await page.locator('select[name="mode"]').selectOption('low-level');
      await page.locator('input[name="model"]').fill(MODEL);
      await page.locator('textarea[name="prompt"]').fill('DASHWALK');
      await page.getByRole('button', { name: 'Start' }).click();
      await page.waitForURL(/#\/tasks\/[^/]+$/, { timeout: 15_000 });
      const id = decodeURIComponent(new URL(page.url()).hash.replace('#/tasks/', ''));
      await expect
        .poll(async () => (await instance())?.open_action_id ?? null, { timeout: 20_000, interval: 50 })
        .toBe(`${id}:p1:g0:a0`);

      await page.goto(`${orch.url}/#/minecraft`);
      await page.getByRole('button', { name: 'Stop Bot' }).click();
      await expect
        .poll(() => page.getByRole('status').filter({ hasText: 'Stop' }).textContent(), { timeout: 10_000 })
        .toBe('Stop sent to Bot; 1 task(s) cancelled.');
      expect((await waitForEnd(id)).status).toBe('cancelled');
      const row = page.locator(`tr[data-task-id="${id}"]`);
      await expect.poll(() => row.textContent(), { timeout: 10_000 }).toMatch(/cancelled/);
      await screenshot(page, 'minecraft-page');

      await row.getByRole('button', { name: 'Retry' }).click();
      // Issue 34: the retry reopens the same task (the engine's retry), and the page shows it.
      await page.waitForURL((u) => u.hash === `#/tasks/${encodeURIComponent(id)}`, { timeout: 15_000 });
      const retried = decodeURIComponent(new URL(page.url()).hash.replace('#/tasks/', ''));
      expect((await waitForEnd(retried)).status).toBe('completed');
      const p = await squid.playerPosition('Bot');
      expect([Math.floor(p?.x ?? NaN), Math.floor(p?.z ?? NaN)]).toEqual([far.x, far.z]);
    } finally {
      await browser.close();
    }
  }, 90_000);

  it('stop halts the player mid-walk and cancels the task; retry runs it again to the end', async () => {
    const far = { x: spawnAt.x - 16, y: spawnAt.y, z: spawnAt.z + 10 };
    plans.set('STOPME', { plan: { actions: [{ type: 'goto', ...far }] } });
    const created = await api<{ task: WireTask }>('POST', '/api/minecraft/tasks', {
      instance_id: 'Bot',
      prompt: 'STOPME',
      mode: 'low-level',
      model: MODEL,
    });
    const id = created.body.task.id;
    await expect
      .poll(async () => (await instance())?.open_action_id ?? null, { timeout: 20_000, interval: 50 })
      .toBe(`${id}:p1:g0:a0`);
    const stop = await api<{ stop_sent: boolean; cancelled_tasks: string[] }>(
      'POST',
      '/api/minecraft/instances/Bot/stop',
    );
    expect(stop.body).toEqual({ stop_sent: true, cancelled_tasks: [id] });
    expect((await waitForEnd(id)).status).toBe('cancelled');
    await new Promise((r) => setTimeout(r, 1_000));
    const halted = await squid.playerPosition('Bot');
    expect([Math.floor(halted?.x ?? NaN), Math.floor(halted?.z ?? NaN)]).not.toEqual([far.x, far.z]);

    // Issue 34: the retry is the engine's (TaskOperations): the same task reopened with fresh budgets.
    const retry = await api<{ task: WireTask }>('POST', `/api/minecraft/tasks/${id}/retry`);
    expect(retry.status).toBe(200);
    expect(retry.body.task.id).toBe(id);
    expect((await waitForEnd(retry.body.task.id)).status).toBe('completed');
    const p = await squid.playerPosition('Bot');
    expect([Math.floor(p?.x ?? NaN), Math.floor(p?.z ?? NaN)]).toEqual([far.x, far.z]);
  });

  it('kill -9 mid-action: after a restart the task resumes at the open action and no action runs twice', async () => {
    const far = { x: spawnAt.x + 14, y: spawnAt.y, z: spawnAt.z - 6 };
    plans.set('SURVIVE', {
      plan: {
        actions: [
          { type: 'goto', ...far },
          { type: 'chat', message: 'made it through a crash' },
        ],
      },
    });
    const created = await api<{ task: WireTask }>('POST', '/api/minecraft/tasks', {
      instance_id: 'Bot',
      prompt: 'SURVIVE',
      mode: 'low-level',
      model: MODEL,
    });
    const id = created.body.task.id;
    await expect
      .poll(async () => (await instance())?.open_action_id ?? null, { timeout: 20_000, interval: 50 })
      .toBe(`${id}:p1:g0:a0`);
    await orch.kill9();
    orch = await startOrchestrator();
    const t = await waitForEnd(id);
    expect(t.status).toBe('completed');
    const p = await squid.playerPosition('Bot');
    expect([Math.floor(p?.x ?? NaN), Math.floor(p?.z ?? NaN)]).toEqual([far.x, far.z]);
    const said = (await squid.chat()).filter((c) => c.message === 'made it through a crash');
    expect(said).toHaveLength(1);
    // The bridge's own log: each action id of the task was run once; the goto was sent again after the restart.
    const lines = bridgeLog
      .split('\n')
      .filter((l) => l.startsWith('{'))
      .map((l) => JSON.parse(l) as { msg?: string; action_id?: string });
    const runs = (action: string): number =>
      lines.filter((l) => l.msg === 'running action' && l.action_id === action).length;
    expect(runs(`${id}:p1:g0:a0`)).toBe(1);
    expect(runs(`${id}:p1:g0:a1`)).toBe(1);
    expect(
      lines.some((l) => l.action_id === `${id}:p1:g0:a0` && /^repeated action id/.test(l.msg ?? '')),
    ).toBe(true);
  });
  it('kill -9 during a model call: the step log holds the write-ahead model_request record exactly like a CC task, then the resumed marker and the repeat', async () => {
    // The same checks as tools/resilience/test/model-call-cut-by-restart.test.ts makes of a general_agent task.
    plans.set('CUTCALL', { plan: { actions: [{ type: 'chat', message: 'planned after the cut call' }] } });
    hanging.add('CUTCALL');
    const ofTask = () =>
      fake.chatRequests(MODEL).filter((r) => JSON.stringify(r.body).includes('TASK: CUTCALL'));
    const created = await api<{ task: WireTask }>('POST', '/api/minecraft/tasks', {
      instance_id: 'Bot',
      prompt: 'CUTCALL',
      mode: 'low-level',
      model: MODEL,
    });
    expect(created.status).toBe(201);
    const id = created.body.task.id;
    await expect.poll(() => ofTask().length, { timeout: 20_000, interval: 50 }).toBe(1);
    await orch.kill9();
    hanging.delete('CUTCALL');
    orch = await startOrchestrator();
    expect((await waitForEnd(id)).status).toBe('completed');
    expect((await squid.chat()).map((c) => c.message)).toContain('planned after the cut call');

    interface WireStep {
      seq: number;
      step: number;
      kind: string;
      model?: string;
      input?: { messages?: Array<{ role: string; content: string }>; provider?: string };
      output?: { role?: string };
      started_at?: number;
    }
    const steps = (await api<{ steps: WireStep[] }>('GET', `/api/tasks/${id}/steps?limit=500`)).body.steps;
    const requests = steps.filter((s) => s.kind === 'model_request');
    const received = ofTask();
    // Every request the model server received is in the step log, in order, with exactly what was sent.
    expect(requests).toHaveLength(received.length);
    expect(received.length).toBeGreaterThanOrEqual(2);
    requests.forEach((r, i) => {
      expect(r.model).toBe(MODEL);
      expect(r.output?.role).toBe('mc_plan');
      expect(r.input?.provider).toBe('ollama');
      const sent = (received[i]?.body as { messages: Array<{ role: string; content: string }> }).messages;
      expect(r.input?.messages?.map((m) => ({ role: m.role, content: m.content }))).toEqual(
        sent.map((m) => ({ role: m.role, content: m.content })),
      );
    });
    // The first request never got a reply recorded: no mc_plan record has its start, and the resumed marker follows.
    const cut = requests[0] as WireStep;
    expect(steps.some((s) => s.kind === 'mc_plan' && s.started_at === cut.started_at)).toBe(false);
    const resumed = steps.find((s) => s.kind === 'resumed');
    expect(resumed?.seq).toBeGreaterThan(cut.seq);
    expect(resumed?.step).toBe(cut.step);
    // Every later request has its finished record (same start).
    for (const r of requests.slice(1)) {
      expect(steps.some((s) => s.kind === 'mc_plan' && s.started_at === r.started_at)).toBe(true);
    }
  });
});
