/**
 * `@ccagent/store-core`: what every ccagent store shares, whatever its database — the rows and their codec, the
 * packing of model inputs in the step log, `StoreError` and its codes, the checks of the stores' input, and the
 * verdicts (a call's binding) the stores apply and only persist. `@ccagent/store` (SQLite) and
 * `@ccagent/store-postgres` both depend on it; neither depends on the other.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

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
export type { CallRow, ClientRow, HistoryRow, QuestionRow, StepRow, TaskRow, ToolRow } from './rows.js';
export {
  callToRow,
  enc,
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
  stepToRow,
  taskToRow,
  type TaskRowWithMemory,
} from './codec.js';
export {
  MAX_CHUNK,
  MessageHashMemo,
  PACK_MIN_MESSAGES_CHARS,
  chunkHashes,
  messageHash,
  packStepInput,
  packedHashes,
  unpackStepInput,
  type StepMessage,
} from './step-messages.js';
export {
  DEFAULT_PAGE_SIZE,
  MAX_PAGE_SIZE,
  clientNotFound,
  pageOf,
  requireId,
  requireTime,
  validateClientUpsert,
  validateTools,
} from './validators.js';
/** The verdicts of `TaskStore.bindCall`, the engine's (its in-memory store applies them too), for the stores. */
export { bindClientRefusal, bindingRefusal } from '@ccagent/engine';
