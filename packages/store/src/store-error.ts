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
  /** SQLite failed during an operation; see `cause`. */
  | 'sqlite_error';

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
  'sqlite_error',
];

/**
 * The one error class of `@ccagent/store`. (Methods of the engine's `TaskStore` port report the port's own failures
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
