import { ManualClock } from '@ccagent/engine';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { BackendMessage } from '../protocol/messages.js';
import { MinecraftEndpoint, type MinecraftEndpointOptions } from './mc-endpoint.js';

const STATE = {
  position: { x: 1, y: 64, z: 2 },
  health: 20,
  hunger: 20,
  saturation: 5,
  inventory: [{ slot: 0, item: 'dirt', count: 3 }],
  dimension: 'overworld',
  gameMode: 'survival',
};

/** A raw mod connection that records every frame the backend sent. */
class RawMod {
  readonly got: BackendMessage[] = [];
  private waiters: Array<() => void> = [];
  constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      this.got.push(JSON.parse(String(d)) as BackendMessage);
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static async open(url: string): Promise<RawMod> {
    const ws = new WebSocket(url);
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    return new RawMod(ws);
  }
  send(obj: unknown): void {
    this.ws.send(typeof obj === 'string' ? obj : JSON.stringify(obj));
  }
  async next<T extends BackendMessage['type']>(
    type: T,
    from = 0,
  ): Promise<Extract<BackendMessage, { type: T }>> {
    for (;;) {
      const hit = this.got.slice(from).find((m) => m.type === type);
      if (hit) return hit as Extract<BackendMessage, { type: T }>;
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
  async register(id: string): Promise<void> {
    const from = this.got.length;
    this.send({ type: 'register', instanceId: id, version: '1.0' });
    await this.next('registered', from);
  }
}

let endpoint: MinecraftEndpoint;
const mods: RawMod[] = [];

async function setup(clock?: ManualClock, more: MinecraftEndpointOptions = {}): Promise<string> {
  endpoint = new MinecraftEndpoint({ port: 0, ...(clock ? { clock } : {}), ...more });
  const { url } = await endpoint.start();
  return url;
}
async function mod(url: string, id = 'steve'): Promise<RawMod> {
  const m = await RawMod.open(url);
  mods.push(m);
  await m.register(id);
  return m;
}

afterEach(async () => {
  for (const m of mods.splice(0)) m.ws.terminate();
  await endpoint.close();
});

describe('MinecraftEndpoint', () => {
  it('answers bad frames with a structured error and keeps the instance and its state unchanged', async () => {
    const url = await setup();
    const m = await mod(url);
    m.send({ type: 'state_update', instanceId: 'steve', data: STATE });
    await expect.poll(() => endpoint.getInstance('steve')?.lastState).toEqual(STATE);
    const bad: Array<[unknown, string, unknown]> = [
      ['{not json', 'not_json', undefined],
      [{ type: 'teleport', instanceId: 'steve' }, 'unknown_type', ['type']],
      [
        { type: 'state_update', instanceId: 'steve', data: { ...STATE, health: 'full' } },
        'invalid_message',
        ['data', 'health'],
      ],
      [{ type: 'state_update', instanceId: 'alex', data: STATE }, 'instance_mismatch', ['instanceId']],
      [[1, 2], 'invalid_message', []],
    ];
    for (const [frame, code, path] of bad) {
      const from = m.got.length;
      m.send(frame);
      const err = await m.next('error', from);
      expect(err.code).toBe(code);
      if (path !== undefined) expect(err.path).toEqual(path);
    }
    const info = endpoint.getInstance('steve');
    expect(info?.status).toBe('connected');
    expect(info?.lastState).toEqual(STATE);
    expect(info?.stateUpdates).toBe(1);
    expect(endpoint.refusedFrames).toBe(bad.length);
  });

  it('refuses anything before register with not_registered', async () => {
    const url = await setup();
    const m = await RawMod.open(url);
    mods.push(m);
    m.send({ type: 'state_update', instanceId: 'steve', data: STATE });
    expect((await m.next('error')).code).toBe('not_registered');
    expect(endpoint.listInstances()).toEqual([]);
  });

  it('answers an unsupported protocol version with registered false and does not list the instance', async () => {
    const url = await setup();
    const m = await RawMod.open(url);
    mods.push(m);
    // `version` is the game's (the seed's meaning); `protocolVersion` is what the backend checks.
    m.send({ type: 'register', instanceId: 'steve', version: '1.20.1', protocolVersion: '2.0' });
    expect(await m.next('registered')).toEqual({ type: 'registered', success: false });
    expect((await m.next('error')).code).toBe('version_unsupported');
    expect(endpoint.listInstances()).toEqual([]);
  });

  it('refuses action_complete for an unknown action and for one already closed, without changing the outcome', async () => {
    const url = await setup();
    const m = await mod(url);
    m.send({ type: 'action_complete', instanceId: 'steve', actionId: 'never-sent', result: 'ok' });
    const unknown = await m.next('error');
    expect(unknown).toMatchObject({ code: 'unknown_action', actionId: 'never-sent' });

    const outcome = endpoint.executeAction('steve', { id: 'a1', type: 'chat', message: 'hi' });
    const exec = await m.next('execute_action');
    expect(exec.action).toEqual({ id: 'a1', type: 'chat', message: 'hi' });
    m.send({ type: 'action_complete', instanceId: 'steve', actionId: 'a1', result: { said: 'hi' } });
    expect(await outcome).toEqual({ ok: true, result: { said: 'hi' } });

    const from = m.got.length;
    m.send({ type: 'action_failed', instanceId: 'steve', actionId: 'a1', error: 'too late' });
    expect(await m.next('error', from)).toMatchObject({ code: 'action_closed', actionId: 'a1' });
    // Asking for the same id again gets the recorded outcome, and nothing is sent to the mod.
    const sent = m.got.filter((g) => g.type === 'execute_action').length;
    expect(await endpoint.executeAction('steve', { id: 'a1', type: 'chat', message: 'hi' })).toEqual({
      ok: true,
      result: { said: 'hi' },
    });
    expect(m.got.filter((g) => g.type === 'execute_action').length).toBe(sent);
  });

  it('coalesces a flood of state_update (latest wins, one notification per turn) and still serves actions', async () => {
    // The flood is far over the default rate limit (50/s, burst 200; its own test below): lifted here.
    const url = await setup(undefined, { rateLimit: { messagesPerSecond: 1e9, burst: 1e9 } });
    const m = await mod(url);
    let notifications = 0;
    endpoint.onState(() => notifications++);
    const N = 20_000;
    for (let i = 1; i <= N; i++) {
      m.send({
        type: 'state_update',
        instanceId: 'steve',
        data: { ...STATE, position: { x: i, y: 64, z: 0 } },
      });
    }
    await expect.poll(() => endpoint.getInstance('steve')?.stateUpdates, { timeout: 20_000 }).toBe(N);
    expect(endpoint.getInstance('steve')?.lastState?.position.x).toBe(N);
    // Coalesced: far fewer notifications than updates (one per event-loop turn that read frames).
    expect(notifications).toBeGreaterThan(0);
    expect(notifications).toBeLessThan(N / 10);
    const outcome = endpoint.executeAction('steve', {
      id: 'after-flood',
      type: 'chat',
      message: 'still here',
    });
    await m.next('execute_action');
    m.send({ type: 'action_complete', instanceId: 'steve', actionId: 'after-flood' });
    expect(await outcome).toEqual({ ok: true, result: null });
  });

  it('fails an action with action_timeout after its timeout and refuses the late report as action_closed', async () => {
    const clock = new ManualClock(1_000);
    const url = await setup(clock);
    const m = await mod(url);
    const outcome = endpoint.executeAction(
      'steve',
      { id: 'slow', type: 'goto', x: 1, y: 2, z: 3 },
      { timeoutMs: 60_000 },
    );
    await m.next('execute_action');
    await clock.advance(60_000);
    expect(await outcome).toMatchObject({ ok: false, code: 'action_timeout' });
    m.send({ type: 'action_complete', instanceId: 'steve', actionId: 'slow' });
    expect(await m.next('error')).toMatchObject({ code: 'action_closed', actionId: 'slow' });
  });

  it('keeps a disconnected instance 30 s, re-sends its open action with the same id on reconnect, then declares it dead', async () => {
    const clock = new ManualClock(1_000);
    const url = await setup(clock);
    const first = await mod(url);
    first.send({ type: 'state_update', instanceId: 'steve', data: STATE });
    await expect.poll(() => endpoint.getInstance('steve')?.lastState).toEqual(STATE);
    const outcome = endpoint.executeAction('steve', { id: 'walk', type: 'goto', x: 5, y: 64, z: 5 });
    await first.next('execute_action');
    first.ws.terminate();
    await expect.poll(() => endpoint.getInstance('steve')?.status).toBe('disconnected');
    await clock.advance(29_000);
    expect(endpoint.getInstance('steve')).toMatchObject({ status: 'disconnected', lastState: STATE });

    const second = await mod(url);
    const again = await second.next('execute_action');
    expect(again.action.id).toBe('walk');
    second.send({ type: 'action_complete', instanceId: 'steve', actionId: 'walk', result: 'arrived' });
    expect(await outcome).toEqual({ ok: true, result: 'arrived' });

    const open = endpoint.executeAction('steve', { id: 'walk2', type: 'goto', x: 6, y: 64, z: 5 });
    await second.next('execute_action', 2);
    second.ws.terminate();
    await expect.poll(() => endpoint.getInstance('steve')?.status).toBe('disconnected');
    await clock.advance(30_000);
    expect(await open).toMatchObject({ ok: false, code: 'instance_dead' });
    expect(endpoint.getInstance('steve')).toMatchObject({ status: 'dead', lastState: null });
  });

  it('waits for an instance that is not connected yet (a backend restart) and sends the action when it registers', async () => {
    const clock = new ManualClock(1_000);
    const url = await setup(clock);
    const outcome = endpoint.executeAction('late', { id: 'x1', type: 'chat', message: 'back' });
    await clock.advance(4_000);
    const m = await mod(url, 'late');
    expect((await m.next('execute_action')).action.id).toBe('x1');
    m.send({ type: 'action_complete', instanceId: 'late', actionId: 'x1', result: 'said' });
    expect(await outcome).toEqual({ ok: true, result: 'said' });
    // One that never comes fails after the keep period.
    const never = endpoint.executeAction('ghost', { id: 'g1', type: 'chat', message: 'anyone?' });
    await clock.advance(30_000);
    expect(await never).toMatchObject({ ok: false, code: 'instance_dead' });
  });

  it('stop sends stop to the mod and fails the open action as stopped', async () => {
    const url = await setup();
    const m = await mod(url);
    const outcome = endpoint.executeAction('steve', {
      id: 's1',
      type: 'mine',
      target: 'stone',
      quantity: 64,
    });
    await m.next('execute_action');
    expect(endpoint.stop('steve')).toBe(true);
    expect(await m.next('stop')).toEqual({ type: 'stop' });
    expect(await outcome).toMatchObject({ ok: false, code: 'stopped' });
  });

  it('refuses a web page (an upgrade with Origin) and a foreign Host name by default, and still takes mods (guards against a browser page registering as the mod)', async () => {
    const url = await setup();
    const refused = (headers: Record<string, string>): Promise<{ status: number; body: string }> =>
      new Promise((resolve) => {
        const ws = new WebSocket(url, { headers });
        ws.on('error', () => undefined);
        ws.on('open', () => resolve({ status: 101, body: '' }));
        ws.on('unexpected-response', (req, res) => {
          let body = '';
          res.on('data', (d: Buffer) => (body += d.toString()));
          res.on('end', () => {
            req.destroy();
            resolve({ status: res.statusCode ?? 0, body });
          });
        });
      });
    const page = await refused({ Origin: 'http://evil.example' });
    expect(page.status).toBe(403);
    expect(JSON.parse(page.body)).toMatchObject({ error: { code: 'forbidden_origin' } });
    expect((await refused({ Host: `rebound.example:${new URL(url).port}` })).status).toBe(421);
    await mod(url, 'steve');
    expect(endpoint.listInstances().map((i) => i.instanceId)).toEqual(['steve']);
    // A plain HTTP request is told what this port is.
    const plain = await fetch(url.replace('ws:', 'http:'));
    expect(plain.status).toBe(426);
  });

  it('binds a connection to the instance its credential names (authorize returns instanceId)', async () => {
    endpoint = new MinecraftEndpoint({ port: 0, authorize: () => ({ ok: true, instanceId: 'steve' }) });
    const { url } = await endpoint.start();
    const m = await RawMod.open(url);
    mods.push(m);
    m.send({ type: 'register', instanceId: 'alex', version: '1.0' });
    expect(await m.next('error')).toMatchObject({ code: 'instance_mismatch', path: ['instanceId'] });
    expect(await m.next('registered')).toEqual({ type: 'registered', success: false });
    expect(endpoint.listInstances()).toEqual([]);
  });
});
