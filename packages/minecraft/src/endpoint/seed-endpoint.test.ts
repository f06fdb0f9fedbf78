// The mod endpoint as issue 37 asks of seed 003: register.version is the game version, log lines and the state
// history are kept, one action open per instance, a given-up action is stopped in the game before anything else is
// sent, a rate limit per instance, and wss:// with a certificate. Real sockets; a raw mod records every frame.
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { selfSignedCert } from '@ccagent/testkit';
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

class RawMod {
  readonly got: BackendMessage[] = [];
  closedWith: number | null = null;
  private waiters: Array<() => void> = [];
  constructor(readonly ws: WebSocket) {
    ws.on('message', (d) => {
      this.got.push(JSON.parse(String(d)) as BackendMessage);
      for (const w of this.waiters.splice(0)) w();
    });
    ws.on('close', (code) => {
      this.closedWith = code;
      for (const w of this.waiters.splice(0)) w();
    });
  }
  static async open(url: string, opts: WebSocket.ClientOptions = {}): Promise<RawMod> {
    const ws = new WebSocket(url, opts);
    await new Promise((r, j) => {
      ws.once('open', r);
      ws.once('error', j);
    });
    return new RawMod(ws);
  }
  send(obj: unknown): void {
    this.ws.send(JSON.stringify(obj));
  }
  async next<T extends BackendMessage['type']>(
    type: T,
    from = 0,
  ): Promise<Extract<BackendMessage, { type: T }>> {
    for (;;) {
      const hit = this.got.slice(from).find((m) => m.type === type);
      if (hit) return hit as Extract<BackendMessage, { type: T }>;
      if (this.closedWith !== null) throw new Error(`closed (${this.closedWith}) before ${type}`);
      await new Promise<void>((r) => this.waiters.push(r));
    }
  }
}

let endpoint: MinecraftEndpoint;
const mods: RawMod[] = [];

async function setup(opts: MinecraftEndpointOptions = {}): Promise<string> {
  endpoint = new MinecraftEndpoint({ port: 0, ...opts });
  return (await endpoint.start()).url;
}
/** A mod as the seed writes it: `register` with the game version only. */
async function seedMod(url: string, id = 'steve', opts: WebSocket.ClientOptions = {}): Promise<RawMod> {
  const m = await RawMod.open(url, opts);
  mods.push(m);
  m.send({ type: 'register', instanceId: id, version: '1.20.1' });
  await m.next('registered');
  return m;
}

afterEach(async () => {
  for (const m of mods.splice(0)) m.ws.terminate();
  await endpoint.close();
});

describe('MinecraftEndpoint, seed 003 as written', () => {
  it('takes register.version as the game version (a seed mod names no protocol version) and keeps name and platform', async () => {
    const url = await setup();
    const m = await seedMod(url);
    expect(await m.next('registered')).toEqual({ type: 'registered', success: true });
    expect(endpoint.getInstance('steve')).toMatchObject({
      version: '1.20.1',
      protocolVersion: '1.0',
      name: null,
      platform: null,
    });
    const other = await RawMod.open(url);
    mods.push(other);
    other.send({
      type: 'register',
      instanceId: 'alex',
      version: '1.21.4',
      protocolVersion: '1.0',
      name: 'ccagent-fabric',
      platform: 'fabric',
    });
    await other.next('registered');
    expect(endpoint.getInstance('alex')).toMatchObject({
      version: '1.21.4',
      protocolVersion: '1.0',
      name: 'ccagent-fabric',
      platform: 'fabric',
    });
  });

  it('keeps log lines per instance, numbered, for the task to pick up', async () => {
    const url = await setup({ logMemory: 3 });
    const m = await seedMod(url);
    for (const line of ['a', 'b', 'c', 'd']) m.send({ type: 'log', instanceId: 'steve', message: line });
    await expect.poll(() => endpoint.logsSince('steve').map((l) => l.message)).toEqual(['b', 'c', 'd']);
    expect(endpoint.logsSince('steve', 3).map((l) => [l.seq, l.message])).toEqual([[4, 'd']]);
    expect(endpoint.logsSince('nobody')).toEqual([]);
  });

  it('keeps the state history as the latest state plus the fields each update changed', async () => {
    const url = await setup();
    const m = await seedMod(url);
    m.send({ type: 'state_update', instanceId: 'steve', data: STATE });
    m.send({ type: 'state_update', instanceId: 'steve', data: STATE }); // nothing changed: no entry
    m.send({
      type: 'state_update',
      instanceId: 'steve',
      data: { ...STATE, position: { x: 5, y: 64, z: 2 } },
    });
    m.send({
      type: 'state_update',
      instanceId: 'steve',
      data: { ...STATE, position: { x: 5, y: 64, z: 2 }, health: 12 },
    });
    await expect.poll(() => endpoint.getInstance('steve')?.stateUpdates).toBe(4);
    const h = endpoint.stateHistory('steve');
    expect(h?.latest).toEqual({ ...STATE, position: { x: 5, y: 64, z: 2 }, health: 12 });
    expect(h?.changes.map((c) => c.changed)).toEqual([
      STATE,
      { position: { x: 5, y: 64, z: 2 } },
      { health: 12 },
    ]);
    expect(endpoint.getInstance('steve')?.stateChanges).toBe(3);
  });

  it('never has two actions open on one instance: a second is refused with instance_busy and never sent', async () => {
    const url = await setup();
    const m = await seedMod(url);
    const first = endpoint.executeAction('steve', { id: 'w1', type: 'goto', x: 50, y: 64, z: 0 });
    await m.next('execute_action');
    const second = await endpoint.executeAction('steve', { id: 'w2', type: 'chat', message: 'hi' });
    expect(second).toMatchObject({ ok: false, code: 'instance_busy' });
    expect(m.got.filter((g) => g.type === 'execute_action')).toHaveLength(1);
    m.send({ type: 'action_complete', instanceId: 'steve', actionId: 'w1', result: 'arrived' });
    expect(await first).toEqual({ ok: true, result: 'arrived' });
    // Once closed, the next one goes through.
    const from = m.got.length;
    const third = endpoint.executeAction('steve', { id: 'w3', type: 'chat', message: 'hi' });
    const sent = await m.next('execute_action', from);
    expect(sent.action.id).toBe('w3');
    m.send({ type: 'action_complete', instanceId: 'steve', actionId: 'w3' });
    expect((await third).ok).toBe(true);
  });

  it('stops a timed-out action in the game (stop before anything else) and a cancelled one too', async () => {
    const url = await setup();
    const m = await seedMod(url);
    const out = await endpoint.executeAction(
      'steve',
      { id: 't1', type: 'goto', x: 90, y: 64, z: 0 },
      { timeoutMs: 300 },
    );
    expect(out).toMatchObject({ ok: false, code: 'action_timeout' });
    // The stop was written before the outcome came back, so it precedes whatever the caller sends next.
    const next = endpoint.executeAction('steve', { id: 't2', type: 'chat', message: 'next' });
    await m.next('execute_action', 3);
    expect(m.got.map((g) => g.type)).toEqual(['registered', 'execute_action', 'stop', 'execute_action']);

    m.send({ type: 'action_complete', instanceId: 'steve', actionId: 't2' });
    expect((await next).ok).toBe(true);
    const ctl = new AbortController();
    const cancelled = endpoint.executeAction(
      'steve',
      { id: 't3', type: 'goto', x: 0, y: 64, z: 90 },
      { signal: ctl.signal },
    );
    await m.next('execute_action', 4);
    ctl.abort();
    expect(await cancelled).toMatchObject({ ok: false, code: 'closed' });
    await m.next('stop', 5);
    // A finished action is not stopped: no stop after a normal completion.
    expect(m.got.filter((g) => g.type === 'stop')).toHaveLength(2);
  });

  it('rate-limits each instance like the CC endpoint: over the burst frames are dropped with one rate_limited error, a flood closes the connection', async () => {
    const url = await setup({ rateLimit: { messagesPerSecond: 5, burst: 20 }, maxRejected: 200 });
    const m = await seedMod(url);
    for (let i = 0; i < 100; i++) {
      m.send({
        type: 'state_update',
        instanceId: 'steve',
        data: { ...STATE, position: { x: i, y: 64, z: 0 } },
      });
    }
    const err = await m.next('error');
    expect(err.code).toBe('rate_limited');
    await new Promise((r) => setTimeout(r, 200));
    const got = endpoint.getInstance('steve')?.stateUpdates ?? 0;
    // The register frame took one token of the connection's own bucket; the instance's has 20 (+ the refill).
    expect(got).toBeGreaterThanOrEqual(19);
    expect(got).toBeLessThanOrEqual(25);
    expect(m.got.filter((g) => g.type === 'error')).toHaveLength(1);
    for (let i = 0; i < 300; i++) m.send({ type: 'log', instanceId: 'steve', message: 'spam' });
    await expect.poll(() => m.closedWith).toBe(4008);
  });

  it('closes a flood that comes paced, one frame let through at each refill (guards against a sustained flood at many times the rate never reaching the cut-off)', async () => {
    // 20/s, burst 10, cut-off 40 refusals; ~400 frames/s in small writes: a token refills every 50 ms between frames,
    // so counting refusals since the last admitted frame never got past ~20.
    const url = await setup({ rateLimit: { messagesPerSecond: 20, burst: 10 }, maxRejected: 40 });
    const m = await seedMod(url);
    const started = Date.now();
    for (let i = 0; i < 1500 && m.closedWith === null; i++) {
      m.send({ type: 'log', instanceId: 'steve', message: `spam ${i}` });
      await new Promise((r) => setTimeout(r, 2));
    }
    await expect.poll(() => m.closedWith, { timeout: 5_000 }).toBe(4008);
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it('serves wss:// when given a certificate, and a mod that trusts it registers', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'mc-tls-'));
    try {
      const tls = selfSignedCert(dir);
      const url = await setup({ tls: { cert: tls.cert, key: tls.key } });
      expect(url).toMatch(/^wss:\/\/127\.0\.0\.1:\d+$/);
      await seedMod(url, 'steve', { ca: tls.cert });
      expect(endpoint.getInstance('steve')?.status).toBe('connected');
      // A plain ws:// connection to it does not get in.
      await expect(RawMod.open(url.replace('wss:', 'ws:'))).rejects.toThrow();
      // Nor one that does not trust the certificate.
      await expect(RawMod.open(url)).rejects.toThrow(/self.signed|certificate/i);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
