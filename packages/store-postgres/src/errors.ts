import { EngineError, isEngineError } from '@ccagent/engine';
import { StoreError, isStoreError } from '@ccagent/store-core';

/** The PostgreSQL error fields this package reads (`pg`'s DatabaseError, or a socket error). */
interface PgErrorLike {
  code?: unknown;
  message?: unknown;
}

/**
 * The storage condition behind an error from `pg`, or undefined when it is not one: the server or the connection is
 * gone (SQLSTATE classes 08 and 57P, socket errors, a terminated connection) → `io_error`; out of disk space (53100)
 * → `disk_full`; a lock not granted in time (55P03) → `locked`.
 */
export function pgStorageFailure(err: unknown): 'io_error' | 'disk_full' | 'locked' | undefined {
  const e = err as PgErrorLike | null;
  const code = typeof e?.code === 'string' ? e.code : undefined;
  if (code === '53100') return 'disk_full';
  if (code === '55P03') return 'locked';
  if (
    code !== undefined &&
    (code.startsWith('08') ||
      code.startsWith('57P') ||
      code === '53300' ||
      code === 'ECONNREFUSED' ||
      code === 'ECONNRESET' ||
      code === 'ETIMEDOUT' ||
      code === 'EPIPE' ||
      code === 'ENOTFOUND' ||
      code === 'EHOSTUNREACH')
  ) {
    return 'io_error';
  }
  const msg = typeof e?.message === 'string' ? e.message : '';
  if (/Connection terminated|Client has encountered a connection error|not queryable/i.test(msg))
    return 'io_error';
  return undefined;
}

function message(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

/** A `pg` error as a `StoreError`: `io_error` / `disk_full` / `locked` for a storage condition, else `postgres_error`. */
export function toStoreError(err: unknown): StoreError {
  if (isStoreError(err)) return err;
  const code = pgStorageFailure(err);
  if (code === 'disk_full') {
    return new StoreError(
      'disk_full',
      `PostgreSQL is out of disk space (${message(err)}); free space on its disk`,
      {
        cause: err,
      },
    );
  }
  if (code === 'locked')
    return new StoreError('locked', `PostgreSQL lock wait failed: ${message(err)}`, { cause: err });
  if (code === 'io_error') {
    return new StoreError('io_error', `PostgreSQL cannot be reached: ${message(err)}`, { cause: err });
  }
  return new StoreError('postgres_error', message(err), { cause: err });
}

/**
 * What a `TaskStore` method rejects with: the engine's own errors as they are; a storage condition or a fenced write
 * as `EngineError('store_failure')` wrapping the `StoreError` (callers find it with `storageFailureOf`); anything
 * else as `store_failure` too.
 */
export function toPortError(err: unknown): unknown {
  if (isEngineError(err)) return err;
  const failure = toStoreError(err);
  return new EngineError('store_failure', failure.message, {
    cause: failure,
    details: { storeCode: failure.code },
  });
}
