import type Database from 'better-sqlite3';

interface QueuedWrite {
  run: () => unknown;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/** Most writes grouped into one transaction (bounds the time the event loop is held by one flush). */
const MAX_BATCH = 256;

/**
 * Group commit. Writes requested in the same turn of the event loop run in ONE SQLite transaction (one fsync), each
 * inside its own savepoint so a write that throws (a conflict, an unknown task) is rolled back alone. Every promise
 * settles only after the enclosing transaction has committed, so a resolved write is durable; if the commit itself
 * fails, every write of the batch rejects and nothing of the batch is kept.
 */
export class WriteQueue {
  private pending: QueuedWrite[] = [];
  private scheduled = false;
  private statements:
    | Record<'begin' | 'commit' | 'rollback' | 'savepoint' | 'release' | 'rollbackTo', Database.Statement>
    | undefined;

  constructor(
    private readonly db: Database.Database,
    /** Maps an error thrown by a write (or the commit) to what its caller sees. */
    private readonly mapError: (err: unknown) => unknown,
  ) {}

  /** Queue `run` (synchronous, using the same connection) and settle with its result once committed. */
  enqueue<T>(run: () => T): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run, resolve: resolve as (value: unknown) => void, reject });
      if (!this.scheduled) {
        this.scheduled = true;
        setImmediate(() => this.flush());
      }
    });
  }

  /** Writes waiting for the next flush. */
  get size(): number {
    return this.pending.length;
  }

  /** Commit everything queued now (also used by `close`). */
  flush(): void {
    this.scheduled = false;
    while (this.pending.length > 0) {
      const batch = this.pending.splice(0, MAX_BATCH);
      const outcomes: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
      try {
        this.runBatch(batch, outcomes);
      } catch (error) {
        const mapped = this.mapError(error);
        for (const write of batch) write.reject(mapped);
        continue;
      }
      batch.forEach((write, i) => {
        const o = outcomes[i];
        if (o?.ok) write.resolve(o.value);
        else write.reject(this.mapError(o?.error));
      });
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
    s.begin.run();
    try {
      for (const write of batch) {
        s.savepoint.run();
        try {
          const value = write.run();
          s.release.run();
          outcomes.push({ ok: true, value });
        } catch (error) {
          s.rollbackTo.run();
          s.release.run();
          outcomes.push({ ok: false, error });
        }
      }
      s.commit.run();
    } catch (error) {
      if (this.db.inTransaction) s.rollback.run();
      throw error;
    }
  }
}
