/**
 * Roles with per-computer keys: what a computer, a viewer and a throttled source must not be able to do, on the
 * WebSocket and over HTTP, and revocation closing a computer's socket at once.
 */
import { describe, expect, it } from 'vitest';
import { CLOSE_CODES } from '../src/ws/close-codes.js';
import { everyKind, strategyOf, type Harness } from './support/harness.js';
import { enroll } from './support/security.js';
import { useHarness } from './support/session.js';

const t = useHarness();
const TOKEN = 'operator-token-1';

/** Every task lists a directory, then completes. */
const listOnce = everyKind(
  strategyOf((_task, history) =>
    history.some((e) => e.type === 'tool_result')
      ? { type: 'complete', result: 'ok' }
      : { type: 'tool_call', command: 'fs_list', args: { path: '/' } },
  ),
);

function as(
  h: Harness,
  key: string,
  p: string,
  init: { method?: string; json?: unknown } = {},
): Promise<Response> {
  return fetch(`${h.url}${p}`, {
    method: init.method ?? 'GET',
    headers: {
      authorization: `Bearer ${key}`,
      ...(init.json !== undefined ? { 'content-type': 'application/json' } : {}),
    },
    ...(init.json !== undefined ? { body: JSON.stringify(init.json) } : {}),
  });
}

describe('computer role', () => {
  it("cannot read, subscribe to, cancel or answer another computer's task, nor answer its call (WebSocket and HTTP)", async () => {
    const h = await t.start({ token: TOKEN, strategies: listOnce });
    const keyA = await enroll(h, 'pc-a');
    const keyB = await enroll(h, 'pc-b');
    const a = await t.connect('pc-a', { token: keyA });
    const b = await t.connect('pc-b', { token: keyB });
    const taskId = await t.createTask(a, 'pc-a', { kind: 'general_agent' });
    const call = await a.waitFor('command_call', { task_id: taskId });

    b.send({ type: 'subscribe', task_id: taskId, request_id: 's1' });
    expect(await b.waitFor('error', { request_id: 's1' })).toMatchObject({ code: 'forbidden' });
    b.send({ type: 'cancel_task', task_id: taskId, request_id: 'c1' });
    expect(await b.waitFor('error', { request_id: 'c1' })).toMatchObject({ code: 'forbidden' });
    b.send({ type: 'user_answer', task_id: taskId, question_id: 'q', text: 'yes' });
    expect(await b.waitFor('error', { task_id: taskId })).toMatchObject({ code: 'forbidden' });
    b.send({
      type: 'command_result',
      task_id: taskId,
      call_id: call.call_id,
      ok: true,
      result: { forged: true },
    });
    expect(await b.waitFor('error', { call_id: call.call_id })).toMatchObject({ code: 'forbidden' });
    b.send({
      type: 'create_task',
      request_id: 'x1',
      task_kind: 'general_agent',
      client_id: 'pc-a',
      prompt: 'p',
      allowed_commands: [],
    });
    expect(await b.waitFor('error', { request_id: 'x1' })).toMatchObject({ code: 'forbidden' });

    // Over HTTP with its own key.
    expect((await as(h, keyB, `/api/tasks/${taskId}`)).status).toBe(403);
    expect((await as(h, keyB, `/api/tasks/${taskId}/steps`)).status).toBe(403);
    expect((await as(h, keyB, `/api/tasks/${taskId}/cancel`, { method: 'POST', json: {} })).status).toBe(403);
    expect(
      (await as(h, keyB, `/api/tasks/${taskId}/answer`, { method: 'POST', json: { text: 'y' } })).status,
    ).toBe(403);
    expect((await as(h, keyB, '/api/tasks')).status).toBe(403);
    expect((await as(h, keyB, '/api/tasks?client=pc-b')).status).toBe(200);
    expect(
      (await as(h, keyB, '/api/tasks', { method: 'POST', json: { task_kind: 'general_agent', prompt: 'p' } }))
        .status,
    ).toBe(403);
    expect((await as(h, keyB, '/api/audit')).status).toBe(403);
    expect((await as(h, keyB, '/api/credentials/enroll', { method: 'POST', json: {} })).status).toBe(403);
    expect((await as(h, keyA, `/api/tasks/${taskId}`)).status).toBe(200);

    // The real computer's answer still counts: nothing above changed the task.
    a.send({
      type: 'command_result',
      task_id: taskId,
      call_id: call.call_id,
      ok: true,
      result: { entries: [] },
    });
    await a.waitFor('task_completed', { task_id: taskId });
    const audit = (await (await h.http('/api/audit?action=task.create')).json()) as {
      entries: Array<{ actor: string; role: string; target: string }>;
    };
    expect(audit.entries).toEqual([expect.objectContaining({ role: 'computer', target: taskId })]);
    expect(audit.entries[0]?.actor).toMatch(/^cred_/);
  });

  it('observes others only when granted (never cancels them) and creates only the kinds its key allows', async () => {
    const h = await t.start({ token: TOKEN, strategies: listOnce });
    const keyA = await enroll(h, 'pc-a');
    const keyW = await enroll(h, 'watcher', { observe_others: true, kinds: ['code_job'] });
    const a = await t.connect('pc-a', { token: keyA });
    const w = await t.connect('watcher', { token: keyW });
    const taskId = await t.createTask(a, 'pc-a', { kind: 'general_agent' });
    w.send({ type: 'subscribe', task_id: taskId, request_id: 's1' });
    expect(await w.waitFor('task_update', { task_id: taskId })).toBeTruthy();
    w.send({ type: 'cancel_task', task_id: taskId, request_id: 'c1' });
    expect(await w.waitFor('error', { request_id: 'c1' })).toMatchObject({ code: 'forbidden' });
    expect((await as(h, keyW, `/api/tasks/${taskId}`)).status).toBe(200);
    expect((await as(h, keyW, `/api/tasks/${taskId}/cancel`, { method: 'POST', json: {} })).status).toBe(403);
    w.send({
      type: 'create_task',
      request_id: 'k1',
      task_kind: 'general_agent',
      client_id: 'watcher',
      prompt: 'p',
      allowed_commands: [],
    });
    expect(await w.waitFor('error', { request_id: 'k1' })).toMatchObject({
      code: 'forbidden',
      path: '$.task_kind',
    });
  });
});

describe('viewer role', () => {
  it('reads everything and changes nothing', async () => {
    const h = await t.start({ token: TOKEN });
    const made = await h.http('/api/credentials/keys', {
      method: 'POST',
      json: { role: 'viewer', name: 'wall' },
    });
    const viewer = ((await made.json()) as { key: string }).key;
    const created = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'general_agent', prompt: 'p' },
    });
    const id = ((await created.json()) as { task: { id: string } }).task.id;
    for (const p of [
      '/api/tasks',
      `/api/tasks/${id}`,
      `/api/tasks/${id}/steps`,
      '/api/clients',
      '/api/tools',
      '/metrics',
    ]) {
      expect((await as(h, viewer, p)).status, p).toBe(200);
    }
    expect(
      (
        await as(h, viewer, '/api/tasks', {
          method: 'POST',
          json: { task_kind: 'general_agent', prompt: 'p' },
        })
      ).status,
    ).toBe(403);
    expect((await as(h, viewer, `/api/tasks/${id}/cancel`, { method: 'POST', json: {} })).status).toBe(403);
    expect((await as(h, viewer, '/api/audit')).status).toBe(403);
    expect((await as(h, viewer, '/api/credentials')).status).toBe(403);
    const task = (await (await h.http(`/api/tasks/${id}`)).json()) as { task: { status: string } };
    expect(task.task.status).not.toBe('cancelled');
  });
});

describe('revocation and brute force', () => {
  it("closes a revoked computer's socket within a second and refuses its key after", async () => {
    const h = await t.start({ token: TOKEN });
    const key = await enroll(h, 'pc-r');
    const c = await t.connect('pc-r', { token: key });
    const t0 = performance.now();
    const res = await h.http('/api/credentials/revoke', { method: 'POST', json: { client_id: 'pc-r' } });
    expect(res.status).toBe(200);
    const closed = await c.whenClosed();
    expect(performance.now() - t0).toBeLessThan(1000);
    expect(closed.code).toBe(CLOSE_CODES.unauthorized);
    const again = t.open();
    await again.opened;
    again.send({ type: 'hello', client_id: 'pc-r', token: key, protocol_version: 1, commands: [] });
    expect(await again.waitFor('error')).toMatchObject({ code: 'unauthorized' });
  });

  it("closes a computer's socket within a second of its rotated key's overlap ending, and keeps the new key's connection (an old key must not stay connected forever)", async () => {
    const overlapMs = 1500;
    const h = await t.start({
      token: TOKEN,
      config: { server: { security: { rotationOverlapMs: overlapMs } } },
    });
    const oldKey = await enroll(h, 'pc-o');
    const old = await t.connect('pc-o', { token: oldKey });
    const res = await h.http('/api/credentials/rotate', { method: 'POST', json: { client_id: 'pc-o' } });
    expect(res.status).toBe(201);
    const { key: newKey, old_valid_until: until } = (await res.json()) as {
      key: string;
      old_valid_until: number;
    };
    const closed = await old.whenClosed();
    const late = Date.now() - until;
    expect(closed.code).toBe(CLOSE_CODES.unauthorized);
    expect(late).toBeGreaterThanOrEqual(0);
    expect(late).toBeLessThan(1000);
    // The old key no longer connects; the rotated one does and stays connected past the old key's end.
    const again = t.open();
    await again.opened;
    again.send({ type: 'hello', client_id: 'pc-o', token: oldKey, protocol_version: 1, commands: [] });
    expect(await again.waitFor('error')).toMatchObject({ code: 'unauthorized' });
    const fresh = await t.connect('pc-o', { token: newKey });
    await new Promise((r) => setTimeout(r, 300));
    expect(fresh.isOpen).toBe(true);
  });

  it('throttles a source after repeated wrong tokens: even the right token is refused for the rest of the window (guards against guessing the token)', async () => {
    const h = await t.start({ token: TOKEN });
    for (let i = 0; i < 10; i++) {
      expect((await as(h, `guess-${i}`, '/api/tasks')).status).toBe(401);
    }
    const blocked = await as(h, TOKEN, '/api/tasks');
    expect(blocked.status).toBe(429);
    expect(Number(blocked.headers.get('retry-after'))).toBeGreaterThan(0);
    const audit = await h.running.security.listAudit({ action: 'auth.throttled' });
    expect(audit).toHaveLength(1);
  });
});
