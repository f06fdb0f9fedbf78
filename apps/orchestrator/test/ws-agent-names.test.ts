/**
 * Issue 35: an in-game trigger may address its agent by the name the task was created with (`create_task.name`,
 * `POST /api/tasks` `name`) instead of its id: `task_event {agent}` (and over HTTP `POST /api/agents/:name/events`)
 * is resolved by the server among the running tasks the sender may act on. An unknown name is `not_found`; a second
 * running task of a name in one reach is refused at its creation; a name several tasks in reach share (the operator's
 * reach is every computer's) is `invalid_field` listing them; neither or both of `task_id`/`agent` is refused; each
 * refusal changes nothing. Another computer's task of the same name is neither reachable nor counted.
 */
import type { Decision } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { eventually, everyKind, strategyOf } from './support/harness.js';
import { useHarness } from './support/session.js';

const t = useHarness();

/** Sleeps until woken; never ends (a resident agent in miniature). */
const sleeps = strategyOf((): Decision => ({ type: 'continue', wakeAfterMs: 600_000 }));

type Detail = {
  task: { metadata: Record<string, unknown> };
  history: Array<{ type: string; name?: string }>;
};

describe('events to an agent by name', () => {
  it('resolves the name among the running tasks the computer may reach; refuses an unknown name, and a second running task of a name at its creation; changes nothing', async () => {
    await t.start({ strategies: everyKind(sleeps) });
    const host = await t.connect('farm-host');
    const other = await t.connect('neighbour');
    const create = async (c: typeof host, clientId: string, requestId: string, name?: string) => {
      c.send({
        type: 'create_task',
        request_id: requestId,
        task_kind: 'code_job',
        client_id: clientId,
        prompt: 'p',
        allowed_commands: [],
        ...(name !== undefined ? { name } : {}),
      });
      return String((await c.waitFor('task_created', { request_id: requestId })).task_id);
    };
    const detail = async (id: string) => (await (await t.h.http(`/api/tasks/${id}`)).json()) as Detail;
    const events = async (id: string) => (await detail(id)).history.filter((h) => h.type === 'event');

    const watcher = await create(host, 'farm-host', 'w1', 'farm-watcher');
    const theirs = await create(other, 'neighbour', 'n1', 'farm-watcher'); // same name, another computer's
    expect((await detail(watcher)).task.metadata['name']).toBe('farm-watcher');

    const names = async (id: string) => (await events(id)).map((e) => e.name);
    const got = (id: string, want: string[]) =>
      eventually(async () => JSON.stringify(await names(id)) === JSON.stringify(want));
    host.send({
      type: 'task_event',
      agent: 'farm-watcher',
      name: 'redstone',
      data: { on: true },
      request_id: 'e1',
    });
    await got(watcher, ['redstone']);
    expect(await events(theirs)).toEqual([]);
    // the id still works as `agent` (a triggers file written before names)
    host.send({ type: 'task_event', agent: watcher, name: 'tick', request_id: 'e2' });
    await got(watcher, ['redstone', 'tick']);
    other.send({ type: 'task_event', agent: 'farm-watcher', name: 'mine', request_id: 'o1' });
    await got(theirs, ['mine']);

    host.send({ type: 'task_event', agent: 'farm-watchr', name: 'redstone', request_id: 'e3' });
    const unknown = await host.waitFor('error', { request_id: 'e3' });
    expect(unknown).toMatchObject({ code: 'not_found', path: '$.agent' });
    expect(String(unknown.message)).toMatch(/no running task named "farm-watchr"/);
    // another computer's task of that name is not reachable by it
    host.send({ type: 'task_event', agent: theirs, name: 'redstone', request_id: 'e4' });
    expect(await host.waitFor('error', { request_id: 'e4' })).toMatchObject({ code: 'not_found' });

    // a second running task of that name on this computer is refused at creation, and nothing is created (the
    // WebSocket carries a task operation's `conflict` as `forbidden`, as for a cancel of an ended task)
    host.send({
      type: 'create_task',
      request_id: 'w2',
      task_kind: 'code_job',
      client_id: 'farm-host',
      prompt: 'p',
      allowed_commands: [],
      name: 'farm-watcher',
    });
    const taken = await host.waitFor('error', { request_id: 'w2' });
    expect(taken).toMatchObject({ code: 'forbidden', path: '$.name' });
    expect(String(taken.message)).toContain(watcher);
    const listed = async () =>
      ((await (await t.h.http('/api/tasks?limit=100')).json()) as { tasks: Array<{ id: string }> }).tasks
        .map((x) => x.id)
        .sort();
    expect(await listed()).toEqual([watcher, theirs].sort());

    host.send({ type: 'task_event', name: 'redstone', request_id: 'e6' });
    expect(await host.waitFor('error', { request_id: 'e6' })).toMatchObject({
      code: 'missing_field',
      path: '$.task_id',
    });
    host.send({ type: 'task_event', task_id: watcher, agent: 'farm-watcher', name: 'x', request_id: 'e7' });
    expect(await host.waitFor('error', { request_id: 'e7' })).toMatchObject({ code: 'invalid_message' });

    // the refusals changed nothing: the watcher has the two events sent to it, the other computer's its own
    expect(await names(watcher)).toEqual(['redstone', 'tick']);
    expect(await names(theirs)).toEqual(['mine']);
    // once the watcher ends, its name is free: a new agent of that name, and events by name reach it
    host.send({ type: 'cancel_task', task_id: watcher, request_id: 'c1' });
    await host.waitFor('task_update', { task_id: watcher, status: 'cancelled' });
    const next = await create(host, 'farm-host', 'w3', 'farm-watcher');
    host.send({ type: 'task_event', agent: 'farm-watcher', name: 'again', request_id: 'e8' });
    await got(next, ['again']);
    expect(await names(watcher)).toEqual(['redstone', 'tick']);
  });

  it('takes events by name over HTTP too (POST /api/agents/:name/events), resolved among every task or one computer’s; refuses unknown and ambiguous names, posting nothing', async () => {
    await t.start({ strategies: everyKind(sleeps) });
    const post = (name: string, body: unknown) =>
      t.h.http(`/api/agents/${encodeURIComponent(name)}/events`, { method: 'POST', json: body });
    const make = async (body: Record<string, unknown>) => {
      const r = await t.h.http('/api/tasks', {
        method: 'POST',
        json: { task_kind: 'code_job', prompt: 'p', allowed_commands: [], ...body },
      });
      return { status: r.status, body: (await r.json()) as { task?: { id: string }; error?: unknown } };
    };
    const a = await make({ client_id: 'pc-a', name: 'farm:watcher' });
    const b = await make({ client_id: 'pc-b', name: 'farm:watcher' });
    expect([a.status, b.status]).toEqual([201, 201]);
    const ida = a.body.task?.id ?? '';
    const idb = b.body.task?.id ?? '';
    // over HTTP, a second live task of a name in the same computer's reach is refused too, and nothing is created
    const again = await make({ client_id: 'pc-a', name: 'farm:watcher' });
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'conflict', path: '$.name' } } });
    const count = async () => ((await (await t.h.http('/api/tasks')).json()) as { total: number }).total;
    expect(await count()).toBe(2);
    const events = async (id: string) =>
      (
        (await (await t.h.http(`/api/tasks/${id}`)).json()) as {
          history: Array<{ type: string; name?: string }>;
        }
      ).history
        .filter((h) => h.type === 'event')
        .map((h) => h.name);

    const one = await post('farm:watcher', { name: 'tick', client_id: 'pc-b', data: { n: 1 } });
    expect(one.status).toBe(200);
    expect(((await one.json()) as { task: { id: string } }).task.id).toBe(idb);
    const both = await post('farm:watcher', { name: 'tick' });
    expect(both.status).toBe(400);
    const err = ((await both.json()) as { error: { code: string; message: string } }).error;
    expect(err.code).toBe('invalid_body');
    expect(err.message).toContain([ida, idb].sort().join(', '));
    const none = await post('farm-watchr', { name: 'tick' });
    expect(none.status).toBe(404);
    expect(((await none.json()) as { error: { code: string } }).error.code).toBe('not_found');
    const bad = await post('farm:watcher', { name: 'tick', client_id: 'pc-a', extra: 1 });
    expect(bad.status).toBe(400);
    // by id, as the WebSocket form takes one
    expect((await post(ida, { name: 'by-id' })).status).toBe(200);
    expect(await events(ida)).toEqual(['by-id']);
    expect(await events(idb)).toEqual(['tick']);
  });

  it('lets a schedule post to an agent by name, resolved at each firing: a missing agent is a failed firing that says so, not a crash', async () => {
    await t.start({ strategies: everyKind(sleeps) });
    const add = async (body: unknown) => {
      const r = await t.h.http('/api/schedules', { method: 'POST', json: body });
      return { status: r.status, body: (await r.json()) as Record<string, unknown> };
    };
    // exactly one of task_id and agent; client_id only with agent; the refusals add nothing
    expect((await add({ every_ms: 1000, event: { name: 'x' } })).status).toBe(400);
    expect((await add({ every_ms: 1000, event: { name: 'x', task_id: 'a', agent: 'b' } })).status).toBe(400);
    expect((await add({ every_ms: 1000, event: { name: 'x', task_id: 'a', client_id: 'pc' } })).status).toBe(
      400,
    );
    type Listing = {
      schedules: Array<{ id: string; event?: unknown }>;
      firings: Array<{ schedule_id: string; status: string; task_id?: string; error?: string }>;
    };
    const list = async () => (await (await t.h.http('/api/schedules')).json()) as Listing;
    expect((await list()).schedules).toEqual([]);

    const created = await t.h.http('/api/tasks', {
      method: 'POST',
      json: {
        task_kind: 'code_job',
        prompt: 'p',
        client_id: 'farm-host',
        allowed_commands: [],
        name: 'watcher',
      },
    });
    const id = ((await created.json()) as { task: { id: string } }).task.id;
    const good = await add({
      id: 'to-watcher',
      every_ms: 1000,
      event: { agent: 'watcher', client_id: 'farm-host', name: 'tick' },
    });
    expect(good.status).toBe(201);
    expect((good.body['schedule'] as { event: unknown }).event).toEqual({
      agent: 'watcher',
      client_id: 'farm-host',
      name: 'tick',
    });
    expect(
      (await add({ id: 'to-ghost', every_ms: 1000, event: { agent: 'ghost', name: 'tick' } })).status,
    ).toBe(201);
    await eventually(async () => {
      const f = (await list()).firings;
      return f.some((x) => x.schedule_id === 'to-watcher') && f.some((x) => x.schedule_id === 'to-ghost');
    }, 15_000);
    const firings = (await list()).firings;
    expect(firings.find((x) => x.schedule_id === 'to-watcher')).toMatchObject({
      status: 'done',
      task_id: id,
    });
    const ghost = firings.find((x) => x.schedule_id === 'to-ghost');
    expect(ghost?.status).toBe('failed');
    expect(ghost?.error).toMatch(/agent "ghost": no running task named "ghost"/);
    const history = (
      (await (await t.h.http(`/api/tasks/${id}`)).json()) as {
        history: Array<{ type: string; name?: string }>;
      }
    ).history;
    expect(history.some((h) => h.type === 'event' && h.name === 'tick')).toBe(true);
    for (const s of ['to-watcher', 'to-ghost']) {
      await t.h.http(`/api/schedules/${s}/remove`, { method: 'POST', json: {} });
    }
  });

  it("refuses reopening a computer's ended task (retry, message; WebSocket and HTTP) while a group peer's running task has its name, and changes nothing", async () => {
    await t.start({
      strategies: everyKind(sleeps),
      config: { server: { groups: { named: { base: ['farm-host', 'pocket'] } } } },
    });
    const host = await t.connect('farm-host');
    const pocket = await t.connect('pocket');
    const create = async (c: typeof host, clientId: string, requestId: string) => {
      c.send({
        type: 'create_task',
        request_id: requestId,
        task_kind: 'code_job',
        client_id: clientId,
        prompt: 'p',
        allowed_commands: [],
        name: 'farm-watcher',
      });
      return String((await c.waitFor('task_created', { request_id: requestId })).task_id);
    };
    const status = async (id: string) =>
      ((await (await t.h.http(`/api/tasks/${id}?steps=0`)).json()) as { task: { status: string } }).task
        .status;
    const old = await create(host, 'farm-host', 'h1');
    expect((await t.h.http(`/api/tasks/${old}/cancel`, { method: 'POST', json: {} })).status).toBe(200);
    await eventually(async () => (await status(old)) === 'cancelled');
    // the pocket starts its own farm-watcher while the host's has ended
    const peers = await create(pocket, 'pocket', 'p1');
    const retried = await t.h.http(`/api/tasks/${old}/retry`, { method: 'POST', json: {} });
    expect(retried.status).toBe(409);
    const body = (await retried.json()) as { error: { message: string; path?: string } };
    expect(body.error).toMatchObject({ path: '$.name' });
    expect(body.error.message).toContain(peers);
    const messaged = await t.h.http(`/api/tasks/${old}/messages`, {
      method: 'POST',
      json: { text: 'go on' },
    });
    expect(messaged.status).toBe(409);
    host.send({ type: 'task_message', task_id: old, text: 'go on', request_id: 'm1' });
    expect(await host.waitFor('error', { request_id: 'm1' })).toMatchObject({ path: '$.name' });
    expect(await status(old)).toBe('cancelled');
    const history = (
      (await (await t.h.http(`/api/tasks/${old}`)).json()) as { history: Array<{ type: string }> }
    ).history;
    expect(history.filter((h) => h.type === 'message')).toEqual([]);
  });
});
