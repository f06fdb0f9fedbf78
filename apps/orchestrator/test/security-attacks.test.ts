/**
 * The three attacks of issue 18 on a default server (loopback, no token) and what must keep working: cross-site
 * request forgery of a task, cross-site WebSocket hijacking, impersonation of an enrolled computer, and DNS
 * rebinding. Each attack is tried exactly as a browser or a hostile computer would send it.
 */
import { request } from 'node:http';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CLOSE_CODES } from '../src/ws/close-codes.js';
import type { Harness } from './support/harness.js';
import { everyKind, strategyOf } from './support/harness.js';
import { useHarness } from './support/session.js';
import { enroll } from './support/security.js';

const t = useHarness();

async function taskCount(h: Harness): Promise<number> {
  const res = await h.http('/api/tasks');
  return ((await res.json()) as { total: number }).total;
}

/** A WebSocket upgrade with chosen headers: the HTTP status of a refusal, or `open`. */
function upgrade(h: Harness, headers: Record<string, string>): Promise<number | 'open'> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${h.url.replace(/^http/, 'ws')}/ws`, { headers });
    ws.on('unexpected-response', (_req, res) => {
      resolve(res.statusCode ?? 0);
      res.resume();
      ws.terminate();
    });
    ws.on('open', () => {
      resolve('open');
      ws.close();
    });
    ws.on('error', () => {});
  });
}

/** A raw request with a chosen Host header (fetch cannot set it). */
function withHost(h: Harness, method: string, p: string, host: string, body?: string): Promise<number> {
  const u = new URL(h.url);
  return new Promise((resolve, reject) => {
    const req = request(
      {
        host: u.hostname,
        port: u.port,
        method,
        path: p,
        headers: { host, ...(body !== undefined ? { 'content-type': 'application/json' } : {}) },
      },
      (res) => {
        res.resume();
        resolve(res.statusCode ?? 0);
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

/** A strategy that runs `fs_read` once and completes with what came back. */
const readOnce = everyKind(
  strategyOf((_task, history) => {
    const r = history.find((e) => e.type === 'tool_result');
    if (!r) return { type: 'tool_call', command: 'fs_list', args: { path: '/' } };
    return { type: 'complete', result: 'read' };
  }),
);

describe('cross-site request forgery', () => {
  it('refuses a text/plain task POST from a foreign Origin and creates no task (a web page must not start a general_agent task)', async () => {
    const h = await t.start();
    const body = JSON.stringify({ task_kind: 'general_agent', prompt: 'delete everything' });
    const attempts: Array<Record<string, string>> = [
      { 'content-type': 'text/plain', origin: 'http://evil.example' },
      { 'content-type': 'application/x-www-form-urlencoded', origin: 'http://evil.example' },
      { 'content-type': 'text/plain' },
      { 'content-type': 'application/json', origin: 'http://evil.example' },
      { 'content-type': 'application/json', origin: 'null' },
    ];
    for (const headers of attempts) {
      const res = await fetch(`${h.url}/api/tasks`, { method: 'POST', headers, body });
      expect([403, 415], JSON.stringify(headers)).toContain(res.status);
      const err = ((await res.json()) as { error: { code: string } }).error.code;
      expect(err).toMatch(/^(forbidden_origin|unsupported_media_type)$/);
    }
    expect(await taskCount(h)).toBe(0);
    // The server's own pages (same origin) and non-browser clients (no Origin) still create tasks.
    const own = await fetch(`${h.url}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json', origin: h.url },
      body,
    });
    expect(own.status).toBe(201);
    const cli = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'general_agent', prompt: 'p' },
    });
    expect(cli.status).toBe(201);
    expect(await taskCount(h)).toBe(2);
  });

  it('refuses a cross-site cancel and answer too (every state-changing route)', async () => {
    const h = await t.start();
    const created = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'general_agent', prompt: 'p' },
    });
    const id = ((await created.json()) as { task: { id: string } }).task.id;
    for (const p of [`/api/tasks/${id}/cancel`, `/api/tasks/${id}/answer`]) {
      const res = await fetch(`${h.url}${p}`, {
        method: 'POST',
        headers: { 'content-type': 'text/plain', origin: 'http://evil.example' },
        body: '{"text":"yes"}',
      });
      expect(res.status).toBe(403);
    }
    const task = (await (await h.http(`/api/tasks/${id}`)).json()) as { task: { status: string } };
    expect(task.task.status).not.toBe('cancelled');
  });
});

describe('cross-site WebSocket hijacking', () => {
  it('refuses an upgrade from a foreign Origin before any hello (no client appears)', async () => {
    const h = await t.start();
    expect(await upgrade(h, { origin: 'http://evil.example' })).toBe(403);
    expect(await upgrade(h, { origin: 'null' })).toBe(403);
    const clients = (await (await h.http('/api/clients')).json()) as { clients: unknown[] };
    expect(clients.clients).toEqual([]);
  });

  it("keeps accepting CC:Tweaked's upgrade (no Origin header) and the server's own origin", async () => {
    const h = await t.start();
    expect(await upgrade(h, {})).toBe('open');
    expect(await upgrade(h, { origin: h.url })).toBe('open');
  });

  it('accepts an origin on server.security.allowedOrigins', async () => {
    const h = await t.start({
      config: { server: { security: { allowedOrigins: ['http://dash.example:8080'] } } },
    });
    expect(await upgrade(h, { origin: 'http://dash.example:8080' })).toBe('open');
    expect(await upgrade(h, { origin: 'http://dash.example:8081' })).toBe(403);
  });
});

describe('impersonation of a computer', () => {
  it('refuses a hello with an enrolled client id and a missing, wrong or foreign key; the real computer keeps its calls', async () => {
    const h = await t.start({ strategies: readOnce });
    const key = await enroll(h, 'pc-1');
    const otherKey = await enroll(h, 'pc-2');
    const real = await t.connect('pc-1', { token: key });
    for (const token of [undefined, 'cck_wrong', otherKey]) {
      const impostor = t.open();
      await impostor.opened;
      impostor.send({
        type: 'hello',
        client_id: 'pc-1',
        protocol_version: 1,
        commands: [{ name: 'fs_list' }],
        ...(token !== undefined ? { token } : {}),
      });
      expect(await impostor.waitFor('error')).toMatchObject({ code: 'unauthorized', path: '$.token' });
      expect((await impostor.whenClosed()).code).toBe(CLOSE_CODES.unauthorized);
    }
    expect(real.isOpen).toBe(true);
    // The real computer, not an impostor, receives the task's call and its answer is what the task sees.
    const taskId = await t.createTask(real, 'pc-1', { kind: 'general_agent' });
    const call = await real.waitFor('command_call', { task_id: taskId });
    real.send({
      type: 'command_result',
      task_id: taskId,
      call_id: call.call_id,
      ok: true,
      result: { text: 'real' },
    });
    await real.waitFor('task_completed', { task_id: taskId });
  });

  it('with a shared token, a holder of the token cannot take over an enrolled client id', async () => {
    const h = await t.start({ token: 'shared-secret-1' });
    const key = await enroll(h, 'pc-1');
    const real = await t.connect('pc-1', { token: key });
    const impostor = t.open();
    await impostor.opened;
    impostor.send({
      type: 'hello',
      client_id: 'pc-1',
      protocol_version: 1,
      commands: [],
      token: 'shared-secret-1',
    });
    expect(await impostor.waitFor('error')).toMatchObject({ code: 'unauthorized' });
    expect(real.isOpen).toBe(true);
    // A computer that was never enrolled still connects with the shared token (existing set-ups keep working).
    await t.connect('legacy-pc', { token: 'shared-secret-1' });
  });
});

describe('DNS rebinding', () => {
  it('refuses API requests and upgrades whose Host is a foreign name, and accepts IP literals and localhost', async () => {
    const h = await t.start();
    const port = new URL(h.url).port;
    expect(await withHost(h, 'GET', '/api/tasks', `rebind.evil.example:${port}`)).toBe(421);
    expect(
      await withHost(
        h,
        'POST',
        '/api/tasks',
        `rebind.evil.example:${port}`,
        '{"task_kind":"general_agent","prompt":"x"}',
      ),
    ).toBe(421);
    expect(await upgrade(h, { host: `rebind.evil.example:${port}` })).toBe(421);
    expect(await taskCount(h)).toBe(0);
    expect(await withHost(h, 'GET', '/api/tasks', `localhost:${port}`)).toBe(200);
    expect(await withHost(h, 'GET', '/api/tasks', `127.0.0.1:${port}`)).toBe(200);
  });

  it('accepts a configured name', async () => {
    const h = await t.start({ config: { server: { security: { allowedHosts: ['cc.example.net'] } } } });
    expect(await withHost(h, 'GET', '/api/tasks', 'cc.example.net')).toBe(200);
  });
});
