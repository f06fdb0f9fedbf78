/**
 * `@ccagent/engine`: durable task lifecycle for long-running model-driven tasks — state machine, scheduler with
 * per-model concurrency, budgets, cancellation, events, and the storage / tool / clock / strategy ports.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export type {
  CommandCallRecord,
  CommandCallStatus,
  CommandDescriptor,
  CommandError,
  CommandOutcome,
  CommandResultInput,
  Decision,
  DecisionBase,
  DecisionRecord,
  HistoryEntry,
  HistoryEntryBody,
  JsonValue,
  NewTaskInput,
  QuestionRecord,
  StepQuery,
  StepRecord,
  StepUsage,
  StoredStep,
  SubmitResult,
  Task,
  TaskBudgets,
  TaskCounters,
  TaskErrorInfo,
  TaskFilter,
  TaskStatus,
} from './types.js';
export { MODEL_REQUEST_KIND, TASK_STATUSES } from './types.js';
export type {
  Clock,
  CommandCallFilter,
  CommitResult,
  Logger,
  StepContext,
  StrategyResolver,
  ConfirmationRule,
  TaskCommit,
  TaskStore,
  TaskStrategy,
  TimerHandle,
  ToolCallRequest,
  ToolExecutor,
} from './ports.js';
export type { EngineEventName, EngineEvents, EngineListener } from './events.js';
export { ENGINE_ERROR_CODES, EngineError, isEngineError, type EngineErrorCode } from './engine-error.js';
export { TASK_TRANSITIONS, assertTransition, canTransition, isTerminalStatus } from './task-state-machine.js';
export { ManualClock, systemClock } from './clock.js';
export {
  confirmationCheck,
  confirmationQuestionId,
  confirmedCallId,
  isConfirmingAnswer,
  type ConfirmationReader,
} from './confirmation.js';
export { InMemoryTaskStore } from './in-memory-task-store.js';
export { bindClientRefusal, bindingRefusal } from './binding-verdicts.js';
export { normalizeStepQuery, type NormalizedStepQuery } from './step-query.js';
export { decisionRecord, memoryJson } from './memory-json.js';
export {
  DEFAULT_CALL_TIMEOUT_MS,
  DEFAULT_TASK_CACHE_SIZE,
  DEFAULT_TICK_INTERVAL_MS,
  Engine,
  type EngineOptions,
} from './engine.js';
export type { ReopenOptions, TaskPost } from './task-transitions.js';
export { DEFAULT_TASK_INPUT_LIMITS, type TaskInputLimits } from './input-limits.js';
export {
  allowedCommandsFor,
  kindRules,
  resolveRunBudgets,
  resolveTaskKind,
  taskKindNames,
  type BudgetSettingName,
  type KindSpecificSetting,
  type RunBudgets,
  type SettingsRefusal,
  type TaskKindCatalogue,
  type TaskKindRules,
  type TaskLimits,
} from './task-kinds.js';
export {
  TASK_METADATA_KEYS,
  budgetsFrom,
  isOwnTask,
  mayAccessTask,
  mayCreateTaskFor,
  resolveAgent,
  runBudgetsJson,
  runBudgetsOf,
  storedRunBudgets,
  taskCreator,
  taskName,
  taskSettings,
  type AgentResolution,
  type TaskAccessRights,
} from './task-metadata.js';
export {
  LIVE_TASK_STATUSES,
  TaskOperations,
  portStorageFailure,
  type NameScope,
  type PortStorageFailureCode,
  taskIdFromKey,
  type CreateTaskRequest,
  type TaskOperationError,
  type TaskOperationErrorCode,
  type TaskOperationResult,
  type TaskOperationsOptions,
} from './task-operations.js';
export {
  defineServerTool,
  type ServerTool,
  type ServerToolContext,
  type ServerToolParameters,
} from './server-tools/server-tool.js';
export {
  DEFAULT_SERVER_TOOL_TIMEOUT_SECONDS,
  MAX_SERVER_TOOL_RESULT_BYTES,
  ServerToolRegistry,
  type ServerToolCall,
  type ServerToolRegistryOptions,
} from './server-tools/server-tool-registry.js';
export { withServerTools, type ServerToolExecutorOptions } from './server-tools/server-tool-executor.js';
export {
  builtInServerTools,
  hardwareTier,
  type BuiltInToolOptions,
  type GpuInfo,
  type HardwareTier,
} from './server-tools/built-in-tools.js';
export {
  BUDGET_PERIODS,
  PERIOD_METADATA_KEYS,
  PERIOD_MS,
  periodBudgetsJson,
  periodBudgetsOf,
  periodExhausted,
  periodStart,
  periodUsageOf,
  type BudgetPeriod,
  type PeriodBudgets,
  type PeriodExhaustion,
  type PeriodLimit,
  type PeriodUsage,
} from './period-budgets.js';
export {
  MIN_INTERVAL_MS,
  MISSED_POLICIES,
  dueFiring,
  isTimeZone,
  nextOccurrence,
  scheduleSpecProblem,
  type DueFiring,
  type FiringQuery,
  type FiringStatus,
  type MissedPolicy,
  type Schedule,
  type ScheduleAction,
  type ScheduleFiring,
  type ScheduleSpec,
  type ScheduleSpecProblem,
  type ScheduleStore,
  type ScheduleTaskTemplate,
} from './schedules.js';
export {
  SCHEDULE_REQUEST_NAMESPACE,
  ScheduleRunner,
  firingRequestId,
  type ScheduleRunnerOptions,
} from './schedule-runner.js';
export { InMemoryScheduleStore } from './in-memory-schedule-store.js';
export { taskKindsAt, type TaskKindRevision, type TaskKindStore } from './task-kind-store.js';
export { InMemoryTaskKindStore } from './in-memory-task-kind-store.js';
export type {
  McActionRecord,
  McActivityLimits,
  McLogRecord,
  MinecraftActivityStore,
} from './minecraft-activity-store.js';
