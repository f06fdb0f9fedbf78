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
/** `StoreError` and the record types, from `@ccagent/store-core` (see the compatibility note below). */
export {
  StoreError,
  isStoreError,
  storageFailureOf,
  isStorageFailureCode,
  STORE_ERROR_CODES,
  type StorageFailureCode,
  type StoreErrorCode,
} from '@ccagent/store-core';
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
} from '@ccagent/store-core';
/**
 * Compatibility re-exports: the errors, record types, row codec and step-log packing moved to `@ccagent/store-core`
 * (shared with `@ccagent/store-postgres`); import them from there in new code.
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
} from '@ccagent/store-core';
export { MessageHashMemo, chunkHashes, packedHashes, type StepMessage } from '@ccagent/store-core';
/** The Drizzle table definitions (one shared schema), for read-only SQL by other tools. */
export * as schema from './schema.js';
/** `@ccagent/security`'s `CredentialStore` port on SQLite (`SqliteStore.security`). */
export { SecurityTables } from './security-tables.js';
/**
 * Compatibility re-exports: the credential records and rules moved to `@ccagent/security` (the domain that owns the
 * port); import them from there in new code.
 */
export {
  CREDENTIAL_ROLES,
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
} from '@ccagent/security';
export { SqliteScheduleTables, rowToFiring, rowToSchedule } from './schedule-tables.js';
export { SqliteTaskKindTables } from './task-kind-tables.js';
export { SqliteMinecraftActivity } from './minecraft-activity-tables.js';
