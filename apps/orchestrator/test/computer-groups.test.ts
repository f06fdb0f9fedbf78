/**
 * Issue 35: a player's computers work together. Computers of one group (named in `server.groups.named`, or connected
 * with the same operator key under `byOperatorKey`) create tasks for each other and follow and steer them without
 * `crossClientAccess`; a computer outside the group is refused with a structured error and changes nothing. Also the
 * server-side limit on trigger requests and the kinds and models the welcome offers the computer's menus.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Decision } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { everyKind, strategyOf, writeThenRun } from './support/harness.js';
import { enroll } from './support/security.js';
import { useHarness } from './support/session.js';

const t = useHarness();

async function taskCount(): Promise<number> {
  return ((await (await t.h.http('/api/tasks')).json()) as { total: number }).total;
}

async function clientState(id: string): Promise<{ connected: boolean }> {
  const list = (await (await t.h.http('/api/clients')).json()) as {
    clients: Array<{ client_id: string; connected: boolean }>;
  };
  return list.clients.find((c) => c.client_id === id) ?? { connected: false };
}

async function waitUntil(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 25));
  }
  throw new Error(`timed out waiting for ${what}`);
}

/** Waits for an event and completes with it (a task a trigger feeds). */
const waitsForEvent = strategyOf((_task, history): Decision => {
  const ev = history.find((h) => h.type === 'event');
  if (!ev) return { type: 'continue', wakeAfterMs: 600_000 };
  return { type: 'complete', result: { got: ev.name } };
});

describe('computer groups', () => {
  it('lets a pocket computer create and follow a task on the agent host of its named group; a computer outside is refused and nothing is created', async () => {
    await t.start({
      strategies: everyKind(writeThenRun),
      config: { server: { groups: { named: { base: ['host', 'pocket'] } } } },
    });
    const host = await t.connect('host');
    const pocket = await t.connect('pocket');
    const stranger = await t.connect('stranger');

    const taskId = await t.createTask(pocket, 'host', { requestId: 'job-1' });
    const call = await host.waitFor('command_call', { task_id: taskId });
    expect(pocket.messages.some((m) => m.type === 'command_call')).toBe(false);
    host.send({ type: 'command_result', task_id: taskId, call_id: call.call_id, ok: true, result: {} });
    const next = await host.waitFor('command_call', { task_id: taskId, command: 'run_program' });
    host.send({ type: 'command_result', task_id: taskId, call_id: next.call_id, ok: true, result: {} });
    // the pocket follows the job to its end without subscribing by hand
    await pocket.waitFor('task_completed', { task_id: taskId });

    const before = await taskCount();
    stranger.send({
      type: 'create_task',
      request_id: 'intrude',
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'p',
      allowed_commands: [],
    });
    const refused = await stranger.waitFor('error', { request_id: 'intrude' });
    expect(refused).toMatchObject({ code: 'forbidden', path: '$.client_id' });
    expect(String(refused.message)).toMatch(/group/);
    expect(await taskCount()).toBe(before);
    stranger.send({ type: 'subscribe', task_id: taskId, request_id: 'peek' });
    expect(await stranger.waitFor('error', { request_id: 'peek' })).toMatchObject({ code: 'forbidden' });
    stranger.send({ type: 'task_message', task_id: taskId, text: 'do my bidding', request_id: 'steer' });
    expect(await stranger.waitFor('error', { request_id: 'steer' })).toMatchObject({ code: 'forbidden' });
  });

  it("lets a computer follow and steer a task its group's host made for itself, never an outsider", async () => {
    await t.start({
      strategies: everyKind(waitsForEvent),
      config: { server: { groups: { named: { base: ['host', 'pocket'] } } } },
    });
    const host = await t.connect('host');
    const pocket = await t.connect('pocket');
    const stranger = await t.connect('stranger');
    const taskId = await t.createTask(host, 'host', { requestId: 'resident' });
    stranger.send({ type: 'task_event', task_id: taskId, name: 'redstone', request_id: 'e0' });
    expect(await stranger.waitFor('error', { request_id: 'e0' })).toMatchObject({ code: 'forbidden' });
    pocket.send({ type: 'subscribe', task_id: taskId, request_id: 's1' });
    await pocket.waitFor('task_update', { task_id: taskId });
    pocket.send({
      type: 'task_event',
      task_id: taskId,
      name: 'redstone',
      data: { on: true },
      request_id: 'e1',
    });
    const done = await pocket.waitFor('task_completed', { task_id: taskId });
    expect(done.result).toEqual({ got: 'redstone' });
  });

  it('groups the computers connected with the same operator key under byOperatorKey; one with its own key stays outside', async () => {
    await t.start({
      token: 'operator-secret',
      strategies: everyKind(writeThenRun),
      config: { server: { groups: { byOperatorKey: true } } },
    });
    const host = await t.connect('host', { token: 'operator-secret' });
    const pocket = await t.connect('pocket', { token: 'operator-secret' });
    const ownKey = await enroll(t.h, 'neighbour');
    const neighbour = await t.connect('neighbour', { token: ownKey });
    const taskId = await t.createTask(pocket, 'host', { requestId: 'job' });
    await host.waitFor('command_call', { task_id: taskId });
    neighbour.send({
      type: 'create_task',
      request_id: 'n1',
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'p',
      allowed_commands: [],
    });
    expect(await neighbour.waitFor('error', { request_id: 'n1' })).toMatchObject({ code: 'forbidden' });
    // and the host may not reach into the neighbour either
    host.send({
      type: 'create_task',
      request_id: 'h1',
      task_kind: 'code_job',
      client_id: 'neighbour',
      prompt: 'p',
      allowed_commands: [],
    });
    expect(await host.waitFor('error', { request_id: 'h1' })).toMatchObject({ code: 'forbidden' });
  });

  it('keeps a computer that is offline in the group of the operator key it last connected with: a pocket starts a job on a rebooting host, and again after a restart; a computer of another key, or the host once it has its own key, is refused', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-groups-offline-'));
    try {
      const opts = {
        dir,
        token: 'operator-secret',
        strategies: everyKind(writeThenRun),
        // The default reconnect grace (30 s): a call for a computer that is away waits for it that long.
        config: { server: { groups: { byOperatorKey: true } } },
      };
      await t.start(opts);
      const host = await t.connect('host', { token: 'operator-secret' });
      const pocket = await t.connect('pocket', { token: 'operator-secret' });
      // The host reboots: while it is away the pocket starts a job on it, which waits for it.
      host.terminate();
      await waitUntil(async () => !(await clientState('host')).connected, 'the host to be gone');
      const whileAway = await t.createTask(pocket, 'host', { requestId: 'while-rebooting' });
      const back = await t.connect('host', { token: 'operator-secret' });
      await back.waitFor('command_call', { task_id: whileAway });
      back.terminate();
      pocket.terminate();

      // The orchestrator restarts; the host has not come back yet, the pocket has.
      await t.h.close();
      await t.start(opts);
      const pocket2 = await t.connect('pocket', { token: 'operator-secret' });
      const afterRestart = await t.createTask(pocket2, 'host', { requestId: 'after-restart' });
      const operatorKey = await t.h.http('/api/credentials/keys', {
        method: 'POST',
        json: { role: 'operator', name: 'the neighbour' },
      });
      expect(operatorKey.status).toBe(201);
      const other = await t.connect('other-pc', {
        token: ((await operatorKey.json()) as { key: string }).key,
      });
      const before = await taskCount();
      other.send({
        type: 'create_task',
        request_id: 'o1',
        task_kind: 'code_job',
        client_id: 'host',
        prompt: 'p',
        allowed_commands: [],
      });
      expect(await other.waitFor('error', { request_id: 'o1' })).toMatchObject({
        code: 'forbidden',
        path: '$.client_id',
      });
      expect(await taskCount()).toBe(before);
      const host2 = await t.connect('host', { token: 'operator-secret' });
      await host2.waitFor('command_call', { task_id: afterRestart });
      host2.terminate();

      // Once the host has its own key it is in no key group, even while it is offline.
      await enroll(t.h, 'host');
      pocket2.send({
        type: 'create_task',
        request_id: 'p2',
        task_kind: 'code_job',
        client_id: 'host',
        prompt: 'p',
        allowed_commands: [],
      });
      expect(await pocket2.waitFor('error', { request_id: 'p2' })).toMatchObject({ code: 'forbidden' });
      expect(await taskCount()).toBe(before);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('keeps each computer to its own tasks when no group is configured (the default)', async () => {
    await t.start({ token: 'operator-secret', strategies: everyKind(writeThenRun) });
    const pocket = await t.connect('pocket', { token: 'operator-secret' });
    await t.connect('host', { token: 'operator-secret' });
    pocket.send({
      type: 'create_task',
      request_id: 'r',
      task_kind: 'code_job',
      client_id: 'host',
      prompt: 'p',
      allowed_commands: [],
    });
    expect(await pocket.waitFor('error', { request_id: 'r' })).toMatchObject({
      code: 'forbidden',
      path: '$.client_id',
    });
  });
});

describe('trigger limits and the welcome offer', () => {
  it('refuses trigger events past the per-computer, per-trigger burst with rate_limited; other triggers and plain events pass', async () => {
    await t.start({
      strategies: everyKind(strategyOf((): Decision => ({ type: 'continue', wakeAfterMs: 600_000 }))),
      config: { server: { triggerRateLimit: { perMinute: 1, burst: 2 } } },
    });
    const c = await t.connect('farm');
    const taskId = await t.createTask(c, 'farm', { requestId: 'watch' });
    const send = (id: string, trigger?: string): void =>
      c.send({
        type: 'task_event',
        task_id: taskId,
        name: 'redstone',
        request_id: id,
        ...(trigger !== undefined ? { trigger } : {}),
      });
    send('a1', 'crop');
    send('a2', 'crop');
    send('a3', 'crop');
    expect(await c.waitFor('error', { request_id: 'a3' })).toMatchObject({
      code: 'rate_limited',
      task_id: taskId,
    });
    send('b1', 'door');
    send('p1');
    await c.waitFor('task_update', { task_id: taskId });
    // a1, a2, b1 and the plain event arrive; a3 does not
    await expect
      .poll(async () => {
        const d = (await (await t.h.http(`/api/tasks/${taskId}`)).json()) as {
          history: Array<{ type: string }>;
        };
        return d.history.filter((h) => h.type === 'event').length;
      })
      .toBe(4);
    expect(c.messages.filter((m) => m.type === 'error')).toHaveLength(1);

    c.send({
      type: 'create_task',
      request_id: 't1',
      task_kind: 'code_job',
      client_id: 'farm',
      prompt: 'p',
      allowed_commands: [],
      trigger: 'spawner',
    });
    await c.waitFor('task_created', { request_id: 't1' });
  });

  it('offers the kinds a computer may create and the models a task may choose in its welcome', async () => {
    await t.start({
      strategies: everyKind(writeThenRun),
      config: { limits: { models: ['qwen3:8b', 'qwen3:1.7b'] } },
    });
    const c = await t.connect('pc');
    const welcome = await c.waitFor('welcome');
    expect(welcome.task_kinds).toEqual(expect.arrayContaining(['general_agent', 'code_job']));
    expect(welcome.models).toEqual(['qwen3:8b', 'qwen3:1.7b']);
    expect(welcome.model_roles).toMatchObject({
      general_agent: ['native'],
      code_job: ['planner', 'executor'],
    });
  });

  it("narrows the offered kinds to those the computer's key may create", async () => {
    await t.start({ token: 'operator-secret', strategies: everyKind(writeThenRun) });
    const key = await enroll(t.h, 'pocket', { kinds: ['general_agent'] });
    const c = await t.connect('pocket', { token: key });
    const welcome = await c.waitFor('welcome');
    expect(welcome.task_kinds).toEqual(['general_agent']);
    expect(Object.keys(welcome.model_roles as object)).toEqual(['general_agent']);
  });
});
