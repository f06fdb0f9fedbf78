/**
 * The rows every ccagent store keeps, column for column (camelCase property = snake_case column): the same tables in
 * SQLite and PostgreSQL, JSON values as text, SQL NULL as `null`, times as epoch milliseconds. A store's Drizzle
 * schema infers exactly these shapes (rows.test.ts in each store checks it by type); the codec maps them to domain
 * values. Type aliases, not interfaces, so a row is a `Record<string, unknown>` like the inferred ones.
 */

/** A `tasks` row (the memory lives in `task_memory`). */
export type TaskRow = {
  id: string;
  kind: string;
  status: string;
  clientId: string | null;
  prompt: string;
  context: string | null;
  allowedCommands: string;
  metadata: string;
  budgets: string;
  stepsCount: number;
  toolCallsCount: number;
  questionsCount: number;
  result: string | null;
  error: string | null;
  progress: number | null;
  progressMessage: string | null;
  wakeAt: number | null;
  createdAt: number;
  updatedAt: number;
};

/** A `steps` row: `input` whole, or `inputPacked` (a packed model input, see step-messages.ts). */
export type StepRow = {
  taskId: string;
  seq: number;
  step: number;
  at: number;
  kind: string;
  model: string | null;
  input: string | null;
  inputPacked: string | null;
  output: string | null;
  directive: string | null;
  validationErrors: string | null;
  toolCall: string | null;
  toolResult: string | null;
  error: string | null;
  startedAt: number | null;
  durationMs: number | null;
  promptTokens: number | null;
  completionTokens: number | null;
  totalDurationMs: number | null;
};

/** A `history` row (the entry's body as JSON text). */
export type HistoryRow = {
  taskId: string;
  seq: number;
  step: number;
  at: number;
  type: string;
  body: string;
};

/** A `command_calls` row; `sentTo` is the binding of a call of a task bound to no client. */
export type CallRow = {
  callId: string;
  taskId: string;
  command: string;
  args: string;
  timeoutMs: number;
  status: string;
  outcome: string | null;
  dispatchCount: number;
  createdAt: number;
  completedAt: number | null;
  sentTo: string | null;
};

/** A `questions` row. */
export type QuestionRow = {
  questionId: string;
  taskId: string;
  question: string;
  why: string | null;
  answer: string | null;
  askedAt: number;
  answeredAt: number | null;
};

/** A `clients` row. */
export type ClientRow = {
  clientId: string;
  commands: string;
  connected: boolean;
  clientVersion: string | null;
  connectedWith: string | null;
  firstSeenAt: number;
  lastSeenAt: number;
};

/** A `model_tools` row. */
export type ToolRow = {
  clientId: string;
  name: string;
  status: string;
  version: number;
  description: string | null;
  file: string | null;
  updatedAt: number | null;
  recordedAt: number;
};
