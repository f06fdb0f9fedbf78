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
 * fails, every write of the batch rejects.
 */
export class WriteQueue {
  private pending: QueuedWrite[] = [];
  private scheduled = false;

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
        this.db
          .transaction(() => {
            for (const write of batch) {
              try {
                // A nested better-sqlite3 transaction is a savepoint: a throwing write undoes only itself.
                outcomes.push({ ok: true, value: this.db.transaction(write.run)() });
              } catch (error) {
                outcomes.push({ ok: false, error });
              }
            }
          })
          .immediate();
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
}
