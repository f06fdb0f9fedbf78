/**
 * The engine's per-task cache and per-task lock. Owns: each cached task's committed row, its history once loaded
 * (lent to a step without a copy, copied on change while lent) and its open call; the LRU bound; the index of every
 * unfinished task's status and deadline (what the tick reads); the per-task lock that serialises state changes, and
 * the tasks *speculating* (a command result's commit queued, the next step already deciding from it).
 *
 * The engine is the only writer of its tasks and commits every change of a task under that task's lock, so a copy
 * updated after each successful commit equals the stored state. Loads from the store happen under the lock too (a
 * load racing a commit could otherwise cache a stale row). Strategies get the cached task and history and must treat
 * both as read-only.
 */
import type { EngineKernel } from './engine-kernel.js';
import { EngineError } from './engine-error.js';
import type { CommitResult, TaskCommit } from './ports.js';
import { isTerminalStatus } from './task-state-machine.js';
import type { CommandCallRecord, HistoryEntry, Task, TaskStatus } from './types.js';

/** A task's committed row, and its history once loaded (kept equal to the store's after every commit). */
export interface CachedTask {
  task: Task;
  history: HistoryEntry[] | undefined;
  /**
   * Steps deciding from `history` right now: the array is lent to the strategy as it is (copying it on every step
   * made a long task O(n²), see docs/benchmarks.md "Night-long task"), so a change while it is lent replaces the
   * array with a changed copy instead (see `ownHistory`) and the strategy keeps seeing the history it started from.
   */
  lent?: number;
  /**
   * The command call row this engine last committed for the task, as stored: a command result finds its open call
   * here instead of reading it back from the store on every round trip. Undefined after a load from the store.
   */
  call?: CommandCallRecord;
}

/** See the module comment. */
export class TaskCache {
  readonly entries = new Map<string, CachedTask>();

  /**
   * Every unfinished task's status and deadline, kept from the commits (the engine is the store's only writer): the
   * tick reads this instead of decoding every unfinished task from the store once a second.
   */
  readonly unfinished = new Map<
    string,
    { status: TaskStatus; deadlineAt: number | undefined; generation: number }
  >();
  private readonly locks = new Map<string, Promise<void>>();
  /**
   * Tasks whose latest commit (a command result) is queued but not yet durable, while their next step is already
   * being decided from the state it will produce (so the step's commit joins the same transaction: one fsync per
   * command round trip instead of two). Everything else that touches the task waits for it.
   */
  readonly speculating = new Map<string, Promise<unknown>>();

  constructor(
    private readonly k: EngineKernel,
    /** Most tasks kept (least recently used evicted); 0 keeps none. */
    private readonly cacheSize: number,
  ) {}

  /** Keep {@link unfinished} in step with a committed task. */
  noteStatus(task: Task): void {
    if (isTerminalStatus(task.status)) this.unfinished.delete(task.id);
    else {
      const generation = (this.unfinished.get(task.id)?.generation ?? 0) + 1;
      this.unfinished.set(task.id, { status: task.status, deadlineAt: task.budgets.deadlineAt, generation });
    }
  }

  /** Changes with every commit (and failed commit) of an unfinished task; undefined for others. */
  generation(taskId: string): number | undefined {
    return this.unfinished.get(taskId)?.generation;
  }

  /** The task, under its lock: from the cache, else from the store (then cached). */
  async requireTask(taskId: string): Promise<Task> {
    const hit = this.cacheGet(taskId);
    if (hit) return hit.task;
    const task = await this.k.store.getTask(taskId);
    if (!task) throw new EngineError('task_not_found', `task ${taskId} not found`, { details: { taskId } });
    if (!isTerminalStatus(task.status)) this.cacheSet(taskId, { task, history: undefined });
    return task;
  }

  /**
   * The task without holding its lock (the scheduler's read): a cache hit, else a store read that is cached only if
   * no commit of the task happened meanwhile (it could be older than the cache then).
   */
  async readTask(taskId: string): Promise<Task | undefined> {
    const hit = this.cacheGet(taskId);
    if (hit) return hit.task;
    const before = this.generation(taskId);
    const task = await this.k.store.getTask(taskId);
    if (task && before !== undefined && this.generation(taskId) === before && !this.entries.has(taskId)) {
      this.cacheSet(taskId, { task, history: undefined });
    }
    return task;
  }

  /** The task's history, under its lock (the cached array itself: do not keep or change it). */
  async lockedHistory(taskId: string): Promise<HistoryEntry[]> {
    const hit = this.cacheGet(taskId);
    if (hit?.history) return hit.history;
    await this.requireTask(taskId);
    const history = await this.k.store.getHistory(taskId);
    const entry = this.entries.get(taskId);
    if (entry) entry.history = history;
    return history;
  }

  /** A copy of the task's history without holding its lock (cached like {@link readTask}). */
  async readHistory(taskId: string): Promise<HistoryEntry[]> {
    const hit = this.cacheGet(taskId)?.history;
    return hit ? hit.slice() : this.loadHistory(taskId);
  }

  /** The task's history from the store, cached when no commit of the task happened during the read. */
  loadHistory(taskId: string): Promise<HistoryEntry[]> {
    const before = this.generation(taskId);
    const loading = this.k.store.getHistory(taskId);
    // Checked in a reaction on the store's own promise: no extra turn before the caller gets the history.
    void loading.then(
      (history) => {
        const entry = this.entries.get(taskId);
        if (
          entry &&
          entry.history === undefined &&
          before !== undefined &&
          this.generation(taskId) === before
        ) {
          entry.history = history.slice();
        }
      },
      () => undefined,
    );
    return loading;
  }

  /** Commit a change of a task (caller holds its lock) and bring the cache in line with what was stored. */
  async commitTask(change: TaskCommit): Promise<CommitResult> {
    let committed: CommitResult;
    try {
      committed = await this.k.store.commit(change);
    } catch (err) {
      this.cacheDrop(change.task.id);
      throw err;
    }
    this.cacheCommitted(change.task, committed, change.commandCall);
    return committed;
  }

  /**
   * `task` is stored with `committed.history` appended (replacing entries predicted for it while speculating), and
   * `call`, if the commit wrote one.
   */
  cacheCommitted(task: Task, committed: CommitResult, call?: CommandCallRecord): void {
    this.noteStatus(task);
    if (isTerminalStatus(task.status)) {
      this.entries.delete(task.id); // never stepped again
      return;
    }
    const entry = this.cacheGet(task.id);
    if (!entry) {
      this.cacheSet(task.id, call ? { task, history: undefined, call } : { task, history: undefined });
      return;
    }
    entry.task = task;
    if (call) entry.call = call;
    const added = committed.history;
    const h = entry.history;
    if (!h || added.length === 0) return;
    const first = (added[0] as HistoryEntry).seq;
    let keep = h.length;
    while (keep > 0 && (h[keep - 1] as HistoryEntry).seq >= first) keep--;
    const before = keep > 0 ? (h[keep - 1] as HistoryEntry).seq : 0;
    if (before !== first - 1) {
      entry.history = undefined; // not contiguous: reload when next needed
      return;
    }
    const own = this.ownHistory(entry, h);
    own.length = keep;
    own.push(...added);
  }

  /** The cached history `h` of `entry`, to change in place: a copy of it (now cached) while a step decides from it. */
  ownHistory(entry: CachedTask, h: HistoryEntry[]): HistoryEntry[] {
    if (!entry.lent) return h;
    entry.lent = 0;
    entry.history = h.slice();
    return entry.history;
  }

  cacheGet(taskId: string): CachedTask | undefined {
    const entry = this.entries.get(taskId);
    if (entry) {
      // Most recently used last (Map keeps insertion order).
      this.entries.delete(taskId);
      this.entries.set(taskId, entry);
    }
    return entry;
  }

  private cacheSet(taskId: string, entry: CachedTask): void {
    if (this.cacheSize === 0) return;
    this.entries.delete(taskId);
    this.entries.set(taskId, entry);
    while (this.entries.size > this.cacheSize) {
      const oldest = this.entries.keys().next().value;
      if (oldest === undefined) break;
      this.entries.delete(oldest);
    }
  }

  cacheDrop(taskId: string): void {
    this.entries.delete(taskId);
    // A failed commit leaves the stored state uncertain to loads in flight: do not let them cache it.
    const u = this.unfinished.get(taskId);
    if (u) u.generation++;
  }

  /**
   * Serialise state changes of one task (the store's `expectedStatus` check backs this up). Unless `speculative`
   * (only the step decided from a not-yet-durable state), the holder first waits for such a state to be durable, so
   * it never reads a row the store has not written yet.
   */
  async withLock<T>(taskId: string, fn: () => Promise<T>, speculative = false): Promise<T> {
    const previous = this.locks.get(taskId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.locks.set(taskId, tail);
    await previous;
    try {
      if (!speculative) {
        const pending = this.speculating.get(taskId);
        if (pending) await pending.catch(() => undefined);
      }
      return await fn();
    } finally {
      release();
      if (this.locks.get(taskId) === tail) this.locks.delete(taskId);
    }
  }

  endSpeculation(taskId: string, settled: Promise<unknown>): void {
    if (this.speculating.get(taskId) === settled) this.speculating.delete(taskId);
  }
}
