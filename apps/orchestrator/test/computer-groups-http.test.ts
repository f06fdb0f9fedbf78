/**
 * Issue 35: a player's computers work together over HTTP too, not only over the WebSocket. With real sockets (the
 * orchestrator's HTTP server, per-computer keys, a computer connected over its WebSocket): a computer key creates a
 * task on a computer of its group (`server.groups`), follows it (the task, its steps, the list of that computer's
 * tasks) and cancels one; a computer outside the group is refused each of these with a structured 403 and nothing is
 * created or changed; a key limited to some kinds, and a task for no computer in particular, are refused too.
 */
import { describe, expect, it } from 'vitest';
import { everyKind, writeThenRun } from './support/harness.js';
import { enroll } from './support/security.js';
import { useHarness } from './support/session.js';

const t = useHarness();
const TOKEN = 'operator-secret';

/** A request with a computer's own key (not the operator token the harness adds). */
function as(key: string, pathname: string, json?: unknown): Promise<Response> {
  return t.h.http(pathname, {
    auth: false,
    headers: { authorization: `Bearer ${key}` },
    ...(json !== undefined ? { method: 'POST', json } : {}),
  });
}

async function taskCount(): Promise<number> {
  return ((await (await t.h.http('/api/tasks')).json()) as { total: number }).total;
}

async function statusOf(id: string): Promise<string> {
  const r = await t.h.http(`/api/tasks/${id}?steps=0`);
  return ((await r.json()) as { task: { status: string } }).task.status;
}

interface ErrorBody {
  error: { code: string; message: string; path?: string };
}

describe('computer groups over HTTP', () => {
  it('lets a computer key create, follow and cancel tasks on a computer of its named group; one outside is refused and nothing changes', async () => {
    await t.start({
      token: TOKEN,
      strategies: everyKind(writeThenRun),
      config: { server: { groups: { named: { base: ['host', 'pocket', 'limited'] } } } },
    });
    const hostKey = await enroll(t.h, 'host');
    const pocketKey = await enroll(t.h, 'pocket');
    const strangerKey = await enroll(t.h, 'stranger');
    const limitedKey = await enroll(t.h, 'limited', { kinds: ['chat'] });
    const host = await t.connect('host', { token: hostKey });

    // The pocket creates a job on the host over HTTP: the host runs it, the pocket follows it to its end.
    const created = await as(pocketKey, '/api/tasks', {
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'write and run hello',
      request_id: 'job-1',
    });
    expect(created.status).toBe(201);
    const task = ((await created.json()) as { task: { id: string; client_id: string } }).task;
    expect(task.client_id).toBe('host');
    const again = await as(pocketKey, '/api/tasks', {
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'write and run hello',
      request_id: 'job-1',
    });
    expect(again.status).toBe(200);
    expect(((await again.json()) as { task: { id: string } }).task.id).toBe(task.id);
    const write = await host.waitFor('command_call', { task_id: task.id });
    host.send({ type: 'command_result', task_id: task.id, call_id: write.call_id, ok: true, result: {} });
    const run = await host.waitFor('command_call', { task_id: task.id, command: 'run_program' });
    host.send({ type: 'command_result', task_id: task.id, call_id: run.call_id, ok: true, result: {} });
    let followed = '';
    for (let i = 0; i < 200 && followed !== 'completed'; i++) {
      const page = await as(pocketKey, `/api/tasks/${task.id}/steps?after_seq=0`);
      expect(page.status).toBe(200);
      followed = ((await page.json()) as { task: { status: string } }).task.status;
      if (followed !== 'completed') await new Promise((r) => setTimeout(r, 25));
    }
    expect(followed).toBe('completed');
    expect((await as(pocketKey, `/api/tasks/${task.id}`)).status).toBe(200);
    const listed = await as(pocketKey, '/api/tasks?client=host');
    expect(listed.status).toBe(200);
    expect(((await listed.json()) as { tasks: Array<{ id: string }> }).tasks.map((x) => x.id)).toContain(
      task.id,
    );

    // A second job the host has not answered yet: the pocket may cancel it, as its own.
    const second = await as(pocketKey, '/api/tasks', {
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'another job',
      request_id: 'job-2',
    });
    expect(second.status).toBe(201);
    const secondId = ((await second.json()) as { task: { id: string } }).task.id;
    await host.waitFor('command_call', { task_id: secondId });

    // The stranger (a key of its own, in no group with the host) is refused everything, and nothing changes.
    const before = await taskCount();
    const intrude = await as(strangerKey, '/api/tasks', {
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'do my bidding',
    });
    expect(intrude.status).toBe(403);
    const refusal = (await intrude.json()) as ErrorBody;
    expect(refusal.error).toMatchObject({ code: 'forbidden', path: '$.client_id' });
    expect(refusal.error.message).toMatch(/group/);
    expect((await as(strangerKey, `/api/tasks/${task.id}`)).status).toBe(403);
    expect((await as(strangerKey, `/api/tasks/${task.id}/steps`)).status).toBe(403);
    expect((await as(strangerKey, '/api/tasks?client=host')).status).toBe(403);
    expect((await as(strangerKey, `/api/tasks/${secondId}/cancel`, {})).status).toBe(403);
    expect(await statusOf(secondId)).toBe('waiting_for_command');
    // A task for no computer in particular is an operator's; a key limited to some kinds creates only those.
    const anyComputer = await as(pocketKey, '/api/tasks', { task_kind: 'code_job', prompt: 'anyone' });
    expect(anyComputer.status).toBe(403);
    expect(((await anyComputer.json()) as ErrorBody).error.path).toBe('$.client_id');
    const wrongKind = await as(limitedKey, '/api/tasks', {
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'p',
    });
    expect(wrongKind.status).toBe(403);
    expect(((await wrongKind.json()) as ErrorBody).error.message).toMatch(/kind "code_job"/);
    expect(await taskCount()).toBe(before);

    const cancelled = await as(pocketKey, `/api/tasks/${secondId}/cancel`, {});
    expect(cancelled.status).toBe(200);
    expect(await statusOf(secondId)).toBe('cancelled');
  });

  it('keeps a computer key to its own tasks over HTTP when no group is configured (the default)', async () => {
    await t.start({ token: TOKEN, strategies: everyKind(writeThenRun) });
    const pocketKey = await enroll(t.h, 'pocket');
    await enroll(t.h, 'host');
    const refused = await as(pocketKey, '/api/tasks', {
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'p',
    });
    expect(refused.status).toBe(403);
    expect(((await refused.json()) as ErrorBody).error.path).toBe('$.client_id');
    expect((await as(pocketKey, '/api/tasks?client=host')).status).toBe(403);
    expect(await taskCount()).toBe(0);
    // Its own: as on its WebSocket.
    const own = await as(pocketKey, '/api/tasks', {
      task_kind: 'code_job',
      client_id: 'pocket',
      prompt: 'p',
    });
    expect(own.status).toBe(201);
  });
});
