/**
 * The engine's hot path: the task cache (no history re-read per step), the next step decided in the same store
 * transaction as the command result, and what happens when that result's commit fails or the store fails mid-step.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { Engine, type EngineOptions } from './engine.js';
import { EngineError, isEngineError } from './engine-error.js';
import type { EngineEventName } from './events.js';
import { InMemoryTaskStore } from './in-memory-task-store.js';
import type { CommitResult, StepContext, TaskCommit, TaskStrategy } from './ports.js';
import type { CommandCallRecord, Decision, HistoryEntry, StepRecord, StoredStep, Task } from './types.js';

/** Counts the reads the engine makes. */
class CountingStore extends InMemoryTaskStore {
  reads = { getTask: 0, getHistory: 0, listTasks: 0, getCommandCall: 0 };
  override getCommandCall(callId: string): Promise<CommandCallRecord | undefined> {
    this.reads.getCommandCall++;
    return super.getCommandCall(callId);
  }
  override listTasks(filter?: Parameters<InMemoryTaskStore['listTasks']>[0]): Promise<Task[]> {
    this.reads.listTasks++;
    return super.listTasks(filter);
  }
  override getTask(id: string): Promise<Task | undefined> {
    this.reads.getTask++;
    return super.getTask(id);
  }
  override getHistory(id: string): Promise<HistoryEntry[]> {
    this.reads.getHistory++;
    return super.getHistory(id);
  }
}

/**
 * Group commit by hand: commits wait in a queue until `flush()` applies them in order (like the SQLite store's one
 * transaction per event-loop turn); `failNext` makes the next queued commit fail as a full disk would.
 */
class BatchingStore extends InMemoryTaskStore {
  queue: Array<{ change: TaskCommit; resolve: (r: CommitResult) => void; reject: (e: unknown) => void }> = [];
  batches: string[][] = [];
  auto = true;
  override commit(change: TaskCommit): Promise<CommitResult> {
    return new Promise((resolve, reject) => {
      this.queue.push({ change, resolve, reject });
      if (this.auto && this.queue.length === 1) setImmediate(() => this.flush());
    });
  }
  /** Apply the queued commits in order; those at `failAt` (positions in this batch) fail as on a full disk. */
  flush(failAt: number[] = []): void {
    const batch = this.queue.splice(0);
    this.batches.push(batch.map((b) => label(b.change)));
    for (const [i, b] of batch.entries()) {
      if (failAt.includes(i)) b.reject(new EngineError('store_failure', 'disk is full'));
      else super.commit(b.change).then(b.resolve, b.reject);
    }
  }
}

function label(c: TaskCommit): string {
  return `${c.task.status}${c.commandCall ? `:${c.commandCall.callId}:${c.commandCall.status}` : ''}`;
}

const toolCall = (command: string, args: unknown = {}): Decision =>
  ({ type: 'tool_call', command, args }) as Decision;

function setup(store: InMemoryTaskStore, strategy: TaskStrategy, opts: Partial<EngineOptions> = {}) {
  const clock = new ManualClock(1_000);
  const engine = new Engine({ store, strategies: { demo: strategy }, clock, tickIntervalMs: 1_000, ...opts });
  const log: string[] = [];
  for (const name of [
    'taskUpdated',
    'commandDispatched',
    'commandResolved',
    'taskCompleted',
  ] as EngineEventName[]) {
    engine.on(name, (p) => {
      const task = (p as { task: Task }).task;
      log.push(`${name}:${task.status}`);
    });
  }
  const turns = async (n = 10) => {
    for (let i = 0; i < n; i++) await new Promise((r) => setImmediate(r));
  };
  const until = async (what: string, pred: () => boolean | Promise<boolean>) => {
    for (let i = 0; i < 500; i++) {
      if (await pred()) return;
      await clock.advance(0);
      await new Promise((r) => setImmediate(r));
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  return { clock, engine, log, turns, until };
}

/** Calls `noop` n times (one per step), then completes; records the history it was given at each step. */
function looper(n: number, onDecide?: (ctx: StepContext, i: number) => Promise<void>) {
  const seen: HistoryEntry[][] = [];
  const strategy: TaskStrategy = {
    async decide(_task, history, ctx) {
      seen.push([...history]); // a copy: the engine lends its array only until decide settles
      const done = history.filter((h) => h.type === 'tool_result').length;
      if (onDecide) await onDecide(ctx, done);
      return done >= n ? { type: 'complete', result: done } : toolCall('noop', { i: done });
    },
  };
  return { strategy, seen };
}

describe('task cache', () => {
  it('reads the history from the store once per task, not once per step, and every step sees exactly the stored history (guards against O(n²) reads over a night-long task)', async () => {
    const store = new CountingStore();
    let readsDuringRun = 0;
    const { strategy, seen } = looper(60, () => {
      readsDuringRun = store.reads.getHistory;
      return Promise.resolve();
    });
    const h = setup(store, strategy, {
      executor: { execute: (c) => Promise.resolve({ ok: true, result: { echo: c.args } }) },
    });
    await h.engine.start();
    await h.engine.createTask({ id: 'long', kind: 'demo', prompt: '' });
    await h.until('completed', async () => (await store.getTask('long'))?.status === 'completed');
    expect(readsDuringRun).toBe(1); // loaded once when the first step needed it
    const stored = await store.getHistory('long');
    expect(seen).toHaveLength(61);
    // What step k saw is exactly the stored history up to that step (same entries, same seq numbers).
    for (const [k, h] of seen.entries()) expect(h, `step ${k + 1}`).toEqual(stored.slice(0, 2 * k));
    expect(seen[60]).toEqual(stored.slice(0, -1)); // all but the final `complete`
    // A command result finds its open call in the cache: no read of the call row per round trip.
    expect(store.reads.getCommandCall).toBe(0);
    const calls = await store.listCommandCalls({ taskId: 'long' });
    expect(calls).toHaveLength(60);
    expect(calls.every((c) => c.status === 'succeeded' && c.dispatchCount === 1)).toBe(true);
    // The scheduler tick works from memory too: it does not list (and decode) every unfinished task each second.
    const lists = store.reads.listTasks;
    for (let i = 0; i < 5; i++) await h.clock.advance(1_000);
    expect(store.reads.listTasks).toBe(lists);
    await h.engine.stop();
  });

  it('lends a step the cached history without copying it: the same array from step to step (guards against an O(history) copy per step, O(n²) over a night-long task)', async () => {
    const store = new BatchingStore();
    const arrays = new Set<readonly HistoryEntry[]>();
    let steps = 0;
    const strategy: TaskStrategy = {
      decide(_task, history) {
        arrays.add(history);
        steps++;
        const done = history.filter((e) => e.type === 'tool_result').length;
        return Promise.resolve(
          done >= 200 ? { type: 'complete', result: done } : toolCall('noop', { i: done }),
        );
      },
    };
    const h = setup(store, strategy, {
      executor: { execute: (c) => Promise.resolve({ ok: true, result: c.callId }) },
    });
    await h.engine.start();
    await h.engine.createTask({ id: 'lend', kind: 'demo', prompt: '' });
    await h.until('completed', async () => (await store.getTask('lend'))?.status === 'completed');
    expect(steps).toBe(201);
    // Two arrays for the whole task when nothing changes the history while a step decides (a copy per step: 201):
    // the one the first step got from the store read, and the cached one every later step is lent.
    expect(arrays.size).toBe(2);
    expect([...arrays][1]).toEqual((await store.getHistory('lend')).slice(0, -1));
    await h.engine.stop();
  });

  it('a step deciding while the cached history changes keeps the history it started from; the next step sees the change (guards against a lent array changed under a strategy)', async () => {
    const store = new BatchingStore();
    let gate: (() => void) | undefined;
    const views: Array<{ history: readonly HistoryEntry[]; atStart: HistoryEntry[] }> = [];
    const strategy: TaskStrategy = {
      async decide(_task, history) {
        views.push({ history, atStart: [...history] });
        const done = history.filter((e) => e.type === 'tool_result').length;
        if (done === 2) await new Promise<void>((r) => (gate = r));
        return done >= 3 ? { type: 'complete', result: done } : toolCall('noop', { i: done });
      },
    };
    const h = setup(store, strategy);
    await h.engine.start();
    await h.engine.createTask({ id: 'cow', kind: 'demo', prompt: '' });
    await h.until('call 1', () => h.log.includes('commandDispatched:waiting_for_command'));
    await h.engine.submitResult({
      taskId: 'cow',
      callId: 'cow:call:1',
      sender: null,
      outcome: { ok: true, result: 1 },
    });
    await h.until('call 2', () => h.log.filter((l) => l.startsWith('commandDispatched')).length === 2);
    store.auto = false;
    const resolved = h.engine.submitResult({
      taskId: 'cow',
      callId: 'cow:call:2',
      sender: null,
      outcome: { ok: true, result: 2 },
    });
    await h.until('step 3 deciding', () => gate !== undefined);
    // The step decides from the result predicted in the cache; its commit lands now and replaces the predicted
    // entries with the stored ones while the strategy still holds the array.
    store.flush();
    await resolved;
    await h.turns();
    const third = views[2] as (typeof views)[number];
    expect(third.history).toHaveLength(third.atStart.length);
    third.atStart.forEach((e, i) => expect(third.history[i], `entry ${i}`).toBe(e));
    store.auto = true;
    (gate as () => void)();
    await h.until('call 3', async () => (await store.getCommandCall('cow:call:3'))?.status === 'pending');
    await h.engine.submitResult({
      taskId: 'cow',
      callId: 'cow:call:3',
      sender: null,
      outcome: { ok: true, result: 3 },
    });
    await h.until('completed', async () => (await store.getTask('cow'))?.status === 'completed');
    const last = views.at(-1) as (typeof views)[number];
    expect(last.atStart).toEqual((await store.getHistory('cow')).slice(0, -1));
    expect(last.history).not.toBe(third.history); // the change made a copy; the lent array was left alone
    await h.engine.stop();
  });

  it('with a cache smaller than the tasks in flight, evicted tasks reload and all still see their own stored history (guards against one task reading another task’s or a stale history)', async () => {
    const store = new CountingStore();
    const { strategy, seen } = looper(8);
    const h = setup(store, strategy, {
      taskCacheSize: 2,
      executor: { execute: (c) => Promise.resolve({ ok: true, result: c.callId }) },
    });
    await h.engine.start();
    for (let i = 0; i < 6; i++) await h.engine.createTask({ id: `t${i}`, kind: 'demo', prompt: '' });
    await h.until('all completed', async () =>
      (await store.listTasks()).every((t) => t.status === 'completed'),
    );
    for (const t of await store.listTasks()) {
      expect(t.result).toBe(8);
      const hist = await store.getHistory(t.id);
      expect(
        hist.filter((e) => e.type === 'tool_result').map((e) => e.type === 'tool_result' && e.callId),
      ).toEqual(Array.from({ length: 8 }, (_, k) => `${t.id}:call:${k + 1}`));
    }
    for (const h0 of seen) {
      const ids = new Set(h0.map((e) => e.taskId));
      expect(ids.size).toBeLessThanOrEqual(1);
    }
    await h.engine.stop();
  });
});

describe('one transaction per command round trip', () => {
  it('decides the next step before the result is durable, commits both together, and announces nothing before (guards against two fsyncs per step and against sending unsaved state)', async () => {
    const store = new BatchingStore();
    const { strategy } = looper(5);
    const h = setup(store, strategy);
    await h.engine.start();
    await h.engine.createTask({ id: 'p', kind: 'demo', prompt: '' });
    await h.until('call 1 out', () => h.log.includes('commandDispatched:waiting_for_command'));
    await h.engine.submitResult({
      taskId: 'p',
      callId: 'p:call:1',
      sender: null,
      outcome: { ok: true, result: 1 },
    });
    await h.until('call 2 out', () => h.log.filter((l) => l.startsWith('commandDispatched')).length === 2);
    store.auto = false;
    h.log.length = 0;
    const acked: string[] = [];
    const resolved = h.engine.submitResult(
      { taskId: 'p', callId: 'p:call:2', sender: null, outcome: { ok: true, result: 2 } },
      { onDurable: (t) => acked.push(`${t.status} before ${h.log.length} events`) },
    );
    await h.turns();
    // Both commits are queued (the result and the decision that follows from it); nothing has been announced.
    expect(store.queue.map((q) => label(q.change))).toEqual([
      'running:p:call:2:succeeded',
      'waiting_for_command:p:call:3:pending',
    ]);
    expect(h.log).toEqual([]);
    expect(acked).toEqual([]);
    store.flush();
    await resolved;
    await h.turns();
    expect(acked).toEqual(['running before 2 events']);
    expect(h.log).toEqual([
      'commandResolved:running',
      'taskUpdated:running',
      'taskUpdated:waiting_for_command',
      'commandDispatched:waiting_for_command',
    ]);
    expect(store.batches.at(-1)).toEqual([
      'running:p:call:2:succeeded',
      'waiting_for_command:p:call:3:pending',
    ]);
    await h.engine.stop();
  });

  it('when the result fails to commit, the step decided from it is void: no call is sent, no model is called, the task stays waiting and the repeated result goes through (guards against acting on a result that is not on disk)', async () => {
    const store = new BatchingStore();
    let modelCalls = 0;
    const { strategy } = looper(3, async (ctx, done) => {
      if (done === 2) await ctx.callModel('m', () => Promise.resolve(modelCalls++));
    });
    const h = setup(store, strategy);
    await h.engine.start();
    await h.engine.createTask({ id: 'f', kind: 'demo', prompt: '' });
    await h.until('call 1', () => h.log.includes('commandDispatched:waiting_for_command'));
    await h.engine.submitResult({
      taskId: 'f',
      callId: 'f:call:1',
      sender: null,
      outcome: { ok: true, result: 1 },
    });
    await h.until('call 2', () => h.log.filter((l) => l.startsWith('commandDispatched')).length === 2);
    store.auto = false;
    const before = h.log.length;
    const failed = h.engine
      .submitResult({ taskId: 'f', callId: 'f:call:2', sender: null, outcome: { ok: true, result: 2 } })
      .catch((e: unknown) => e);
    await h.turns();
    // This step needs the model: it waits for the result to be durable before calling it.
    expect(store.queue.map((q) => label(q.change))).toEqual(['running:f:call:2:succeeded']);
    store.flush([0]); // the result's write fails
    const err = await failed;
    expect(isEngineError(err, 'store_failure')).toBe(true);
    store.auto = true;
    await h.turns(20);
    expect(modelCalls).toBe(0);
    expect(h.log.slice(before)).toEqual([]);
    expect((await store.getTask('f'))?.status).toBe('waiting_for_command');
    expect((await store.getCommandCall('f:call:2'))?.status).toBe('pending');
    expect(await store.getCommandCall('f:call:3')).toBeUndefined();
    // The client sends its result again: accepted now, and the task goes on.
    await h.engine.submitResult({
      taskId: 'f',
      callId: 'f:call:2',
      sender: null,
      outcome: { ok: true, result: 2 },
    });
    await h.until('call 3', async () => (await store.getCommandCall('f:call:3'))?.status === 'pending');
    expect(modelCalls).toBe(1);
    await h.engine.submitResult({
      taskId: 'f',
      callId: 'f:call:3',
      sender: null,
      outcome: { ok: true, result: 3 },
    });
    await h.until('completed', async () => (await store.getTask('f'))?.status === 'completed');
    const results = (await store.getHistory('f')).filter((e) => e.type === 'tool_result');
    expect(results).toHaveLength(3);
    await h.engine.stop();
  });
  it('when the result fails to commit, the decision already queued after it in the same transaction is refused too: nothing sent (guards against a command_call that follows a lost result)', async () => {
    const store = new BatchingStore();
    const { strategy } = looper(3);
    const h = setup(store, strategy);
    await h.engine.start();
    await h.engine.createTask({ id: 'v', kind: 'demo', prompt: '' });
    await h.until('call 1', () => h.log.includes('commandDispatched:waiting_for_command'));
    await h.engine.submitResult({
      taskId: 'v',
      callId: 'v:call:1',
      sender: null,
      outcome: { ok: true, result: 1 },
    });
    await h.until('call 2', () => h.log.filter((l) => l.startsWith('commandDispatched')).length === 2);
    store.auto = false;
    const before = h.log.length;
    const failed = h.engine
      .submitResult({ taskId: 'v', callId: 'v:call:2', sender: null, outcome: { ok: true, result: 2 } })
      .catch((e: unknown) => e);
    await h.turns();
    expect(store.queue.map((q) => label(q.change))).toEqual([
      'running:v:call:2:succeeded',
      'waiting_for_command:v:call:3:pending',
    ]);
    store.flush([0]);
    expect(isEngineError(await failed, 'store_failure')).toBe(true);
    store.auto = true;
    await h.turns(20);
    expect(h.log.slice(before)).toEqual([]);
    expect((await store.getTask('v'))?.status).toBe('waiting_for_command');
    expect((await store.getTask('v'))?.counters.toolCalls).toBe(2);
    expect(await store.getCommandCall('v:call:3')).toBeUndefined();
    await h.engine.submitResult({
      taskId: 'v',
      callId: 'v:call:2',
      sender: null,
      outcome: { ok: true, result: 2 },
    });
    await h.until('call 3', async () => (await store.getCommandCall('v:call:3'))?.status === 'pending');
    expect(h.log.slice(before).filter((l) => l.startsWith('commandDispatched'))).toHaveLength(1);
    await h.engine.stop();
  });
});

describe('store failures mid-step', () => {
  it('a store failure while a step logs leaves the task running, and the tick steps it again (guards against a task killed by a full disk for a moment)', async () => {
    let failOnce = true;
    const store = new (class extends InMemoryTaskStore {
      override appendStep(taskId: string, r: StepRecord & { step: number; at: number }): Promise<StoredStep> {
        if (failOnce) {
          failOnce = false;
          return Promise.reject(new EngineError('store_failure', 'disk is full'));
        }
        return super.appendStep(taskId, r);
      }
    })();
    const strategy: TaskStrategy = {
      async decide(_t, _h, ctx) {
        await ctx.logStep({ kind: 'planner', output: 'thinking' });
        return { type: 'complete', result: 'done' };
      },
    };
    const h = setup(store, strategy);
    await h.engine.start();
    await h.engine.createTask({ id: 's', kind: 'demo', prompt: '' });
    await h.turns(20);
    expect((await store.getTask('s'))?.status).toBe('running');
    await h.clock.advance(1_000);
    await h.until('completed', async () => (await store.getTask('s'))?.status === 'completed');
    expect((await store.getSteps('s')).map((s) => s.kind)).toEqual(['planner', 'decision']);
    await h.engine.stop();
  });
});

describe('recordRedelivery', () => {
  it('counts every re-send of a pending call durably and ignores closed calls (guards against dispatch_count hiding reconnect re-sends)', async () => {
    const store = new InMemoryTaskStore();
    const { strategy } = looper(1);
    const h = setup(store, strategy);
    await h.engine.start();
    await h.engine.createTask({ id: 'r', kind: 'demo', prompt: '' });
    await h.until('call', () => h.log.includes('commandDispatched:waiting_for_command'));
    expect((await h.engine.recordRedelivery('r', 'r:call:1'))?.dispatchCount).toBe(2);
    expect((await h.engine.recordRedelivery('r', 'r:call:1'))?.dispatchCount).toBe(3);
    expect((await store.getCommandCall('r:call:1'))?.dispatchCount).toBe(3);
    expect((await store.getTask('r'))?.status).toBe('waiting_for_command');
    await h.engine.submitResult({
      taskId: 'r',
      callId: 'r:call:1',
      sender: null,
      outcome: { ok: true, result: 1 },
    });
    expect(await h.engine.recordRedelivery('r', 'r:call:1')).toBeUndefined();
    expect(await h.engine.recordRedelivery('r', 'nope')).toBeUndefined();
    expect((await store.getCommandCall('r:call:1'))?.dispatchCount).toBe(3);
    await h.engine.stop();
  });
});
