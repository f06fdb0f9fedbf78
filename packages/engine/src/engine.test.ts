/**
 * Tests of the Engine through its public surface (lifecycle, scheduling, budgets, calls, recovery) with the
 * in-memory store. Size (over 500 lines): one behaviour per test, sharing one harness; the hot path has its own
 * file (engine-hot-path.test.ts).
 */
import { createHash } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { Engine, type EngineOptions } from './engine.js';
import { isEngineError } from './engine-error.js';
import type { EngineEventName, EngineEvents } from './events.js';
import { InMemoryTaskStore } from './in-memory-task-store.js';
import type { CommitResult, TaskCommit, TaskStrategy, ToolCallRequest, ToolExecutor } from './ports.js';
import type { CommandOutcome, Decision, HistoryEntry, Task } from './types.js';

// ---------------------------------------------------------------- harness

/** A store that records, in one log, when each commit became durable; events are appended to the same log. */
class RecordingStore extends InMemoryTaskStore {
  readonly log: string[] = [];
  override async commit(change: TaskCommit): Promise<CommitResult> {
    const r = await super.commit(change);
    this.log.push(`commit:${change.task.id}:${change.task.status}`);
    return r;
  }
}

/** Scripted strategy: decisions in order per task; a function entry can use the context. */
type Script = Array<
  | Decision
  | ((
      task: Task,
      history: readonly HistoryEntry[],
      ctx: Parameters<TaskStrategy['decide']>[2],
    ) => Promise<Decision>)
>;

function scripted(script: Script): TaskStrategy & { seen: HistoryEntry[][] } {
  const byTask = new Map<string, number>();
  const seen: HistoryEntry[][] = [];
  return {
    seen,
    async decide(task, history, ctx) {
      seen.push([...history]); // a copy: the engine lends its array only until decide settles
      const i = byTask.get(task.id) ?? 0;
      byTask.set(task.id, i + 1);
      const entry = script[Math.min(i, script.length - 1)];
      if (entry === undefined) throw new Error('empty script');
      return typeof entry === 'function' ? entry(task, history, ctx) : entry;
    },
  };
}

/** An executor whose calls the test resolves by hand. */
class ManualExecutor implements ToolExecutor {
  readonly calls: ToolCallRequest[] = [];
  private waiters = new Map<string, (o: CommandOutcome) => void>();
  commands: Array<{ name: string; timeoutMs?: number }> | undefined;
  execute(call: ToolCallRequest): Promise<CommandOutcome> {
    this.calls.push(call);
    return new Promise((resolve) => this.waiters.set(`${call.callId}#${call.attempt}`, resolve));
  }
  listCommands = () => this.commands ?? [];
  reply(callId: string, outcome: CommandOutcome, attempt = 1): void {
    const w = this.waiters.get(`${callId}#${attempt}`);
    if (!w) throw new Error(`no pending call ${callId}#${attempt}`);
    w(outcome);
  }
}

function setup(strategy: TaskStrategy | Record<string, TaskStrategy>, opts: Partial<EngineOptions> = {}) {
  const clock = new ManualClock(1_000);
  const store = (opts.store as RecordingStore | undefined) ?? new RecordingStore();
  const strategies = 'decide' in strategy ? { demo: strategy as TaskStrategy } : strategy;
  const engine = new Engine({ store, strategies, clock, tickIntervalMs: 1_000, ...opts });
  const events: Array<{ name: EngineEventName; payload: unknown }> = [];
  const names: EngineEventName[] = [
    'taskCreated',
    'taskUpdated',
    'stepLogged',
    'commandDispatched',
    'commandResolved',
    'questionAsked',
    'questionAnswered',
    'taskCompleted',
    'taskFailed',
    'taskCancelled',
  ];
  for (const name of names) {
    engine.on(name, (payload) => {
      events.push({ name, payload });
      const p = payload as Partial<EngineEvents['taskUpdated']>;
      store.log.push(`event:${name}${p.task ? `:${p.task.id}:${p.task.status}` : ''}`);
    });
  }
  const settle = async (rounds = 5) => {
    for (let i = 0; i < rounds; i++) await clock.advance(0);
  };
  const until = async (what: string, pred: () => boolean | Promise<boolean>) => {
    for (let i = 0; i < 200; i++) {
      if (await pred()) return;
      await clock.advance(0);
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const statusOf = async (id: string) => (await store.getTask(id))?.status;
  return { clock, store, engine, events, settle, until, statusOf };
}

const complete = (result: unknown = 'ok'): Decision => ({ type: 'complete', result: result as never });
const toolCall = (command: string, args: unknown = {}, extra: Partial<Decision> = {}): Decision =>
  ({ type: 'tool_call', command, args, ...extra }) as Decision;

// ---------------------------------------------------------------- lifecycle and events

describe('Engine lifecycle', () => {
  it('runs queued → running → completed and emits each event only after its state is committed (guards against announcing unsaved state)', async () => {
    const h = setup(scripted([complete({ answer: 42 })]));
    await h.engine.start();
    const t = await h.engine.createTask({ id: 't1', kind: 'demo', prompt: 'p', metadata: { a: 1 } });
    expect(t.status).toBe('queued');
    await h.until('completed', async () => (await h.statusOf('t1')) === 'completed');
    const done = await h.store.getTask('t1');
    expect(done?.result).toEqual({ answer: 42 });
    expect(done?.counters).toEqual({ steps: 1, toolCalls: 0, questions: 0 });
    expect(h.events.map((e) => e.name)).toEqual([
      'taskCreated',
      'taskUpdated',
      'stepLogged',
      'taskUpdated',
      'taskCompleted',
    ]);
    // write-ahead: every status event follows the commit of that status
    for (const [i, line] of h.store.log.entries()) {
      const m = /^event:(taskCreated|taskUpdated|taskCompleted):(\w+):(\w+)$/.exec(line);
      if (!m) continue;
      expect(h.store.log.slice(0, i)).toContain(`commit:${m[2]}:${m[3]}`);
    }
    expect((await h.engine.getHistory('t1')).map((e) => e.type)).toEqual(['complete']);
    await h.engine.stop();
  });

  it('rejects invalid input and duplicate ids with typed errors and stores nothing (guards against half-created tasks)', async () => {
    const h = setup(scripted([complete()]));
    for (const bad of [
      { kind: '', prompt: 'x' },
      { kind: 'demo', prompt: 3 as unknown as string },
      { kind: 'demo', prompt: 'x', budgets: { maxSteps: -1 } },
      { kind: 'demo', prompt: 'x', budgets: { deadlineAt: Number.NaN } },
      { kind: 'demo', prompt: 'x', id: '' },
    ]) {
      const err = await h.engine.createTask(bad).catch((e: unknown) => e);
      expect(isEngineError(err, 'invalid_input'), JSON.stringify(bad)).toBe(true);
    }
    expect(await h.store.listTasks()).toEqual([]);
    await h.engine.createTask({ id: 'same', kind: 'demo', prompt: 'a' });
    const dup = await h.engine.createTask({ id: 'same', kind: 'demo', prompt: 'b' }).catch((e: unknown) => e);
    expect(isEngineError(dup, 'task_exists')).toBe(true);
    expect((await h.store.getTask('same'))?.prompt).toBe('a');
  });

  it('fails a task whose kind has no strategy with no_strategy, and one whose strategy throws with strategy_error', async () => {
    const h = setup({
      boom: {
        decide: () => Promise.reject(new Error('model went away')),
      },
    });
    await h.engine.start();
    await h.engine.createTask({ id: 'none', kind: 'nobody', prompt: '' });
    await h.engine.createTask({ id: 'boom', kind: 'boom', prompt: '' });
    await h.until(
      'both failed',
      async () => (await h.statusOf('none')) === 'failed' && (await h.statusOf('boom')) === 'failed',
    );
    expect((await h.store.getTask('none'))?.error?.code).toBe('no_strategy');
    expect((await h.store.getTask('boom'))?.error).toMatchObject({
      code: 'strategy_error',
      message: 'model went away',
    });
    expect(h.events.filter((e) => e.name === 'taskFailed')).toHaveLength(2);
  });

  it('a listener that throws does not break the engine (guards against one bad subscriber stalling tasks)', async () => {
    const h = setup(scripted([complete()]));
    h.engine.on('taskUpdated', () => {
      throw new Error('bad listener');
    });
    await h.engine.start();
    await h.engine.createTask({ id: 'x', kind: 'demo', prompt: '' });
    await h.until('completed', async () => (await h.statusOf('x')) === 'completed');
  });

  it('logStep records are persisted with the step number and announced (guards against losing what the model saw)', async () => {
    const h = setup(
      scripted([
        async (_t, _h, ctx) => {
          const s = await ctx.logStep({ kind: 'planner', model: 'm', input: { q: 1 }, output: 'raw' });
          expect(s.seq).toBe(1);
          return { type: 'continue' };
        },
        complete(),
      ]),
    );
    await h.engine.start();
    await h.engine.createTask({ id: 'l', kind: 'demo', prompt: '' });
    await h.until('completed', async () => (await h.statusOf('l')) === 'completed');
    const steps = await h.engine.getSteps('l');
    expect(steps.map((s) => [s.kind, s.step])).toEqual([
      ['planner', 1],
      ['decision', 1],
      ['decision', 2],
    ]);
    expect(steps[0]).toMatchObject({ model: 'm', input: { q: 1 }, output: 'raw' });
    expect(h.events.filter((e) => e.name === 'stepLogged')).toHaveLength(3);
    // Paged reads go through to the store (a follower asks only for what is new since its last seq).
    expect(await h.engine.getSteps('l', { afterSeq: 1 })).toEqual(steps.slice(1));
    expect(await h.engine.getSteps('l', { afterSeq: 1, limit: 1 })).toEqual(steps.slice(1, 2));
    const bad = await h.engine.getSteps('l', { afterSeq: -2 }).catch((e: unknown) => e);
    expect(isEngineError(bad, 'invalid_input')).toBe(true);
  });

  it('decision records carry the decision without its memory, with size, SHA-256 and a changed flag (guards against the step log growing as steps × memory)', async () => {
    const big = { notes: Array.from({ length: 200 }, (_, i) => `note ${i} é`) };
    const h = setup(
      scripted([
        { type: 'continue', memory: big, progress: 0.5 },
        { type: 'continue', memory: structuredClone(big) }, // a new object with equal content
        { type: 'continue', note: 'no memory this time' },
        complete(),
      ]),
    );
    await h.engine.start();
    await h.engine.createTask({ id: 'mem', kind: 'demo', prompt: '', memory: { start: true } });
    await h.until('completed', async () => (await h.statusOf('mem')) === 'completed');
    const records = (await h.engine.getSteps('mem')).filter((s) => s.kind === 'decision');
    const text = JSON.stringify(big);
    const fingerprint = {
      memoryBytes: Buffer.byteLength(text, 'utf8'),
      memorySha256: createHash('sha256').update(text).digest('hex'),
    };
    expect(fingerprint.memoryBytes).toBeGreaterThan(text.length); // counted in UTF-8 bytes, not UTF-16 units
    expect(records.map((r) => r.directive)).toEqual([
      { type: 'continue', progress: 0.5, ...fingerprint, memoryChanged: true },
      { type: 'continue', ...fingerprint, memoryChanged: false },
      { type: 'continue', note: 'no memory this time' },
      { type: 'complete', result: 'ok' },
    ]);
    for (const r of records) expect(JSON.stringify(r)).not.toContain('note 1');
    // The memory itself is in the task row.
    expect((await h.store.getTask('mem'))?.memory).toEqual(big);
    await h.engine.stop();
  });

  it('background work that fails is logged and released: stop() resolves, a later trigger steps the task (guards against a failed step loop hanging shutdown or leaving the task marked as stepping)', async () => {
    const errors: string[] = [];
    const logger = {
      debug: () => {},
      info: () => {},
      warn: () => {},
      error: (_o: object, msg: string) => errors.push(msg),
    };
    let failNext = true;
    class FlakyStore extends RecordingStore {
      override async commit(change: TaskCommit): Promise<CommitResult> {
        if (failNext && change.task.status === 'running') {
          failNext = false;
          throw new Error('disk hiccup');
        }
        return super.commit(change);
      }
    }
    const store = new FlakyStore();
    const h = setup(scripted([complete('done')]), { store, logger });
    await h.engine.start();
    await h.engine.createTask({ id: 'bg', kind: 'demo', prompt: '' });
    await h.until('failure logged', () => errors.includes('engine: background work failed'));
    expect(await h.statusOf('bg')).toBe('queued');
    h.engine.trigger('bg');
    await h.until('completed', async () => (await h.statusOf('bg')) === 'completed');
    await h.engine.stop();
  });

  it('after stop, public mutators reject with stopped (guards against writes after shutdown)', async () => {
    const h = setup(scripted([complete()]));
    await h.engine.start();
    await h.engine.stop();
    const err = await h.engine.createTask({ kind: 'demo', prompt: '' }).catch((e: unknown) => e);
    expect(isEngineError(err, 'stopped')).toBe(true);
    expect(isEngineError(await h.engine.cancelTask('x').catch((e: unknown) => e), 'stopped')).toBe(true);
  });
});

// ---------------------------------------------------------------- tool calls

describe('tool execution port', () => {
  it('commits the call row before dispatch, passes call_id/client/args/timeout/attempt, and feeds the result back (guards against sending an unsaved call)', async () => {
    const store = new RecordingStore();
    let pendingAtDispatch: unknown;
    const executor: ToolExecutor = {
      async execute(call) {
        pendingAtDispatch = await store.getCommandCall(call.callId);
        return { ok: true, result: { moved: (call.args as { n: number }).n } };
      },
    };
    const strat = scripted([toolCall('move', { n: 3 }), complete()]);
    const h = setup(strat, { store, executor });
    await h.engine.start();
    await h.engine.createTask({ id: 'm', kind: 'demo', prompt: '', clientId: 'pc-9' });
    await h.until('completed', async () => (await h.statusOf('m')) === 'completed');
    expect(pendingAtDispatch).toMatchObject({ callId: 'm:call:1', status: 'pending', timeoutMs: 60_000 });
    const call = await store.getCommandCall('m:call:1');
    expect(call).toMatchObject({
      status: 'succeeded',
      outcome: { ok: true, result: { moved: 3 } },
      dispatchCount: 1,
    });
    expect(strat.seen[1]?.map((e) => e.type)).toEqual(['tool_call', 'tool_result']);
    const task = await store.getTask('m');
    expect(task?.counters).toEqual({ steps: 2, toolCalls: 1, questions: 0 });
    const names = h.events.map((e) => e.name);
    expect(names.indexOf('commandDispatched')).toBeLessThan(names.indexOf('commandResolved'));
    const dispatched = h.events.find((e) => e.name === 'commandDispatched')
      ?.payload as EngineEvents['commandDispatched'];
    expect(dispatched.task.clientId).toBe('pc-9');
  });

  it('times out a call after 60 s by default, aborting the executor signal, and records timedOut (guards against a task hanging forever on a lost computer)', async () => {
    const executor = new ManualExecutor();
    const h = setup(scripted([toolCall('dig'), complete()]), { executor });
    await h.engine.start();
    await h.engine.createTask({ id: 'to', kind: 'demo', prompt: '' });
    await h.until('dispatched', () => executor.calls.length === 1);
    const req = executor.calls[0] as ToolCallRequest;
    expect(req).toMatchObject({
      taskId: 'to',
      callId: 'to:call:1',
      command: 'dig',
      timeoutMs: 60_000,
      attempt: 1,
    });
    await h.clock.advance(59_999);
    expect(await h.statusOf('to')).toBe('waiting_for_command');
    expect(req.signal.aborted).toBe(false);
    await h.clock.advance(1);
    await h.until('completed', async () => (await h.statusOf('to')) === 'completed');
    expect(req.signal.aborted).toBe(true);
    expect(await h.store.getCommandCall('to:call:1')).toMatchObject({
      status: 'timed_out',
      outcome: { ok: false, error: { code: 'timeout' } },
    });
    const result = (await h.engine.getHistory('to')).find((e) => e.type === 'tool_result');
    expect(result).toMatchObject({ timedOut: true });
    // a late reply from the executor changes nothing
    executor.reply('to:call:1', { ok: true, result: 'late' });
    await h.settle();
    expect((await h.store.getCommandCall('to:call:1'))?.status).toBe('timed_out');
  });

  it('takes the timeout from the decision, else the command descriptor, else defaultCallTimeoutMs (guards against per-command limits being ignored)', async () => {
    const executor = new ManualExecutor();
    executor.commands = [{ name: 'slow', timeoutMs: 120_000 }, { name: 'plain' }];
    const h = setup(
      {
        a: scripted([toolCall('slow')]),
        b: scripted([toolCall('slow', {}, { timeoutMs: 5_000 } as Partial<Decision>)]),
        c: scripted([toolCall('plain')]),
      },
      { executor, defaultCallTimeoutMs: 30_000 },
    );
    await h.engine.start();
    for (const kind of ['a', 'b', 'c']) await h.engine.createTask({ id: kind, kind, prompt: '' });
    await h.until('3 calls', () => executor.calls.length === 3);
    const byTask = Object.fromEntries(executor.calls.map((c) => [c.taskId, c.timeoutMs]));
    expect(byTask).toEqual({ a: 120_000, b: 5_000, c: 30_000 });
  });

  it('turns an executor exception into a failed outcome the strategy sees (guards against a crashing executor killing the task loop)', async () => {
    const strat = scripted([toolCall('x'), complete()]);
    const h = setup(strat, { executor: { execute: () => Promise.reject(new Error('socket closed')) } });
    await h.engine.start();
    await h.engine.createTask({ id: 'e', kind: 'demo', prompt: '' });
    await h.until('completed', async () => (await h.statusOf('e')) === 'completed');
    expect(await h.store.getCommandCall('e:call:1')).toMatchObject({
      status: 'failed',
      outcome: { ok: false, error: { code: 'executor_error', message: 'socket closed' } },
    });
  });

  it('without an executor, submitResult reports results from the host; unknown and repeated reports are refused and change nothing', async () => {
    const h = setup(scripted([toolCall('scan'), complete()]));
    await h.engine.start();
    await h.engine.createTask({ id: 'r', kind: 'demo', prompt: '' });
    await h.until('waiting', async () => (await h.statusOf('r')) === 'waiting_for_command');
    const report = (taskId: string, callId: string, outcome: CommandOutcome) =>
      h.engine.submitResult({ taskId, callId, sender: null, outcome });
    const unknown = await report('r', 'r:call:9', { ok: true, result: 1 });
    expect(unknown).toMatchObject({ ok: false, error: { code: 'unknown_call' } });
    const other = await report('zzz', 'r:call:1', { ok: true, result: 1 });
    expect(other).toMatchObject({ ok: false, error: { code: 'unknown_call' } });
    expect(
      await report('r', 'r:call:1', { ok: false, error: { message: 'no fuel', code: 'E' } }),
    ).toMatchObject({
      ok: true,
      value: { verdict: 'accepted' },
    });
    const again = await report('r', 'r:call:1', { ok: true, result: 2 });
    expect(again).toMatchObject({ ok: false, error: { code: 'call_closed' } });
    await h.until('completed', async () => (await h.statusOf('r')) === 'completed');
    expect((await h.store.getCommandCall('r:call:1'))?.outcome).toEqual({
      ok: false,
      error: { message: 'no fuel', code: 'E' },
    });
    expect((await h.engine.getHistory('r')).filter((e) => e.type === 'tool_result')).toHaveLength(1);
  });

  it('refuses a command outside the allow-list with a note the model can see, without calling it (guards against privilege escalation)', async () => {
    const executor = new ManualExecutor();
    const strat = scripted([toolCall('fs_delete'), complete()]);
    const h = setup(strat, { executor });
    await h.engine.start();
    await h.engine.createTask({ id: 'al', kind: 'demo', prompt: '', allowedCommands: ['fs_read'] });
    await h.until('completed', async () => (await h.statusOf('al')) === 'completed');
    expect(executor.calls).toHaveLength(0);
    const note = (await h.engine.getHistory('al'))[0];
    expect(note).toMatchObject({ type: 'note' });
    expect((note as { text: string }).text).toContain('fs_delete');
  });

  it('availableCommands is the allow-list ∩ what the executor offers for the client', async () => {
    const executor = new ManualExecutor();
    executor.commands = [{ name: 'fs_read' }, { name: 'fs_write' }, { name: 'shell_exec' }];
    let seen: string[] = [];
    const h = setup(
      scripted([
        (_t, _h, ctx) => {
          seen = ctx.availableCommands().map((c) => c.name);
          return Promise.resolve(complete());
        },
      ]),
      { executor },
    );
    await h.engine.start();
    await h.engine.createTask({
      id: 'ac',
      kind: 'demo',
      prompt: '',
      allowedCommands: ['fs_read', 'shell_exec', 'nope'],
    });
    await h.until('completed', async () => (await h.statusOf('ac')) === 'completed');
    expect(seen).toEqual(['fs_read', 'shell_exec']);
  });
});

// ---------------------------------------------------------------- questions

describe('questions to the user', () => {
  it('waits for an answer, then resumes with it in history; wrong ids are typed errors (guards against answering the wrong question)', async () => {
    const strat = scripted([{ type: 'ask_user', question: 'which chest?', why: 'two chests' }, complete()]);
    const h = setup(strat);
    await h.engine.start();
    await h.engine.createTask({ id: 'q', kind: 'demo', prompt: '' });
    await h.until('waiting', async () => (await h.statusOf('q')) === 'waiting_for_user');
    const asked = h.events.find((e) => e.name === 'questionAsked')?.payload as EngineEvents['questionAsked'];
    expect(asked.question).toMatchObject({
      questionId: 'q:q:1',
      question: 'which chest?',
      why: 'two chests',
    });
    await h.clock.advance(3_600_000); // nothing happens while a person thinks
    expect(await h.statusOf('q')).toBe('waiting_for_user');
    expect(
      isEngineError(
        await h.engine.answerQuestion('q', 'q:q:7', 'x').catch((e: unknown) => e),
        'unknown_question',
      ),
    ).toBe(true);
    await h.engine.answerQuestion('q', 'q:q:1', 'the left one');
    const closed = await h.engine.answerQuestion('q', 'q:q:1', 'again').catch((e: unknown) => e);
    expect(isEngineError(closed, 'question_closed')).toBe(true);
    await h.until('completed', async () => (await h.statusOf('q')) === 'completed');
    expect(strat.seen[1]?.at(-1)).toMatchObject({
      type: 'answer',
      questionId: 'q:q:1',
      answer: 'the left one',
    });
    expect((await h.store.getQuestion('q:q:1'))?.answer).toBe('the left one');
  });
});

// ---------------------------------------------------------------- cancellation

describe('cancellation', () => {
  it('aborts the in-flight decide and its model call, commits cancelled, and drops the late decision (guards against a cancelled task acting)', async () => {
    let modelSignal: AbortSignal | undefined;
    const h = setup(
      scripted([
        (_t, _h, ctx) =>
          ctx.callModel('m', (signal) => {
            modelSignal = signal;
            return new Promise<Decision>((resolve) => {
              signal.addEventListener('abort', () => resolve(complete('too late')));
            });
          }),
      ]),
    );
    await h.engine.start();
    await h.engine.createTask({ id: 'c', kind: 'demo', prompt: '' });
    await h.until('model call', () => modelSignal !== undefined);
    await h.engine.cancelTask('c', 'user changed their mind');
    expect(modelSignal?.aborted).toBe(true);
    await h.settle();
    const t = await h.store.getTask('c');
    expect(t?.status).toBe('cancelled');
    expect(t?.result).toBeUndefined();
    expect(await h.engine.getHistory('c')).toMatchObject([
      { type: 'cancel', reason: 'user changed their mind' },
    ]);
    expect(h.events.some((e) => e.name === 'taskCancelled')).toBe(true);
    expect(h.engine.modelStats('m')).toEqual({ active: 0, queued: 0 });
  });

  it('a strategy that reads ctx.signal only after the task was cancelled sees it aborted with the reason (guards against the lazily created step signal missing an abort that came first)', async () => {
    let go!: () => void;
    const gate = new Promise<void>((resolve) => (go = resolve));
    let seen: { aborted: boolean; reason: unknown } | undefined;
    const h = setup(
      scripted([
        async (_t, _h, ctx) => {
          await gate;
          seen = { aborted: ctx.signal.aborted, reason: ctx.signal.reason };
          return complete('too late');
        },
      ]),
    );
    await h.engine.start();
    await h.engine.createTask({ id: 'lazy', kind: 'demo', prompt: '' });
    await h.until('running', async () => (await h.statusOf('lazy')) === 'running');
    await h.engine.cancelTask('lazy');
    go();
    await h.until('strategy resumed', () => seen !== undefined);
    expect(seen?.aborted).toBe(true);
    expect(isEngineError(seen?.reason, 'stopped')).toBe(true);
    await h.settle();
    expect(await h.statusOf('lazy')).toBe('cancelled');
  });

  it('each step gets its own signal, and closing the call between two steps aborts neither (guards against an abort leaking into the next step)', async () => {
    const signals: AbortSignal[] = [];
    const h = setup(
      scripted([
        (_t, _h, ctx) => {
          signals.push(ctx.signal);
          return Promise.resolve(toolCall('x'));
        },
        (_t, _h, ctx) => {
          signals.push(ctx.signal);
          return Promise.resolve(complete());
        },
      ]),
      { executor: new ManualExecutor() },
    );
    await h.engine.start();
    await h.engine.createTask({ id: 's1', kind: 'demo', prompt: '' });
    await h.until('waiting', async () => (await h.statusOf('s1')) === 'waiting_for_command');
    await h.engine.submitResult({
      taskId: 's1',
      callId: 's1:call:1',
      sender: null,
      outcome: { ok: true, result: 1 },
    });
    await h.until('completed', async () => (await h.statusOf('s1')) === 'completed');
    expect(signals).toHaveLength(2);
    expect(signals[0]).not.toBe(signals[1]);
    expect(signals.every((s) => !s.aborted)).toBe(true);
  });

  it('a call whose outcome is recorded through submitResult ends the engine wait without aborting the executor signal; the executor settling later changes nothing (guards against an abort event per round trip, and against a recorded call still waited on)', async () => {
    const executor = new ManualExecutor();
    const h = setup(scripted([toolCall('dig'), complete()]), { executor });
    await h.engine.start();
    await h.engine.createTask({ id: 'rc', kind: 'demo', prompt: '' });
    await h.until('dispatched', () => executor.calls.length === 1);
    const req = executor.calls[0] as ToolCallRequest;
    await h.engine.submitResult({
      taskId: 'rc',
      callId: 'rc:call:1',
      sender: null,
      outcome: { ok: true, result: 'dug' },
    });
    await h.until('completed', async () => (await h.statusOf('rc')) === 'completed');
    expect(req.signal.aborted).toBe(false);
    executor.reply('rc:call:1', { ok: true, result: 'again' });
    await h.settle();
    const results = (await h.engine.getHistory('rc')).filter((e) => e.type === 'tool_result');
    expect(results).toHaveLength(1);
    expect(results[0]).toMatchObject({ outcome: { ok: true, result: 'dug' } });
  });

  it('aborts a pending command call and closes its row; a late result is ignored (guards against a cancelled task resuming)', async () => {
    const executor = new ManualExecutor();
    const h = setup(scripted([toolCall('mine')]), { executor });
    await h.engine.start();
    await h.engine.createTask({ id: 'cc', kind: 'demo', prompt: '' });
    await h.until('dispatched', () => executor.calls.length === 1);
    await h.engine.cancelTask('cc');
    expect(executor.calls[0]?.signal.aborted).toBe(true);
    executor.reply('cc:call:1', { ok: true, result: 'done anyway' });
    await h.settle();
    expect(await h.statusOf('cc')).toBe('cancelled');
    expect((await h.store.getCommandCall('cc:call:1'))?.status).toBe('cancelled');
    // the 60 s timer was disarmed: advancing past it changes nothing
    await h.clock.advance(61_000);
    expect((await h.store.getCommandCall('cc:call:1'))?.status).toBe('cancelled');
  });

  it('aborts a model call still queued behind another task (guards against a cancelled task waiting for the model)', async () => {
    let release!: () => void;
    const gate = new Promise<void>((r) => (release = r));
    let secondRan = false;
    const h = setup({
      hog: scripted([(_t, _h, ctx) => ctx.callModel('m', () => gate.then(() => complete()))]),
      waiter: scripted([
        (_t, _h, ctx) =>
          ctx.callModel('m', () => {
            secondRan = true;
            return Promise.resolve(complete());
          }),
      ]),
    });
    await h.engine.start();
    await h.engine.createTask({ id: 'hog', kind: 'hog', prompt: '' });
    await h.until('hog active', () => h.engine.modelStats('m').active === 1);
    await h.engine.createTask({ id: 'w', kind: 'waiter', prompt: '' });
    await h.until('w queued', () => h.engine.modelStats('m').queued === 1);
    await h.engine.cancelTask('w');
    await h.settle();
    expect(h.engine.modelStats('m')).toEqual({ active: 1, queued: 0 });
    release();
    await h.until('hog done', async () => (await h.statusOf('hog')) === 'completed');
    expect(secondRan).toBe(false);
  });

  it('cancelling a task that waits for a person closes it; answering afterwards is question_closed (guards against an answer reviving it)', async () => {
    const h = setup(scripted([{ type: 'ask_user', question: 'left or right?' }]));
    await h.engine.start();
    await h.engine.createTask({ id: 'wu', kind: 'demo', prompt: '' });
    await h.until('waiting', async () => (await h.statusOf('wu')) === 'waiting_for_user');
    await h.engine.cancelTask('wu');
    const late = await h.engine.answerQuestion('wu', 'wu:q:1', 'left').catch((e: unknown) => e);
    expect(isEngineError(late, 'question_closed')).toBe(true);
    expect(await h.statusOf('wu')).toBe('cancelled');
    expect((await h.store.getQuestion('wu:q:1'))?.answer).toBeUndefined();
  });

  it('cancelling a queued task works; a terminal or unknown one is a typed error (guards against reviving finished tasks)', async () => {
    const h = setup(scripted([complete()]));
    await h.engine.createTask({ id: 'q1', kind: 'demo', prompt: '' }); // not started: stays queued
    expect((await h.engine.cancelTask('q1')).status).toBe('cancelled');
    const again = await h.engine.cancelTask('q1').catch((e: unknown) => e);
    expect(isEngineError(again, 'illegal_transition')).toBe(true);
    expect(isEngineError(await h.engine.cancelTask('nope').catch((e: unknown) => e), 'task_not_found')).toBe(
      true,
    );
  });
});

// ---------------------------------------------------------------- model concurrency and fairness

describe('per-model concurrency', () => {
  function modelTasks(
    calls: number,
    model: (taskId: string) => string,
    log: string[],
    active: Map<string, number>,
    peak: Map<string, number>,
  ) {
    return scripted([
      async (task, _h, ctx) => {
        const m = model(task.id);
        await ctx.callModel(m, async () => {
          active.set(m, (active.get(m) ?? 0) + 1);
          peak.set(m, Math.max(peak.get(m) ?? 0, active.get(m) ?? 0));
          log.push(task.id);
          await new Promise((r) => setImmediate(r));
          active.set(m, (active.get(m) ?? 0) - 1);
        });
        const done = task.counters.steps + 1 >= calls;
        return done ? complete() : { type: 'continue' };
      },
    ]);
  }

  it('allows one call per model by default and runs different models in parallel (guards against overloading a local Ollama)', async () => {
    const log: string[] = [];
    const active = new Map<string, number>();
    const peak = new Map<string, number>();
    const h = setup(modelTasks(3, (id) => (id.startsWith('a') ? 'llama' : 'qwen'), log, active, peak));
    await h.engine.start();
    for (const id of ['a1', 'a2', 'a3', 'b1', 'b2'])
      await h.engine.createTask({ id, kind: 'demo', prompt: '' });
    await h.until('all done', async () => (await h.store.listTasks({ status: 'completed' })).length === 5);
    expect(peak.get('llama')).toBe(1);
    expect(peak.get('qwen')).toBe(1);
    expect(log).toHaveLength(15);
  });

  it('is configurable per model (guards against an ignored modelConcurrency option)', async () => {
    const log: string[] = [];
    const active = new Map<string, number>();
    const peak = new Map<string, number>();
    const h = setup(
      modelTasks(2, (id) => (id.startsWith('a') ? 'big' : 'small'), log, active, peak),
      {
        modelConcurrency: { small: 3 },
      },
    );
    await h.engine.start();
    for (const id of ['a1', 'a2', 'b1', 'b2', 'b3', 'b4'])
      await h.engine.createTask({ id, kind: 'demo', prompt: '' });
    await h.until('all done', async () => (await h.store.listTasks({ status: 'completed' })).length === 6);
    expect(peak.get('big')).toBe(1);
    expect(peak.get('small')).toBe(3);
  });

  it('is fair: tasks sharing a model take turns instead of one task monopolising it (guards against starvation)', async () => {
    const log: string[] = [];
    const h = setup(modelTasks(4, () => 'm', log, new Map(), new Map()));
    await h.engine.start();
    for (const id of ['x', 'y', 'z']) await h.engine.createTask({ id, kind: 'demo', prompt: '' });
    await h.until('all done', async () => (await h.store.listTasks({ status: 'completed' })).length === 3);
    expect(log).toHaveLength(12);
    // Round robin: every window of 3 consecutive calls serves each task once.
    for (let i = 0; i + 3 <= log.length; i += 3) expect(new Set(log.slice(i, i + 3)).size).toBe(3);
  });
});

// ---------------------------------------------------------------- budgets

describe('budgets', () => {
  it('fails with budget_exhausted when maxSteps is used up, naming the budget and the last error (guards against endless loops)', async () => {
    const executor: ToolExecutor = {
      execute: () => Promise.resolve({ ok: false, error: { message: 'blocked' } }),
    };
    const h = setup(scripted([toolCall('move')]), { executor });
    await h.engine.start();
    await h.engine.createTask({ id: 'b', kind: 'demo', prompt: '', budgets: { maxSteps: 3 } });
    await h.until('failed', async () => (await h.statusOf('b')) === 'failed');
    const t = await h.store.getTask('b');
    expect(t?.counters.steps).toBe(3);
    expect(t?.error).toMatchObject({
      code: 'budget_exhausted',
      details: { budget: 'maxSteps', limit: 3, used: 3, lastError: { message: 'blocked' } },
    });
  });

  it('says in words which budget ended the task and what last went wrong (guards against "limit 1795810325413, used 1795810325551")', async () => {
    const executor: ToolExecutor = {
      execute: () => Promise.resolve({ ok: false, error: { message: 'attempt to call nil' } }),
    };
    const h = setup(scripted([toolCall('move')]), { executor });
    await h.engine.start();
    await h.engine.createTask({ id: 'w', kind: 'demo', prompt: '', budgets: { maxSteps: 2 } });
    await h.until('failed', async () => (await h.statusOf('w')) === 'failed');
    expect((await h.store.getTask('w'))?.error?.message).toBe(
      'the task used all 2 of its steps without finishing (budget maxSteps); last error: attempt to call nil',
    );
    const d = setup(scripted([{ type: 'ask_user', question: '?' }]));
    await d.engine.start();
    await d.engine.createTask({ id: 'dl', kind: 'demo', prompt: '', budgets: { deadlineAt: 1_000 + 5_000 } });
    await d.until('waiting', async () => (await d.statusOf('dl')) === 'waiting_for_user');
    await d.clock.advance(6_000);
    await d.until('failed', async () => (await d.statusOf('dl')) === 'failed');
    expect((await d.store.getTask('dl'))?.error?.message).toMatch(
      /^the task's deadline \(1970-01-01T00:00:06\.000Z\) passed before it finished \(budget deadlineAt, over by \d+ ms\)$/,
    );
  });

  it('fails on the tool call that would exceed maxToolCalls, without dispatching it', async () => {
    let executed = 0;
    const executor: ToolExecutor = {
      execute: () => {
        executed++;
        return Promise.resolve({ ok: true, result: null });
      },
    };
    const h = setup(scripted([toolCall('move')]), { executor });
    await h.engine.start();
    await h.engine.createTask({ id: 'tc', kind: 'demo', prompt: '', budgets: { maxToolCalls: 2 } });
    await h.until('failed', async () => (await h.statusOf('tc')) === 'failed');
    expect(executed).toBe(2);
    expect((await h.store.getTask('tc'))?.error?.details).toMatchObject({ budget: 'maxToolCalls', limit: 2 });
  });

  it('fails a task past its deadline even while it waits for a person, via the scheduler tick (guards against tasks outliving their deadline)', async () => {
    const h = setup(scripted([{ type: 'ask_user', question: '?' }]));
    await h.engine.start();
    await h.engine.createTask({ id: 'd', kind: 'demo', prompt: '', budgets: { deadlineAt: 1_000 + 5_000 } });
    await h.until('waiting', async () => (await h.statusOf('d')) === 'waiting_for_user');
    await h.clock.advance(4_000);
    expect(await h.statusOf('d')).toBe('waiting_for_user');
    await h.clock.advance(2_000);
    await h.until('failed', async () => (await h.statusOf('d')) === 'failed');
    expect((await h.store.getTask('d'))?.error?.details).toMatchObject({ budget: 'deadlineAt' });
  });

  it('a deadline during a pending command aborts the call and closes it', async () => {
    const executor = new ManualExecutor();
    const h = setup(scripted([toolCall('dig', {}, { timeoutMs: 600_000 } as Partial<Decision>)]), {
      executor,
    });
    await h.engine.start();
    await h.engine.createTask({ id: 'dc', kind: 'demo', prompt: '', budgets: { deadlineAt: 3_000 } });
    await h.until('dispatched', () => executor.calls.length === 1);
    await h.clock.advance(3_000);
    await h.until('failed', async () => (await h.statusOf('dc')) === 'failed');
    expect(executor.calls[0]?.signal.aborted).toBe(true);
    expect((await h.store.getCommandCall('dc:call:1'))?.status).toBe('cancelled');
  });
});

// ---------------------------------------------------------------- timers and triggers

describe('timer and trigger stepping', () => {
  it('a continue with wakeAfterMs sleeps until the clock reaches it, then steps (guards against periodic tasks spinning)', async () => {
    let decides = 0;
    const h = setup(
      scripted([
        () => {
          decides++;
          return Promise.resolve(
            decides >= 3 ? complete(decides) : { type: 'continue', wakeAfterMs: 600_000 },
          );
        },
      ]),
    );
    await h.engine.start();
    await h.engine.createTask({ id: 'p', kind: 'demo', prompt: '' });
    await h.until('first decide', () => decides === 1);
    await h.settle();
    expect((await h.store.getTask('p'))?.wakeAt).toBe(1_000 + 600_000);
    await h.clock.advance(599_000); // many ticks pass: none steps the sleeping task
    expect(decides).toBe(1);
    await h.clock.advance(1_000);
    await h.until('second decide', () => decides === 2);
    await h.clock.advance(600_000);
    await h.until('completed', async () => (await h.statusOf('p')) === 'completed');
    expect((await h.store.getTask('p'))?.wakeAt).toBeUndefined();
  });

  it('trigger steps a sleeping task at once (guards against outside events being ignored until the timer)', async () => {
    let decides = 0;
    const h = setup(
      scripted([
        () => {
          decides++;
          return Promise.resolve(decides >= 2 ? complete() : { type: 'continue', wakeAfterMs: 3_600_000 });
        },
      ]),
    );
    await h.engine.start();
    await h.engine.createTask({ id: 'tr', kind: 'demo', prompt: '' });
    await h.until('sleeping', async () => (await h.store.getTask('tr'))?.wakeAt !== undefined);
    await h.settle();
    expect(decides).toBe(1);
    h.engine.trigger('tr');
    await h.until('completed', async () => (await h.statusOf('tr')) === 'completed');
    expect(decides).toBe(2);
  });

  it('the tick re-steps a running task nobody is stepping (guards against a task stuck after a transient store failure)', async () => {
    const store = new RecordingStore();
    let failOnce = true;
    const flaky = Object.assign(Object.create(store) as RecordingStore, {
      commit: (c: TaskCommit) => {
        if (failOnce && c.steps?.some((s) => s.kind === 'decision')) {
          failOnce = false;
          return Promise.reject(new Error('disk hiccup'));
        }
        return store.commit(c);
      },
    });
    const h = setup(scripted([complete('after retry')]), { store: flaky });
    await h.engine.start();
    await h.engine.createTask({ id: 'f', kind: 'demo', prompt: '' });
    await h.settle();
    expect(await h.statusOf('f')).toBe('running');
    await h.clock.advance(1_000);
    await h.until('completed', async () => (await h.statusOf('f')) === 'completed');
    expect((await h.store.getTask('f'))?.result).toBe('after retry');
  });
});

// ---------------------------------------------------------------- recovery

describe('recovery on start', () => {
  it('resumes every non-terminal task: repeats a running step, re-sends the same call_id, keeps waiting for a person (guards against lost work after a restart)', async () => {
    const store = new RecordingStore();
    const executor1 = new ManualExecutor();
    const first = setup(
      {
        run: scripted([
          async (_t, _h, ctx) => {
            await ctx.logStep({ kind: 'planner', output: 'attempt 1' });
            return new Promise<Decision>(() => {}); // dies mid-step
          },
        ]),
        call: scripted([toolCall('dig', { depth: 2 })]),
        ask: scripted([{ type: 'ask_user', question: 'go?' }]),
        sleep: scripted([{ type: 'continue', wakeAfterMs: 10_000 }]),
      },
      { store, executor: executor1 },
    );
    await first.engine.start();
    for (const kind of ['run', 'call', 'ask', 'sleep'])
      await first.engine.createTask({ id: kind, kind, prompt: '' });
    await first.until('states reached', async () => {
      const s = await Promise.all(['run', 'call', 'ask'].map((id) => first.statusOf(id)));
      const steps = await store.getSteps('run');
      return (
        s.join() === 'running,waiting_for_command,waiting_for_user' &&
        steps.length === 1 &&
        (await store.getTask('sleep'))?.wakeAt !== undefined
      );
    });
    await first.engine.createTask({ id: 'queued', kind: 'ask', prompt: '' });
    // "crash": abandon engine 1 without stop (its pending promises never settle); a new engine opens the same store
    const executor2 = new ManualExecutor();
    let sleepDecides = 0;
    const second = setup(
      {
        run: scripted([complete('second attempt')]),
        call: scripted([complete('after dig')]),
        ask: scripted([{ type: 'ask_user', question: 'again?' }]),
        sleep: scripted([
          () => {
            sleepDecides++;
            return Promise.resolve(complete());
          },
        ]),
      },
      { store, executor: executor2 },
    );
    await second.engine.start();
    await second.until('redispatched', () => executor2.calls.length === 1);
    expect(executor2.calls[0]).toMatchObject({ callId: 'call:call:1', attempt: 2, args: { depth: 2 } });
    executor2.reply('call:call:1', { ok: true, result: 'dug' }, 2);
    await second.until(
      'run+call done',
      async () =>
        (await second.statusOf('run')) === 'completed' && (await second.statusOf('call')) === 'completed',
    );
    expect((await store.getSteps('run')).map((s) => [s.kind, s.step])).toEqual([
      ['planner', 1],
      ['resumed', 1],
      ['decision', 1],
    ]);
    expect((await store.getCommandCall('call:call:1'))?.dispatchCount).toBe(2);
    expect(await second.statusOf('ask')).toBe('waiting_for_user');
    await second.engine.answerQuestion('ask', 'ask:q:1', 'yes');
    await second.until(
      'queued task asks',
      async () => (await second.statusOf('queued')) === 'waiting_for_user',
    );
    // the sleeping task keeps its wake time across the restart
    await second.settle();
    expect(sleepDecides).toBe(0);
    await second.clock.advance(10_000);
    await second.until('sleep done', async () => (await second.statusOf('sleep')) === 'completed');
    await second.engine.stop();
  });

  it('stop() and cancel finish even if the executor and the strategy ignore their abort signal (guards against shutdown hanging on a dead computer)', async () => {
    const never = new Promise<never>(() => {});
    const h = setup(
      {
        hangs: scripted([() => never]),
        calls: scripted([toolCall('forever')]),
      },
      { executor: { execute: () => never } },
    );
    await h.engine.start();
    await h.engine.createTask({ id: 'h1', kind: 'hangs', prompt: '' });
    await h.engine.createTask({ id: 'h2', kind: 'calls', prompt: '' });
    await h.engine.createTask({ id: 'h3', kind: 'hangs', prompt: '' });
    await h.until('waiting', async () => (await h.statusOf('h2')) === 'waiting_for_command');
    await h.engine.cancelTask('h3');
    let stopped = false;
    const stopping = h.engine.stop().then(() => (stopped = true));
    await h.settle();
    expect(stopped).toBe(true);
    await stopping;
    expect(await h.statusOf('h1')).toBe('running');
    expect(await h.statusOf('h2')).toBe('waiting_for_command');
  });

  it('stop() aborts in-flight work but leaves tasks in their durable state to resume (guards against shutdown marking tasks failed)', async () => {
    let aborted = false;
    const h = setup(
      scripted([
        (_t, _h, ctx) =>
          new Promise<Decision>((_resolve, reject) => {
            ctx.signal.addEventListener('abort', () => {
              aborted = true;
              reject(ctx.signal.reason as Error);
            });
          }),
      ]),
    );
    await h.engine.start();
    await h.engine.createTask({ id: 's', kind: 'demo', prompt: '' });
    await h.until('running', async () => (await h.statusOf('s')) === 'running');
    await h.settle();
    await h.engine.stop();
    expect(aborted).toBe(true);
    expect(await h.statusOf('s')).toBe('running');
  });
});

describe('steering: messages, events, reopen', () => {
  it('a message to a waiting task is in the history its next step sees; an event wakes a sleeping task at once (guards: messages never reaching the strategy, a timer-only wake)', async () => {
    const seen: string[][] = [];
    let decides = 0;
    const strategy: TaskStrategy = {
      decide(_task, history) {
        decides++;
        seen.push(history.filter((e) => e.type === 'message' || e.type === 'event').map((e) => e.type));
        if (decides === 1) return Promise.resolve(toolCall('scan'));
        if (decides === 2) return Promise.resolve({ type: 'continue', wakeAfterMs: 3_600_000 });
        return Promise.resolve(complete(decides));
      },
    };
    const exec = new ManualExecutor();
    const h = setup(strategy, { executor: exec });
    await h.engine.start();
    await h.engine.createTask({ id: 't1', kind: 'demo', prompt: 'p' });
    await h.until('call', () => exec.calls.length === 1);
    await h.engine.postToTask('t1', { type: 'message', text: 'use birch', from: 'http' });
    exec.reply('t1:call:1', { ok: true, result: null });
    await h.until('sleeping', () => decides === 2);
    await h.settle();
    expect(await h.statusOf('t1')).toBe('running'); // asleep for an hour
    await h.engine.postToTask('t1', { type: 'event', name: 'redstone', data: { on: true } });
    await h.until('completed', async () => (await h.statusOf('t1')) === 'completed');
    expect(seen).toEqual([[], ['message'], ['message', 'event']]);
    const history = await h.engine.getHistory('t1');
    expect(history.find((e) => e.type === 'message')).toMatchObject({
      text: 'use birch',
      from: 'http',
      step: 1,
    });
    // an ended task takes no message: it has to be reopened
    await expect(h.engine.postToTask('t1', { type: 'message', text: 'x' })).rejects.toSatisfy((e: unknown) =>
      isEngineError(e, 'illegal_transition'),
    );
    await h.engine.stop();
  });

  it('reopening an ended task keeps its memory and history, sets new budgets and logs why; a retry of a completed task is refused (guards: a continuation losing memory, a stale budget ending it at once)', async () => {
    let runs = 0;
    const strategy: TaskStrategy = {
      decide(task) {
        runs++;
        return Promise.resolve(
          runs === 1
            ? { type: 'fail', error: { code: 'gave_up', message: 'no' }, memory: { notes: ['first run'] } }
            : complete({ memory: task.memory as never }),
        );
      },
    };
    const h = setup(strategy);
    await h.engine.start();
    await h.engine.createTask({ id: 't1', kind: 'demo', prompt: 'p', budgets: { maxSteps: 1 } });
    await h.until('failed', async () => (await h.statusOf('t1')) === 'failed');
    const reopened = await h.engine.reopenTask('t1', { reason: 'retry', budgets: { maxSteps: 2 } });
    expect(reopened).toMatchObject({ status: 'queued', budgets: { maxSteps: 2 } });
    expect(reopened.error).toBeUndefined();
    await h.until('completed', async () => (await h.statusOf('t1')) === 'completed');
    const done = await h.store.getTask('t1');
    expect(done?.result).toEqual({ memory: { notes: ['first run'] } });
    const history = await h.engine.getHistory('t1');
    expect(history.map((e) => e.type)).toEqual(['fail', 'resume', 'complete']);
    expect(history[1]).toMatchObject({ reason: 'retry', from: 'failed' });
    const steps = await h.engine.getSteps('t1');
    expect(steps.find((s) => s.kind === 'reopened')?.directive).toMatchObject({
      reason: 'retry',
      from: 'failed',
      previousError: { code: 'gave_up' },
    });
    await expect(h.engine.reopenTask('t1', { reason: 'retry', budgets: {} })).rejects.toSatisfy(
      (e: unknown) => isEngineError(e, 'illegal_transition'),
    );
    // a message continues a completed task
    const again = await h.engine.reopenTask('t1', {
      reason: 'message',
      budgets: { maxSteps: 3 },
      entries: [{ type: 'message', text: 'once more' }],
    });
    expect(again.status).toBe('queued');
    await h.until('completed again', async () => (await h.statusOf('t1')) === 'completed' && runs === 3);
    expect((await h.engine.getHistory('t1')).map((e) => e.type)).toEqual([
      'fail',
      'resume',
      'complete',
      'resume',
      'message',
      'complete',
    ]);
    await h.engine.stop();
  });
});
