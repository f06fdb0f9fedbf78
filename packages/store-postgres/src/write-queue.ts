import type pg from 'pg';

/** A queued write: runs its statements on the writer connection, inside the batch's transaction. */
type Work = (client: pg.ClientBase) => Promise<unknown>;

interface QueuedWrite {
  run: Work;
  resolve: (value: unknown) => void;
  reject: (reason: unknown) => void;
}

/** Outcome of one batch, for health tracking. */
export type BatchOutcome =
  /** The batch committed; `writeErrors` are the errors of its writes that failed alone (possibly none). */
  | { ok: true; writeErrors: unknown[] }
  /** The batch (its BEGIN, fencing check or COMMIT, or the connection) failed; every write of it was rejected. */
  | { ok: false; error: unknown };

/** Options of {@link PgWriteQueue}. */
export interface PgWriteQueueOptions {
  /** A connected client for writes; called again after the previous one broke. */
  connect: () => Promise<pg.Client>;
  /**
   * Starts every transaction (default `BEGIN`): the store sends `BEGIN` and its fencing check in one round trip.
   * Throwing rejects the whole batch.
   */
  begin?: (client: pg.ClientBase) => Promise<unknown>;
  /** Maps an error thrown by a write (or by the transaction) to what its caller sees. */
  mapError: (err: unknown) => unknown;
  /** Called after every batch. Must not throw. */
  onOutcome?: (outcome: BatchOutcome) => void;
  /** Told when a batch committed (before any promise of it settles) or was rolled back. */
  onCommitted?: () => void;
  onRolledBack?: () => void;
  /** A write of the running transaction ended: kept (its savepoint released, or it returned) or rolled back. */
  onWriteEnded?: (kept: boolean) => void;
}

/** Most writes grouped into one transaction. */
const MAX_BATCH = 256;

/**
 * Group commit on one writer connection. Writes queued while a transaction is running run together in the next one,
 * in the order they were queued; a write that throws (a conflict, an unknown task) is rolled back alone (the batch
 * runs again with a savepoint per write). Every promise settles only after the enclosing COMMIT returned, and
 * PostgreSQL returns from COMMIT only once the transaction is durable (`synchronous_commit` on, its default): a
 * resolved write is committed. If BEGIN, the fencing check or COMMIT fails, or the connection breaks, every write of
 * the batch rejects and nothing of it is kept (a COMMIT whose answer was lost is reported as failed: PostgreSQL rolls
 * back a transaction whose session dies before the commit record is written).
 */
export class PgWriteQueue {
  private pending: QueuedWrite[] = [];
  private running = false;
  private client: pg.Client | undefined;
  private connecting: Promise<pg.Client> | undefined;
  private closed = false;

  constructor(private readonly opts: PgWriteQueueOptions) {}

  /** Writes waiting for their transaction. */
  get size(): number {
    return this.pending.length;
  }

  /** Queue `run` and settle with its result once its transaction committed. */
  enqueue<T>(run: (client: pg.ClientBase) => Promise<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run, resolve: resolve as (v: unknown) => void, reject });
      if (!this.running) {
        this.running = true;
        // Let writes requested in the same turn of the event loop join the first batch.
        setImmediate(() => void this.drain());
      }
    });
  }

  /** Wait for every queued write to settle, then close the writer connection. */
  async close(): Promise<void> {
    this.closed = true;
    while (this.running || this.pending.length > 0) {
      if (!this.running) {
        this.running = true;
        await this.drain();
      } else await new Promise((r) => setTimeout(r, 1));
    }
    const c = this.client;
    this.client = undefined;
    await c?.end().catch(() => undefined);
  }

  private async drain(): Promise<void> {
    try {
      while (this.pending.length > 0) {
        const batch = this.pending.splice(0, MAX_BATCH);
        await this.runBatch(batch);
      }
    } finally {
      this.running = false;
    }
  }

  private async writer(): Promise<pg.Client> {
    if (this.client) return this.client;
    this.connecting ??= this.opts.connect().finally(() => (this.connecting = undefined));
    const c = await this.connecting;
    // A broken connection is dropped; the next batch opens another.
    c.on('error', () => {
      if (this.client === c) this.client = undefined;
    });
    if (this.closed) {
      await c.end().catch(() => undefined);
      throw new Error('store is closed');
    }
    this.client = c;
    return c;
  }

  private async runBatch(batch: QueuedWrite[]): Promise<void> {
    // Optimistic first: one transaction without savepoints (two round trips per write fewer). If one of its writes
    // throws, the transaction is rolled back (listeners told) and the batch runs again the savepoint way, so only the
    // failing write is voided. Writes are rerunnable: statements, and staging through the listeners.
    if (batch.length > 1) {
      const first = await this.attempt(batch, false);
      if (first !== 'retry') return;
    }
    await this.attempt(batch, true);
  }

  /** One transaction over `batch`; `'retry'` when a write threw in a run without savepoints. */
  private async attempt(batch: QueuedWrite[], savepoints: boolean): Promise<'done' | 'retry'> {
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    const single = batch.length === 1;
    let client: pg.Client | undefined;
    try {
      client = await this.writer();
      await (this.opts.begin ? this.opts.begin(client) : client.query('BEGIN'));
      for (const w of batch) {
        if (savepoints) await client.query('SAVEPOINT w');
        try {
          const value = await w.run(client);
          if (savepoints) await client.query('RELEASE SAVEPOINT w');
          this.opts.onWriteEnded?.(true);
          results.push({ ok: true, value });
        } catch (error) {
          this.opts.onWriteEnded?.(false);
          if (!savepoints) throw new WriteFailed(error);
          await client.query('ROLLBACK TO SAVEPOINT w');
          results.push({ ok: false, error });
        }
      }
      await client.query('COMMIT');
    } catch (err) {
      if (client) await this.rollback(client);
      this.opts.onRolledBack?.();
      if (err instanceof WriteFailed) {
        if (!single) return 'retry';
        // The only write of the batch failed on its own: it alone is rejected, the database is as it was.
        this.opts.onOutcome?.({ ok: true, writeErrors: [err.error] });
        batch[0]?.reject(this.opts.mapError(err.error));
        return 'done';
      }
      this.opts.onOutcome?.({ ok: false, error: err });
      const mapped = this.opts.mapError(err);
      for (const w of batch) w.reject(mapped);
      return 'done';
    }
    this.opts.onCommitted?.();
    const writeErrors: unknown[] = [];
    results.forEach((r, i) => {
      const w = batch[i] as QueuedWrite;
      if (r.ok) w.resolve(r.value);
      else {
        writeErrors.push(r.error);
        w.reject(this.opts.mapError(r.error));
      }
    });
    this.opts.onOutcome?.({ ok: true, writeErrors });
    return 'done';
  }

  private async rollback(client: pg.Client): Promise<void> {
    try {
      await client.query('ROLLBACK');
    } catch {
      // The connection is gone (PostgreSQL rolled the transaction back itself): start over on a new one.
      if (this.client === client) this.client = undefined;
      await client.end().catch(() => undefined);
    }
  }
}

/** The one write of a batch run without savepoints threw. */
class WriteFailed {
  constructor(readonly error: unknown) {}
}
