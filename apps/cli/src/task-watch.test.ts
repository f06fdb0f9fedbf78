import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { openTaskWatch } from './task-watch.js';

let server: Server | undefined;
afterEach(async () => {
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
});

async function listen(handler: Parameters<typeof createServer>[1]): Promise<URL> {
  server = createServer(handler);
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  return new URL(`http://127.0.0.1:${(server.address() as AddressInfo).port}`);
}

describe('openTaskWatch', () => {
  it('gives no watch for a server without /api/events, so follow polls an older orchestrator as before', async () => {
    const base = await listen((_req, res) => {
      res.writeHead(404, { 'content-type': 'application/json' });
      res.end(JSON.stringify({ error: { code: 'not_found', message: 'no route GET /api/events' } }));
    });
    expect(await openTaskWatch(base, 't1', undefined)).toBeUndefined();
  });

  it('wakes on a record of the task and sends the token in a header, never in the URL', async () => {
    let push: ((text: string) => void) | undefined;
    let seen: { url?: string; auth?: string } = {};
    const base = await listen((req, res) => {
      seen = { url: req.url, auth: req.headers.authorization };
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: e-0\nevent: hello\ndata: {}\n\n');
      push = (t) => res.write(t);
    });
    const watch = await openTaskWatch(base, 't 1', 'tok-12345');
    expect(watch).toBeDefined();
    expect(seen).toEqual({ url: '/api/events?task=t%201', auth: 'Bearer tok-12345' });
    const started = Date.now();
    const waited = watch!.wait(30_000);
    await new Promise((r) => setTimeout(r, 50));
    push?.('id: e-1\nevent: step\ndata: {"task_id":"t 1","seq":1}\n\n');
    await waited;
    expect(Date.now() - started).toBeLessThan(5_000);
    // Nothing new: waits for the time given.
    const t0 = Date.now();
    await watch!.wait(200);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(150);
    watch!.close();
  });

  it('hands a chat task’s streamed reply (delta records, parsed with the protocol’s schema) to onDelta without waking the follower for each piece', async () => {
    let push: ((text: string) => void) | undefined;
    const base = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: e-0\nevent: hello\ndata: {}\n\n');
      push = (t) => res.write(t);
    });
    const got: Array<{ step: number; text: string }> = [];
    const watch = await openTaskWatch(base, 't1', undefined, { onDelta: (d) => got.push(d) });
    push?.('id: e-1\nevent: delta\ndata: {"task_id":"t1","step":2,"delta":"A turtle "}\n\n');
    // One that does not parse with the protocol's delta schema is skipped, and does not wake either.
    push?.('id: e-1b\nevent: delta\ndata: {"task_id":"t1","step":"2","delta":5}\n\n');
    push?.('id: e-2\nevent: delta\ndata: {"task_id":"t1","step":2,"delta":"digs."}\n\n');
    const t0 = Date.now();
    await watch!.wait(300);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(got).toEqual([
      { step: 2, text: 'A turtle ' },
      { step: 2, text: 'digs.' },
    ]);
    watch!.close();
  });

  it('with summaries, hands over the step records that carry their short form and says when a read is due instead', async () => {
    let push: ((text: string) => void) | undefined;
    const base = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.write('id: e-0\nevent: hello\ndata: {}\n\n');
      push = (t) => res.write(t);
    });
    const step = (seq: number, extra: string): string =>
      `id: e-${seq}\nevent: step\ndata: {"task_id":"t1","seq":${seq},"step":1,"kind":"note","at":1${extra}}\n\n`;
    const watch = await openTaskWatch(base, 't1', undefined, { summaries: true });
    // Nothing came: a read (a wake-up may have been lost).
    await watch!.wait(50);
    expect(watch!.take()).toEqual({ steps: [], read: true });
    push?.(step(1, ',"summary":true,"preview":"a"'));
    push?.(step(2, ',"summary":true,"preview":"b"'));
    await watch!.wait(5_000);
    await new Promise((r) => setTimeout(r, 50));
    const got = watch!.take();
    expect(got.read).toBe(false);
    expect(got.steps.map((s) => [s.seq, s.preview])).toEqual([
      [1, 'a'],
      [2, 'b'],
    ]);
    // A record too large for its short form (only its numbers): a read, and the summaries after it come with that read.
    push?.(step(3, ''));
    push?.(step(4, ',"summary":true,"preview":"d"'));
    await watch!.wait(5_000);
    await new Promise((r) => setTimeout(r, 50));
    expect(watch!.take()).toEqual({ steps: [], read: true });
    // Any other record of the task is a read too.
    push?.(step(5, ',"summary":true,"preview":"e"'));
    push?.('id: e-6\nevent: question\ndata: {"task_id":"t1","question_id":"q1","answered":false}\n\n');
    await watch!.wait(5_000);
    await new Promise((r) => setTimeout(r, 50));
    const mixed = watch!.take();
    expect(mixed.read).toBe(true);
    expect(mixed.steps.map((s) => s.seq)).toEqual([5]);
    watch!.close();
  });

  it('gives no watch when the stream answers nothing in time (a buffering proxy holds it back), instead of hanging', async () => {
    // Neither headers nor records: a proxy waiting for the never-ending response to end.
    let base = await listen(() => {});
    let t0 = Date.now();
    expect(await openTaskWatch(base, 't1', undefined, { firstRecordMs: 300 })).toBeUndefined();
    expect(Date.now() - t0).toBeLessThan(3000);
    server?.closeAllConnections();
    await new Promise<void>((r) => server!.close(() => r()));
    // Headers at once, but the records held back.
    base = await listen((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/event-stream' });
      res.flushHeaders();
    });
    t0 = Date.now();
    expect(await openTaskWatch(base, 't1', undefined, { firstRecordMs: 300 })).toBeUndefined();
    expect(Date.now() - t0).toBeLessThan(3000);
  });
});
