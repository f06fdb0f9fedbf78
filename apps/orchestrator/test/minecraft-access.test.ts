/**
 * Who may use the Minecraft side of a server: the `/api/minecraft` routes behind the same front as the task API
 * (roles, Origin, Content-Type, audit), and the mod endpoint's WebSocket (`--mc-port`) behind the same Host/Origin
 * rules and credentials as the ComputerCraft one, with real sockets.
 */
import { ModClient, type ActionRunner } from '@ccagent/minecraft';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { eventually, type Harness } from './support/harness.js';
import { enroll } from './support/security.js';
import { useHarness } from './support/session.js';

const t = useHarness();
const TOKEN = 'operator-token-1';

function as(
  h: Harness,
  key: string,
  p: string,
  init: { method?: string; json?: unknown; headers?: Record<string, string> } = {},
): Promise<Response> {
  return fetch(`${h.url}${p}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${key}`,
      ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
      ...init.headers,
    },
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
  });
}

const TASK = { instance_id: 'Bot', prompt: 'walk to 10 5 10', model: 'qwen3:8b' };

async function minecraftTasks(h: Harness): Promise<number> {
  const r = await h.http('/api/tasks?kind=minecraft_agent');
  return ((await r.json()) as { total: number }).total;
}

describe('the /api/minecraft routes behind the security front', () => {
  it('lets a viewer list instances but not start, stop or retry; refuses computer keys (guards against a read-only key playing the game)', async () => {
    const h = await t.start({ token: TOKEN, minecraft: true });
    const made = await h.http('/api/credentials/keys', { method: 'POST', json: { role: 'viewer' } });
    const viewer = ((await made.json()) as { key: string }).key;
    const computer = await enroll(h, 'pc-a');

    const list = await as(h, viewer, '/api/minecraft/instances');
    expect(list.status).toBe(200);
    expect(await list.json()).toEqual({ instances: [] });
    for (const [p, json] of [
      ['/api/minecraft/tasks', TASK],
      ['/api/minecraft/instances/Bot/stop', {}],
      ['/api/minecraft/tasks/t-1/retry', {}],
    ] as const) {
      const r = await as(h, viewer, p, { method: 'POST', json });
      expect(r.status, `viewer POST ${p}`).toBe(403);
      expect(((await r.json()) as { error: { code: string } }).error.code).toBe('forbidden');
      expect((await as(h, computer, p, { method: 'POST', json })).status, `computer POST ${p}`).toBe(403);
    }
    expect((await as(h, computer, '/api/minecraft/instances')).status).toBe(403);
    expect((await fetch(`${h.url}/api/minecraft/instances`)).status).toBe(401);
    expect(await minecraftTasks(h)).toBe(0);
  });

  it('refuses a cross-site or form-typed create even with the operator token, and changes nothing (guards against a web page starting a task)', async () => {
    const h = await t.start({ token: TOKEN, minecraft: true });
    const evil = await as(h, TOKEN, '/api/minecraft/tasks', {
      method: 'POST',
      json: TASK,
      headers: { origin: 'http://evil.example' },
    });
    expect(evil.status).toBe(403);
    expect(((await evil.json()) as { error: { code: string } }).error.code).toBe('forbidden_origin');
    const form = await fetch(`${h.url}/api/minecraft/tasks`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'text/plain' },
      body: JSON.stringify(TASK),
    });
    expect(form.status).toBe(415);
    const stop = await fetch(`${h.url}/api/minecraft/instances/Bot/stop`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}` },
    });
    expect(stop.status).toBe(415);
    expect(await minecraftTasks(h)).toBe(0);
  });

  it("audits the operator's create and stop with the task and the instance (guards against unrecorded game actions)", async () => {
    const h = await t.start({ token: TOKEN, minecraft: true });
    const created = await as(h, TOKEN, '/api/minecraft/tasks', { method: 'POST', json: TASK });
    expect(created.status).toBe(201);
    const id = ((await created.json()) as { task: { id: string } }).task.id;
    const stopped = await as(h, TOKEN, '/api/minecraft/instances/Bot/stop', { method: 'POST', json: {} });
    expect(stopped.status).toBe(200);
    expect(await stopped.json()).toEqual({ stop_sent: false, cancelled_tasks: [id] });
    // The audit record is written once the answer has gone out.
    const mine = await eventually(async () => {
      const rows = (await h.running.security.listAudit({}))
        .filter((e) => e.action.startsWith('minecraft.'))
        .map((e) => ({ action: e.action, target: e.target, actor: e.actor }));
      return rows.length >= 2 ? rows : undefined;
    });
    expect(mine).toEqual(
      expect.arrayContaining([
        { action: 'minecraft.create', target: id, actor: 'token' },
        { action: 'minecraft.stop', target: 'Bot', actor: 'token' },
      ]),
    );
  });
});

/** A mod that completes every action (the bridge's client with a scripted runner). */
const idle: ActionRunner = { run: () => Promise.resolve({ ok: true }), state: () => null };

function modUrl(h: Harness): string {
  const mc = h.running.report.minecraft;
  if (mc === undefined || !('url' in mc)) throw new Error('the mod endpoint is not running');
  return mc.url;
}

type Upgrade =
  | { refused: true; status: number; code: string }
  | { refused: false; frames: Array<Record<string, unknown>>; closeCode: number };

/** Open the mod endpoint with `headers`; if it opens, register as `instanceId` and collect frames until closed or 1 s. */
function upgrade(url: string, headers: Record<string, string>, instanceId = 'Bot'): Promise<Upgrade> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { headers });
    const frames: Array<Record<string, unknown>> = [];
    ws.on('error', () => undefined);
    ws.on('unexpected-response', (req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => {
        req.destroy();
        try {
          const code = (JSON.parse(body) as { error: { code: string } }).error.code;
          resolve({ refused: true, status: res.statusCode ?? 0, code });
        } catch (e) {
          reject(e as Error);
        }
      });
    });
    ws.on('open', () => {
      ws.send(JSON.stringify({ type: 'register', instanceId, version: '1.0' }));
      setTimeout(() => ws.close(), 1000);
    });
    ws.on('message', (d) => frames.push(JSON.parse(String(d)) as Record<string, unknown>));
    ws.on('close', (closeCode) => resolve({ refused: false, frames, closeCode }));
  });
}

async function instances(h: Harness): Promise<Array<{ instance_id: string; connected: boolean }>> {
  const r = await h.http('/api/minecraft/instances');
  return ((await r.json()) as { instances: Array<{ instance_id: string; connected: boolean }> }).instances;
}

describe('the mod endpoint (WebSocket) behind the same rules as the CC endpoint', () => {
  it('refuses an upgrade from a web page or under a foreign Host name, before any frame, and the bridge client still registers (guards against a page in the player’s browser taking over the bot)', async () => {
    const h = await t.start({ minecraft: true });
    const url = modUrl(h);
    const bridge = new ModClient({ url, instanceId: 'Bot', runner: idle, reconnectDelayMs: 200 });
    try {
      await bridge.start();
      expect(await upgrade(url, { Origin: 'http://evil.example' })).toEqual({
        refused: true,
        status: 403,
        code: 'forbidden_origin',
      });
      expect(await upgrade(url, { Origin: 'null' })).toMatchObject({ refused: true, status: 403 });
      const port = new URL(url).port;
      expect(await upgrade(url, { Host: `evil.example:${port}` })).toEqual({
        refused: true,
        status: 421,
        code: 'forbidden_host',
      });
      // The real mod kept its connection: nothing replaced it, nothing else registered.
      expect(await instances(h)).toEqual([expect.objectContaining({ instance_id: 'Bot', connected: true })]);
      expect(bridge.connections).toBe(1);
      expect(bridge.refusals).toEqual([]);
    } finally {
      bridge.close();
    }
  });

  it('refuses an Origin equal to the endpoint’s own host, or the orchestrator’s own origin: the endpoint serves no page, so only the allow-list admits a browser origin (guards against the own-origin rule of the HTTP side applying to the mod endpoint)', async () => {
    const h = await t.start({
      minecraft: true,
      config: { server: { security: { allowedOrigins: ['http://trusted.example:8080'] } } },
    });
    const url = modUrl(h);
    const own = new URL(url);
    for (const origin of [
      `http://${own.host}`,
      `https://${own.host}`,
      `http://localhost:${own.port}`,
      h.url,
    ]) {
      expect(await upgrade(url, { Origin: origin }), origin).toEqual({
        refused: true,
        status: 403,
        code: 'forbidden_origin',
      });
    }
    // A page's request without Origin still says where it came from.
    expect(await upgrade(url, { 'Sec-Fetch-Site': 'same-origin' })).toMatchObject({
      refused: true,
      status: 403,
    });
    expect(await instances(h)).toEqual([]);
    // An origin the operator listed may connect (a web tool of their own).
    const listed = await upgrade(url, { Origin: 'http://trusted.example:8080' });
    expect(listed).toMatchObject({ refused: false });
    expect(!listed.refused && listed.frames).toEqual([
      expect.objectContaining({ type: 'registered', success: true }),
    ]);
  });

  it('on a server with a token, needs a credential from mods: none or a wrong one 401, a viewer key 403, the token any instance, a computer key only its own instance id (guards against an unauthenticated local process playing the game)', async () => {
    const h = await t.start({ token: TOKEN, minecraft: true });
    const url = modUrl(h);
    const made = await h.http('/api/credentials/keys', { method: 'POST', json: { role: 'viewer' } });
    const viewer = ((await made.json()) as { key: string }).key;
    const botKey = await enroll(h, 'Bot');

    expect(await upgrade(url, {})).toEqual({ refused: true, status: 401, code: 'unauthorized' });
    expect(await upgrade(url, { authorization: 'Bearer wrong-token' })).toEqual({
      refused: true,
      status: 401,
      code: 'unauthorized',
    });
    expect(await upgrade(url, { authorization: `Bearer ${viewer}` })).toEqual({
      refused: true,
      status: 403,
      code: 'forbidden',
    });
    // A computer key enrolled for Bot cannot register as another instance.
    const other = await upgrade(url, { authorization: `Bearer ${botKey}` }, 'Other');
    expect(other).toMatchObject({ refused: false, closeCode: 4003 });
    expect(!other.refused && other.frames).toEqual([
      expect.objectContaining({ type: 'error', code: 'instance_mismatch' }),
      { type: 'registered', success: false },
    ]);
    expect(await instances(h)).toEqual([]);

    const withToken = new ModClient({ url, instanceId: 'Alex', token: TOKEN, runner: idle });
    const withKey = new ModClient({ url, instanceId: 'Bot', token: botKey, runner: idle });
    try {
      await withToken.start();
      await withKey.start();
      expect((await instances(h)).map((i) => [i.instance_id, i.connected])).toEqual([
        ['Alex', true],
        ['Bot', true],
      ]);
    } finally {
      withToken.close();
      withKey.close();
    }
  });
});
