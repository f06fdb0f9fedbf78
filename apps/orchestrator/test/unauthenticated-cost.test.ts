/**
 * What a caller nobody authenticated can cost the server. Before its `hello` is accepted a socket may send its hello
 * (whole or in chunks, up to `server.maxHelloBytes`) and nothing more; an address may hold
 * `server.maxUnauthenticatedPerAddress` such sockets and `server.maxConnectionsPerAddress` sockets in all. Before,
 * a socket could buffer 32 MiB of chunks for the 10 s hello timeout, from any number of sockets (six took a server
 * from 97 to 312 MiB). Bounded counts, 127.0.0.1 only.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CLOSE_CODES } from '../src/ws/close-codes.js';
import { useHarness } from './support/session.js';
import { serve, type Served } from './support/spawn.js';
import { TestClient } from './support/ws-test-client.js';

const t = useHarness();

/** `count` chunk frames of about `bytes` each, of transfers that never complete (a different id per frame). */
function chunkFrames(count: number, bytes: number, tag: string): string[] {
  const data = 'x'.repeat(bytes);
  return Array.from({ length: count }, (_, i) =>
    JSON.stringify({ type: 'chunk', chunk_id: `${tag}-${i % 4}`, index: i, count: 65_536, data }),
  );
}

/** Open a socket; resolves `open` or the HTTP status and body of a refused upgrade. */
function open(url: string): Promise<{ ws: WebSocket } | { status: number; body: string }> {
  return new Promise((resolve) => {
    const ws = new WebSocket(`${url.replace(/^http/, 'ws')}/ws`);
    ws.on('error', () => {});
    ws.on('unexpected-response', (_req, res) => {
      let body = '';
      res.on('data', (d: Buffer) => (body += d.toString()));
      res.on('end', () => resolve({ status: res.statusCode ?? 0, body }));
    });
    ws.on('open', () => resolve({ ws }));
  });
}

function closed(ws: WebSocket): Promise<number> {
  if (ws.readyState === WebSocket.CLOSED) return Promise.resolve(-1);
  return new Promise((resolve) => ws.once('close', (code) => resolve(code)));
}

describe('before the hello', () => {
  it('accepts a hello sent in chunks within maxHelloBytes (a computer with a large tool registry)', async () => {
    await t.start();
    const c = t.open();
    await c.opened;
    const tools = Array.from({ length: 300 }, (_, i) => ({
      name: `tool_${i}`,
      status: 'active',
      version: 1,
      description: 'd'.repeat(900),
    }));
    const text = JSON.stringify({
      type: 'hello',
      client_id: 'pc-big',
      protocol_version: 1,
      commands: [],
      tools,
    });
    expect(text.length).toBeGreaterThan(270_000);
    const pieces = [text.slice(0, 120_000), text.slice(120_000, 240_000), text.slice(240_000)];
    pieces.forEach((data, index) => c.send({ type: 'chunk', chunk_id: 'h', index, count: 3, data }));
    expect(await c.waitFor('welcome')).toMatchObject({ client_id: 'pc-big' });
  });

  it('closes a socket that sends more than maxHelloBytes before its hello is accepted, with 1009, and buffers none of it (guards against 32 MiB of chunks held for an unknown caller)', async () => {
    await t.start({ config: { server: { maxHelloBytes: 300_000 } } });
    const c = t.open();
    await c.opened;
    for (const f of chunkFrames(4, 100_000, 'junk')) c.send(f);
    const end = await c.whenClosed();
    expect(end.code).toBe(CLOSE_CODES.tooBig);
    expect(c.messages).toContainEqual(expect.objectContaining({ type: 'error', code: 'message_too_large' }));
    // A client that says hello first is not affected by the bound afterwards.
    const ok = await t.connect('pc-1');
    for (const f of chunkFrames(4, 100_000, 'later')) ok.send(f);
    ok.send({ type: 'ping', id: 'alive' });
    expect(await ok.waitFor('pong', { id: 'alive' })).toBeTruthy();
    expect(ok.closed).toBeUndefined();
  });

  it('caps the sockets of one address waiting for their hello, and all sockets of one address: the next upgrade gets 503 too_many_connections (guards against an address opening sockets without end)', async () => {
    const h = await t.start({
      config: { server: { maxUnauthenticatedPerAddress: 3, maxConnectionsPerAddress: 5 } },
    });
    const silent: WebSocket[] = [];
    for (let i = 0; i < 3; i++) {
      const r = await open(h.url);
      if (!('ws' in r)) throw new Error(`socket ${i} refused: ${r.status}`);
      silent.push(r.ws);
    }
    const fourth = await open(h.url);
    expect(fourth).toMatchObject({ status: 503 });
    expect('body' in fourth && JSON.parse(fourth.body)).toMatchObject({
      error: { code: 'too_many_connections' },
    });
    // One of them says hello: a place for an unauthenticated socket is free again.
    silent[0]?.close();
    await closed(silent[0] as WebSocket);
    const greeter = t.track(new TestClient(h.url));
    await greeter.opened;
    await greeter.hello('pc-1', { commands: [] });
    const two = [await t.connect('pc-2'), await t.connect('pc-3')];
    expect(two.every((c) => c.isOpen)).toBe(true);
    // 2 silent + 3 welcomed = 5 open from this address: the next is refused even though it would say hello.
    expect(await open(h.url)).toMatchObject({ status: 503 });
    for (const ws of silent) ws.terminate();
  });
});

describe('the cost of unauthenticated sockets (spawned default server, 127.0.0.1)', () => {
  let fake: FakeOllama | undefined;
  let server: Served | undefined;
  let dir: string | undefined;
  afterEach(async () => {
    await server?.kill9();
    await fake?.close();
    if (dir) rmSync(dir, { recursive: true, force: true });
    server = undefined;
    fake = undefined;
    dir = undefined;
  });

  it('holds 24 sockets each sending 4 MiB of chunks before hello to a bounded cost: the rest of the address is refused, the sockets closed with 1009, the server grows by less than 40 MiB, and a computer still connects', async () => {
    dir = mkdtempSync(path.join(tmpdir(), 'cco-cost-'));
    fake = await startFakeOllama({ installed: ['qwen3:8b'] });
    server = await serve(['--port', '0', '--db', path.join(dir, 'a.db'), '--ollama-url', fake.url]);
    const pid = server.proc.pid as number;
    const rss = (): number => {
      const m = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
      return Number(m?.[1] ?? 0) / 1024;
    };
    // Warm up: one computer connects and pings, so the baseline includes what a normal connection costs.
    const warm = await TestClient.connect(server.url, 'pc-warm');
    warm.send({ type: 'ping', id: 'w' });
    await warm.waitFor('pong');
    warm.terminate();
    await new Promise((r) => setTimeout(r, 300));
    const before = rss();
    let peak = before;
    const sampler = setInterval(() => (peak = Math.max(peak, rss())), 50);

    const frames = chunkFrames(32, 127_000, 'a');
    const sockets: WebSocket[] = [];
    let refused = 0;
    for (let i = 0; i < 24; i++) {
      const r = await open(server.url);
      if ('ws' in r) sockets.push(r.ws);
      else refused++;
    }
    const codes = sockets.map((ws) => closed(ws));
    for (const ws of sockets) for (const f of frames) if (ws.readyState === WebSocket.OPEN) ws.send(f);
    const closeCodes = await Promise.all(codes);
    await new Promise((r) => setTimeout(r, 500));
    clearInterval(sampler);
    const after = rss();

    const growth = peak - before;
    // Reported by the test run (docs/security.md quotes it): the server's growth under the attack.
    console.log(
      `unauthenticated cost: ${sockets.length} sockets accepted, ${refused} refused; RSS ${before.toFixed(0)} MiB before, peak ${peak.toFixed(0)} MiB, ${after.toFixed(0)} MiB after`,
    );
    expect(refused).toBe(24 - 16);
    expect(closeCodes.every((c) => c === CLOSE_CODES.tooBig)).toBe(true);
    expect(growth).toBeLessThan(40);
    const c = await TestClient.connect(server.url, 'pc-after');
    c.send({ type: 'ping', id: 'after' });
    expect(await c.waitFor('pong', { id: 'after' })).toBeTruthy();
    c.terminate();
  });
});
