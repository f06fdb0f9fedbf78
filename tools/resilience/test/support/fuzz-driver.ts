/**
 * Drives the hostile message stream against a running orchestrator: one long-lived attacking connection (messages
 * pipelined within a window, replies matched in order, since the server handles one connection's messages in
 * order) plus a fresh socket for each message that must end in a close. Samples the server's RSS as it goes.
 */
import WebSocket from 'ws';
import type { HostileMessage } from '../../src/hostile-messages.js';
import type { Msg } from './sim-client.js';

/** Counts and samples of a fuzz run. */
export interface FuzzSummary {
  messages: number;
  frames: number;
  errorsReturned: number;
  pongs: number;
  closes: number;
  /** Replies that were not what the message called for (must be 0). */
  mismatches: number;
  mismatchSamples: string[];
  /** Messages other than replies (must be 0: the attacker has no tasks). */
  unexpected: number;
  /** The attacking connection was closed when it should not have been. */
  droppedMainConnection: number;
  byCategory: Record<string, number>;
  errorCodes: Record<string, number>;
  rssKiB: { start: number; afterWarmup: number; peak: number; end: number; samples: number[] };
  ms: number;
}

interface Pending {
  m: HostileMessage;
}

/** Run `count` messages from `next` against `url` as client `clientId`. */
export async function runFuzz(opts: {
  url: string;
  clientId: string;
  count: number;
  next: () => HostileMessage;
  rss: () => number;
  window?: number;
  token?: string;
}): Promise<FuzzSummary> {
  const window = opts.window ?? 96;
  const s: FuzzSummary = {
    messages: 0,
    frames: 0,
    errorsReturned: 0,
    pongs: 0,
    closes: 0,
    mismatches: 0,
    mismatchSamples: [],
    unexpected: 0,
    droppedMainConnection: 0,
    byCategory: {},
    errorCodes: {},
    rssKiB: { start: opts.rss(), afterWarmup: 0, peak: 0, end: 0, samples: [] },
    ms: 0,
  };
  const t0 = Date.now();
  const wsUrl = `${opts.url.replace(/^http/, 'ws')}/ws`;
  const queue: Pending[] = [];
  let drained: (() => void) | undefined;

  const mismatch = (m: HostileMessage, got: string): void => {
    s.mismatches++;
    if (s.mismatchSamples.length < 20) {
      const frame = m.frames.map((f) => (typeof f === 'string' ? f : `<${f.length} bytes>`)).join(' | ');
      s.mismatchSamples.push(
        `${m.category}: sent ${frame.slice(0, 200)} expected ${JSON.stringify(m.expect)} got ${got}`,
      );
    }
  };

  const openMain = async (): Promise<WebSocket> => {
    const ws = await openSocket(wsUrl);
    ws.send(
      JSON.stringify({
        type: 'hello',
        client_id: opts.clientId,
        protocol_version: 1,
        commands: [],
        token: opts.token,
      }),
    );
    await new Promise<void>((resolve, reject) => {
      const onMsg = (d: Buffer): void => {
        const m = JSON.parse(d.toString('utf8')) as Msg;
        ws.off('message', onMsg);
        if (m.type === 'welcome') resolve();
        else reject(new Error(`fuzzer hello refused: ${JSON.stringify(m)}`));
      };
      ws.on('message', onMsg);
    });
    ws.on('message', (d: Buffer) => {
      let msg: Msg;
      try {
        msg = JSON.parse(d.toString('utf8')) as Msg;
      } catch {
        s.unexpected++;
        return;
      }
      if (msg.type === 'ping') {
        ws.send(JSON.stringify({ type: 'pong', id: msg.id }));
        return;
      }
      if (msg.type !== 'error' && msg.type !== 'pong') {
        s.unexpected++;
        return;
      }
      const p = queue.shift();
      if (!p) {
        s.unexpected++;
        return;
      }
      if (msg.type === 'error') {
        s.errorsReturned++;
        const code = String(msg.code);
        s.errorCodes[code] = (s.errorCodes[code] ?? 0) + 1;
        if (p.m.expect.kind !== 'error' || (p.m.expect.codes && !p.m.expect.codes.includes(code))) {
          mismatch(p.m, `error ${code}: ${String(msg.message).slice(0, 120)}`);
        }
      } else {
        s.pongs++;
        if (p.m.expect.kind !== 'pong') mismatch(p.m, 'pong');
      }
      if (queue.length <= window / 2) drained?.();
    });
    ws.on('close', (code: number, reason: Buffer) => {
      if (ws !== main) return;
      s.droppedMainConnection++;
      for (const p of queue.splice(0)) mismatch(p.m, `main socket closed ${code} ${reason.toString()}`);
      drained?.();
    });
    return ws;
  };

  let main = await openMain();
  let probes = 0;
  for (let i = 0; i < opts.count; i++) {
    const m = opts.next();
    s.messages++;
    s.frames += m.frames.length;
    s.byCategory[m.category] = (s.byCategory[m.category] ?? 0) + 1;
    if (m.expect.kind === 'close') {
      const got = await closeProbe(wsUrl, m, `${opts.clientId}-probe-${probes++}`, opts.token);
      if (m.expect.codes.includes(got.code)) s.closes++;
      else mismatch(m, `close ${got.code} ${got.reason}`);
    } else {
      if (main.readyState !== WebSocket.OPEN) main = await openMain();
      queue.push({ m });
      for (const f of m.frames) main.send(f, { binary: typeof f !== 'string' && !m.buffersAsText });
      if (queue.length >= window) {
        await new Promise<void>((r) => {
          drained = r;
        });
        drained = undefined;
      }
    }
    if (i % 250 === 0) {
      const rss = opts.rss();
      s.rssKiB.samples.push(rss);
      s.rssKiB.peak = Math.max(s.rssKiB.peak, rss);
      if (i <= opts.count / 10) s.rssKiB.afterWarmup = rss;
    }
  }
  // Wait (bounded) for the last replies.
  const end = Date.now() + 15_000;
  while (queue.length > 0 && Date.now() < end) await new Promise((r) => setTimeout(r, 20));
  for (const p of queue.splice(0)) mismatch(p.m, 'no reply within 15 s');
  s.rssKiB.end = opts.rss();
  s.rssKiB.peak = Math.max(s.rssKiB.peak, s.rssKiB.end);
  s.ms = Date.now() - t0;
  main.removeAllListeners('close');
  main.close();
  return s;
}

function openSocket(url: string): Promise<WebSocket> {
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, { maxPayload: 64 * 1024 * 1024 });
    ws.once('open', () => resolve(ws));
    ws.once('error', reject);
  });
}

/** Send a message that must end the connection; resolves with how it closed (code 0 = it did not, in 5 s). */
async function closeProbe(
  url: string,
  m: HostileMessage,
  clientId: string,
  token: string | undefined,
): Promise<{ code: number; reason: string }> {
  if (m.expect.kind !== 'close') throw new Error('not a close probe');
  const ws = await openSocket(url);
  ws.on('error', () => {});
  const closed = new Promise<{ code: number; reason: string }>((resolve) =>
    ws.once('close', (code: number, reason: Buffer) => resolve({ code, reason: reason.toString() })),
  );
  if (!m.expect.beforeHello) {
    const welcomed = new Promise<void>((resolve) => ws.once('message', () => resolve()));
    ws.send(JSON.stringify({ type: 'hello', client_id: clientId, protocol_version: 1, commands: [], token }));
    await welcomed;
  }
  for (const f of m.frames) ws.send(f, { binary: typeof f !== 'string' && !m.buffersAsText });
  const timeout = new Promise<{ code: number; reason: string }>((resolve) =>
    setTimeout(() => resolve({ code: 0, reason: 'still open after 5 s' }), 5000),
  );
  const got = await Promise.race([closed, timeout]);
  ws.terminate();
  return got;
}
