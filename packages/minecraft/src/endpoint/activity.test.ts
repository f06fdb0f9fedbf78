// An instance's activity as a host reads and follows it (the dashboard's instance page): `log` lines and each action
// from sending to its outcome, with the task that issued it, on real sockets.
import { ManualClock } from '@ccagent/engine';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Action } from '../protocol/messages.js';
import { MinecraftActionExecutor } from './action-executor.js';
import { MinecraftEndpoint, type McActivity } from './mc-endpoint.js';

let endpoint: MinecraftEndpoint;
let ws: WebSocket;
let endpointUrl = '';

afterEach(async () => {
  ws?.close();
  await endpoint?.close();
});

/** Start an endpoint and register a raw mod as `Bot`; frames the backend sends are collected in `got`. */
async function start(
  clock: ManualClock,
  more: { actionMemory?: number; lastLogSeq?: (id: string) => number; keepMs?: number } = {},
): Promise<{ got: Array<{ type: string; action?: Action }>; activity: McActivity[] }> {
  endpoint = new MinecraftEndpoint({ port: 0, clock, ...more });
  const activity: McActivity[] = [];
  endpoint.onActivity((a) => activity.push(a));
  const { url } = await endpoint.start();
  endpointUrl = url;
  ws = new WebSocket(url);
  const got: Array<{ type: string; action?: Action }> = [];
  ws.on('message', (d) => got.push(JSON.parse(String(d)) as { type: string }));
  await new Promise((r) => ws.once('open', r));
  ws.send(JSON.stringify({ type: 'register', instanceId: 'Bot', version: '1.0' }));
  await waitFor(() => got.some((m) => m.type === 'registered'));
  return { got, activity };
}

async function waitFor(ok: () => boolean): Promise<void> {
  for (let i = 0; i < 200 && !ok(); i++) await new Promise((r) => setTimeout(r, 10));
  expect(ok()).toBe(true);
}

const chat = (id: string): Action => ({ id, type: 'chat', message: 'hi' }) as Action;

describe('instance activity', () => {
  it('numbers log lines after the last number the host stored, and a dead instance that registers again keeps counting (guards against a line number used twice)', async () => {
    const clock = new ManualClock(1_000);
    const asked: string[] = [];
    const { activity } = await start(clock, {
      keepMs: 1_000,
      lastLogSeq: (id) => {
        asked.push(id);
        return id === 'Bot' ? 41 : 0;
      },
    });
    ws.send(JSON.stringify({ type: 'log', instanceId: 'Bot', message: 'after a restart' }));
    await waitFor(() => activity.length === 1);
    expect(activity[0]).toMatchObject({ kind: 'log', line: { seq: 42, message: 'after a restart' } });
    expect(asked).toEqual(['Bot']);
    // Gone past its keep period (dead), then back: a new instance record, the numbering goes on.
    ws.close();
    await waitFor(() => endpoint.getInstance('Bot')?.status === 'disconnected');
    await clock.advance(1_001);
    expect(endpoint.getInstance('Bot')?.status).toBe('dead');
    ws = new WebSocket(endpointUrl);
    const frames: string[] = [];
    ws.on('message', (d) => frames.push(String(d)));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'register', instanceId: 'Bot', version: '1.0' }));
    await waitFor(() => frames.some((f) => f.includes('registered')));
    ws.send(JSON.stringify({ type: 'log', instanceId: 'Bot', message: 'born again' }));
    await waitFor(() => activity.length === 2);
    expect(activity[1]).toMatchObject({ kind: 'log', line: { seq: 43, message: 'born again' } });
    expect(endpoint.logsSince('Bot').map((l) => l.seq)).toEqual([43]);
  });

  it('reports each log line and each action when it is sent and when it ends, with its outcome, times and task', async () => {
    const clock = new ManualClock(1_000);
    const { activity } = await start(clock);
    ws.send(JSON.stringify({ type: 'log', instanceId: 'Bot', message: 'pathfinder: 40 nodes' }));
    await waitFor(() => activity.length === 1);
    expect(activity[0]).toEqual({
      kind: 'log',
      instanceId: 'Bot',
      line: { seq: 1, at: 1_000, message: 'pathfinder: 40 nodes' },
    });

    const done = endpoint.executeAction('Bot', chat('t1:p1:a0'), { taskId: 't1' });
    expect(activity[1]).toEqual({
      kind: 'action',
      instanceId: 'Bot',
      action: {
        actionId: 't1:p1:a0',
        type: 'chat',
        taskId: 't1',
        startedAt: 1_000,
        endedAt: null,
        outcome: null,
      },
    });
    await clock.advance(750);
    ws.send(
      JSON.stringify({ type: 'action_failed', instanceId: 'Bot', actionId: 't1:p1:a0', error: 'muted' }),
    );
    expect(await done).toMatchObject({ ok: false, code: 'action_failed' });
    expect(activity[2]).toMatchObject({
      kind: 'action',
      action: {
        actionId: 't1:p1:a0',
        startedAt: 1_000,
        endedAt: 1_750,
        outcome: { ok: false, code: 'action_failed', error: 'muted' },
      },
    });
    expect(endpoint.actionsOf('Bot')).toEqual([(activity[2] as { action: unknown }).action]);
  });

  it('keeps the last actionMemory actions; a refusal before the mod is one of them; a throwing listener changes nothing', async () => {
    const clock = new ManualClock(5_000);
    const { got } = await start(clock, { actionMemory: 3 });
    endpoint.onActivity(() => {
      throw new Error('a broken reader');
    });
    for (let n = 0; n < 4; n++) {
      const p = endpoint.executeAction('Bot', chat(`t:a${n}`));
      await waitFor(() => got.filter((m) => m.type === 'execute_action').length === n + 1);
      ws.send(JSON.stringify({ type: 'action_complete', instanceId: 'Bot', actionId: `t:a${n}`, result: n }));
      expect(await p).toEqual({ ok: true, result: n });
    }
    const executor = new MinecraftActionExecutor(endpoint, () => 'chat is on the deny list of Bot');
    const refused = await executor.execute({
      taskId: 't',
      callId: 'c',
      clientId: null,
      command: 'minecraft_action',
      args: { instanceId: 'Bot', action: chat('t:a4') },
      timeoutMs: 1_000,
      attempt: 1,
      signal: new AbortController().signal,
    } as never);
    expect(refused).toMatchObject({ ok: false, error: { code: 'action_refused' } });
    expect(endpoint.actionsOf('Bot').map((a) => [a.actionId, a.outcome?.ok])).toEqual([
      ['t:a2', true],
      ['t:a3', true],
      ['t:a4', false],
    ]);
    expect(endpoint.actionsOf('Bot')[2]).toMatchObject({
      taskId: 't',
      startedAt: 5_000,
      endedAt: 5_000,
      outcome: { ok: false, code: 'action_refused', error: 'chat is on the deny list of Bot' },
    });
    // The refused action never reached the mod.
    expect(got.filter((m) => m.type === 'execute_action')).toHaveLength(4);
  });
});
