/**
 * What the CLI reads and does, independent of where it comes from: the SQLite file (read-only) or a running
 * orchestrator's HTTP API. Both sources produce exactly these shapes, so the output (human and `--json`) is the same.
 * Field names follow the engine's domain types (camelCase); times are epoch milliseconds.
 */
import type { HttpStepEvent, ModelsResponse } from '@ccagent/protocol';
import type { Task } from '@ccagent/engine';

/** A structured error as stored on a failed task or step. */
export interface ErrorView {
  code: string;
  message: string;
  details?: unknown;
}

/**
 * One task: the engine's {@link Task} without what the CLI never shows (memory, metadata, context, wake time), plus
 * the per-task settings in their wire form (`settings` of the create request). Derived, not redefined: a field the
 * engine adds or renames reaches both sources and the renderer through the compiler.
 */
export type TaskView = Pick<
  Task,
  | 'id'
  | 'kind'
  | 'status'
  | 'clientId'
  | 'prompt'
  | 'allowedCommands'
  | 'counters'
  | 'budgets'
  | 'result'
  | 'error'
  | 'progress'
  | 'progressMessage'
  | 'createdAt'
  | 'updatedAt'
> & {
  /** Per-task settings chosen at creation, in their wire form (`settings` of the create request). */
  settings?: Record<string, unknown>;
};

/** Token usage and model-side timing of one model call. */
export interface UsageView {
  promptTokens?: number;
  completionTokens?: number;
  totalDurationMs?: number;
}

/**
 * One step-log record: what a model saw and said (`planner`, `executor`, `native` …), what the strategy decided
 * (`decision`), or what a tool was asked and answered (`tool_result`). `seq` is dense per task; `step` is the engine
 * step the record belongs to (several records per step).
 */
export interface StepView {
  seq: number;
  step: number;
  kind: string;
  /** When the record was written. */
  at: number;
  model?: string;
  /** Exact model input: messages, options, format, tools. */
  input?: unknown;
  /** Raw model output. */
  output?: unknown;
  /** Parsed directive or decision. */
  directive?: unknown;
  validationErrors?: string[];
  toolCall?: unknown;
  /**
   * The client the record's call (`toolCall.callId`) was sent to, when its task is bound to no client: the call's
   * recorded `sent_to`, the only client that call ever goes to. Absent for calls of bound tasks.
   */
  sentTo?: string;
  toolResult?: unknown;
  error?: ErrorView;
  startedAt?: number;
  durationMs?: number;
  usage?: UsageView;
}

/** A question a task asked a person (`ask_user`) and its answer, if any. */
export interface QuestionView {
  questionId: string;
  question: string;
  why?: string;
  answer?: string;
  askedAt: number;
  answeredAt?: number;
}

/**
 * The open command call of a task bound to no client, and where it went: `sentTo` is the client recorded for it (the
 * only one it is ever sent to), absent while no client offering the command has been chosen yet.
 */
export interface OpenCallView {
  callId: string;
  command: string;
  sentTo?: string;
}

/** A task with its whole step log and its questions (`tasks show`, `tasks follow`). */
export interface TaskDetail {
  task: TaskView;
  steps: StepView[];
  questions: QuestionView[];
  /** `tasks show` only: the call a task bound to no client waits for (absent for bound tasks and when none is open). */
  openCall?: OpenCallView;
  /** `tasks show`/`export` only: the follow-up messages sent to the task, oldest first. */
  messages?: MessageView[];
}

/** A follow-up message sent to a task (`ccagent tasks message`, the dashboard's chat, Lua `message`). */
export interface MessageView {
  text: string;
  from?: string;
  at: number;
}

/**
 * What a follower reads each poll: the task, its questions, and only the step-log records after the last `seq` it
 * has (at most a page of them). The task is read first, so a finished task comes with every record it wrote.
 */
export interface TaskUpdates extends TaskDetail {
  /** More records follow this page: read again at once, from the last `seq` of `steps`. */
  hasMore: boolean;
}

/** A CC client the orchestrator has seen. `connected` is the server's last recorded state in `--db` mode. */
export interface ClientView {
  clientId: string;
  connected: boolean;
  clientVersion?: string;
  firstSeenAt?: number;
  lastSeenAt?: number;
  /** Names of the commands the client offers. */
  commands: string[];
}

/** A model-written tool on a client and its lifecycle state (draft, test, active, retired). */
export interface ToolView {
  clientId: string;
  name: string;
  status: string;
  version: number;
  description?: string;
  file?: string;
  updatedAt?: number;
  recordedAt?: number;
}

/** Filters of `tasks list` (ANDed); newest first. */
export interface TaskListQuery {
  status?: string[];
  kind?: string;
  client?: string;
  limit: number;
  offset: number;
}

/** One page of `tasks list` and how many tasks match overall. */
export interface TaskPageView {
  tasks: TaskView[];
  total: number;
}

/** Input of `tasks create`. */
export interface CreateTaskInput {
  kind: string;
  prompt: string;
  clientId?: string;
  allowedCommands?: string[];
  /** Per-task settings (the wire form: `models`, `temperature`, `num_ctx`, `budgets` …). */
  settings?: Record<string, unknown>;
  /** The agent's name: events may be sent to it by name (`tasks event`, a trigger's `agent`). */
  name?: string;
}

/** Where the CLI gets its data. Unknown ids reject with `CliError('not_found')`. */
export interface TaskSource {
  /** Where the data comes from, for messages: a file path or a URL. */
  readonly label: string;
  listTasks(query: TaskListQuery): Promise<TaskPageView>;
  getTask(id: string): Promise<TaskDetail>;
  /** The task, its questions, and at most `limit` step-log records with `seq > afterSeq`, in `seq` order. */
  getTaskUpdates(id: string, afterSeq: number, limit: number): Promise<TaskUpdates>;
  listClients(): Promise<ClientView[]>;
  listTools(): Promise<ToolView[]>;
  /** The model roles and pools of servers with their state (`GET /api/models`); only a running server knows them. */
  listModels?(): Promise<ModelsResponse>;
  /**
   * Optional push: wake-ups when the task changes (the orchestrator's event stream), so `tasks follow` need not
   * sleep a poll interval; undefined when the source cannot push (a database file, an older server). `onDelta`
   * receives a chat task's reply as the model writes it; with `summaries`, `take()` hands over the step records whose
   * short form the stream carried (painted without a read) and whether a read is due.
   */
  watchTask?(
    id: string,
    onDelta?: (delta: { step: number; text: string }) => void,
    options?: { summaries?: boolean },
  ): Promise<
    | {
        wait(maxMs: number): Promise<void>;
        readonly pushing: boolean;
        take(): { steps: HttpStepEvent[]; read: boolean };
        close(): void;
      }
    | undefined
  >;
  close(): Promise<void>;
}

/** The actions only a running orchestrator can take (the CLI never writes the database). */
export interface TaskActions {
  readonly label: string;
  createTask(input: CreateTaskInput): Promise<{ task: TaskView; created: boolean }>;
  cancelTask(id: string, reason?: string): Promise<TaskView>;
  answer(id: string, text: string, questionId?: string): Promise<TaskView>;
  /** A follow-up message: a running task sees it next step; an ended one continues with it. */
  message(id: string, text: string): Promise<TaskView>;
  /** Resume a failed or cancelled task from its memory with fresh budgets. */
  retry(id: string): Promise<TaskView>;
  /**
   * An outside event to the running task `agent` names (its name, else its id), among every task or those
   * `clientId` reaches; a sleeping task wakes.
   */
  event(agent: string, name: string, data?: unknown, clientId?: string): Promise<TaskView>;
}
