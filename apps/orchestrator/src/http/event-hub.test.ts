import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { HttpStepEvent, HttpTaskEvent } from '@ccagent/protocol';
import { EventHub, SUBSCRIBER_QUEUE_BYTES, type SubscribeOptions } from './event-hub.js';

/** A `step` record of task `t` (what the engine publishes); `kind` also carries the bulk of the slow-reader test. */
function step(seq: number, t = 't', kind = 'model'): HttpStepEvent {
  return { task_id: t, seq, step: seq, kind, at: 1000 + seq };
}
const TASK_A: HttpTaskEvent = {
  id: 'a',
  kind: 'general',
  status: 'queued',
  client_id: null,
  prompt: 'p',
  prompt_truncated: false,
  counters: { steps: 0, tool_calls: 0, questions: 0 },
  created_at: 1,
  updated_at: 1,
};

let server: Server | undefined;
let hub: EventHub | undefined;

afterEach(async () => {
  hub?.close();
  server?.closeAllConnections();
  await new Promise<void>((r) => (server ? server.close(() => r()) : r()));
  server = undefined;
  hub = undefined;
});

async function serve(h: EventHub, opts: (url: URL) => SubscribeOptions = () => ({})): Promise<number> {
  server = createServer((req, res) => {
    const last = req.headers['last-event-id'];
    h.subscribe(res, {
      ...opts(new URL(req.url ?? '/', 'http://x')),
      ...(typeof last === 'string' ? { lastEventId: last } : {}),
    });
  });
  await new Promise<void>((r) => server!.listen(0, '127.0.0.1', () => r()));
  return (server.address() as AddressInfo).port;
}

interface Rec {
  id: string;
  event: string;
  data: Record<string, unknown>;
}

/** Read SSE records from a real socket until `until` holds (or the time runs out). */
async function read(
  port: string | number,
  path: string,
  until: (r: Rec[]) => boolean,
  headers: Record<string, string> = {},
): Promise<Rec[]> {
  const ctl = new AbortController();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers, signal: ctl.signal });
  const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
  const out: Rec[] = [];
  let buf = '';
  const deadline = Date.now() + 5000;
  while (!until(out) && Date.now() < deadline) {
    const { value, done } = await reader.read();
    if (done) break;
    buf += value;
    let i: number;
    while ((i = buf.indexOf('\n\n')) >= 0) {
      const block = buf.slice(0, i);
      buf = buf.slice(i + 2);
      const f: Record<string, string> = Object.fromEntries(
        block
          .split('\n')
          .filter((l) => !l.startsWith(':') && l.includes(': '))
          .map((l) => [l.slice(0, l.indexOf(': ')), l.slice(l.indexOf(': ') + 2)]),
      );
      if (f.data !== undefined) {
        out.push({ id: f.id ?? '', event: f.event ?? 'message', data: JSON.parse(f.data) as Rec['data'] });
      }
    }
  }
  ctl.abort();
  return out;
}

describe('EventHub', () => {
  it('streams published records in order with ids, and a per-task subscriber sees only its task', async () => {
    hub = new EventHub(1_700_000_000_000);
    const h = hub;
    const port = await serve(h, (u) => {
      const t = u.searchParams.get('task');
      return t ? { taskIds: [t] } : {};
    });
    const all = read(port, '/', (r) => r.length >= 4);
    const one = read(port, '/?task=b', (r) => r.length >= 2);
    await waitFor(() => h.subscriberCount === 2);
    h.publish('task', TASK_A, 'a');
    h.publish('step', step(1, 'b'), 'b');
    h.publish('client', { client_id: 'pc', connected: true, at: 1 });
    const [a, b] = await Promise.all([all, one]);
    expect(a.map((r) => r.event)).toEqual(['hello', 'task', 'step', 'client']);
    const epoch = (1_700_000_000_000).toString(36);
    expect(a.slice(1).map((r) => r.id)).toEqual([`${epoch}-1`, `${epoch}-2`, `${epoch}-3`]);
    expect(b.map((r) => [r.event, r.data])).toEqual([
      ['hello', { epoch }],
      ['step', step(1, 'b')],
    ]);
  });

  it('resumes after Last-Event-ID with exactly the missed records (guards against duplicated or lost steps after a reconnect)', async () => {
    hub = new EventHub(5);
    const h = hub;
    const port = await serve(h);
    for (let i = 1; i <= 5; i++) h.publish('step', step(i), 't');
    const resumed = await read(port, '/', (r) => r.length >= 3, { 'last-event-id': '5-2' });
    expect(resumed.map((r) => r.data.seq)).toEqual([3, 4, 5]);
  });

  it('answers resync to an id of another server process or one no longer held (the page refetches instead of missing records)', async () => {
    hub = new EventHub(7);
    const h = hub;
    const port = await serve(h);
    h.publish('step', step(1), 't');
    const other = await read(port, '/', (r) => r.length >= 1, { 'last-event-id': 'zzz-9' });
    expect(other.map((r) => r.event)).toEqual(['resync']);
    for (let i = 0; i < 5000; i++) h.publish('step', step(i), 't');
    const old = await read(port, '/', (r) => r.length >= 1, { 'last-event-id': '7-1' });
    expect(old[0]?.event).toBe('resync');
  });

  it('never blocks publishing on a subscriber that does not read: its queue stays bounded and it gets resync (guards against a slow browser slowing the engine)', async () => {
    hub = new EventHub(9);
    const h = hub;
    const port = await serve(h);
    // A raw socket that asks for the stream, then stops reading.
    const sock = net.connect(port, '127.0.0.1');
    await new Promise<void>((r) => sock.once('connect', () => r()));
    sock.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await waitFor(() => h.subscriberCount === 1);
    sock.pause();
    const payload = 'x'.repeat(2048);
    // 20 MB offered to a socket that takes a few MB: the queue never holds more than its bound.
    let maxQueued = 0;
    for (let i = 0; i < 10_000; i++) {
      h.publish('step', step(i, 't', payload), 't');
      maxQueued = Math.max(maxQueued, h.maxQueuedBytes);
    }
    expect(maxQueued).toBeGreaterThan(0);
    expect(maxQueued).toBeLessThanOrEqual(SUBSCRIBER_QUEUE_BYTES + 4096);
    // Now read everything: the stream goes on with a resync, then records published after it.
    let text = '';
    sock.on('data', (d: Buffer) => (text += d.toString('utf8')));
    sock.resume();
    await waitFor(() => text.includes('event: resync'));
    h.publish('step', step(10_001, 't', 'after'), 't');
    await waitFor(() => text.includes('"kind":"after"'));
    const stepsBeforeResync = text.slice(0, text.indexOf('event: resync')).split('event: step').length - 1;
    expect(stepsBeforeResync).toBeLessThan(10_000);
    expect(stepsBeforeResync * payload.length).toBeLessThan(SUBSCRIBER_QUEUE_BYTES + 16 * 1024 * 1024);
    sock.destroy();
  });
});

async function waitFor(cond: () => boolean, ms = 5000): Promise<void> {
  const end = Date.now() + ms;
  while (!cond()) {
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 5));
  }
}
