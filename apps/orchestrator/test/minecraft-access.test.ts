/**
 * Who may use the Minecraft side of a server with a token: the `/api/minecraft` routes behind the same front as the
 * task API (roles, Origin, Content-Type, audit).
 */
import { describe, expect, it } from 'vitest';
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
