import type { Decision } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import { CLOSE_CODES } from '../src/ws/close-codes.js';
import { everyKind, eventually, results, strategyOf, writeThenRun } from './support/harness.js';
import { useHarness } from './support/session.js';
import { TestClient } from './support/ws-test-client.js';

const t = useHarness();

const connect = t.connect;

const createTask = (c: TestClient, clientId: string, requestId?: string): Promise<string> =>
  t.createTask(c, clientId, requestId !== undefined ? { requestId } : {});

describe('frame size limits and chunking', () => {
  it('answers an oversize frame with message_too_large and keeps the connection usable', async () => {
    await t.start();
    const c = await connect('pc-1');
    c.send({ type: 'ping', id: 'x'.repeat(140_000) });
    expect(await c.waitFor('error')).toMatchObject({ code: 'message_too_large' });
    c.send({ type: 'ping', id: 'after' });
    expect(await c.waitFor('pong', { id: 'after' })).toBeTruthy();
    expect(c.closed).toBeUndefined();
  });

  it('closes with 1009 on a frame above the hard cap (8x the limit) without crashing', async () => {
    await t.start();
    const c = await connect('pc-1');
    c.send('x'.repeat(1024 * 1024 + 10));
    expect((await c.whenClosed()).code).toBe(CLOSE_CODES.tooBig);
    const other = await connect('pc-2');
    other.send({ type: 'ping', id: 'alive' });
    expect(await other.waitFor('pong', { id: 'alive' })).toBeTruthy();
  });

  it('chunks an outbound command_call larger than 128 KiB and accepts a chunked command_result', async () => {
    const big = 'A'.repeat(300_000);
    const s = strategyOf((_t, history): Decision => {
      const r = results(history);
      if (r.length === 0)
        return { type: 'tool_call', command: 'fs_write', args: { path: '/big.txt', content: big } };
      return {
        type: 'complete',
        result: { got: r[0]?.outcome.ok ? (r[0].outcome.result as { len: number }).len : -1 },
      };
    });
    await t.start({ strategies: everyKind(s) });
    const raw: string[] = [];
    const c = await connect('pc-1');
    c.ws.on('message', (d: Buffer) => raw.push(d.toString('utf8')));
    const taskId = await createTask(c, 'pc-1');
    const call = await c.waitFor('command_call');
    expect((call.args as { content: string }).content).toHaveLength(300_000);
    expect(raw.some((f) => f.includes('"type":"chunk"'))).toBe(true);
    expect(raw.every((f) => Buffer.byteLength(f) <= 131_072)).toBe(true);
    // Send a 200 KB result back as chunks.
    const text = JSON.stringify({
      type: 'command_result',
      task_id: taskId,
      call_id: call.call_id,
      ok: true,
      result: { len: 200_000, data: 'b'.repeat(200_000) },
    });
    const pieces = [text.slice(0, 100_000), text.slice(100_000)];
    pieces.forEach((data, index) => c.send({ type: 'chunk', chunk_id: 'up-1', index, count: 2, data }));
    await c.waitFor('command_ack', { call_id: call.call_id });
    expect(await c.waitFor('task_completed')).toMatchObject({ result: { got: 200_000 } });
  });

  it('rejects an inconsistent chunk with chunk_error', async () => {
    await t.start();
    const c = await connect('pc-1');
    c.send({ type: 'chunk', chunk_id: 'z', index: 0, count: 2, data: '{"type":' });
    c.send({ type: 'chunk', chunk_id: 'z', index: 0, count: 2, data: '{"type":' });
    expect(await c.waitFor('error')).toMatchObject({ code: 'chunk_error' });
  });
});

describe('rate limit and backpressure', () => {
  it('drops messages over the per-client rate with a rate_limited error', async () => {
    await t.start({ config: { server: { rateLimit: { messagesPerSecond: 1, burst: 5 } } } });
    const c = await connect('pc-1');
    for (let i = 0; i < 15; i++) c.send({ type: 'ping', id: `p${i}` });
    expect(await c.waitFor('error')).toMatchObject({ code: 'rate_limited' });
    await new Promise((r) => setTimeout(r, 200));
    const pongs = c.messages.filter((m) => m.type === 'pong').length;
    // hello took one token; at most the rest of the burst (plus refill) got through.
    expect(pongs).toBeGreaterThanOrEqual(3);
    expect(pongs).toBeLessThanOrEqual(6);
    expect(c.closed).toBeUndefined();
  });

  it('closes a client that keeps flooding far beyond its limit (close 4008)', async () => {
    await t.start({ config: { server: { rateLimit: { messagesPerSecond: 1, burst: 5 } } } });
    const c = await connect('pc-1');
    for (let i = 0; i < 60; i++) c.send({ type: 'ping' });
    expect((await c.whenClosed()).code).toBe(CLOSE_CODES.rateLimited);
  });

  it('closes a flooder whose flood comes paced, not in one read: one frame let through at each refill does not reset its count (guards against a sustained flood at many times the rate never being closed)', async () => {
    // 20/s with a burst of 10: the cut-off is 4 × burst = 40 refusals. The flood comes at ~500/s in small writes, so a
    // token refills every 50 ms between frames: counting refusals "since the last admitted frame" never got past ~25.
    await t.start({ config: { server: { rateLimit: { messagesPerSecond: 20, burst: 10 } } } });
    const c = await connect('pc-1');
    const started = Date.now();
    for (let i = 0; i < 1500 && c.closed === undefined; i++) {
      c.send({ type: 'ping', id: `p${i}` });
      await new Promise((r) => setTimeout(r, 2));
    }
    expect((await c.whenClosed(10_000)).code).toBe(CLOSE_CODES.rateLimited);
    const pongs = c.messages.filter((m) => m.type === 'pong').length;
    // The burst plus the refill while it flooded: far fewer than it sent, and it was cut off within seconds.
    expect(pongs).toBeGreaterThanOrEqual(9);
    expect(pongs).toBeLessThanOrEqual(10 + ((Date.now() - started) / 1000) * 20 + 2);
    expect(Date.now() - started).toBeLessThan(8_000);
  });

  it('keeps a client that went over its limit once and then stays under it (its refusals are forgiven once it has a message to spare)', async () => {
    await t.start({ config: { server: { rateLimit: { messagesPerSecond: 20, burst: 10 } } } });
    const c = await connect('pc-1');
    for (let round = 0; round < 6; round++) {
      // 30 at once: the burst goes through and ~20 are refused (fewer than the 40 that cut a client off) ...
      for (let i = 0; i < 30; i++) c.send({ type: 'ping', id: `r${round}-${i}` });
      // ... then it rests long enough to refill: the refusals so far are forgiven, so six rounds (~120 refusals
      // in all) do not add up to a flood.
      await new Promise((r) => setTimeout(r, 700));
    }
    expect(c.closed).toBeUndefined();
    expect(c.messages.filter((m) => m.type === 'pong').length).toBeGreaterThanOrEqual(6 * 9);
  });

  it('answers the messages admitted before a flood is cut off, even when the whole flood arrives in one read (guards against the 4008 close dropping the replies a loaded server had not sent yet)', async () => {
    await t.start({ config: { server: { rateLimit: { messagesPerSecond: 1, burst: 20 } } } });
    const c = await connect('pc-1');
    // One TCP write: the server parses every frame in one synchronous pass, the way a busy server reads a flood
    // that piled up in its receive buffer.
    const raw = (c.ws as unknown as { _socket: { cork(): void; uncork(): void } })._socket;
    raw.cork();
    for (let i = 0; i < 200; i++) c.send({ type: 'ping', id: `f${i}` });
    raw.uncork();
    expect((await c.whenClosed()).code).toBe(CLOSE_CODES.rateLimited);
    const pongs = c.messages.filter((m) => m.type === 'pong').map((m) => m.id);
    // hello took one token; the rest of the burst (plus at most a token of refill) was admitted, in order.
    expect(pongs.length).toBeGreaterThanOrEqual(19);
    expect(pongs.length).toBeLessThanOrEqual(21);
    expect(pongs).toEqual(pongs.map((_id, i) => `f${i}`));
    expect(c.messages.filter((m) => m.type === 'error' && m.code === 'rate_limited')).toHaveLength(1);
  });

  it('keeps the limit of a client id across reconnects: a client that used its burst and reconnects at once is still limited (guards against a fresh bucket per connection)', async () => {
    await t.start({ config: { server: { rateLimit: { messagesPerSecond: 0.5, burst: 5 } } } });
    const c1 = await connect('pc-1');
    for (let i = 0; i < 4; i++) c1.send({ type: 'ping', id: `a${i}` });
    await c1.waitFor('pong', { id: 'a3' });
    c1.terminate();
    await c1.whenClosed();
    const c2 = await connect('pc-1');
    for (let i = 0; i < 4; i++) c2.send({ type: 'ping', id: `b${i}` });
    expect(await c2.waitFor('error')).toMatchObject({ code: 'rate_limited' });
    await new Promise((r) => setTimeout(r, 200));
    expect(c2.messages.filter((m) => m.type === 'pong')).toEqual([]);
  });

  it('refuses a flooder that reconnects at once with the same client_id (rate_limited, 4008; frames sent with its hello are not handled) while another client is unaffected', async () => {
    const h = await t.start({ config: { server: { rateLimit: { messagesPerSecond: 0.5, burst: 5 } } } });
    const other = await connect('pc-2');
    const f = await connect('pc-1');
    for (let i = 0; i < 60; i++) f.send({ type: 'ping' });
    expect((await f.whenClosed()).code).toBe(CLOSE_CODES.rateLimited);

    const back = new TestClient(h.url);
    t.track(back);
    await back.opened;
    back.send({ type: 'hello', client_id: 'pc-1', protocol_version: 1, commands: [] });
    for (let i = 0; i < 3; i++) back.send({ type: 'ping', id: `again${i}` });
    expect(await back.waitFor('error')).toMatchObject({
      code: 'rate_limited',
      message: expect.stringMatching(/cut off for flooding; reconnect in \d+ s/),
    });
    expect((await back.whenClosed()).code).toBe(CLOSE_CODES.rateLimited);
    expect(back.messages.filter((m) => m.type === 'welcome' || m.type === 'pong')).toEqual([]);

    for (let i = 0; i < 3; i++) other.send({ type: 'ping', id: `o${i}` });
    await other.waitFor('pong', { id: 'o2' });
    expect(other.messages.filter((m) => m.type === 'error')).toEqual([]);
    expect(other.closed).toBeUndefined();
  });

  it('cuts off a client that does not read its messages (bounded send buffer)', async () => {
    const h = await t.start({
      config: {
        server: { maxBufferedBytes: 64 * 1024, rateLimit: { messagesPerSecond: 10_000, burst: 10_000 } },
      },
    });
    const c = await connect('slow');
    // Stop reading: the kernel buffers fill, then the server's own buffer grows.
    (c.ws as unknown as { _socket: { pause(): void } })._socket.pause();
    const id = 'y'.repeat(100_000);
    for (let i = 0; i < 200; i++) c.send({ type: 'ping', id });
    await eventually(async () => {
      const body = (await (await h!.http('/api/clients')).json()) as {
        clients: Array<{ connected: boolean }>;
      };
      return body.clients[0]?.connected === false;
    }, 10_000);
  });
});

describe('reconnect grace period', () => {
  it('re-sends a pending call with the same call_id to a client that reconnects within the grace period', async () => {
    await t.start({
      strategies: everyKind(writeThenRun),
      config: { server: { reconnectGraceMs: 5000 } },
    });
    const c1 = await connect('turtle');
    const taskId = await createTask(c1, 'turtle');
    const call = await c1.waitFor('command_call');
    c1.terminate();
    await c1.whenClosed();
    const c2 = await connect('turtle');
    const again = await c2.waitFor('command_call');
    expect(again.call_id).toBe(call.call_id);
    expect(again.args).toEqual(call.args);
    c2.send({ type: 'command_result', task_id: taskId, call_id: again.call_id, ok: true, result: {} });
    await c2.waitFor('command_ack');
    const next = await c2.waitFor('command_call', { command: 'run_program' });
    c2.send({ type: 'command_result', task_id: taskId, call_id: next.call_id, ok: true, result: {} });
    expect(await c2.waitFor('task_completed', { task_id: taskId })).toBeTruthy();
  });

  it('counts every re-send of a pending call in dispatch_count, on disk before the re-send (guards against dispatch_count saying a call went out once when the client got it three times)', async () => {
    const h = await t.start({
      strategies: everyKind(writeThenRun),
      config: { server: { reconnectGraceMs: 5000 } },
    });
    const c1 = await connect('turtle');
    const taskId = await createTask(c1, 'turtle');
    const call = await c1.waitFor('command_call');
    const dispatchCount = async (): Promise<number> => {
      const d = (await (await h!.http(`/api/tasks/${taskId}`)).json()) as {
        command_calls: Array<{ call_id: string; dispatch_count: number }>;
      };
      return d.command_calls.find((c) => c.call_id === call.call_id)?.dispatch_count ?? -1;
    };
    expect(await dispatchCount()).toBe(1);
    for (const expected of [2, 3]) {
      const prev = t.clients[t.clients.length - 1] as TestClient;
      prev.terminate();
      await prev.whenClosed();
      const c = await connect('turtle');
      expect((await c.waitFor('command_call')).call_id).toBe(call.call_id);
      // The count is committed before the call is re-sent, so it is already on disk now.
      expect(await dispatchCount()).toBe(expected);
    }
  });

  it('replays the state of tasks that changed while the client was away: a task that completed meanwhile arrives as task_update + task_completed without subscribing (guards against a computer never learning the outcome of its task)', async () => {
    let slowFinish = true;
    const s = strategyOf(async (_t, history): Promise<Decision> => {
      const r = results(history);
      if (r.length === 0) return { type: 'tool_call', command: 'fs_list', args: { path: '/' } };
      if (slowFinish) await new Promise((res) => setTimeout(res, 300)); // the client is gone by now
      return { type: 'complete', result: { listed: true } };
    });
    const h = await t.start({ strategies: everyKind(s), config: { server: { reconnectGraceMs: 5000 } } });
    const c1 = await connect('turtle');
    const taskId = await createTask(c1, 'turtle');
    const other = await createTask(c1, 'turtle', 'req-2'); // changes while away too, and also completes
    for (const id of [taskId, other]) {
      const call = await c1.waitFor('command_call', { task_id: id });
      c1.send({ type: 'command_result', task_id: id, call_id: call.call_id, ok: true, result: [] });
      await c1.waitFor('command_ack', { call_id: call.call_id });
    }
    c1.terminate();
    await c1.whenClosed();
    await eventually(async () => {
      const d = (await (await h!.http(`/api/tasks?status=completed`)).json()) as { total: number };
      return d.total === 2;
    });
    expect(c1.messages.some((m) => m.type === 'task_completed')).toBe(false);
    slowFinish = false;
    const c2 = await connect('turtle');
    for (const id of [taskId, other]) {
      const update = await c2.waitFor('task_update', { task_id: id });
      expect(update.status).toBe('completed');
      expect(await c2.waitFor('task_completed', { task_id: id })).toMatchObject({ result: { listed: true } });
    }
    // A client that stays connected gets nothing replayed (nothing was missed).
    const before = c2.messages.length;
    c2.send({ type: 'hello', client_id: 'turtle', protocol_version: 1, commands: [] });
    await c2.nextNew('welcome');
    await new Promise((r) => setTimeout(r, 100));
    expect(c2.messages.slice(before).filter((m) => m.type === 'task_completed')).toEqual([]);
  });

  it('fails the pending call with client_disconnected after the grace period (fail policy)', async () => {
    const s = strategyOf((_t, history): Decision => {
      const r = results(history);
      if (r.length === 0) return { type: 'tool_call', command: 'fs_list', args: { path: '/' } };
      return { type: 'fail', error: { code: 'gave_up', message: JSON.stringify(r[0]?.outcome) } };
    });
    const h = await t.start({ strategies: everyKind(s), config: { server: { reconnectGraceMs: 300 } } });
    const c1 = await connect('turtle');
    const taskId = await createTask(c1, 'turtle');
    await c1.waitFor('command_call');
    c1.terminate();
    const detail = await eventually(async () => {
      const d = (await (await h!.http(`/api/tasks/${taskId}`)).json()) as {
        task: { status: string; error?: { message: string } };
      };
      return d.task.status === 'failed' ? d : undefined;
    }, 5000);
    expect(detail.task.error?.message).toMatch(/client_disconnected/);
    expect(detail.task.error?.message).toMatch(/did not reconnect within 300 ms/);
  });

  it('keeps the call pending past the grace period under the wait policy', async () => {
    const h = await t.start({
      strategies: everyKind(writeThenRun),
      config: { server: { reconnectGraceMs: 200, disconnectPolicy: 'wait' } },
    });
    const c1 = await connect('turtle');
    const taskId = await createTask(c1, 'turtle');
    const call = await c1.waitFor('command_call');
    c1.terminate();
    await new Promise((r) => setTimeout(r, 600));
    const d = (await (await h.http(`/api/tasks/${taskId}`)).json()) as { task: { status: string } };
    expect(d.task.status).toBe('waiting_for_command');
    const c2 = await connect('turtle');
    expect((await c2.waitFor('command_call')).call_id).toBe(call.call_id);
  });

  it('fails a call at once for a client that is not connected and not in grace', async () => {
    const s = strategyOf((_t, history): Decision => {
      const r = results(history);
      if (r.length === 0) return { type: 'tool_call', command: 'fs_list', args: {} };
      return { type: 'complete', result: r[0]?.outcome as never };
    });
    const h = await t.start({ strategies: everyKind(s), config: { server: { reconnectGraceMs: 0 } } });
    const res = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'code_job', prompt: 'p', client_id: 'ghost' },
    });
    const { task } = (await res.json()) as { task: { id: string } };
    const d = await eventually(async () => {
      const x = (await (await h!.http(`/api/tasks/${task.id}`)).json()) as {
        task: { status: string; result?: unknown };
      };
      return x.task.status === 'completed' ? x : undefined;
    });
    expect(d.task.result).toMatchObject({ ok: false, error: { code: 'client_disconnected' } });
  });
});

describe('connection limit', () => {
  it('refuses upgrades beyond maxConnections with HTTP 503', async () => {
    const h = await t.start({ config: { server: { maxConnections: 1 } } });
    await connect('one');
    const raw = new WebSocket(`${h.url.replace('http', 'ws')}/ws`);
    const err = await new Promise<Error>((resolve) => raw.once('error', resolve));
    expect(err.message).toMatch(/503/);
  });
});
