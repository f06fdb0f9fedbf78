import { portStorageFailure, type PortStorageFailureCode } from '@ccagent/engine';

/** Stable codes of {@link StoreError}. */
export type StoreErrorCode =
  /** Read-only open of a database file that does not exist. */
  | 'not_found'
  /** The file was written by a newer ccagent (its schema version is above the one this build knows). */
  | 'schema_too_new'
  /** Read-only open of a file whose schema is older than this build's (a writer must open it once to migrate). */
  | 'schema_outdated'
  /** The file is an SQLite database that ccagent did not create. */
  | 'not_a_ccagent_db'
  /** The checked-in migrations are missing or disagree with this build (a broken install). */
  | 'migrations_missing'
  /** SQLite could not open or migrate the file (permissions, corruption, locked …); see `cause`. */
  | 'open_failed'
  /** A write was attempted on a store opened read-only. */
  | 'readonly'
  /** The store was closed. */
  | 'closed'
  /** Bad input to a store method (empty id, unknown tool status …); nothing was written. */
  | 'invalid_input'
  /** A client method named a client that was never upserted. */
  | 'client_not_found'
  /** Another process holds the database's write lock (or an exclusive lock) and did not let go in time. */
  | 'locked'
  /** The disk (or the file system holding the database) is full: nothing more can be written. */
  | 'disk_full'
  /** The operating system refused a read or write (I/O error, read-only file system, permissions, corruption). */
  | 'io_error'
  /** SQLite failed during an operation; see `cause`. */
  | 'sqlite_error'
  /** PostgreSQL refused an operation for a reason that is not a storage condition (`@ccagent/store-postgres`). */
  | 'postgres_error'
  /**
   * A write of an orchestrator that no longer holds the leader lease (`@ccagent/store-postgres`): another one took
   * over, and this one must stop writing.
   */
  | 'fenced';

/** Every {@link StoreErrorCode}. */
export const STORE_ERROR_CODES: readonly StoreErrorCode[] = [
  'not_found',
  'schema_too_new',
  'schema_outdated',
  'not_a_ccagent_db',
  'migrations_missing',
  'open_failed',
  'readonly',
  'closed',
  'invalid_input',
  'client_not_found',
  'locked',
  'disk_full',
  'io_error',
  'sqlite_error',
  'postgres_error',
  'fenced',
];

/** Codes that say the storage itself cannot be used right now (as opposed to a bad request or a logic error). */
export type StorageFailureCode = PortStorageFailureCode;

const STORAGE_FAILURE_CODES: ReadonlySet<string> = new Set<StorageFailureCode>([
  'locked',
  'disk_full',
  'io_error',
]);

/** True when `code` names a storage condition (`locked`, `disk_full`, `io_error`). */
export function isStorageFailureCode(code: unknown): code is StorageFailureCode {
  return typeof code === 'string' && STORAGE_FAILURE_CODES.has(code);
}

/**
 * The storage failure an error from a store stands for, read from its code: a `StoreError` with a storage code (a
 * store-specific method), or the port's `EngineError('store_failure')` whose `details.storeCode` is one (what the
 * stores' `toPortError` makes of a `StoreError`). Its code and a message meant for people; undefined for any other
 * error. It reads codes only, never `cause` chains: the stores raise nothing else.
 */
export function storageFailureOf(err: unknown): { code: StorageFailureCode; message: string } | undefined {
  if (isStoreError(err)) {
    return isStorageFailureCode(err.code) ? { code: err.code, message: err.message } : undefined;
  }
  return portStorageFailure(err);
}

/**
 * The one error class of the stores (`@ccagent/store`, `@ccagent/store-postgres`). (Methods of the engine's `TaskStore` port report the port's own failures
 * — `task_not_found`, `task_exists`, `conflict`, `illegal_transition`, `store_failure` — as `EngineError`, because
 * the engine branches on those codes.)
 */
export class StoreError extends Error {
  override readonly name = 'StoreError';
  /** Stable machine-readable code. */
  readonly code: StoreErrorCode;
  /** Structured context (path, versions …) for logs and callers. */
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: StoreErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
  }
}

/** True when `err` is a {@link StoreError} (from any copy of this package), optionally with the given code. */
export function isStoreError(err: unknown, code?: StoreErrorCode): err is StoreError {
  const isOne =
    err instanceof StoreError ||
    (err instanceof Error &&
      err.name === 'StoreError' &&
      typeof (err as { code?: unknown }).code === 'string');
  return isOne && (code === undefined || (err as StoreError).code === code);
}
