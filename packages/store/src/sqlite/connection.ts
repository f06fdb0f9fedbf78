/**
 * One open SQLite file and what every part of the store shares over it: the Drizzle database, the group-commit write
 * queue, the prepared statements, and the state kept beside the database that follows COMMIT (each task's memory
 * as last written, the commit path's view of each task's rows, the step messages known to be stored), staged per
 * write and forgotten on a rollback. Every read and write of the store goes through {@link SqliteConnection.read},
 * {@link SqliteConnection.write} (the engine port: `EngineError`s) or {@link SqliteConnection.writeStore}
 * (`StoreError`s).
 */
import { EngineError, isEngineError, type Logger, type TaskStatus } from '@ccagent/engine';
import type Database from 'better-sqlite3';
import { drizzle } from 'drizzle-orm/better-sqlite3';
import type { Checkpointer } from '../checkpointer.js';
import { CommittedState, MemoryWrites } from '../memory-writes.js';
import * as schema from '../schema.js';
import { isStoreError, MessageHashMemo, StoreError } from '@ccagent/store-core';
import { storageFailureCode, storageFailureMessage } from './failures.js';
import { WriteQueue, type BatchOutcome } from '../write-queue.js';
import {
  prepareReads,
  prepareWrites,
  type Orm,
  type ReadStatements,
  type WriteStatements,
} from './statements.js';

/** Default wait for another process's lock before a write is refused with `locked` (ms). */
export const DEFAULT_BUSY_TIMEOUT_MS = 5000;
/** Hashes of stored step messages remembered (about 100 bytes each): the messages and chunks of the last prompts. */
const STORED_MESSAGES_CAP = 8192;
/**
 * Every write this store queues is rerunnable (the queue may run it again after rolling its transaction back): it
 * runs statements on the connection and stages what it wrote in the staged state below, which the queue's
 * listener clears on a rollback; it keeps nothing else (validation, codecs and JSON encodings are pure).
 */
export const RERUNNABLE = { rerunnable: true } as const;

/**
 * What a commit needs of a task's stored rows before it writes: the status check, the indexed immutable columns, and
 * the last `seq` of its history and steps (`undefined`: not known, read `max(seq)` when needed).
 */
export interface TaskState {
  status: TaskStatus;
  kind: string;
  clientId: string | null;
  createdAt: number;
  history: number | undefined;
  steps: number | undefined;
}

/** See the module comment. */
export class SqliteConnection {
  readonly orm: Orm;
  readonly writes: WriteQueue;
  /** What each task's `task_memory` row holds as of the last commit, so unchanged memories are not rewritten. */
  readonly memoryWrites = new MemoryWrites();
  /**
   * What each task's rows hold as of the last commit that the commit path checks or extends (status, the immutable
   * indexed columns, the last history and step `seq`), so a command round trip does not read them back: every change
   * to them is made by this connection's commits.
   */
  readonly taskState = new CommittedState<TaskState>();
  /**
   * Hashes of `step_messages` rows known to be in the file as of the last commit (or written by the running
   * transaction), so a model step inserts only the messages and chunks that are new: most of a prompt repeats the
   * previous one. Staged like `taskState`: a rolled-back write's rows are forgotten with it. Bounded (oldest first).
   */
  readonly storedMessages = new CommittedState<true>(STORED_MESSAGES_CAP);
  /** The hashes of recently seen message texts (a prompt repeats most of the last one's messages). */
  readonly messageHashes = new MessageHashMemo();
  closed = false;
  private readQueries: ReadStatements | undefined;
  private writeQueries: WriteStatements | undefined;

  constructor(
    readonly db: Database.Database,
    readonly path: string,
    readonly readonly: boolean,
    readonly logger: Logger,
    /** The WAL checkpointer of a writer, if any: nudged after each commit, stopped on close. */
    readonly checkpointer: Checkpointer | undefined,
    lockTimeoutMs: number,
    /** Told the verdict of every write batch (the store's health). */
    onOutcome: (o: BatchOutcome) => void,
  ) {
    this.orm = drizzle(db, { schema });
    this.writes = new WriteQueue(db, {
      mapError: toPortError,
      lockedError: (waitedMs) =>
        toPortError(
          new StoreError('locked', storageFailureMessage('locked', undefined, waitedMs), {
            details: { path, waitedMs: Math.round(waitedMs) },
          }),
        ),
      lockTimeoutMs,
      onOutcome: (o) => {
        if (o.ok) checkpointer?.nudge(); // a transaction committed: the WAL grew
        onOutcome(o);
      },
      transactions: {
        writeEnded: (kept) => {
          this.memoryWrites.writeEnded(kept);
          this.taskState.writeEnded(kept);
          this.storedMessages.writeEnded(kept);
        },
        committed: () => {
          this.memoryWrites.committed();
          this.taskState.committed();
          this.storedMessages.committed();
        },
        rolledBack: () => {
          this.memoryWrites.rolledBack();
          this.taskState.rolledBack();
          this.storedMessages.rolledBack();
        },
      },
    });
  }

  /** Prepared reads (Drizzle `.prepare()`, built once: building the query on every call was the main per-write cost). */
  get r(): ReadStatements {
    return (this.readQueries ??= prepareReads(this.orm, this.db));
  }

  /** Prepared writes, built on the first write (never on a read-only connection). */
  get w(): WriteStatements {
    return (this.writeQueries ??= prepareWrites(this.orm, this.db));
  }

  /** A port write: EngineError on failure (the engine branches on its codes). */
  write<T>(run: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new EngineError('store_failure', 'store is closed'));
    if (this.readonly) {
      return Promise.reject(new StoreError('readonly', `${this.path} is open read-only`));
    }
    return this.writes.enqueue(run, RERUNNABLE);
  }

  /** A store-specific write: StoreError on failure. */
  writeStore<T>(run: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new StoreError('closed', 'store is closed'));
    if (this.readonly) return Promise.reject(new StoreError('readonly', `${this.path} is open read-only`));
    return this.writes.enqueue(run, RERUNNABLE).catch((err: unknown) => {
      if (isStoreError(err)) throw err;
      // A storage condition the queue reported in the port's terms: the StoreError it wraps.
      if (isEngineError(err) && isStoreError(err.cause)) throw err.cause;
      throw toStoreError(err);
    });
  }

  /** A read on this connection (synchronous underneath; sees every resolved write). */
  read<T>(run: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new EngineError('store_failure', 'store is closed'));
    try {
      return Promise.resolve(run());
    } catch (err) {
      this.logger.debug({ err }, 'store: read failed');
      return Promise.reject(isStoreError(err) || isEngineError(err) ? err : toPortError(err));
    }
  }

  /** Commit whatever is queued, then close the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      this.writes.flush(true);
    } finally {
      this.closed = true;
      this.db.close();
      // Last connection out: the worker's final checkpoint leaves a small WAL (never rejects).
      await this.checkpointer?.stop();
    }
  }
}

/**
 * What a `TaskStore` method rejects with: the engine's own errors as they are; a storage condition (locked, disk
 * full, I/O) as `EngineError('store_failure')` whose message says what is wrong and whose `cause` is the
 * `StoreError` with the precise code (callers read it with `storageFailureOf`); anything else as `store_failure`.
 */
export function toPortError(err: unknown): unknown {
  if (isEngineError(err)) return err;
  const failure = isStoreError(err) ? err : storageFailureCode(err) ? toStoreError(err) : undefined;
  if (failure && (failure.code === 'locked' || failure.code === 'disk_full' || failure.code === 'io_error')) {
    return new EngineError('store_failure', failure.message, {
      cause: failure,
      details: { storeCode: failure.code },
    });
  }
  if (isStoreError(err)) return err;
  return new EngineError('store_failure', `SQLite store failed: ${errorMessage(err)}`, { cause: err });
}

/** A SQLite error as a `StoreError`: `locked` / `disk_full` / `io_error` when it is one of those, else `sqlite_error`. */
export function toStoreError(err: unknown): StoreError {
  const code = storageFailureCode(err);
  if (code) return new StoreError(code, storageFailureMessage(code, err), { cause: err });
  return new StoreError('sqlite_error', errorMessage(err), { cause: err });
}

/** The message of an error, or the thing thrown as text. */
export function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}
