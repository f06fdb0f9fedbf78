import type Database from 'better-sqlite3';

interface QueuedWrite {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
  /** Time (ms, `now()`) after which a write still waiting for another process's lock is refused. */
  deadline: number;
  /** `run` may run again after its transaction was rolled back (see {@link EnqueueOptions.rerunnable}). */
  rerunnable: boolean;
}

/** Options of {@link WriteQueue.enqueue}. */
export interface EnqueueOptions {
  /** How long this write may wait for another process's lock (ms; default the queue's `lockTimeoutMs`). */
  lockTimeoutMs?: number;
  /**
   * `run` does nothing but statements on the connection and staging through the queue's {@link TransactionListener},
   * so running it again after its transaction was rolled back gives what one run would have. Batches of such writes
   * run without a savepoint per write (see {@link WriteQueue}); any other write in a batch makes it use savepoints.
   */
  rerunnable?: boolean;
}

/** Outcome of one attempt to commit a batch, for health tracking. */
export type BatchOutcome =
  /** The batch committed; `writeErrors` are the errors of its writes that failed alone (possibly none). */
  | { ok: true; writeErrors: unknown[] }
  /** The batch could not start: another connection holds the write lock; it is retried. */
  | { ok: false; busy: true; waitedMs: number }
  /** The batch (or its commit) failed; its writes were rejected. */
  | { ok: false; busy: false; error: unknown };

/**
 * Told where each transaction of the queue stands, synchronously, so that state kept beside the database (what a
 * row was last written with) follows what is really committed. Must not throw.
 */
export interface TransactionListener {
  /**
   * The write that just ran ended: its savepoint was released (`kept`) or rolled back alone. (In a batch run without
   * savepoints, `kept` for each write that returned; a write that throws there ends with `rolledBack`.)
   */
  writeEnded(kept: boolean): void;
  /** The transaction committed (before any write's promise settles). */
  committed(): void;
  /** The transaction was rolled back, lost (SQLite undid it), or its COMMIT failed: nothing of it may be assumed. */
  rolledBack(): void;
}

/** Options of {@link WriteQueue}. */
export interface WriteQueueOptions {
  /** Maps an error thrown by a write (or the commit) to what its caller sees. */
  mapError: (err: unknown) => unknown;
  /** The error a write gets when it waited `waitedMs` for the lock and its deadline passed. */
  lockedError: (waitedMs: number) => unknown;
  /** How long a write may wait for another process's write lock, in ms (default 5000). */
  lockTimeoutMs?: number;
  /** Called after every batch attempt (health tracking). Must not throw. */
  onOutcome?: (outcome: BatchOutcome) => void;
  /** Monotonic milliseconds (default `performance.now`). */
  now?: () => number;
  /** Follows every transaction (see {@link TransactionListener}). */
  transactions?: TransactionListener;
}

/** Most writes grouped into one transaction (bounds the time the event loop is held by one flush). */
const MAX_BATCH = 256;
/** First and largest pause between attempts to take a lock another process holds (ms). */
const RETRY_MIN_MS = 2;
const RETRY_MAX_MS = 50;

/**
 * Group commit. Writes requested in the same turn of the event loop run in ONE SQLite transaction (one fsync), each
 * inside its own savepoint so a write that throws (a conflict, an unknown task) is rolled back alone. A batch of
 * rerunnable writes (see {@link EnqueueOptions.rerunnable}) first runs optimistically without savepoints (two
 * statements per write fewer); if one of its writes throws, the whole transaction is rolled back (listeners told) and
 * the batch runs again the savepoint way, so the outcome is the same: only the failing write is voided. Every promise
 * settles only after the enclosing transaction has committed, so a resolved write is durable; if the commit itself
 * fails, every write of the batch rejects and nothing of the batch is kept.
 *
 * Another process holding the write lock (`SQLITE_BUSY` at `BEGIN IMMEDIATE`) never blocks the event loop for long:
 * the connection's own `busy_timeout` is a few milliseconds, and the batch is retried asynchronously with backoff
 * until each write's deadline (`lockTimeoutMs` after it was queued), after which that write is refused with
 * `lockedError`. Writes keep their order across retries.
 */
export class WriteQueue {
  private pending: QueuedWrite[] = [];
  private scheduled = false;
  private retryTimer: NodeJS.Timeout | undefined;
  private retryDelay = RETRY_MIN_MS;
  private busySince: number | undefined;
  private readonly lockTimeoutMs: number;
  private readonly now: () => number;
  private statements:
    | Record<'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo', Database.Statement>
    | undefined;

  constructor(
    private readonly db: Database.Database,
    private readonly opts: WriteQueueOptions,
  ) {
    this.lockTimeoutMs = Math.max(0, opts.lockTimeoutMs ?? 5000);
    this.now = opts.now ?? (() => performance.now());
  }

  /** Queue `run` (synchronous, using the same connection) and settle with its result once committed. */
  enqueue<T>(run: () => T, opts: EnqueueOptions = {}): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({
        run,
        resolve: resolve as (value: unknown) => void,
        reject,
        deadline: this.now() + Math.max(0, opts.lockTimeoutMs ?? this.lockTimeoutMs),
        rerunnable: opts.rerunnable === true,
      });
      // While waiting out another process's lock, new writes join the next retry instead of hammering the lock.
      if (!this.scheduled && this.retryTimer === undefined) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Writes waiting for the next flush (or retry). */
  get size(): number {
    return this.pending.length;
  }

  /** Since when (ms, `now()`) writes wait for another process's lock; undefined when they are not waiting. */
  get lockWaitSince(): number | undefined {
    return this.busySince;
  }

  /**
   * Commit everything queued now. `final` (used by `close`): one attempt, and whatever cannot take the lock is
   * refused at once instead of being retried.
   */
  flush(final = false): void {
    this.scheduled = false;
    if (this.retryTimer !== undefined) {
      clearTimeout(this.retryTimer);
      this.retryTimer = undefined;
    }
    while (this.pending.length > 0) {
      let batch = this.pending.splice(0, MAX_BATCH);
      let outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      const lostErrors: unknown[] = [];
      try {
        for (;;) {
          try {
            this.runBatch(batch, outcomes);
            break;
          } catch (error) {
            if (!(error instanceof TransactionLost)) throw error;
            // SQLite rolled the whole transaction back on one write's error (it does so for SQLITE_FULL, IOERR…):
            // that write fails; the others, undone with it, run again in a fresh transaction.
            const lost = batch[error.index] as QueuedWrite;
            lostErrors.push(error.error);
            lost.reject(this.opts.mapError(error.error));
            batch = batch.filter((_, i) => i !== error.index);
            outcomes = [];
            if (batch.length === 0) {
              this.report({ ok: false, busy: false, error: error.error });
              break;
            }
          }
        }
      } catch (error) {
        if (isBusy(error) && !this.db.inTransaction && outcomes.length === 0) {
          // Nothing of the batch ran (BEGIN IMMEDIATE could not take the lock): wait and try again.
          this.waitForLock(batch, final);
          return;
        }
        this.report({ ok: false, busy: false, error });
        const mapped = this.opts.mapError(error);
        for (const write of batch) write.reject(mapped);
        continue;
      }
      this.busySince = undefined;
      this.retryDelay = RETRY_MIN_MS;
      // A write can fail alone for a storage reason too (SQLITE_FULL while inserting a large row): reported with
      // the batch, so health does not read "fine" because the small writes beside it went through.
      const writeErrors = [...lostErrors];
      for (const o of outcomes) if (!o.ok) writeErrors.push(o.error);
      this.report({ ok: true, writeErrors });
      batch.forEach((write, i) => {
        const o = outcomes[i];
        if (o?.ok) write.resolve(o.value);
        else write.reject(this.opts.mapError(o?.error));
      });
    }
  }

  /** Refuse what is queued (the store is closing and cannot commit it). */
  rejectAll(error: unknown): void {
    if (this.retryTimer !== undefined) clearTimeout(this.retryTimer);
    this.retryTimer = undefined;
    for (const write of this.pending.splice(0)) write.reject(error);
  }

  private waitForLock(batch: QueuedWrite[], final: boolean): void {
    const now = this.now();
    this.busySince ??= now;
    const waited = now - this.busySince;
    this.report({ ok: false, busy: true, waitedMs: waited });
    const keep: QueuedWrite[] = [];
    const refused: QueuedWrite[] = [];
    for (const write of batch) (final || now >= write.deadline ? refused : keep).push(write);
    this.pending.unshift(...keep);
    if (final) refused.push(...this.pending.splice(0));
    if (refused.length > 0) {
      const error = this.opts.lockedError(waited);
      this.report({ ok: false, busy: false, error });
      for (const write of refused) write.reject(error);
    }
    if (this.pending.length === 0) {
      // Nobody waits any more: the verdict (locked) stands until a write succeeds.
      this.busySince = undefined;
      this.retryDelay = RETRY_MIN_MS;
      return;
    }
    const delay = this.retryDelay;
    this.retryDelay = Math.min(RETRY_MAX_MS, this.retryDelay * 2);
    this.retryTimer = setTimeout(() => {
      this.retryTimer = undefined;
      this.flush();
    }, delay);
  }

  private report(outcome: BatchOutcome): void {
    try {
      this.opts.onOutcome?.(outcome);
    } catch {
      // health tracking must never break a commit
    }
  }

  private runBatch(
    batch: QueuedWrite[],
    outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }>,
  ) {
    // Statements prepared once (db.transaction() would prepare its BEGIN/SAVEPOINT statements on every call).
    const s = (this.statements ??= {
      begin: this.db.prepare('BEGIN IMMEDIATE'),
      commit: this.db.prepare('COMMIT'),
      rollback: this.db.prepare('ROLLBACK'),
      savepoint: this.db.prepare('SAVEPOINT ccagent_write'),
      release: this.db.prepare('RELEASE ccagent_write'),
      rollbackTo: this.db.prepare('ROLLBACK TO ccagent_write'),
    });
    const tx = this.opts.transactions;
    if (batch.every((w) => w.rerunnable) && this.runOptimistic(batch, outcomes)) return;
    s.begin.run();
    try {
      for (const write of batch) {
        s.savepoint.run();
        try {
          const value = write.run();
          s.release.run();
          tx?.writeEnded(true);
          outcomes.push({ ok: true, value });
        } catch (error) {
          if (!this.db.inTransaction) throw new TransactionLost(outcomes.length, error);
          s.rollbackTo.run();
          s.release.run();
          tx?.writeEnded(false);
          outcomes.push({ ok: false, error });
        }
      }
      s.commit.run();
    } catch (error) {
      this.rollBackOpen();
      throw error;
    }
    tx?.committed();
  }

  /** A batch threw: roll back the transaction if SQLite has not already, and tell the listener either way. */
  private rollBackOpen(): void {
    try {
      if (this.db.inTransaction) this.statements?.rollback.run();
    } finally {
      this.opts.transactions?.rolledBack();
    }
  }

  /**
   * Run the batch in one transaction without savepoints. True when it committed (`outcomes` filled, all ok); false
   * when a write threw and the transaction was rolled back (listeners told, `outcomes` emptied): run it again with
   * savepoints. Throws as {@link runBatch} does when SQLite lost the transaction or BEGIN/COMMIT failed.
   */
  private runOptimistic(
    batch: QueuedWrite[],
    outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }>,
  ): boolean {
    const s = this.statements as NonNullable<typeof this.statements>;
    const tx = this.opts.transactions;
    s.begin.run();
    let failed = false;
    try {
      for (const write of batch) {
        let value: unknown;
        try {
          value = write.run();
        } catch (error) {
          if (!this.db.inTransaction) throw new TransactionLost(outcomes.length, error);
          failed = true;
          break;
        }
        tx?.writeEnded(true);
        outcomes.push({ ok: true, value });
      }
      if (failed) s.rollback.run();
      else s.commit.run();
    } catch (error) {
      this.rollBackOpen();
      throw error;
    }
    if (failed) {
      tx?.rolledBack();
      outcomes.length = 0;
      return false;
    }
    tx?.committed();
    return true;
  }
}

/** The write at `index` failed and SQLite rolled back the whole transaction with it. */
class TransactionLost extends Error {
  constructor(
    readonly index: number,
    readonly error: unknown,
  ) {
    super('transaction rolled back by SQLite');
  }
}

/** True for SQLite's "another connection holds the lock" errors (SQLITE_BUSY and its extended codes). */
export function isBusy(err: unknown): boolean {
  const code = (err as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('SQLITE_BUSY');
}
