/**
 * `Engine.submitResult`, the one entry for a command result from outside, and `Engine.bindCall`: each verdict
 * (accepted, duplicate, forbidden, closed, unknown), judged against the engine's own record of the call — in this
 * process, and from the stored row after a restart.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { Engine } from './engine.js';
import { isEngineError } from './engine-error.js';
import { InMemoryTaskStore } from './in-memory-task-store.js';
import type { TaskStrategy, ToolCallRequest, ToolExecutor } from './ports.js';
import type { CommandOutcome, Decision, Task } from './types.js';

/** Calls `n` commands one after another, then completes. */
function caller(n: number): TaskStrategy {
  return {
    decide(_task, history) {
      const done = history.filter((e) => e.type === 'tool_result').length;
      const d: Decision =
        done >= n
          ? { type: 'complete', result: done }
          : { type: 'tool_call', command: 'dig', args: { i: done }, timeoutMs: 5_000 };
      return Promise.resolve(d);
    },
  };
}

/** An executor that keeps every call it gets and settles none (the client's results come through submitResult). */
class HoldingExecutor implements ToolExecutor {
  readonly calls: ToolCallRequest[] = [];
  execute(call: ToolCallRequest): Promise<CommandOutcome> {
    this.calls.push(call);
    return new Promise(() => {});
  }
}

function setup(store = new InMemoryTaskStore(), clock = new ManualClock(1_000)) {
  const executor = new HoldingExecutor();
  const engine = new Engine({ store, strategies: { demo: caller(2) }, clock, executor, tickIntervalMs: 0 });
  const until = async (what: string, pred: () => boolean | Promise<boolean>) => {
    for (let i = 0; i < 200; i++) {
      if (await pred()) return;
      await clock.advance(0);
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const waiting = (id: string) =>
    until(`${id} waiting`, async () => (await store.getTask(id))?.status === 'waiting_for_command');
  const submit = (taskId: string, callId: string, sender: string | null, outcome: CommandOutcome) =>
    engine.submitResult({ taskId, callId, sender, outcome });
  return { store, clock, executor, engine, until, waiting, submit };
}

const ok = (result: unknown): CommandOutcome => ({ ok: true, result: result as never });
const results = async (store: InMemoryTaskStore, id: string) =>
  (await store.getHistory(id)).filter((e) => e.type === 'tool_result');

describe('Engine.submitResult verdicts', () => {
  it('accepted: the owner’s result for an open call is committed, onDurable runs with the task once on disk, and the executor learns through `recorded`', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 't', kind: 'demo', prompt: '', clientId: 'pc' });
    await h.waiting('t');
    const req = h.executor.calls[0] as ToolCallRequest;
    const durable: Task[] = [];
    const r = await h.engine.submitResult(
      { taskId: 't', callId: 't:call:1', sender: 'pc', outcome: ok('dug') },
      { onDurable: (task) => durable.push(task) },
    );
    expect(r).toMatchObject({ ok: true, value: { verdict: 'accepted', task: { status: 'running' } } });
    expect(durable.map((t) => t.status)).toEqual(['running']);
    expect((await h.store.getCommandCall('t:call:1'))?.outcome).toEqual(ok('dug'));
    expect(await req.recorded).toEqual(ok('dug'));
    expect(req.signal.aborted).toBe(false);
    await h.engine.stop();
  });

  it('duplicate: a repeat from the same sender — sequential or while the first is being committed — changes nothing and runs no onDurable', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 't', kind: 'demo', prompt: '', clientId: 'pc' });
    await h.waiting('t');
    const acks: string[] = [];
    const first = h.engine.submitResult(
      { taskId: 't', callId: 't:call:1', sender: 'pc', outcome: ok(1) },
      { onDurable: () => acks.push('first') },
    );
    const second = h.engine.submitResult(
      { taskId: 't', callId: 't:call:1', sender: 'pc', outcome: ok(2) },
      { onDurable: () => acks.push('second') },
    );
    expect(await first).toMatchObject({ ok: true, value: { verdict: 'accepted' } });
    expect(await second).toEqual({ ok: true, value: { verdict: 'duplicate' } });
    expect(await h.submit('t', 't:call:1', 'pc', ok(3))).toEqual({
      ok: true,
      value: { verdict: 'duplicate' },
    });
    expect(acks).toEqual(['first']);
    const r = await results(h.store, 't');
    expect(r).toHaveLength(1);
    expect(r[0]).toMatchObject({ outcome: ok(1) });
    await h.engine.stop();
  });

  it('forbidden: another client’s result for the call changes nothing; the call stays open for its owner', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 't', kind: 'demo', prompt: '', clientId: 'pc' });
    await h.waiting('t');
    expect(await h.submit('t', 't:call:1', 'thief', ok('forged'))).toMatchObject({
      ok: false,
      error: { code: 'forbidden' },
    });
    expect((await h.store.getCommandCall('t:call:1'))?.status).toBe('pending');
    expect(await results(h.store, 't')).toHaveLength(0);
    expect(await h.submit('t', 't:call:1', 'pc', ok('real'))).toMatchObject({ ok: true });
    // Once answered, the other client is still refused (not acknowledged as a duplicate).
    expect(await h.submit('t', 't:call:1', 'thief', ok('forged'))).toMatchObject({
      ok: false,
      error: { code: 'forbidden' },
    });
    await h.engine.stop();
  });

  it('a call of a task bound to no client belongs to nobody until bindCall; then to the bound client only, and the first binding holds', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 'u', kind: 'demo', prompt: '' });
    await h.waiting('u');
    expect(await h.submit('u', 'u:call:1', 'a', ok(1))).toMatchObject({
      ok: false,
      error: { code: 'forbidden' },
    });
    const req = h.executor.calls[0] as ToolCallRequest;
    expect(await req.bind?.('a')).toBe('a');
    expect((await h.store.getCommandCall('u:call:1'))?.sentTo).toBe('a');
    expect(await h.engine.bindCall('u', 'u:call:1', 'b')).toBe('a');
    expect(await h.submit('u', 'u:call:1', 'b', ok(1))).toMatchObject({
      ok: false,
      error: { code: 'forbidden' },
    });
    expect(await h.submit('u', 'u:call:1', 'a', ok(1))).toMatchObject({
      ok: true,
      value: { verdict: 'accepted' },
    });
    const closed = await h.engine.bindCall('u', 'u:call:1', 'a').catch((e: unknown) => e);
    expect(isEngineError(closed, 'call_closed')).toBe(true);
    const other = await h.engine.bindCall('zzz', 'u:call:1', 'a').catch((e: unknown) => e);
    expect(isEngineError(other, 'unknown_call')).toBe(true);
    await h.engine.stop();
  });

  it('closed: a result for a call the server closed (timed out, task cancelled) is refused; the client’s answer to a command_cancel it was sent is a duplicate', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 'a', kind: 'demo', prompt: '', clientId: 'pc' });
    await h.engine.createTask({ id: 'b', kind: 'demo', prompt: '', clientId: 'pc' });
    await h.waiting('a');
    await h.waiting('b');
    await h.clock.advance(5_000); // both calls time out
    await h.until(
      'timed out',
      async () => (await h.store.getCommandCall('b:call:1'))?.status === 'timed_out',
    );
    const reqA = h.executor.calls.find((c) => c.callId === 'a:call:1') as ToolCallRequest;
    expect(reqA.signal.aborted).toBe(true);
    reqA.cancelledOn?.('pc'); // the host told pc to drop a:call:1
    expect(await h.submit('a', 'a:call:1', 'pc', ok('late'))).toEqual({
      ok: true,
      value: { verdict: 'duplicate' },
    });
    expect(await h.submit('b', 'b:call:1', 'pc', ok('late'))).toMatchObject({
      ok: false,
      error: { code: 'call_closed' },
    });
    await h.until(
      'b waits again',
      async () => (await h.store.getCommandCall('b:call:2'))?.status === 'pending',
    );
    await h.engine.cancelTask('b', 'stop');
    expect(await h.submit('b', 'b:call:2', 'pc', ok('late'))).toMatchObject({
      ok: false,
      error: { code: 'call_closed' },
    });
    expect((await results(h.store, 'b')).map((e) => e.type === 'tool_result' && e.outcome)).toEqual([
      { ok: false, error: { code: 'timeout', message: 'command "dig" timed out after 5000 ms' } },
    ]);
    await h.engine.stop();
  });

  it('unknown: a call the task never issued, or a call of another task, changes nothing', async () => {
    const h = setup();
    await h.engine.start();
    await h.engine.createTask({ id: 't', kind: 'demo', prompt: '', clientId: 'pc' });
    await h.waiting('t');
    expect(await h.submit('t', 'forged', 'pc', ok(1))).toMatchObject({
      ok: false,
      error: { code: 'unknown_call' },
    });
    expect(await h.submit('other', 't:call:1', 'pc', ok(1))).toMatchObject({
      ok: false,
      error: { code: 'unknown_call' },
    });
    expect((await h.store.getCommandCall('t:call:1'))?.status).toBe('pending');
    await h.engine.stop();
  });

  it('after a restart, judges from the stored row: the owner’s repeat of an answered call is a duplicate, another client is forbidden, a call the server closed is closed', async () => {
    const store = new InMemoryTaskStore();
    const clock = new ManualClock(1_000);
    const before = setup(store, clock);
    await before.engine.start();
    await before.engine.createTask({ id: 'x', kind: 'demo', prompt: '', clientId: 'pc' });
    await before.engine.createTask({ id: 'u', kind: 'demo', prompt: '' });
    await before.engine.createTask({ id: 'd', kind: 'demo', prompt: '', clientId: 'pc' });
    await before.waiting('x');
    await before.waiting('u');
    await before.waiting('d');
    expect(await before.submit('x', 'x:call:1', 'pc', ok(1))).toMatchObject({ ok: true });
    await before.engine.bindCall('u', 'u:call:1', 'a');
    expect(await before.submit('u', 'u:call:1', 'a', ok(1))).toMatchObject({ ok: true });
    // A failure the host decided itself (the client went away), not a client's result.
    expect(
      await before.submit('d', 'd:call:1', null, {
        ok: false,
        error: { code: 'client_disconnected', message: 'gone' },
      }),
    ).toMatchObject({ ok: true });
    await before.engine.stop();

    const after = setup(store, clock);
    await after.engine.start();
    expect(await after.submit('x', 'x:call:1', 'pc', ok(1))).toEqual({
      ok: true,
      value: { verdict: 'duplicate' },
    });
    expect(await after.submit('x', 'x:call:1', 'thief', ok(1))).toMatchObject({
      ok: false,
      error: { code: 'forbidden' },
    });
    expect(await after.submit('u', 'u:call:1', 'a', ok(1))).toEqual({
      ok: true,
      value: { verdict: 'duplicate' },
    });
    expect(await after.submit('u', 'u:call:1', 'b', ok(1))).toMatchObject({
      ok: false,
      error: { code: 'forbidden' },
    });
    expect(await after.submit('d', 'd:call:1', 'pc', ok(1))).toMatchObject({
      ok: false,
      error: { code: 'call_closed' },
    });
    expect(await after.submit('x', 'nope', 'pc', ok(1))).toMatchObject({
      ok: false,
      error: { code: 'unknown_call' },
    });
    for (const id of ['x', 'u', 'd']) expect(await results(store, id)).toHaveLength(1);
    await after.engine.stop();
  });
});
