import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import net from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import type { HttpStepEvent, HttpTaskEvent } from '@ccagent/protocol';
import {
  EventHub,
  MC_REPLAY_BUFFER_SIZE,
  REPLAY_BUFFER_SIZE,
  ReplayRing,
  stepSummary,
  SUBSCRIBER_QUEUE_BYTES,
  type SubscribeOptions,
} from './event-hub.js';
import type { StoredStep } from '@ccagent/engine';
import { STEP_EVENT_MAX_CHARS } from '@ccagent/protocol';

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
  opened: () => void = () => {},
): Promise<Rec[]> {
  const ctl = new AbortController();
  const res = await fetch(`http://127.0.0.1:${port}${path}`, { headers, signal: ctl.signal });
  opened();
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

describe('stepSummary (the live step record)', () => {
  const base = { taskId: 't', seq: 3, step: 2, at: 50, kind: 'decision' } as StoredStep;

  it('carries the timeline row: the model text cut to a preview, the directive’s type and command, no input size', () => {
    const s = {
      ...base,
      model: 'qwen',
      input: { messages: [{ role: 'user', content: 'x'.repeat(100_000) }] },
      output: { content: 'y'.repeat(5_000) },
      directive: { type: 'tool_call', command: 'turtle.dig', args: { big: 'z'.repeat(10_000) } },
      durationMs: 12,
    } as unknown as StoredStep;
    const e = stepSummary('t', s);
    expect(e).toMatchObject({
      task_id: 't',
      seq: 3,
      step: 2,
      kind: 'decision',
      at: 50,
      summary: true,
      model: 'qwen',
      directive: { type: 'tool_call', command: 'turtle.dig' },
      output_chars: JSON.stringify(s.output).length,
      duration_ms: 12,
    });
    expect(e.preview?.length).toBeLessThanOrEqual(201);
    expect('input_chars' in e).toBe(false);
    expect(JSON.stringify(e).length).toBeLessThanOrEqual(STEP_EVENT_MAX_CHARS);
  });

  it('falls back to the record’s numbers when the short form is over the bound (a model-written command name)', () => {
    const s = {
      ...base,
      directive: { type: 'tool_call', command: 'c'.repeat(5_000) },
    } as unknown as StoredStep;
    expect(stepSummary('t', s)).toEqual({ task_id: 't', seq: 3, step: 2, kind: 'decision', at: 50 });
  });
});

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

  it('keeps exactly the last REPLAY_BUFFER_SIZE records across the wrap: a resume from the newest id pushed out starts right after it, one older gets resync', async () => {
    hub = new EventHub(11);
    const h = hub;
    const port = await serve(h);
    const total = REPLAY_BUFFER_SIZE * 2 + 37;
    for (let i = 1; i <= total; i++) h.publish('step', step(i), 't');
    const evicted = total - REPLAY_BUFFER_SIZE;
    // (A replay longer than a subscriber's queue may end in a slow_consumer resync: read the start of this one.)
    const oldest = await read(port, '/', (r) => r.length >= 10, { 'last-event-id': `b-${evicted}` });
    expect(oldest.slice(0, 10).map((r) => r.id)).toEqual(
      Array.from({ length: 10 }, (_, k) => `b-${evicted + 1 + k}`),
    );
    const tail = await read(port, '/', (r) => r.length >= 500, { 'last-event-id': `b-${total - 500}` });
    expect(tail.map((r) => r.data.seq)).toEqual(Array.from({ length: 500 }, (_, k) => total - 499 + k));
    const tooOld = await read(port, '/', (r) => r.length >= 1, { 'last-event-id': `b-${evicted - 1}` });
    expect(tooOld.map((r) => [r.event, r.data])).toEqual([['resync', { reason: 'unknown_event_id' }]]);
    // The newest id: nothing to replay (the next record is the next published); one not yet given: resync.
    const newest = read(port, '/', (r) => r.length >= 1, { 'last-event-id': `b-${total}` });
    await waitFor(() => h.subscriberCount === 1);
    h.publish('step', step(total + 1), 't');
    expect((await newest).map((r) => r.id)).toEqual([`b-${total + 1}`]);
    const future = await read(port, '/', (r) => r.length >= 1, { 'last-event-id': `b-${total + 5}` });
    expect(future[0]?.event).toBe('resync');
  });

  it('ReplayRing: finds where a resume starts in a wrapped ring and records the newest id pushed out', () => {
    const ring = new ReplayRing<{ n: number }>(4);
    expect(ring.after(0)).toEqual([]);
    for (let n = 1; n <= 3; n++) ring.push({ n });
    expect(ring.evicted).toBe(0);
    expect(ring.after(1).map((r) => r.n)).toEqual([2, 3]);
    for (let n = 4; n <= 10; n++) ring.push({ n });
    expect(ring.length).toBe(4);
    expect(ring.evicted).toBe(6);
    expect(ring.after(0).map((r) => r.n)).toEqual([7, 8, 9, 10]);
    expect(ring.after(8).map((r) => r.n)).toEqual([9, 10]);
    expect(ring.after(10)).toEqual([]);
  });

  it('writes a record’s frame only when it is sent, and once however many readers get it (no work for nobody)', async () => {
    hub = new EventHub(13);
    const h = hub;
    const port = await serve(h);
    let serialized = 0;
    const counted = { ...step(1), toJSON: () => (serialized++, step(1)) } as unknown as HttpStepEvent;
    h.publish('step', counted, 't');
    expect(serialized).toBe(0);
    const a = read(port, '/', (r) => r.length >= 1, { 'last-event-id': `${(13).toString(36)}-0` });
    const b = read(port, '/', (r) => r.length >= 1, { 'last-event-id': `${(13).toString(36)}-0` });
    const [ra, rb] = await Promise.all([a, b]);
    expect(ra.map((r) => r.data)).toEqual([step(1)]);
    expect(rb.map((r) => r.data)).toEqual([step(1)]);
    expect(serialized).toBe(1);
  });

  it('keeps Minecraft records in their own buffer: 10,000 of them do not push task records out of the replay', async () => {
    hub = new EventHub(17);
    const h = hub;
    const port = await serve(h, (u) => {
      const t = u.searchParams.get('task');
      return t ? { taskIds: [t] } : {};
    });
    const e = (17).toString(36);
    h.publish('task', TASK_A, 'a');
    for (let i = 1; i <= 10_000; i++)
      h.publish('mc_log', { instance_id: 'i', seq: i, at: i, message: `l${i}` });
    h.publish('step', step(1, 'a'), 'a');
    // A reader of everything: the task records, the Minecraft records still held, in id order, then resync for the
    // Minecraft ones it lost.
    const all = await read(port, '/', (r) => r.some((x) => x.event === 'resync'), {
      'last-event-id': `${e}-0`,
    });
    expect(all.filter((r) => r.event === 'task').map((r) => r.id)).toEqual([`${e}-1`]);
    const mc = all.filter((r) => r.event === 'mc_log');
    expect(mc.length).toBe(MC_REPLAY_BUFFER_SIZE);
    expect(mc[0]?.data.seq).toBe(10_000 - MC_REPLAY_BUFFER_SIZE + 1);
    const ids = all.filter((r) => r.event !== 'resync').map((r) => Number(r.id.split('-')[1]));
    expect([...ids].sort((x, y) => x - y)).toEqual(ids);
    expect(all.at(-2)?.event).toBe('step');
    expect(all.at(-1)).toMatchObject({ event: 'resync', data: { reason: 'minecraft_gap' } });
    // Resumes read up to a record published once they are subscribed, so a resync after the replay would be seen.
    const upToSentinel = (p: string, from: string): Promise<Rec[]> =>
      read(
        port,
        p,
        (r) => r.some((x) => x.event === 'task' && x.data.prompt === 'sentinel'),
        { 'last-event-id': from },
        () => h.publish('task', { ...TASK_A, prompt: 'sentinel' }, 'a'),
      );
    // A reader of task a: its records and no resync (it never gets Minecraft records).
    const one = await upToSentinel('/?task=a', `${e}-0`);
    expect(one.map((r) => r.event)).toEqual(['task', 'step', 'task']);
    expect(one[2]?.data.prompt).toBe('sentinel');
    // From the newest Minecraft record pushed out: no gap.
    const after = await upToSentinel('/', `${e}-${10_001 - MC_REPLAY_BUFFER_SIZE}`);
    expect(after.some((r) => r.event === 'resync')).toBe(false);
    expect(after.filter((r) => r.event === 'mc_log').length).toBe(MC_REPLAY_BUFFER_SIZE);
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
