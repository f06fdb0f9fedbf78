/**
 * Domain types of the task engine (camelCase; the wire's snake_case mapping lives in the orchestrator only).
 */
import type { TaskStatus } from '@ccagent/protocol';

/** Any JSON-serialisable value; everything the engine persists is one of these. */
export type JsonValue = null | boolean | number | string | JsonValue[] | { [key: string]: JsonValue };

/**
 * Lifecycle state of a task (`completed`, `failed` and `cancelled` are terminal), and every status in lifecycle
 * order: defined once, in @ccagent/protocol, where the wire (WebSocket and HTTP) carries them.
 */
export { TASK_STATUSES, type TaskStatus } from '@ccagent/protocol';

/** Limits the engine enforces before each step; all optional. `deadlineAt` is epoch milliseconds. */
export interface TaskBudgets {
  maxSteps?: number;
  maxToolCalls?: number;
  deadlineAt?: number;
}

/** Counters the engine maintains; `steps` counts committed decisions. */
export interface TaskCounters {
  steps: number;
  toolCalls: number;
  questions: number;
}

/** A structured error as stored on a failed task or a failed step. */
export interface TaskErrorInfo {
  code: string;
  message: string;
  details?: JsonValue;
}

/** A task as persisted by the store. Timestamps are epoch milliseconds from the engine's clock. */
export interface Task {
  id: string;
  kind: string;
  status: TaskStatus;
  clientId: string | null;
  prompt: string;
  context?: JsonValue;
  /** Commands the task may call; an empty list means "any command the executor offers". */
  allowedCommands: string[];
  /** Strategy-owned memory, replaced by `Decision.memory` when present. */
  memory: JsonValue;
  metadata: Record<string, JsonValue>;
  budgets: TaskBudgets;
  counters: TaskCounters;
  result?: JsonValue;
  error?: TaskErrorInfo;
  /** Last progress reported by the strategy (0..1) and its message, if any. */
  progress?: number;
  progressMessage?: string;
  /**
   * Set by a `continue` decision with `wakeAfterMs`: the task stays `running` but is not stepped before this time
   * (epoch ms) unless {@link Engine.trigger}ed. Survives restarts; cleared by the next decision.
   */
  wakeAt?: number;
  createdAt: number;
  updatedAt: number;
}

/** Input of `Engine.createTask`. */
export interface NewTaskInput {
  /** Optional caller-chosen id (must be unique); a random UUID otherwise. */
  id?: string;
  kind: string;
  prompt: string;
  clientId?: string | null;
  context?: JsonValue;
  allowedCommands?: string[];
  metadata?: Record<string, JsonValue>;
  budgets?: TaskBudgets;
  memory?: JsonValue;
}

/** Filter of `listTasks`; all fields optional and ANDed. */
export interface TaskFilter {
  status?: TaskStatus | TaskStatus[];
  kind?: string;
  clientId?: string;
  /** Only tasks whose `updatedAt` is at or after this time (epoch ms). */
  updatedSince?: number;
  limit?: number;
}

/** Fields any decision may carry: new memory and a progress report for `task_update`s. */
export interface DecisionBase {
  memory?: JsonValue;
  progress?: number;
  message?: string;
}

/** What a strategy decided the task does next. */
export type Decision =
  | (DecisionBase & { type: 'tool_call'; command: string; args: JsonValue; timeoutMs?: number })
  | (DecisionBase & { type: 'ask_user'; question: string; why?: string })
  | (DecisionBase & { type: 'complete'; result: JsonValue })
  | (DecisionBase & { type: 'fail'; error: TaskErrorInfo })
  | (DecisionBase & {
      type: 'continue';
      note?: string;
      /**
       * Sleep before the next step (periodic tasks: "check the furnace every 10 minutes"). The next step runs after
       * this many milliseconds of the engine's clock, or earlier on `Engine.trigger`. Omitted: step again at once.
       */
      wakeAfterMs?: number;
    });

/**
 * What a `decision` step record stores as its `directive`: the {@link Decision} without `memory` (the task row holds
 * the current memory), plus a fingerprint of the memory when the decision set one.
 */
export type DecisionRecord = Decision extends infer D
  ? D extends Decision
    ? Omit<D, 'memory'> & {
        /** Size of the new memory's JSON text in UTF-8 bytes. */
        memoryBytes?: number;
        /** SHA-256 (hex) of the new memory's JSON text: equal hashes, equal memories. */
        memorySha256?: string;
        /** False when the decision set a memory equal to the one the step started from. */
        memoryChanged?: boolean;
      }
    : never
  : never;

/** Error reported by a command execution (mirrors the client's `command_result` error). */
export interface CommandError {
  code?: string;
  message: string;
  /** The Lua traceback without the client library's own frames: what the model is shown. */
  traceback?: string;
  /** The untrimmed traceback, when the client cut frames from `traceback`: kept in the step log, never shown to the model. */
  hostTraceback?: string;
}

/** Outcome of one command call. */
export type CommandOutcome = { ok: true; result: JsonValue } | { ok: false; error: CommandError };

/** A command call's result reported to the engine from outside (see `Engine.submitResult`). */
export interface CommandResultInput {
  taskId: string;
  callId: string;
  /**
   * The client reporting it; only the call's owner may (the task's client, or for a task bound to none the client
   * the call was bound to, `Engine.bindCall`). `null`: the host itself, trusted (a library without an executor).
   */
  sender: string | null;
  outcome: CommandOutcome;
}

/**
 * The engine's verdict on a submitted result. `accepted`: committed, on disk. `duplicate`: a repeat of a result this
 * sender already had committed, or its answer to a `command_cancel`; nothing changed. Refused, nothing changed:
 * `forbidden` (the call is another client's), `call_closed` (the server closed it: cancelled, timed out, failed for a
 * reason of its own; or it is not open for results), `unknown_call` (the task has no such call).
 */
export type SubmitResult =
  | { ok: true; value: { verdict: 'accepted'; task: Task } | { verdict: 'duplicate' } }
  | { ok: false; error: { code: 'forbidden' | 'call_closed' | 'unknown_call'; message: string } };

/** Status of a persisted command call. */
export type CommandCallStatus =
  'pending' | 'awaiting_confirmation' | 'succeeded' | 'failed' | 'timed_out' | 'cancelled';

/**
 * A command call row: created in the same transaction as the `tool_call` decision, `pending` — or
 * `awaiting_confirmation` when the engine's {@link ConfirmationRule} wants a person's yes first (it is then never
 * handed to the executor until the question `confirmationQuestionId(callId)` is answered yes).
 */
export interface CommandCallRecord {
  callId: string;
  taskId: string;
  command: string;
  args: JsonValue;
  timeoutMs: number;
  status: CommandCallStatus;
  outcome?: CommandOutcome;
  /** How many times the call was handed to the executor (re-dispatch after recovery increments it). */
  dispatchCount: number;
  createdAt: number;
  completedAt?: number;
  /**
   * Client a call of a task bound to no client was routed to, recorded by `TaskStore.bindCall` before the call
   * was first sent, so that after a restart it goes to that client only. Commits never change it (a record committed
   * without it keeps the stored binding). Absent for calls of bound tasks and calls never sent.
   */
  sentTo?: string;
}

/** A question to the user: created in the same transaction as the `ask_user` decision. */
export interface QuestionRecord {
  questionId: string;
  taskId: string;
  question: string;
  why?: string;
  answer?: string;
  askedAt: number;
  answeredAt?: number;
}

/** Body of one entry of a task's durable observation log. */
export type HistoryEntryBody =
  | { type: 'tool_call'; callId: string; command: string; args: JsonValue }
  | { type: 'tool_result'; callId: string; command: string; outcome: CommandOutcome; timedOut?: boolean }
  | { type: 'question'; questionId: string; question: string; why?: string }
  | { type: 'answer'; questionId: string; answer: string }
  | { type: 'note'; text: string }
  | { type: 'complete'; result: JsonValue }
  | { type: 'fail'; error: TaskErrorInfo }
  | { type: 'cancel'; reason?: string }
  /** A follow-up message from a person (HTTP, CLI, a computer's `task_message`); the next model step sees it. */
  | { type: 'message'; text: string; from?: string }
  /** Something that happened outside (a computer's `task_event`: a redstone signal, an inventory, a game state). */
  | { type: 'event'; name: string; data?: JsonValue }
  /**
   * An ended task was reopened (`Engine.reopenTask`): by a follow-up message or a retry, from status `from`, with
   * fresh budgets. Strategies count their own per-run limits (the native loop's model calls) from the last one.
   */
  | { type: 'resume'; reason: 'message' | 'retry'; from: TaskStatus };

/** One entry of a task's history; `seq` is 1-based and dense per task, `step` the step it belongs to. */
export type HistoryEntry = HistoryEntryBody & { taskId: string; seq: number; step: number; at: number };

/** Token usage and timings reported by a model call. */
export interface StepUsage {
  promptTokens?: number;
  completionTokens?: number;
  totalDurationMs?: number;
}

/**
 * A step-log record as given to `StepContext.logStep` (and written by the engine itself for decisions and
 * command outcomes). Everything is optional except `kind`.
 */
export interface StepRecord {
  /**
   * e.g. 'planner' | 'executor' | 'native' | 'validation' | 'note' | 'decision' | 'tool_result', or 'resumed' (written
   * by the engine when a restart interrupted this step: records of the same step before it are from the lost attempt).
   */
  kind: string;
  model?: string;
  /** Exact model input: messages, options, format. */
  input?: JsonValue;
  /** Raw model output. */
  output?: JsonValue;
  /**
   * Parsed directive (strategy records) or, in the engine's `decision` records, a {@link DecisionRecord}: the
   * decision without its memory, with `memoryBytes` / `memorySha256` / `memoryChanged` when it set one.
   */
  directive?: JsonValue;
  validationErrors?: string[];
  toolCall?: JsonValue;
  toolResult?: JsonValue;
  error?: TaskErrorInfo;
  startedAt?: number;
  durationMs?: number;
  usage?: StepUsage;
}

/**
 * Step-log kind of the record a strategy writes just before a model request leaves (`output.role` names the call's
 * own kind, e.g. `planner`). The finished call's record has that kind and the same `startedAt`; a request record
 * without one is a call whose reply was never recorded (cut short by a restart, or still running).
 */
export const MODEL_REQUEST_KIND = 'model_request';

/** A persisted step-log record. `seq` is dense per task; `step` is the step number being decided. */
export interface StoredStep extends StepRecord {
  taskId: string;
  seq: number;
  step: number;
  at: number;
}

/**
 * A page of a task's step log (`TaskStore.getSteps`, `Engine.getSteps`): the records with `seq > afterSeq`, in `seq`
 * order, at most `limit` of them. Without either field, every record. A follower passes the last `seq` it has seen
 * as `afterSeq` to read only what is new.
 */
export interface StepQuery {
  /** Only records with a `seq` strictly greater than this (an integer ≥ 0; default 0, i.e. from the first). */
  afterSeq?: number;
  /** At most this many records (an integer ≥ 0; default: no limit). */
  limit?: number;
}

/** A command the executor can run, as shown to strategies. */
export interface CommandDescriptor {
  name: string;
  description?: string;
  /** JSON Schema of the arguments. */
  argsSchema?: JsonValue;
  /** Per-command timeout override in milliseconds. */
  timeoutMs?: number;
  /** `server`: a server-side tool, run in this process (see `ServerToolRegistry`); absent: a computer's command. */
  origin?: 'server';
}
