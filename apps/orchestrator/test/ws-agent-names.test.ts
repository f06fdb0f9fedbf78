/**
 * Issue 35: an in-game trigger may address its agent by the name the task was created with (`create_task.name`,
 * `POST /api/tasks` `name`) instead of its id: `task_event {agent}` is resolved by the server among the running tasks
 * the sender may act on. An unknown name is `not_found`, a name two running tasks share is `invalid_field` listing
 * both, neither or both of `task_id`/`agent` is refused; each refusal changes nothing. Another computer's task of the
 * same name is neither reachable nor counted.
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
  it('resolves the name among the running tasks the computer may reach; refuses unknown and ambiguous names and changes nothing', async () => {
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

    const twin = await create(host, 'farm-host', 'w2', 'farm-watcher');
    host.send({ type: 'task_event', agent: 'farm-watcher', name: 'redstone', request_id: 'e5' });
    const ambiguous = await host.waitFor('error', { request_id: 'e5' });
    expect(ambiguous).toMatchObject({ code: 'invalid_field', path: '$.agent' });
    expect(String(ambiguous.message)).toContain([watcher, twin].sort().join(', '));

    host.send({ type: 'task_event', name: 'redstone', request_id: 'e6' });
    expect(await host.waitFor('error', { request_id: 'e6' })).toMatchObject({
      code: 'missing_field',
      path: '$.task_id',
    });
    host.send({ type: 'task_event', task_id: watcher, agent: 'farm-watcher', name: 'x', request_id: 'e7' });
    expect(await host.waitFor('error', { request_id: 'e7' })).toMatchObject({ code: 'invalid_message' });

    // the refusals changed nothing: the watcher has the two events sent to it, the twin none
    expect(await names(watcher)).toEqual(['redstone', 'tick']);
    expect(await events(twin)).toEqual([]);
    expect(await names(theirs)).toEqual(['mine']);
    // once the twin is cancelled, the name is one running task's again
    host.send({ type: 'cancel_task', task_id: twin, request_id: 'c1' });
    await host.waitFor('task_update', { task_id: twin, status: 'cancelled' });
    host.send({ type: 'task_event', agent: 'farm-watcher', name: 'again', request_id: 'e8' });
    await got(watcher, ['redstone', 'tick', 'again']);
  });
});
