/**
 * The shared contract suite of the `TaskStore` port. Every implementation (in-memory here, SQLite in
 * `@ccagent/store`) runs exactly this suite. Published as `@ccagent/engine/testing`, never from `src/index.ts`: it
 * imports vitest, which must not end up in the runtime bundle.
 *
 * Size (over 500 lines): one suite of the whole port, kept in one file so that every store runs exactly the
 * same tests in the same order.
 */
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { isEngineError } from '../engine-error.js';
import type { TaskStore } from '../ports.js';
import type { CommandCallRecord, Task } from '../types.js';

/** Factory of a fresh, empty store; `cleanup` runs after each test. */
export type StoreFactory = () => Promise<{ store: TaskStore; cleanup?: () => Promise<void> | void }>;

function makeTask(id: string, overrides: Partial<Task> = {}): Task {
  return {
    id,
    kind: 'demo',
    status: 'queued',
    clientId: null,
    prompt: `prompt of ${id}`,
    allowedCommands: ['move', 'dig'],
    memory: { notes: ['a'], n: 1 },
    metadata: { owner: 'test' },
    budgets: { maxSteps: 10 },
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 1000,
    updatedAt: 1000,
    ...overrides,
  };
}

/** Register the contract suite for one implementation. */
export function runTaskStoreContract(name: string, factory: StoreFactory): void {
  describe(`TaskStore contract: ${name}`, () => {
    let store: TaskStore;
    let cleanup: (() => Promise<void> | void) | undefined;

    beforeEach(async () => {
      const made = await factory();
      store = made.store;
      cleanup = made.cleanup;
    });
    afterEach(async () => {
      await store.close();
      await cleanup?.();
    });

    it('round-trips every task field, including optional JSON ones (guards against lossy column mapping)', async () => {
      const task = makeTask('t1', {
        context: { where: [1, 2, 3], nested: { ok: true } },
        clientId: 'computer-7',
        budgets: { maxSteps: 5, maxToolCalls: 3, deadlineAt: 99_999 },
      });
      await store.commit({ task, create: true });
      expect(await store.getTask('t1')).toEqual(task);
      const done: Task = {
        ...task,
        status: 'failed',
        error: { code: 'x', message: 'y', details: { a: [1] } },
        result: null,
        progress: 0.5,
        progressMessage: 'half',
        wakeAt: 12_345,
        updatedAt: 2000,
      };
      await store.commit({ task: done, expectedStatus: 'queued' });
      expect(await store.getTask('t1')).toEqual(done);
      expect(await store.getTask('missing')).toBeUndefined();
    });

    it('rejects creating a duplicate id and changes nothing (guards against silently overwriting a task)', async () => {
      await store.commit({ task: makeTask('dup'), create: true });
      const err = await store
        .commit({ task: makeTask('dup', { prompt: 'other' }), create: true })
        .catch((e: unknown) => e);
      expect(isEngineError(err, 'task_exists')).toBe(true);
      expect((await store.getTask('dup'))?.prompt).toBe('prompt of dup');
    });

    it('rejects a commit whose expectedStatus does not match and writes none of it (guards against lost updates)', async () => {
      await store.commit({ task: makeTask('c1'), create: true });
      const call: CommandCallRecord = {
        callId: 'c1:call:1',
        taskId: 'c1',
        command: 'move',
        args: {},
        timeoutMs: 10,
        status: 'pending',
        dispatchCount: 1,
        createdAt: 1,
      };
      const err = await store
        .commit({
          task: makeTask('c1', { status: 'waiting_for_command' }),
          expectedStatus: 'running',
          commandCall: call,
          history: [{ type: 'note', text: 'x', step: 1, at: 1 }],
          steps: [{ kind: 'decision', step: 1, at: 1 }],
        })
        .catch((e: unknown) => e);
      expect(isEngineError(err, 'conflict')).toBe(true);
      expect((await store.getTask('c1'))?.status).toBe('queued');
      expect(await store.getHistory('c1')).toEqual([]);
      expect(await store.getSteps('c1')).toEqual([]);
      expect(await store.getCommandCall('c1:call:1')).toBeUndefined();
    });

    it('rejects updating or logging to an unknown task (guards against orphan rows)', async () => {
      const e1 = await store
        .commit({ task: makeTask('ghost'), expectedStatus: 'queued' })
        .catch((e: unknown) => e);
      expect(isEngineError(e1, 'task_not_found')).toBe(true);
      const e2 = await store.appendStep('ghost', { kind: 'note', step: 1, at: 1 }).catch((e: unknown) => e);
      expect(isEngineError(e2, 'task_not_found')).toBe(true);
    });

    it('assigns dense per-task seq numbers to history and steps across commits (guards against gaps/duplicates)', async () => {
      await store.commit({ task: makeTask('a'), create: true });
      await store.commit({ task: makeTask('b'), create: true });
      const r1 = await store.commit({
        task: makeTask('a', { status: 'running' }),
        expectedStatus: 'queued',
        history: [
          { type: 'note', text: 'one', step: 1, at: 5 },
          { type: 'tool_call', callId: 'a:call:1', command: 'move', args: { dir: 'up' }, step: 1, at: 5 },
        ],
        steps: [{ kind: 'decision', directive: { type: 'continue' }, step: 1, at: 5 }],
      });
      expect(r1.history.map((h) => h.seq)).toEqual([1, 2]);
      expect(r1.steps.map((s) => s.seq)).toEqual([1]);
      const s2 = await store.appendStep('a', {
        kind: 'planner',
        model: 'm',
        input: { messages: [{ role: 'user', content: 'hi' }] },
        output: 'raw',
        validationErrors: ['bad'],
        usage: { promptTokens: 3, completionTokens: 4, totalDurationMs: 5 },
        durationMs: 7,
        startedAt: 4,
        step: 2,
        at: 6,
      });
      expect(s2.seq).toBe(2);
      await store.commit({
        task: makeTask('b', { status: 'running' }),
        expectedStatus: 'queued',
        history: [{ type: 'note', text: 'b1', step: 1, at: 1 }],
      });
      const r3 = await store.commit({
        task: makeTask('a', { status: 'running', updatedAt: 7 }),
        expectedStatus: 'running',
        history: [
          {
            type: 'tool_result',
            callId: 'a:call:1',
            command: 'move',
            outcome: { ok: false, error: { code: 'e', message: 'm', traceback: 'tb' } },
            timedOut: true,
            step: 2,
            at: 7,
          },
        ],
      });
      expect(r3.history[0]?.seq).toBe(3);
      const hist = await store.getHistory('a');
      expect(hist.map((h) => h.seq)).toEqual([1, 2, 3]);
      expect(hist[2]).toEqual({
        taskId: 'a',
        seq: 3,
        step: 2,
        at: 7,
        type: 'tool_result',
        callId: 'a:call:1',
        command: 'move',
        outcome: { ok: false, error: { code: 'e', message: 'm', traceback: 'tb' } },
        timedOut: true,
      });
      const steps = await store.getSteps('a');
      expect(steps[1]).toEqual({
        taskId: 'a',
        seq: 2,
        kind: 'planner',
        model: 'm',
        input: { messages: [{ role: 'user', content: 'hi' }] },
        output: 'raw',
        validationErrors: ['bad'],
        usage: { promptTokens: 3, completionTokens: 4, totalDurationMs: 5 },
        durationMs: 7,
        startedAt: 4,
        step: 2,
        at: 6,
      });
      expect((await store.getHistory('b')).map((h) => h.seq)).toEqual([1]);
    });

    it('stores and updates command calls and questions, filtering by task and status', async () => {
      await store.commit({ task: makeTask('q'), create: true });
      const call: CommandCallRecord = {
        callId: 'q:call:1',
        taskId: 'q',
        command: 'dig',
        args: { n: 2 },
        timeoutMs: 60_000,
        status: 'pending',
        dispatchCount: 1,
        createdAt: 10,
      };
      await store.commit({ task: makeTask('q', { status: 'running' }), expectedStatus: 'queued' });
      await store.commit({
        task: makeTask('q', { status: 'waiting_for_command' }),
        expectedStatus: 'running',
        commandCall: call,
      });
      expect(await store.getCommandCall('q:call:1')).toEqual(call);
      expect(await store.listCommandCalls({ taskId: 'q', status: 'pending' })).toEqual([call]);
      const done: CommandCallRecord = {
        ...call,
        status: 'succeeded',
        outcome: { ok: true, result: { dug: 2 } },
        completedAt: 20,
        dispatchCount: 2,
      };
      await store.commit({
        task: makeTask('q', { status: 'running' }),
        expectedStatus: 'waiting_for_command',
        commandCall: done,
      });
      expect(await store.getCommandCall('q:call:1')).toEqual(done);
      expect(await store.listCommandCalls({ status: 'pending' })).toEqual([]);
      expect(await store.listCommandCalls({ taskId: 'q', status: ['succeeded', 'failed'] })).toEqual([done]);

      await store.commit({
        task: makeTask('q', { status: 'waiting_for_user' }),
        expectedStatus: 'running',
        question: { questionId: 'q:q:1', taskId: 'q', question: 'which way?', why: 'fork', askedAt: 30 },
      });
      await store.commit({
        task: makeTask('q', { status: 'running' }),
        expectedStatus: 'waiting_for_user',
        question: {
          questionId: 'q:q:1',
          taskId: 'q',
          question: 'which way?',
          why: 'fork',
          askedAt: 30,
          answer: 'left',
          answeredAt: 40,
        },
      });
      expect(await store.getQuestion('q:q:1')).toEqual({
        questionId: 'q:q:1',
        taskId: 'q',
        question: 'which way?',
        why: 'fork',
        askedAt: 30,
        answer: 'left',
        answeredAt: 40,
      });
      expect(await store.listQuestions('q')).toHaveLength(1);
      expect(await store.getQuestion('nope')).toBeUndefined();
    });

    it('lists tasks oldest first with status/kind/client filters and a limit', async () => {
      await store.commit({ task: makeTask('t3', { createdAt: 3, kind: 'x' }), create: true });
      await store.commit({ task: makeTask('t1', { createdAt: 1, clientId: 'c' }), create: true });
      await store.commit({ task: makeTask('t2', { createdAt: 2, status: 'running' }), create: true });
      expect((await store.listTasks()).map((t) => t.id)).toEqual(['t1', 't2', 't3']);
      expect((await store.listTasks({ status: 'running' })).map((t) => t.id)).toEqual(['t2']);
      expect((await store.listTasks({ status: ['queued', 'running'], limit: 2 })).map((t) => t.id)).toEqual([
        't1',
        't2',
      ]);
      expect((await store.listTasks({ kind: 'x' })).map((t) => t.id)).toEqual(['t3']);
      expect((await store.listTasks({ clientId: 'c' })).map((t) => t.id)).toEqual(['t1']);
    });

    it('lists tasks changed since a time (what a reconnecting client missed), alone and with other filters', async () => {
      await store.commit({
        task: makeTask('old', { createdAt: 1, updatedAt: 10, clientId: 'c' }),
        create: true,
      });
      await store.commit({
        task: makeTask('new', { createdAt: 2, updatedAt: 50, clientId: 'c' }),
        create: true,
      });
      await store.commit({ task: makeTask('edge', { createdAt: 3, updatedAt: 20 }), create: true });
      expect((await store.listTasks({ updatedSince: 20 })).map((t) => t.id)).toEqual(['new', 'edge']);
      expect((await store.listTasks({ updatedSince: 20, clientId: 'c' })).map((t) => t.id)).toEqual(['new']);
      expect(await store.listTasks({ updatedSince: 51 })).toEqual([]);
    });

    it('rejects an illegal status change and writes none of the commit (guards against a silent overwrite of a finished task)', async () => {
      await store.commit({ task: makeTask('done', { status: 'completed', result: 1 }), create: true });
      const err = await store
        .commit({
          task: makeTask('done', { status: 'running' }),
          history: [{ type: 'note', text: 'revived', step: 1, at: 2 }],
        })
        .catch((e: unknown) => e);
      expect(isEngineError(err, 'illegal_transition')).toBe(true);
      expect((await store.getTask('done'))?.status).toBe('completed');
      expect(await store.getHistory('done')).toEqual([]);
      // Rewriting a row without changing its status (e.g. a re-dispatch counter) stays legal.
      await store.commit({ task: makeTask('done', { status: 'completed', result: 1, updatedAt: 5 }) });
      expect((await store.getTask('done'))?.updatedAt).toBe(5);
    });

    it('rejects a command call or question that belongs to another task, writing nothing (guards against cross-task rows)', async () => {
      await store.commit({ task: makeTask('own'), create: true });
      await store.commit({ task: makeTask('other'), create: true });
      const e1 = await store
        .commit({
          task: makeTask('own', { status: 'running' }),
          expectedStatus: 'queued',
          commandCall: {
            callId: 'x:1',
            taskId: 'other',
            command: 'move',
            args: null,
            timeoutMs: 1,
            status: 'pending',
            dispatchCount: 1,
            createdAt: 1,
          },
        })
        .catch((e: unknown) => e);
      expect(isEngineError(e1, 'invalid_input')).toBe(true);
      const e2 = await store
        .commit({
          task: makeTask('own', { status: 'running' }),
          expectedStatus: 'queued',
          question: { questionId: 'x:q', taskId: 'other', question: '?', askedAt: 1 },
        })
        .catch((e: unknown) => e);
      expect(isEngineError(e2, 'invalid_input')).toBe(true);
      expect((await store.getTask('own'))?.status).toBe('queued');
      expect(await store.getCommandCall('x:1')).toBeUndefined();
      expect(await store.getQuestion('x:q')).toBeUndefined();
    });

    it('of two concurrent commits expecting the same status exactly one applies (guards against lost updates under batching)', async () => {
      await store.commit({ task: makeTask('race'), create: true });
      const attempts = await Promise.allSettled([
        store.commit({
          task: makeTask('race', { status: 'running', prompt: 'first' }),
          expectedStatus: 'queued',
          history: [{ type: 'note', text: 'first', step: 1, at: 1 }],
        }),
        store.commit({
          task: makeTask('race', { status: 'cancelled', prompt: 'second' }),
          expectedStatus: 'queued',
          history: [{ type: 'cancel', step: 1, at: 1 }],
        }),
      ]);
      expect(attempts.map((a) => a.status)).toEqual(['fulfilled', 'rejected']);
      const rejected = attempts[1] as PromiseRejectedResult;
      expect(isEngineError(rejected.reason, 'conflict')).toBe(true);
      expect((await store.getTask('race'))?.prompt).toBe('first');
      expect((await store.getHistory('race')).map((h) => h.type)).toEqual(['note']);
    });

    it('a burst of un-awaited appendStep calls gets dense seqs in call order (guards against seq races when writes are grouped)', async () => {
      await store.commit({ task: makeTask('burst'), create: true });
      const stored = await Promise.all(
        Array.from({ length: 40 }, (_, i) =>
          store.appendStep('burst', { kind: 'note', output: i, step: 1, at: i }),
        ),
      );
      expect(stored.map((s) => s.seq)).toEqual(Array.from({ length: 40 }, (_, i) => i + 1));
      expect((await store.getSteps('burst')).map((s) => s.output)).toEqual(
        Array.from({ length: 40 }, (_, i) => i),
      );
    });

    it('keeps command calls in creation order and questions in asked order across updates (guards against re-ordering on upsert)', async () => {
      await store.commit({ task: makeTask('ord', { status: 'running' }), create: true });
      const mk = (n: number): CommandCallRecord => ({
        callId: `ord:call:${n}`,
        taskId: 'ord',
        command: 'move',
        args: n,
        timeoutMs: 5,
        status: 'pending',
        dispatchCount: 1,
        createdAt: 100,
      });
      for (const n of [1, 2, 3])
        await store.commit({ task: makeTask('ord', { status: 'running' }), commandCall: mk(n) });
      await store.commit({
        task: makeTask('ord', { status: 'running' }),
        commandCall: {
          ...mk(1),
          status: 'failed',
          outcome: { ok: false, error: { message: 'no' } },
          completedAt: 9,
        },
      });
      expect((await store.listCommandCalls({ taskId: 'ord' })).map((c) => c.callId)).toEqual([
        'ord:call:1',
        'ord:call:2',
        'ord:call:3',
      ]);
      for (const n of [1, 2]) {
        await store.commit({
          task: makeTask('ord', { status: 'running' }),
          question: { questionId: `ord:q:${n}`, taskId: 'ord', question: `q${n}`, askedAt: 50 },
        });
      }
      await store.commit({
        task: makeTask('ord', { status: 'running' }),
        question: {
          questionId: 'ord:q:1',
          taskId: 'ord',
          question: 'q1',
          askedAt: 50,
          answer: 'a',
          answeredAt: 60,
        },
      });
      expect((await store.listQuestions('ord')).map((q) => q.questionId)).toEqual(['ord:q:1', 'ord:q:2']);
    });

    it('pages the step log by afterSeq and limit in seq order (guards against a follower re-reading or skipping records)', async () => {
      await store.commit({ task: makeTask('pg'), create: true });
      await store.commit({ task: makeTask('other'), create: true });
      for (let i = 1; i <= 7; i++) {
        await store.appendStep('pg', { kind: 'note', output: i, step: i, at: i });
        await store.appendStep('other', { kind: 'note', output: -i, step: i, at: i });
      }
      const seqs = async (q?: { afterSeq?: number; limit?: number }) =>
        (await store.getSteps('pg', q)).map((s) => [s.seq, s.output]);
      const all = [1, 2, 3, 4, 5, 6, 7].map((n) => [n, n]);
      expect(await seqs()).toEqual(all);
      expect(await seqs({})).toEqual(all);
      expect(await seqs({ afterSeq: 0 })).toEqual(all);
      expect(await seqs({ afterSeq: 3 })).toEqual(all.slice(3));
      expect(await seqs({ limit: 2 })).toEqual([
        [1, 1],
        [2, 2],
      ]);
      expect(await seqs({ afterSeq: 2, limit: 3 })).toEqual([
        [3, 3],
        [4, 4],
        [5, 5],
      ]);
      expect(await seqs({ afterSeq: 5, limit: 10 })).toEqual([
        [6, 6],
        [7, 7],
      ]);
      expect(await seqs({ afterSeq: 6 })).toEqual([[7, 7]]);
      // Beyond the end, a zero limit and an unknown task: empty, not an error.
      expect(await seqs({ afterSeq: 7 })).toEqual([]);
      expect(await seqs({ afterSeq: 1000, limit: 5 })).toEqual([]);
      expect(await seqs({ limit: 0 })).toEqual([]);
      expect(await store.getSteps('nobody', { afterSeq: 0, limit: 5 })).toEqual([]);
      // A page holds the same records as the whole log (every field), and only this task's.
      const whole = await store.getSteps('pg');
      expect(await store.getSteps('pg', { afterSeq: 4, limit: 2 })).toEqual(whole.slice(4, 6));
      expect((await store.getSteps('other', { afterSeq: 5 })).map((s) => s.output)).toEqual([-6, -7]);
    });

    it('pages an empty step log and sees records appended after a page was read (guards against a follower missing new steps)', async () => {
      await store.commit({ task: makeTask('fresh'), create: true });
      expect(await store.getSteps('fresh')).toEqual([]);
      expect(await store.getSteps('fresh', { afterSeq: 0, limit: 10 })).toEqual([]);
      await store.appendStep('fresh', { kind: 'note', output: 'a', step: 1, at: 1 });
      const first = await store.getSteps('fresh', { afterSeq: 0, limit: 10 });
      expect(first.map((s) => s.seq)).toEqual([1]);
      expect(await store.getSteps('fresh', { afterSeq: 1 })).toEqual([]);
      await store.commit({
        task: makeTask('fresh', { status: 'running' }),
        expectedStatus: 'queued',
        steps: [
          { kind: 'decision', step: 2, at: 2 },
          { kind: 'tool_result', step: 2, at: 3 },
        ],
      });
      expect((await store.getSteps('fresh', { afterSeq: 1 })).map((s) => [s.seq, s.kind])).toEqual([
        [2, 'decision'],
        [3, 'tool_result'],
      ]);
    });

    it('rejects a negative, fractional or non-numeric afterSeq/limit with invalid_input (guards against a nonsense page query reaching SQL)', async () => {
      await store.commit({ task: makeTask('bad'), create: true });
      await store.appendStep('bad', { kind: 'note', step: 1, at: 1 });
      const bad: Array<Record<string, unknown>> = [
        { afterSeq: -1 },
        { afterSeq: 1.5 },
        { afterSeq: Number.NaN },
        { afterSeq: '1' },
        { limit: -1 },
        { limit: 2.5 },
        { limit: Number.POSITIVE_INFINITY },
        { limit: '3' },
      ];
      for (const q of bad) {
        const err = await store
          .getSteps('bad', q as { afterSeq?: number; limit?: number })
          .catch((e: unknown) => e);
        expect(isEngineError(err, 'invalid_input'), JSON.stringify(q)).toBe(true);
        expect((err as Error).message).toMatch(Object.keys(q)[0] ?? '');
      }
      expect(await store.getSteps('bad')).toHaveLength(1);
    });

    it('binds a pending call to a client durably, first binding wins, and later commits of the call keep it (guards against a closing commit wiping where the call was sent)', async () => {
      await store.commit({ task: makeTask('b', { status: 'running' }), create: true });
      const call: CommandCallRecord = {
        callId: 'b:call:1',
        taskId: 'b',
        command: 'dig',
        args: { n: 1 },
        timeoutMs: 60_000,
        status: 'pending',
        dispatchCount: 1,
        createdAt: 10,
      };
      await store.commit({
        task: makeTask('b', { status: 'waiting_for_command' }),
        expectedStatus: 'running',
        commandCall: call,
      });
      expect((await store.getCommandCall('b:call:1'))?.sentTo).toBeUndefined();
      expect(await store.bindCall('b:call:1', 'pc-a')).toEqual({ ...call, sentTo: 'pc-a' });
      expect(await store.getCommandCall('b:call:1')).toEqual({ ...call, sentTo: 'pc-a' });
      // Binding again: the same client is a no-op, another client changes nothing and learns the binding in force.
      expect((await store.bindCall('b:call:1', 'pc-a')).sentTo).toBe('pc-a');
      expect((await store.bindCall('b:call:1', 'pc-b')).sentTo).toBe('pc-a');
      // A re-dispatch counted by a commit of the record without the field, then a commit claiming another client:
      // neither changes the binding.
      await store.commit({
        task: makeTask('b', { status: 'waiting_for_command', updatedAt: 1001 }),
        expectedStatus: 'waiting_for_command',
        commandCall: { ...call, dispatchCount: 2 },
      });
      await store.commit({
        task: makeTask('b', { status: 'waiting_for_command', updatedAt: 1002 }),
        expectedStatus: 'waiting_for_command',
        commandCall: { ...call, dispatchCount: 3, sentTo: 'pc-b' },
      });
      expect(await store.getCommandCall('b:call:1')).toEqual({ ...call, dispatchCount: 3, sentTo: 'pc-a' });
      expect(await store.listCommandCalls({ taskId: 'b', status: 'pending' })).toEqual([
        { ...call, dispatchCount: 3, sentTo: 'pc-a' },
      ]);
      const done: CommandCallRecord = {
        ...call,
        dispatchCount: 3,
        status: 'succeeded',
        outcome: { ok: true, result: 'dug' },
        completedAt: 20,
      };
      await store.commit({
        task: makeTask('b', { status: 'running', updatedAt: 1003 }),
        expectedStatus: 'waiting_for_command',
        commandCall: done,
      });
      expect(await store.getCommandCall('b:call:1')).toEqual({ ...done, sentTo: 'pc-a' });
    });

    it('refuses to bind an unknown call, a closed call or an empty client id, changing nothing (guards against a binding recorded for a call that is not open)', async () => {
      await store.commit({ task: makeTask('c', { status: 'running' }), create: true });
      const closed: CommandCallRecord = {
        callId: 'c:call:1',
        taskId: 'c',
        command: 'dig',
        args: {},
        timeoutMs: 1000,
        status: 'failed',
        outcome: { ok: false, error: { code: 'x', message: 'no' } },
        dispatchCount: 1,
        createdAt: 10,
        completedAt: 11,
      };
      await store.commit({
        task: makeTask('c', { status: 'running', updatedAt: 1001 }),
        commandCall: closed,
      });
      const unknown = await store.bindCall('nope', 'pc-a').catch((e: unknown) => e);
      expect(isEngineError(unknown, 'unknown_call')).toBe(true);
      const late = await store.bindCall('c:call:1', 'pc-a').catch((e: unknown) => e);
      expect(isEngineError(late, 'call_closed')).toBe(true);
      expect(await store.getCommandCall('c:call:1')).toEqual(closed);
      await store.commit({
        task: makeTask('c', { status: 'running', updatedAt: 1002 }),
        commandCall: {
          callId: 'c:call:2',
          taskId: 'c',
          command: 'dig',
          args: {},
          timeoutMs: 1000,
          status: 'pending',
          dispatchCount: 1,
          createdAt: 12,
        },
      });
      const empty = await store.bindCall('c:call:2', '').catch((e: unknown) => e);
      expect(isEngineError(empty, 'invalid_input')).toBe(true);
      expect((await store.getCommandCall('c:call:2'))?.sentTo).toBeUndefined();
    });

    it('returns copies: mutating a returned task does not change the stored one (guards against aliasing)', async () => {
      await store.commit({ task: makeTask('m'), create: true });
      const t = await store.getTask('m');
      if (!t) throw new Error('missing');
      t.status = 'completed';
      (t.memory as { n: number }).n = 99;
      const again = await store.getTask('m');
      expect(again?.status).toBe('queued');
      expect(again?.memory).toEqual({ notes: ['a'], n: 1 });
    });
  });
}
