/**
 * Ports owned by the engine: storage, tool execution, time, logging and the strategy that decides each step.
 */
import type {
  CommandCallRecord,
  CommandCallStatus,
  CommandDescriptor,
  CommandOutcome,
  Decision,
  HistoryEntry,
  HistoryEntryBody,
  JsonValue,
  QuestionRecord,
  StepQuery,
  StepRecord,
  StoredStep,
  Task,
  TaskFilter,
  TaskStatus,
} from './types.js';

/** Opaque timer handle returned by {@link Clock.setTimeout}. */
export type TimerHandle = unknown;

/** Time source. Inject a manual clock in tests so nothing sleeps. */
export interface Clock {
  /** Current time in epoch milliseconds. */
  now(): number;
  /** Run `fn` after `ms` milliseconds of this clock's time. */
  setTimeout(fn: () => void, ms: number): TimerHandle;
  /** Cancel a timer; unknown or fired handles are ignored. */
  clearTimeout(handle: TimerHandle): void;
}

/**
 * Whether a tool call of `task` needs a person's yes before it is sent (a destructive command): the question to ask,
 * or undefined when it may run at once. Pure and synchronous; called when the call is committed.
 */
export type ConfirmationRule = (task: Task, command: string, args: JsonValue) => string | undefined;

/** Minimal pino-compatible logger (a pino `Logger` satisfies it). */
export interface Logger {
  debug(obj: unknown, msg?: string): void;
  info(obj: unknown, msg?: string): void;
  warn(obj: unknown, msg?: string): void;
  error(obj: unknown, msg?: string): void;
}

/** A command call handed to a {@link ToolExecutor}. The same `callId` may arrive again after a restart. */
export interface ToolCallRequest {
  taskId: string;
  callId: string;
  /** Client the task is bound to, if any (the orchestrator routes by it). */
  clientId: string | null;
  command: string;
  args: JsonValue;
  timeoutMs: number;
  /** 1 on first dispatch, >1 when re-dispatched after recovery. */
  attempt: number;
  /**
   * The task's allow-list (empty: any command), for an executor's last check before it runs the call (the server
   * tools' executor refuses a call it does not admit). Set by the engine on every call it dispatches.
   */
  allowedCommands?: readonly string[];
  /**
   * For a task bound to no client: the client the call was bound to (`Engine.bindCall`) before this dispatch — set
   * when a call is re-dispatched after a restart, from the stored call row.
   */
  sentTo?: string | undefined;
  /**
   * Aborted on timeout, task cancellation and engine stop: the executor stops working on the call (and may tell the
   * client running it to drop it). Not aborted when the call's outcome is recorded (see `recorded`).
   */
  signal: AbortSignal;
  /**
   * Resolves with the call's outcome once it is on disk, whatever recorded it: this executor's `execute`, a result
   * submitted with `Engine.submitResult`, or the timeout. Never rejects; stays pending for a call closed without an
   * outcome (its task ended, the engine stopped: `signal` aborts then). Set by the engine on every call it
   * dispatches; absent on a request built by hand (an executor's own tests).
   */
  recorded?: Promise<CommandOutcome>;
  /**
   * Count one more delivery of this call (the host sent its `command_call` again, e.g. to a client that reconnected):
   * the call's `dispatchCount` + 1, durable when the promise resolves; nothing once the call is no longer pending.
   * The same as `Engine.recordRedelivery` for this call, handed to the executor so it needs no engine reference.
   * Set by the engine on every call it dispatches; absent on a request built by hand.
   */
  recordRedelivery?: () => Promise<unknown>;
  /**
   * Bind this call of a task bound to no client to the client chosen for it: `Engine.bindCall` for this call. Resolves
   * with the client in force (the first binding holds) once it is on disk; nothing may be sent to a client before.
   * Rejects like `Engine.bindCall`. Set by the engine on every call it dispatches; absent on a request built by hand.
   */
  bind?: (clientId: string) => Promise<string>;
  /**
   * Note that `clientId` was told to drop this call (a `command_cancel` after a timeout or the task's end): its answer
   * to that is acknowledged by `Engine.submitResult` as a duplicate, and changes nothing. Set by the engine like
   * `bind`.
   */
  cancelledOn?: (clientId: string) => void;
}

/**
 * Executes commands. The orchestrator plugs in "send command_call to a client"; library users plug in local
 * functions. Implementations must treat a repeated `callId` idempotently (return the stored result, do not re-run).
 *
 * One contract for every executor: `execute` settles with the call's outcome, at the latest when the call closes,
 * and each outcome enters the engine by one route. An executor that runs the call returns its outcome. An executor
 * that hands the call to a remote client returns only the failures it decides itself (no client, arguments refused
 * before sending); the client's own result goes to `Engine.submitResult`, which judges it against the sender and
 * commits it, and the executor settles when `call.recorded` tells it the call is closed. The engine commits the
 * first outcome of an open call and ignores what an executor settles with after the call closed.
 */
export interface ToolExecutor {
  /** Run one call; settle with its outcome, at the latest when `call.signal` aborts or `call.recorded` resolves. */
  execute(call: ToolCallRequest): Promise<CommandOutcome>;
  /** Commands currently available to a task bound to `clientId` (before the task's allow-list is applied). */
  listCommands?(clientId: string | null): CommandDescriptor[];
}

/** One atomic write of the engine: everything in it is committed in a single transaction, or nothing is. */
export interface TaskCommit {
  /** The task row as it must be after the commit. */
  task: Task;
  /**
   * Status the stored row must have for the commit to apply; otherwise the store throws
   * `EngineError('conflict')` and writes nothing. Omit when creating.
   */
  expectedStatus?: TaskStatus;
  /**
   * True to insert a new task (throws `EngineError('task_exists')` if the id is taken). Otherwise the task must exist
   * (`task_not_found`), and a status change must be legal (`illegal_transition`); in every error case nothing is
   * written. A command call or question must belong to `task` (`invalid_input`).
   */
  create?: boolean;
  /** History entries to append; the store assigns dense `seq` numbers. */
  history?: Array<HistoryEntryBody & { step: number; at: number }>;
  /** Step-log records to append (the store assigns `seq`). */
  steps?: Array<StepRecord & { step: number; at: number }>;
  /** Command-call row to insert or replace (keyed by `callId`). */
  commandCall?: CommandCallRecord;
  /** Question row to insert or replace (keyed by `questionId`). */
  question?: QuestionRecord;
}

/** Result of a commit: what was appended, with store-assigned sequence numbers. */
export interface CommitResult {
  history: HistoryEntry[];
  steps: StoredStep[];
}

/** Filter of {@link TaskStore.listCommandCalls}. */
export interface CommandCallFilter {
  taskId?: string;
  status?: CommandCallStatus | CommandCallStatus[];
}

/**
 * Durable storage of tasks, their history, step log, command calls and questions. Implemented in memory
 * (`InMemoryTaskStore`) and in SQLite (`@ccagent/store`); both pass the same contract suite.
 */
export interface TaskStore {
  /**
   * Apply one atomic commit (see {@link TaskCommit}). Nothing is visible before it resolves. The values in `change`
   * are not changed by the caller afterwards (a store may keep references to them, or reuse their encodings).
   */
  commit(change: TaskCommit): Promise<CommitResult>;
  /** Append one step-log record outside a state change (used by `StepContext.logStep`). */
  appendStep(taskId: string, record: StepRecord & { step: number; at: number }): Promise<StoredStep>;
  getTask(taskId: string): Promise<Task | undefined>;
  /** Tasks matching the filter, oldest first (by `createdAt`, then id). */
  listTasks(filter?: TaskFilter): Promise<Task[]>;
  /** History of a task in `seq` order. */
  getHistory(taskId: string): Promise<HistoryEntry[]>;
  /**
   * Step log of a task in `seq` order; with `query`, only the records after `query.afterSeq`, at most `query.limit`
   * of them (see {@link StepQuery}). An unknown task has no steps (`[]`). A bad query rejects with
   * `EngineError('invalid_input')` (check it with `normalizeStepQuery`).
   */
  getSteps(taskId: string, query?: StepQuery): Promise<StoredStep[]>;
  getCommandCall(callId: string): Promise<CommandCallRecord | undefined>;
  /**
   * Record, durably, the client a pending call of a task bound to no client is sent to (`sentTo`), before the host
   * sends it (called by `Engine.bindCall`, under the task's lock): after a restart the call is re-sent to that client
   * only, never to another one that registered the command. The first binding holds: binding a call already bound to
   * another client changes nothing. Later commits of the call keep the binding. Resolves with the call as stored; its
   * `sentTo` is the binding in force (`clientId`, or the client bound earlier). Rejects with `EngineError`: `unknown_call` (no such call), `call_closed` (the call
   * is not pending), `invalid_input` (empty `clientId`), `store_failure` (nothing was recorded).
   */
  bindCall(callId: string, clientId: string): Promise<CommandCallRecord>;
  /** Command calls matching the filter, in creation order. */
  listCommandCalls(filter?: CommandCallFilter): Promise<CommandCallRecord[]>;
  getQuestion(questionId: string): Promise<QuestionRecord | undefined>;
  /** Questions of a task in the order they were asked. */
  listQuestions(taskId: string): Promise<QuestionRecord[]>;
  /** Release resources; further calls may fail. */
  close(): Promise<void>;
}

/** What a strategy gets for one step besides the task and its history. */
export interface StepContext {
  /** Aborted when the task is cancelled, hits its deadline, or the engine stops. */
  signal: AbortSignal;
  clock: Clock;
  logger: Logger;
  /** Number of the step being decided (task.counters.steps + 1). */
  step: number;
  /**
   * Run `fn` under the per-model concurrency limit (default 1 per model, fair FIFO across tasks). `fn` receives the
   * step signal; the returned promise rejects with the signal's reason if aborted while queued.
   */
  callModel<T>(model: string, fn: (signal: AbortSignal) => Promise<T>): Promise<T>;
  /** Append a step-log record; persisted before the promise resolves. */
  logStep(record: StepRecord): Promise<StoredStep>;
  /** Commands this task may call now: its allow-list ∩ what the executor offers for its client. */
  availableCommands(): CommandDescriptor[];
}

/**
 * Decides what a task does next. Throwing (other than on abort or a `store_failure`, which defers the step) fails
 * the task with code 'strategy_error'. `task` and `history` are the engine's own: read-only, and `history` only until
 * the returned promise settles (it is the engine's cached array, lent without a copy so that a step costs the same at
 * the 100,000th tool call as at the first; the engine copies it before changing it while a step decides from it).
 */
export interface TaskStrategy {
  decide(task: Task, history: readonly HistoryEntry[], ctx: StepContext): Promise<Decision>;
}

/** Resolves the strategy for a task kind; `undefined` fails the task with code 'no_strategy'. */
export type StrategyResolver = (kind: string) => TaskStrategy | undefined;
