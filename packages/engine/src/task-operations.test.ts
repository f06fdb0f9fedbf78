/**
 * The task operations on a real engine and the in-memory store: what each request does to the stored task, and
 * that a refused request changes nothing.
 */
import { describe, expect, it } from 'vitest';
import { ManualClock } from './clock.js';
import { Engine } from './engine.js';
import { EngineError } from './engine-error.js';
import { InMemoryTaskStore } from './in-memory-task-store.js';
import type { CommitResult, TaskCommit, TaskStrategy } from './ports.js';
import type { TaskKindCatalogue } from './task-kinds.js';
import { isOwnTask, mayAccessTask, TASK_METADATA_KEYS, taskCreator } from './task-metadata.js';
import { portStorageFailure, TaskOperations, taskIdFromKey } from './task-operations.js';
import type { Decision } from './types.js';

const CATALOGUE: TaskKindCatalogue = {
  kinds: {
    general_agent: {
      strategy: 'native',
      allowedCommands: [],
      budgets: { maxSteps: 40, maxToolCalls: 60, deadlineMs: 3_600_000 },
      modelRoles: ['native'],
    },
    code_job: {
      strategy: 'planner_executor',
      allowedCommands: ['fs_read', 'fs_write', 'run_program'],
      budgets: { maxSteps: 6, maxToolCalls: 8 },
      modelRoles: ['planner', 'executor'],
    },
  },
  aliases: { general: 'general_agent' },
  limits: {
    maxSteps: 100,
    maxToolCalls: 200,
    maxModelCalls: 50,
    maxPromptTokens: 10_000,
    maxOutputTokens: 5_000,
    maxDeadlineMs: 7_200_000,
    maxNumCtx: 32_768,
    maxTemperature: 1,
    models: ['qwen3:8b'],
  },
  providers: ['ollama'],
};

/** A store whose next commit fails with the given error (a database that cannot be written right now). */
class FaultyStore extends InMemoryTaskStore {
  failNext: Error | undefined;
  override commit(change: TaskCommit): Promise<CommitResult> {
    const err = this.failNext;
    this.failNext = undefined;
    return err ? Promise.reject(err) : super.commit(change);
  }
}

/** Each task does what its prompt says: `complete`, `fail`, `ask`, or sleeps (`wait`). */
const byPrompt: TaskStrategy = {
  decide(task): Promise<Decision> {
    if (task.prompt === 'complete') return Promise.resolve({ type: 'complete', result: 'done' });
    if (task.prompt === 'fail') {
      return Promise.resolve({ type: 'fail', error: { code: 'gave_up', message: 'no' } });
    }
    if (task.prompt === 'ask') return Promise.resolve({ type: 'ask_user', question: 'which tree?' });
    return Promise.resolve({ type: 'continue', wakeAfterMs: 3_600_000 });
  },
};

function setup(
  opts: {
    crossClientAccess?: boolean;
    peerOf?: (id: string) => ((other: string) => boolean) | undefined;
  } = {},
) {
  const clock = new ManualClock(1_000);
  const store = new FaultyStore();
  const engine = new Engine({
    store,
    strategies: { general_agent: byPrompt, code_job: byPrompt },
    clock,
    tickIntervalMs: 1_000,
  });
  const ops = new TaskOperations({ engine, store, kinds: CATALOGUE, clock, ...opts });
  const until = async (what: string, pred: () => Promise<boolean>) => {
    for (let i = 0; i < 200; i++) {
      if (await pred()) return;
      await clock.advance(0);
    }
    throw new Error(`timed out waiting for ${what}`);
  };
  const statusOf = async (id: string) => (await store.getTask(id))?.status;
  const reach = (id: string, status: string) => until(status, async () => (await statusOf(id)) === status);
  return { clock, store, engine, ops, until, statusOf, reach };
}

async function created(h: ReturnType<typeof setup>, prompt: string, kind = 'general') {
  const r = await h.ops.create({ kind, prompt, clientId: 'pc-1', creator: 'pc-1' });
  if (!r.ok) throw new Error(r.error.message);
  return r.value.task;
}

describe('TaskOperations.create', () => {
  it("resolves an alias to its kind and stores the kind's run budgets before answering (guards against a task under a name no strategy runs)", async () => {
    const h = setup();
    const r = await h.ops.create({ kind: 'general', prompt: 'wait', clientId: 'pc-1', creator: 'pc-1' });
    expect(r).toMatchObject({ ok: true, value: { created: true, task: { kind: 'general_agent' } } });
    const stored = r.ok ? await h.store.getTask(r.value.task.id) : undefined;
    expect(stored).toMatchObject({
      kind: 'general_agent',
      status: 'queued',
      allowedCommands: [],
      budgets: { maxSteps: 40, maxToolCalls: 60, deadlineAt: 1_000 + 3_600_000 },
      metadata: {
        [TASK_METADATA_KEYS.creator]: 'pc-1',
        [TASK_METADATA_KEYS.runBudgets]: { maxSteps: 40, maxToolCalls: 60, deadlineMs: 3_600_000 },
      },
    });
    expect(stored && taskCreator(stored)).toBe('pc-1');
  });

  it("stores an adapter's metadata with the task, under the operation's own keys (guards against an adapter that must create tasks apart from the rules to tag them)", async () => {
    const h = setup();
    const r = await h.ops.create({
      kind: 'general',
      prompt: 'wait',
      clientId: null,
      creator: 'pc-1',
      metadata: { instanceId: 'Steve', [TASK_METADATA_KEYS.creator]: 'forged' },
    });
    const stored = r.ok ? await h.store.getTask(r.value.task.id) : undefined;
    expect(stored?.metadata).toMatchObject({ instanceId: 'Steve', [TASK_METADATA_KEYS.creator]: 'pc-1' });
    expect(stored?.metadata[TASK_METADATA_KEYS.runBudgets]).toEqual({
      maxSteps: 40,
      maxToolCalls: 60,
      deadlineMs: 3_600_000,
    });
  });

  it('refuses an unknown kind with the known names and stores nothing', async () => {
    const h = setup();
    const r = await h.ops.create({ kind: 'tree_farm', prompt: 'x', clientId: null });
    expect(r).toEqual({
      ok: false,
      error: {
        code: 'invalid_field',
        path: '$.task_kind',
        message: 'unknown task kind "tree_farm"; known kinds: general_agent, code_job, general',
      },
    });
    expect(await h.store.listTasks()).toEqual([]);
  });

  it("keeps only the requested commands the kind allows, and refuses a list wholly outside it (guards against widening a kind's allow-list)", async () => {
    const h = setup();
    const r = await h.ops.create({
      kind: 'code_job',
      prompt: 'wait',
      clientId: 'pc-1',
      allowedCommands: ['fs_read', 'shell_exec'],
    });
    expect(r.ok && (await h.store.getTask(r.value.task.id))?.allowedCommands).toEqual(['fs_read']);
    const refused = await h.ops.create({
      kind: 'code_job',
      prompt: 'wait',
      clientId: 'pc-1',
      allowedCommands: ['shell_exec'],
    });
    expect(refused).toEqual({
      ok: false,
      error: {
        code: 'forbidden',
        path: '$.allowed_commands',
        message:
          'none of the requested commands is allowed for task kind "code_job" (it allows: fs_read, fs_write, run_program)',
      },
    });
    expect(await h.store.listTasks()).toHaveLength(1);
  });

  it('refuses a setting above an operator maximum and stores nothing; stores the settings and budgets of one within them', async () => {
    const h = setup();
    const refused = await h.ops.create({
      kind: 'code_job',
      prompt: 'wait',
      clientId: null,
      settings: { budgets: { max_tool_calls: 201 } },
    });
    expect(refused).toEqual({
      ok: false,
      error: {
        code: 'forbidden',
        path: '$.settings.budgets.max_tool_calls',
        message: "max_tool_calls 201 is above the server's maximum 200 (limits.maxToolCalls)",
      },
    });
    expect(await h.store.listTasks()).toEqual([]);
    const r = await h.ops.create({
      kind: 'code_job',
      prompt: 'wait',
      clientId: null,
      settings: { budgets: { max_tool_calls: 200 } },
    });
    expect(r.ok && (await h.store.getTask(r.value.task.id))).toMatchObject({
      budgets: { maxSteps: 6, maxToolCalls: 200 },
      metadata: {
        [TASK_METADATA_KEYS.settings]: { budgets: { max_tool_calls: 200 } },
        [TASK_METADATA_KEYS.runBudgets]: { maxSteps: 6, maxToolCalls: 200 },
      },
    });
  });

  it('returns the same task for a repeated request id in one namespace, a new one in another (guards against duplicate tasks from a resent request)', async () => {
    const h = setup();
    const req = {
      kind: 'general',
      prompt: 'wait',
      clientId: 'pc-1',
      requestId: 'r-1',
      requestNamespace: 'pc-1',
    };
    const first = await h.ops.create(req);
    const again = await h.ops.create(req);
    expect(first).toMatchObject({ ok: true, value: { created: true } });
    expect(again).toMatchObject({ ok: true, value: { created: false } });
    expect(first.ok && again.ok && again.value.task.id).toBe(first.ok && first.value.task.id);
    expect(h.ops.taskIdFor(req)).toBe(taskIdFromKey('pc-1\u0000r-1'));
    const other = await h.ops.create({ ...req, requestNamespace: 'http' });
    expect(other.ok && other.value.task.id).not.toBe(first.ok && first.value.task.id);
    expect(await h.store.listTasks()).toHaveLength(2);
  });

  it('refuses as unavailable when the database cannot be written, and stores nothing (guards against acknowledging a task that is not on disk)', async () => {
    const h = setup();
    h.store.failNext = new EngineError('store_failure', 'disk is full', {
      details: { storeCode: 'disk_full' },
    });
    const r = await h.ops.create({ kind: 'general', prompt: 'wait', clientId: null });
    expect(r).toEqual({ ok: false, error: { code: 'unavailable', message: 'not stored: disk is full' } });
    expect(await h.store.listTasks()).toEqual([]);
    // Any other failure is not a refusal: it is thrown.
    h.store.failNext = new EngineError('store_failure', 'store is closed');
    await expect(h.ops.create({ kind: 'general', prompt: 'wait', clientId: null })).rejects.toThrow(
      'store is closed',
    );
  });
});

describe('taskIdFromKey', () => {
  it('is stable per key, distinct across keys, and UUID-shaped', () => {
    const a = taskIdFromKey('pc-1\u0000req-1');
    expect(taskIdFromKey('pc-1\u0000req-1')).toBe(a);
    expect(taskIdFromKey('pc-2\u0000req-1')).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('portStorageFailure', () => {
  it('recognises only the stores’ storage conditions', () => {
    const err = (storeCode?: string) =>
      new EngineError('store_failure', 'm', storeCode ? { details: { storeCode } } : {});
    expect(portStorageFailure(err('locked'))).toEqual({ code: 'locked', message: 'm' });
    expect(portStorageFailure(err('io_error'))).toEqual({ code: 'io_error', message: 'm' });
    expect(portStorageFailure(err('disk_full'))).toEqual({ code: 'disk_full', message: 'm' });
    expect(portStorageFailure(err('fenced'))).toBeUndefined();
    expect(portStorageFailure(err())).toBeUndefined();
    expect(portStorageFailure(new EngineError('conflict', 'm'))).toBeUndefined();
  });
});

describe('TaskOperations lifecycle requests', () => {
  it('cancels a running task once; a repeated cancel returns it unchanged; an ended or unknown task is refused', async () => {
    const h = setup();
    await h.engine.start();
    const t = await created(h, 'wait');
    await h.reach(t.id, 'running');
    const r = await h.ops.cancel(t.id, 'by test');
    expect(r).toMatchObject({ ok: true, value: { status: 'cancelled' } });
    expect(await h.statusOf(t.id)).toBe('cancelled');
    const again = await h.ops.cancel(t.id, 'by test');
    expect(again).toMatchObject({ ok: true, value: { status: 'cancelled' } });
    const done = await created(h, 'complete');
    await h.reach(done.id, 'completed');
    expect(await h.ops.cancel(done.id, 'late')).toEqual({
      ok: false,
      error: { code: 'conflict', message: `task ${done.id} is already completed; it cannot be cancelled` },
    });
    expect(await h.ops.cancel('nope', 'x')).toEqual({
      ok: false,
      error: { code: 'not_found', message: 'no task nope' },
    });
    await h.engine.stop();
  });

  it('refuses a retry of a completed task and changes nothing; retries a failed one with fresh budgets counted from what it used (guards against a retry ending at once on a spent budget)', async () => {
    const h = setup();
    await h.engine.start();
    const done = await created(h, 'complete');
    await h.reach(done.id, 'completed');
    const before = await h.store.getTask(done.id);
    expect(await h.ops.retry(done.id)).toEqual({
      ok: false,
      error: {
        code: 'conflict',
        message: `task ${done.id} is completed; only a failed or cancelled task can be retried`,
      },
    });
    expect(await h.store.getTask(done.id)).toEqual(before);

    const failed = await created(h, 'fail', 'code_job');
    await h.reach(failed.id, 'failed');
    await h.clock.advance(5_000);
    const used = (await h.store.getTask(failed.id))?.counters;
    const r = await h.ops.retry(failed.id);
    expect(r).toMatchObject({ ok: true, value: { status: 'queued' } });
    expect(r.ok && r.value.budgets).toEqual({
      maxSteps: (used?.steps ?? 0) + 6,
      maxToolCalls: (used?.toolCalls ?? 0) + 8,
    });
    await h.engine.stop();
  });

  it('reopens an ended task with a message and fresh budgets; refuses an event for it', async () => {
    const h = setup();
    await h.engine.start();
    const done = await created(h, 'complete');
    await h.reach(done.id, 'completed');
    await h.clock.advance(10_000);
    const r = await h.ops.message(done.id, 'once more', 'pc-1');
    expect(r).toMatchObject({ ok: true, value: { status: 'queued' } });
    expect(r.ok && r.value.budgets.deadlineAt).toBe(h.clock.now() + 3_600_000);
    expect((await h.engine.getHistory(done.id)).map((e) => e.type)).toEqual([
      'complete',
      'resume',
      'message',
    ]);
    await h.reach(done.id, 'completed');
    expect(await h.ops.event(done.id, 'redstone', { on: true })).toEqual({
      ok: false,
      error: { code: 'conflict', message: `task ${done.id} has ended (completed); it takes no events` },
    });
    await h.engine.stop();
  });

  it('answers the open question; refuses an answer to a task not waiting and a question it never asked', async () => {
    const h = setup();
    await h.engine.start();
    const t = await created(h, 'ask');
    await h.reach(t.id, 'waiting_for_user');
    expect(await h.ops.answer(t.id, 'q-unknown', 'birch')).toMatchObject({
      ok: false,
      error: { code: 'not_found', path: '$.question_id' },
    });
    const q = await h.ops.openQuestion(t.id);
    expect(q?.question).toBe('which tree?');
    expect(await h.ops.answer(t.id, undefined, 'birch')).toMatchObject({
      ok: true,
      value: { status: 'running' },
    });
    expect((await h.store.listQuestions(t.id))[0]?.answer).toBe('birch');
    const other = await created(h, 'wait');
    await h.reach(other.id, 'running');
    expect(await h.ops.answer(other.id, undefined, 'x')).toEqual({
      ok: false,
      error: { code: 'conflict', message: `task ${other.id} is running; it is not waiting for an answer` },
    });
    await h.engine.stop();
  });
});

describe('access between clients', () => {
  it("lets the task's client and its creator act on it, another client only with crossClientAccess (guards against one computer steering another's task)", async () => {
    const own = setup();
    const t = (await own.ops.create({ kind: 'general', prompt: 'wait', clientId: 'pc-2', creator: 'pc-1' }))
      .ok;
    expect(t).toBe(true);
    const [task] = await own.store.listTasks();
    if (!task) throw new Error('no task');
    expect(isOwnTask(task, 'pc-2')).toBe(true);
    expect(own.ops.canAccess(task, 'pc-1')).toBe(true); // the creator
    expect(own.ops.canAccess(task, 'pc-2')).toBe(true); // the task's client
    expect(own.ops.canAccess(task, 'pc-3')).toBe(false);
    expect(own.ops.canAccess(task, 'pc-3', 'read')).toBe(false);
    expect(own.ops.mayCreateFor('pc-1', 'pc-1')).toBe(true);
    expect(own.ops.mayCreateFor('pc-1', 'pc-2')).toBe(false);

    const cross = setup({ crossClientAccess: true });
    expect(cross.ops.canAccess(task, 'pc-3')).toBe(true);
    expect(cross.ops.mayCreateFor('pc-1', 'pc-2')).toBe(true);
  });

  it("lets a client of the creator's or the bound client's group create for it and act on its tasks, no one else (guards against a group opening every task)", async () => {
    const h = setup();
    const group = new Set(['host', 'pocket']);
    const peerOf = (me: string) => (other: string) => group.has(me) && group.has(other);
    expect(h.ops.mayCreateFor('pocket', 'host', { peer: peerOf('pocket') })).toBe(true);
    expect(h.ops.mayCreateFor('stranger', 'host', { peer: peerOf('stranger') })).toBe(false);
    expect(h.ops.mayCreateFor('pocket', 'host')).toBe(false);
    // a task the host made for itself: its group may follow and steer it, a stranger may not even read it
    expect(
      (await h.ops.create({ kind: 'general', prompt: 'wait', clientId: 'host', creator: 'host' })).ok,
    ).toBe(true);
    const [task] = await h.store.listTasks();
    if (!task) throw new Error('no task');
    expect(h.ops.canAccess(task, 'pocket', 'act', { peer: peerOf('pocket') })).toBe(true);
    expect(h.ops.canAccess(task, 'stranger', 'read', { peer: peerOf('stranger') })).toBe(false);
    expect(h.ops.canAccess(task, 'pocket', 'read')).toBe(false);
  });

  it('lets a client granted observeOthers see any task, never act on it', async () => {
    const h = setup();
    const task = await created(h, 'wait');
    expect(h.ops.canAccess(task, 'viewer', 'read', { observeOthers: true })).toBe(true);
    expect(h.ops.canAccess(task, 'viewer', 'act', { observeOthers: true })).toBe(false);
    expect(mayAccessTask(task, 'viewer', 'read')).toBe(false);
  });
});

describe('task names', () => {
  const named = (h: ReturnType<typeof setup>, name: string, clientId: string | null, extra = {}) =>
    h.ops.create({
      kind: 'general',
      prompt: 'wait',
      clientId,
      ...(clientId !== null ? { creator: clientId } : {}),
      name,
      ...extra,
    });

  it('refuses a second task with the name of one that has not ended, in the same scope, and stores nothing; another computer may use the name (guards against a name that two running agents share)', async () => {
    const h = setup();
    const first = await named(h, 'farm-watcher', 'pc-1');
    if (!first.ok) throw new Error(first.error.message);
    const again = await named(h, 'farm-watcher', 'pc-1');
    expect(again).toMatchObject({ ok: false, error: { code: 'conflict', path: '$.name' } });
    expect(!again.ok && again.error.message).toContain(first.value.task.id);
    expect((await h.store.listTasks()).length).toBe(1);
    // another computer's agent of that name is out of this one's reach: allowed
    expect(await named(h, 'farm-watcher', 'pc-2')).toMatchObject({ ok: true });
    // a task of no computer: unique among every task
    expect(await named(h, 'farm-watcher', null)).toMatchObject({ ok: false, error: { code: 'conflict' } });
    expect((await h.store.listTasks()).length).toBe(2);
  });

  /** pc-1 and pc-3 are one group; pc-2 is alone. */
  const grouped = () => {
    const group = new Set(['pc-1', 'pc-3']);
    return setup({
      peerOf: (me) => (group.has(me) ? (other) => other !== me && group.has(other) : undefined),
    });
  };

  it("refuses a name a group peer's running task has, at creation and at a retry or message that would reopen a task (guards against a reopening checked in a narrower scope than the creation)", async () => {
    const h = grouped();
    const mine = await named(h, 'w', 'pc-1');
    if (!mine.ok) throw new Error(mine.error.message);
    expect(await h.ops.cancel(mine.value.task.id, 'stop')).toMatchObject({ ok: true });
    // the peer takes the name while pc-1's task has ended
    const peers = await named(h, 'w', 'pc-3');
    if (!peers.ok) throw new Error(peers.error.message);
    // creation on pc-1 is refused: the peer's task holds the name in pc-1's reach
    expect(await named(h, 'w', 'pc-1')).toMatchObject({
      ok: false,
      error: { code: 'conflict', path: '$.name' },
    });
    // and so is reopening pc-1's ended task, by retry and by message; nothing changes
    const old = mine.value.task.id;
    const retried = await h.ops.retry(old);
    expect(retried).toMatchObject({ ok: false, error: { code: 'conflict', path: '$.name' } });
    expect(!retried.ok && retried.error.message).toContain(peers.value.task.id);
    expect(await h.ops.message(old, 'go on', 'cli')).toMatchObject({
      ok: false,
      error: { code: 'conflict', path: '$.name' },
    });
    expect(await h.statusOf(old)).toBe('cancelled');
    expect((await h.store.getHistory(old)).filter((e) => e.type === 'message')).toEqual([]);
    // a computer of no group is out of reach: its own `w` is allowed
    expect(await named(h, 'w', 'pc-2')).toMatchObject({ ok: true });
    // once the peer's task ends, the reopening goes through
    await h.ops.cancel(peers.value.task.id, 'stop');
    expect(await h.ops.retry(old)).toMatchObject({ ok: true });
  });

  it('returns the existing task for a repeated request id with its name, not a conflict', async () => {
    const h = setup();
    const a = await named(h, 'w', 'pc-1', { requestId: 'r1', requestNamespace: 'pc-1' });
    const b = await named(h, 'w', 'pc-1', { requestId: 'r1', requestNamespace: 'pc-1' });
    expect(b).toMatchObject({ ok: true, value: { created: false } });
    expect(a.ok && b.ok && a.value.task.id === b.value.task.id).toBe(true);
  });

  it('lets only one of two concurrent creations of a name through (guards against both finding it free)', async () => {
    const h = setup();
    const rs = await Promise.all([1, 2, 3].map(() => named(h, 'twin', 'pc-1')));
    expect(rs.filter((r) => r.ok).length).toBe(1);
    expect(rs.filter((r) => !r.ok && r.error.code === 'conflict').length).toBe(2);
  });

  it('frees the name when the task ends; a retry or message that would reopen it while another has it is refused', async () => {
    const h = setup();
    const first = await named(h, 'w', 'pc-1');
    if (!first.ok) throw new Error(first.error.message);
    const old = first.value.task.id;
    expect(await h.ops.cancel(old, 'stop')).toMatchObject({ ok: true });
    const second = await named(h, 'w', 'pc-1');
    expect(second).toMatchObject({ ok: true });
    expect(await h.ops.retry(old)).toMatchObject({ ok: false, error: { code: 'conflict', path: '$.name' } });
    expect(await h.ops.message(old, 'go on', 'cli')).toMatchObject({
      ok: false,
      error: { code: 'conflict' },
    });
    expect(await h.statusOf(old)).toBe('cancelled');
    expect((await h.store.getHistory(old)).filter((e) => e.type === 'message')).toEqual([]);
    if (second.ok) await h.ops.cancel(second.value.task.id, 'stop');
    expect(await h.ops.retry(old)).toMatchObject({ ok: true });
  });

  it('resolves an agent among the live tasks a scope admits', async () => {
    const h = setup();
    const a = await named(h, 'w', 'pc-1');
    await named(h, 'w', 'pc-2');
    const mine = await h.ops.resolveAgent('w', (t) => h.ops.canAccess(t, 'pc-1'));
    expect(mine.ok && a.ok && mine.task.id === a.value.task.id).toBe(true);
    expect(await h.ops.resolveAgent('w', () => true)).toMatchObject({ ok: false, code: 'ambiguous' });
    expect(await h.ops.resolveAgent('nope', () => true)).toMatchObject({ ok: false, code: 'not_found' });
  });
});
