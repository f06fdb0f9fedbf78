import type pg from 'pg';

/**
 * What a pipelined write returns: every statement of it was already handed to the (pipelining) client — or its rows
 * to the batch's groups, which the queue sends before COMMIT (see the `flush` option) — and its staging done, when the
 * write function returned; `result` settles when their answers arrived (see {@link PgWriteQueue}). The COMMIT is sent behind it before its answers are read, so `result` may reject for two
 * reasons only: a statement failed (the database aborted the transaction: nothing of the batch is kept), or every
 * statement ran and the write refuses on what they returned — then it must have changed and staged nothing (say, a
 * conditional UPDATE that matched no row), because the rest of the batch commits.
 */
export class Sent<T> {
  constructor(readonly result: Promise<T>) {}
}

/**
 * A queued write: runs its statements on the writer connection, inside the batch's transaction. Either an async
 * function (its statements may wait for each other's answers: the queue waits for it before the next write), or a
 * function that sends every statement without waiting for an answer and returns {@link Sent} (the queue goes on at
 * once, so a batch of such writes costs one round trip). A write of the second kind must not send a statement and
 * then throw synchronously.
 */
export type Work<T = unknown> = (client: pg.ClientBase) => Promise<T> | Sent<T>;

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
  /**
   * A connected client for writes; called again after the previous one broke. A client in pipeline mode
   * (`pipeline: true`) sends a batch's statements without waiting for answers, so a batch costs one round trip.
   */
  connect: () => Promise<pg.Client>;
  /**
   * Starts every transaction (default `BEGIN`): sends its statements at once (the store's `BEGIN` and fencing check)
   * and returns their outcome, which must reject when the transaction must not commit: a pipelining client runs the
   * writes and the COMMIT behind them without waiting, so the check must fail in the database too (an error there
   * aborts the transaction, and the COMMIT behind it rolls back). Throwing synchronously rejects the whole batch
   * before anything is sent.
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
  /**
   * Send what the batch's writes left to be sent together (the store's grouped rows, see `RowGroups`): called before
   * the COMMIT is sent, and after each write when a batch runs with a savepoint per write. Must not throw.
   */
  flush?: (client: pg.ClientBase) => void;
  /** Drop what {@link flush} would have sent: the transaction will not commit (their writes reject with `reason`). */
  discard?: (reason: unknown) => void;
}

/** Most writes grouped into one transaction (a pipelined batch of them is one round trip). */
const MAX_BATCH = 1024;

/**
 * Group commit on one writer connection. Writes queued while a transaction is running run together in the next one,
 * in the order they were queued; on a pipelining client the batch's BEGIN, statements and COMMIT go out one behind
 * the other, so a batch of {@link Sent} writes costs one round trip (and one WAL flush). A write that throws (a
 * conflict, an unknown task) is rolled back alone (the batch runs again with a savepoint per write). Every promise settles only after the enclosing COMMIT returned, and
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
  enqueue<T>(run: Work<T>): Promise<T> {
    return new Promise<T>((resolve, reject) => {
      this.pending.push({ run: run as Work, resolve: resolve as (v: unknown) => void, reject });
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
    // Optimistic first: one transaction without savepoints, its statements pipelined. If one of its writes throws, the
    // transaction is rolled back (listeners told) and a batch of several writes runs again the savepoint way, so only
    // the failing write is voided. Writes are rerunnable: statements, and staging through the listeners.
    const first = await this.attempt(batch);
    if (first === 'retry') await this.attemptWithSavepoints(batch);
  }

  /**
   * One transaction over `batch`, no savepoints: `BEGIN` (and the fencing check), the writes and `COMMIT` sent one
   * behind the other without waiting for answers (an async write waits for what was sent before it, then runs), then
   * every answer read. A statement's error aborts the transaction in the database, so the COMMIT behind it rolls
   * back; `'retry'` then (a batch of one write: it is rejected alone, the database as it was). A write that fails
   * before the COMMIT is sent gets a ROLLBACK instead.
   */
  private async attempt(batch: QueuedWrite[]): Promise<'done' | 'retry'> {
    const values: unknown[] = new Array<unknown>(batch.length);
    /** Answers in the order their statements were sent: the begin's, then one per write sent. */
    const sent: Array<{ write: number; answer: Promise<unknown> }> = [];
    const send = (write: number, answer: Promise<unknown>): void => {
      answer.catch(() => undefined); // read below, in order
      sent.push({ write, answer });
    };
    let client: pg.Client | undefined;
    let failed: WriteFailed | undefined;
    let commit: Promise<pg.QueryResult> | undefined;
    // Everything the batch sends before it reads an answer goes out in one write to the socket (pg writes each query
    // on its own otherwise: a system call per statement), and again after each write that waits for an answer.
    let socket: ReturnType<typeof corkable> = undefined;
    try {
      client = await this.writer();
      socket = corkable(client);
      socket?.cork();
      send(-1, this.opts.begin ? this.opts.begin(client) : client.query('BEGIN'));
    } catch (err) {
      // Nothing was sent (no writer connection, or the begin refused synchronously: no lease token).
      socket?.uncork();
      this.opts.onRolledBack?.();
      this.fail(batch, err);
      return 'done';
    }
    try {
      for (let i = 0; i < batch.length && failed === undefined; i++) {
        const w = batch[i] as QueuedWrite;
        try {
          const out = w.run(client);
          if (out instanceof Sent) {
            this.opts.onWriteEnded?.(true);
            send(
              i,
              out.result.then((v) => (values[i] = v)),
            );
          } else {
            socket?.uncork();
            try {
              values[i] = await out;
            } finally {
              socket?.cork();
            }
            this.opts.onWriteEnded?.(true);
          }
        } catch (error) {
          this.opts.onWriteEnded?.(false);
          failed = new WriteFailed(error);
        }
      }
      if (failed === undefined) {
        this.opts.flush?.(client);
        commit = client.query('COMMIT');
        send(-2, commit);
      } else this.opts.discard?.(failed.error);
    } finally {
      socket?.uncork();
    }
    const answers = await Promise.allSettled(sent.map((s) => s.answer));
    const committed =
      commit !== undefined && answers.at(-1)?.status === 'fulfilled' && (await commit).command === 'COMMIT';
    if (committed) {
      // Every statement ran. A write whose answer rejects anyway refused on what it read and changed nothing (the
      // contract of `Sent`): it alone is rejected.
      this.opts.onCommitted?.();
      const writeErrors: unknown[] = [];
      const refused = new Map<number, unknown>();
      sent.forEach((s, k) => {
        const a = answers[k];
        if (s.write >= 0 && a?.status === 'rejected') refused.set(s.write, a.reason);
      });
      batch.forEach((w, i) => {
        if (!refused.has(i)) return w.resolve(values[i]);
        writeErrors.push(refused.get(i));
        w.reject(this.opts.mapError(refused.get(i)));
      });
      this.opts.onOutcome?.({ ok: true, writeErrors });
      return 'done';
    }
    await this.rollback(client);
    this.opts.onRolledBack?.();
    // The first failure in the order sent decides: the begin's (fenced: nothing of the batch may be kept), a write's
    // (it alone is to blame; the others run again), or the COMMIT's (the connection).
    const k = answers.findIndex((a) => a.status === 'rejected');
    const first = k >= 0 ? (sent[k] as (typeof sent)[number]) : undefined;
    const cause: unknown = first === undefined ? failed : (answers[k] as PromiseRejectedResult).reason;
    if (first !== undefined && first.write < 0) {
      this.fail(batch, cause);
      return 'done';
    }
    if (cause === undefined) {
      this.fail(batch, new Error('the write transaction was rolled back'));
      return 'done';
    }
    if (batch.length > 1) return 'retry';
    // The only write of the batch failed on its own: it alone is rejected, the database is as it was.
    const error = cause instanceof WriteFailed ? cause.error : cause;
    this.opts.onOutcome?.({ ok: true, writeErrors: [error] });
    batch[0]?.reject(this.opts.mapError(error));
    return 'done';
  }

  /** One transaction over `batch` with a savepoint per write, so a failing write is rolled back alone. */
  private async attemptWithSavepoints(batch: QueuedWrite[]): Promise<void> {
    const results: Array<{ ok: true; value: unknown } | { ok: false; error: unknown }> = [];
    let client: pg.Client | undefined;
    try {
      client = await this.writer();
      await (this.opts.begin ? this.opts.begin(client) : client.query('BEGIN'));
      for (const w of batch) {
        await client.query('SAVEPOINT w');
        try {
          const out = w.run(client);
          if (out instanceof Sent) this.opts.flush?.(client);
          const value = await (out instanceof Sent ? out.result : out);
          await client.query('RELEASE SAVEPOINT w');
          this.opts.onWriteEnded?.(true);
          results.push({ ok: true, value });
        } catch (error) {
          this.opts.discard?.(error);
          this.opts.onWriteEnded?.(false);
          await client.query('ROLLBACK TO SAVEPOINT w');
          results.push({ ok: false, error });
        }
      }
      const commit = await client.query('COMMIT');
      if (commit.command !== 'COMMIT') throw new Error('the write transaction was rolled back');
    } catch (err) {
      if (client) await this.rollback(client);
      this.opts.onRolledBack?.();
      this.fail(batch, err);
      return;
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
  }

  /** The transaction (BEGIN, fencing check, COMMIT or the connection) failed: every write of it rejects. */
  private fail(batch: QueuedWrite[], err: unknown): void {
    this.opts.onOutcome?.({ ok: false, error: err });
    const mapped = this.opts.mapError(err);
    for (const w of batch) w.reject(mapped);
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

/** The socket under a `pg` client, to send several queries in one write (`cork` … `uncork`); pg's own internals. */
function corkable(client: pg.ClientBase): { cork(): void; uncork(): void } | undefined {
  const stream = (client as unknown as { connection?: { stream?: { cork?: unknown; uncork?: unknown } } })
    .connection?.stream;
  return typeof stream?.cork === 'function' && typeof stream.uncork === 'function'
    ? (stream as { cork(): void; uncork(): void })
    : undefined;
}

/** The one write of a batch run without savepoints threw. */
class WriteFailed {
  constructor(readonly error: unknown) {}
}
