/**
 * `@ccagent/store`: the engine's `TaskStore` on SQLite (Drizzle + better-sqlite3) — WAL, busy timeout, foreign keys,
 * checked-in drizzle-kit migrations applied at open — plus the queries the orchestrator and the CLI share.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export { openSqliteStore, SqliteStore, type SqliteStoreOptions } from './sqlite-store.js';
export {
  startCheckpointer,
  type Checkpointer,
  type CheckpointerOptions,
  type CheckpointerState,
  type CheckpointerStats,
} from './checkpointer.js';
export { defaultDbPath, DB_FILE_NAME } from './paths.js';
export { SCHEMA_VERSION, APPLICATION_ID, migrationsFolder } from './migrate.js';
export {
  StoreError,
  isStoreError,
  storageFailureOf,
  isStorageFailureCode,
  STORE_ERROR_CODES,
  type StorageFailureCode,
  type StoreErrorCode,
} from './store-error.js';
export {
  MODEL_TOOL_STATUSES,
  type ClientRecord,
  type ClientUpsert,
  type ModelToolInfo,
  type ModelToolRecord,
  type ModelToolStatus,
  type StoreHealth,
  type TaskPage,
  type TaskPageQuery,
  type ToolFilter,
} from './types.js';
/**
 * The mapping between domain values and rows (JSON text columns, NULL = absent) and the packing of model inputs in
 * the step log, for another store of the same tables (`@ccagent/store-postgres`), so both read back exactly the same
 * values and keep the same step-log shape.
 */
export {
  callToRow,
  historyToRow,
  packedStepToRow,
  questionToRow,
  recordToStep,
  rowToCall,
  rowToClient,
  rowToHistory,
  rowToQuestion,
  rowToStep,
  rowToTask,
  rowToTool,
  taskToRow,
  type TaskRowWithMemory,
} from './codec.js';
export { MessageHashMemo, chunkHashes, packedHashes, type StepMessage } from './step-messages.js';
/** The Drizzle table definitions (one shared schema), for read-only SQL by other tools. */
export * as schema from './schema.js';
export {
  CREDENTIAL_ROLES,
  SecurityTables,
  clientTaken,
  pairingRefusal,
  type CollectResult,
  type PairingDecision,
  type PairingRecord,
  type AuditInput,
  type AuditQuery,
  type AuditRecord,
  type CredentialGrants,
  type CredentialRecord,
  type CredentialRole,
  type EnrollmentRecord,
  type RedeemResult,
} from './security-tables.js';
export { SqliteScheduleTables, rowToFiring, rowToSchedule } from './schedule-tables.js';
