/**
 * Mapping between domain values (camelCase, optional fields) and rows (JSON text columns, SQL NULL = absent), the
 * same for every store, so a task reads back the same values from SQLite and PostgreSQL.
 */
import type {
  CommandCallRecord,
  CommandCallStatus,
  CommandDescriptor,
  HistoryEntry,
  HistoryEntryBody,
  JsonValue,
  QuestionRecord,
  StepRecord,
  StoredStep,
  Task,
  TaskStatus,
} from '@ccagent/engine';
import type { CallRow, ClientRow, HistoryRow, QuestionRow, StepRow, TaskRow, ToolRow } from './rows.js';
import { packStepInput, unpackStepInput, type StepMessage } from './step-messages.js';
import type { ClientRecord, ModelToolRecord, ModelToolStatus } from './types.js';

/** JSON text of a value, or SQL NULL for `undefined`. */
export function enc(value: unknown): string | null {
  return value === undefined ? null : JSON.stringify(value);
}

function dec<T = JsonValue>(text: string): T {
  return JSON.parse(text) as T;
}

/** A task row with its memory (`task_memory.memory`, joined; NULL only if the row were missing). */
export type TaskRowWithMemory = TaskRow & { memory: string | null };

/**
 * Row of a task (without its memory, which lives in `task_memory`). `encodeJson` encodes the allowed commands,
 * metadata and budgets (`undefined` as `null`); it may reuse an earlier encoding of the same object.
 */
export function taskToRow(
  t: Task,
  encodeJson: (value: JsonValue | undefined) => string = (v) => JSON.stringify(v ?? null),
): TaskRow {
  return {
    id: t.id,
    kind: t.kind,
    status: t.status,
    clientId: t.clientId,
    prompt: t.prompt,
    context: enc(t.context),
    allowedCommands: encodeJson(t.allowedCommands),
    metadata: encodeJson(t.metadata),
    budgets: encodeJson(t.budgets as JsonValue),
    stepsCount: t.counters.steps,
    toolCallsCount: t.counters.toolCalls,
    questionsCount: t.counters.questions,
    result: enc(t.result),
    error: enc(t.error),
    progress: t.progress ?? null,
    progressMessage: t.progressMessage ?? null,
    wakeAt: t.wakeAt ?? null,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
  };
}

/** Task of a row and its memory. */
export function rowToTask(r: TaskRowWithMemory): Task {
  const t: Task = {
    id: r.id,
    kind: r.kind,
    status: r.status as TaskStatus,
    clientId: r.clientId,
    prompt: r.prompt,
    allowedCommands: dec<string[]>(r.allowedCommands),
    memory: r.memory === null ? null : dec(r.memory),
    metadata: dec<Record<string, JsonValue>>(r.metadata),
    budgets: dec<Task['budgets']>(r.budgets),
    counters: { steps: r.stepsCount, toolCalls: r.toolCallsCount, questions: r.questionsCount },
    createdAt: r.createdAt,
    updatedAt: r.updatedAt,
  };
  if (r.context !== null) t.context = dec(r.context);
  if (r.result !== null) t.result = dec(r.result);
  if (r.error !== null) t.error = dec<NonNullable<Task['error']>>(r.error);
  if (r.progress !== null) t.progress = r.progress;
  if (r.progressMessage !== null) t.progressMessage = r.progressMessage;
  if (r.wakeAt !== null) t.wakeAt = r.wakeAt;
  return t;
}

/** Row of a step-log record, its input stored whole (`input`; see {@link packedStepToRow} for the packed form). */
export function stepToRow(
  taskId: string,
  seq: number,
  s: StepRecord & { step: number; at: number },
): StepRow {
  return stepRow(taskId, seq, s, enc(s.input), null);
}

/**
 * Row of a step-log record as the store writes it (schema version 5): a model input worth packing goes to
 * `input_packed` with the messages it references (to be written to `step_messages` in the same transaction);
 * any other input is stored whole, and `messages` is empty. `hashOf` is the SHA-256 of a JSON text (a memo of it).
 */
export function packedStepToRow(
  taskId: string,
  seq: number,
  s: StepRecord & { step: number; at: number },
  hashOf?: (body: string) => string,
): { row: StepRow; messages: StepMessage[] } {
  const packed = packStepInput(s.input, hashOf);
  if (packed === undefined) return { row: stepToRow(taskId, seq, s), messages: [] };
  return { row: stepRow(taskId, seq, s, null, packed.packed), messages: packed.messages };
}

function stepRow(
  taskId: string,
  seq: number,
  s: StepRecord & { step: number; at: number },
  input: string | null,
  inputPacked: string | null,
): StepRow {
  return {
    taskId,
    seq,
    step: s.step,
    at: s.at,
    kind: s.kind,
    model: s.model ?? null,
    input,
    inputPacked,
    output: enc(s.output),
    directive: enc(s.directive),
    validationErrors: enc(s.validationErrors),
    toolCall: enc(s.toolCall),
    toolResult: enc(s.toolResult),
    error: enc(s.error),
    startedAt: s.startedAt ?? null,
    durationMs: s.durationMs ?? null,
    promptTokens: s.usage?.promptTokens ?? null,
    completionTokens: s.usage?.completionTokens ?? null,
    totalDurationMs: s.usage?.totalDurationMs ?? null,
  };
}

/**
 * The stored step a just-written record becomes, without decoding the row again: the same fields `rowToStep` gives
 * for it (absent when undefined; an empty `usage` dropped). Values are the record's own (a decision record carries
 * the whole strategy memory: parsing its JSON back on every commit was a visible share of the server's time).
 */
export function recordToStep(
  taskId: string,
  seq: number,
  r: StepRecord & { step: number; at: number },
): StoredStep {
  const s: StoredStep = { taskId, seq, step: r.step, at: r.at, kind: r.kind };
  if (r.model !== undefined) s.model = r.model;
  if (r.input !== undefined) s.input = r.input;
  if (r.output !== undefined) s.output = r.output;
  if (r.directive !== undefined) s.directive = r.directive;
  if (r.validationErrors !== undefined) s.validationErrors = r.validationErrors;
  if (r.toolCall !== undefined) s.toolCall = r.toolCall;
  if (r.toolResult !== undefined) s.toolResult = r.toolResult;
  if (r.error !== undefined) s.error = r.error;
  if (r.startedAt !== undefined) s.startedAt = r.startedAt;
  if (r.durationMs !== undefined) s.durationMs = r.durationMs;
  const u = r.usage;
  if (
    u &&
    (u.promptTokens !== undefined || u.completionTokens !== undefined || u.totalDurationMs !== undefined)
  ) {
    s.usage = {};
    if (u.promptTokens !== undefined) s.usage.promptTokens = u.promptTokens;
    if (u.completionTokens !== undefined) s.usage.completionTokens = u.completionTokens;
    if (u.totalDurationMs !== undefined) s.usage.totalDurationMs = u.totalDurationMs;
  }
  return s;
}

/**
 * Step-log record of a row. An empty `usage` object is not preserved (it carries nothing). A packed input
 * (`input_packed`) is rebuilt from `messages` (hash → JSON text of every message the row references; see
 * `step-messages.ts`).
 */
export function rowToStep(r: StepRow, messages: ReadonlyMap<string, string> = NO_MESSAGES): StoredStep {
  const s: StoredStep = { taskId: r.taskId, seq: r.seq, step: r.step, at: r.at, kind: r.kind };
  if (r.model !== null) s.model = r.model;
  if (r.input !== null) s.input = dec(r.input);
  else if (r.inputPacked !== null) s.input = unpackStepInput(r.inputPacked, messages, r);
  if (r.output !== null) s.output = dec(r.output);
  if (r.directive !== null) s.directive = dec(r.directive);
  if (r.validationErrors !== null) s.validationErrors = dec<string[]>(r.validationErrors);
  if (r.toolCall !== null) s.toolCall = dec(r.toolCall);
  if (r.toolResult !== null) s.toolResult = dec(r.toolResult);
  if (r.error !== null) s.error = dec<NonNullable<StoredStep['error']>>(r.error);
  if (r.startedAt !== null) s.startedAt = r.startedAt;
  if (r.durationMs !== null) s.durationMs = r.durationMs;
  if (r.promptTokens !== null || r.completionTokens !== null || r.totalDurationMs !== null) {
    s.usage = {};
    if (r.promptTokens !== null) s.usage.promptTokens = r.promptTokens;
    if (r.completionTokens !== null) s.usage.completionTokens = r.completionTokens;
    if (r.totalDurationMs !== null) s.usage.totalDurationMs = r.totalDurationMs;
  }
  return s;
}

const NO_MESSAGES: ReadonlyMap<string, string> = new Map();

/** Row of a history entry (the body keeps its `type`). */
export function historyToRow(
  taskId: string,
  seq: number,
  h: HistoryEntryBody & { step: number; at: number },
): HistoryRow {
  const { step, at, ...body } = h as HistoryEntryBody & {
    step: number;
    at: number;
    taskId?: string;
    seq?: number;
  };
  delete body.taskId;
  delete body.seq;
  return { taskId, seq, step, at, type: h.type, body: JSON.stringify(body) };
}

/**
 * History entry of a row: the parsed body with the row's columns assigned onto it (the same keys in the same order as
 * spreading it into a new literal). Not a spread: on Node 20 each spread copy got a hidden class of its own, so a
 * long task's cached history held one V8 map per entry (+8.9 MiB at 18,000 tool calls in the soak benchmark, and
 * megamorphic reads of every entry); assigned this way entries of one type share their shape.
 */
export function rowToHistory(r: HistoryRow): HistoryEntry {
  return Object.assign(dec<HistoryEntryBody>(r.body), {
    taskId: r.taskId,
    seq: r.seq,
    step: r.step,
    at: r.at,
  }) as HistoryEntry;
}

/** Row of a command call, without its binding (`sent_to`: written by `bindCall` only, never by a commit). */
export function callToRow(c: CommandCallRecord): Omit<CallRow, 'sentTo'> {
  return {
    callId: c.callId,
    taskId: c.taskId,
    command: c.command,
    args: JSON.stringify(c.args),
    timeoutMs: c.timeoutMs,
    status: c.status,
    outcome: enc(c.outcome),
    dispatchCount: c.dispatchCount,
    createdAt: c.createdAt,
    completedAt: c.completedAt ?? null,
  };
}

/** Command call of a row. */
export function rowToCall(r: CallRow): CommandCallRecord {
  const c: CommandCallRecord = {
    callId: r.callId,
    taskId: r.taskId,
    command: r.command,
    args: dec(r.args),
    timeoutMs: r.timeoutMs,
    status: r.status as CommandCallStatus,
    dispatchCount: r.dispatchCount,
    createdAt: r.createdAt,
  };
  if (r.outcome !== null) c.outcome = dec<NonNullable<CommandCallRecord['outcome']>>(r.outcome);
  if (r.completedAt !== null) c.completedAt = r.completedAt;
  if (r.sentTo !== null) c.sentTo = r.sentTo;
  return c;
}

/** Row of a question. */
export function questionToRow(q: QuestionRecord): QuestionRow {
  return {
    questionId: q.questionId,
    taskId: q.taskId,
    question: q.question,
    why: q.why ?? null,
    answer: q.answer ?? null,
    askedAt: q.askedAt,
    answeredAt: q.answeredAt ?? null,
  };
}

/** Question of a row. */
export function rowToQuestion(r: QuestionRow): QuestionRecord {
  const q: QuestionRecord = {
    questionId: r.questionId,
    taskId: r.taskId,
    question: r.question,
    askedAt: r.askedAt,
  };
  if (r.why !== null) q.why = r.why;
  if (r.answer !== null) q.answer = r.answer;
  if (r.answeredAt !== null) q.answeredAt = r.answeredAt;
  return q;
}

/** Client of a row. */
export function rowToClient(r: ClientRow): ClientRecord {
  const c: ClientRecord = {
    clientId: r.clientId,
    commands: dec<CommandDescriptor[]>(r.commands),
    connected: r.connected,
    firstSeenAt: r.firstSeenAt,
    lastSeenAt: r.lastSeenAt,
  };
  if (r.clientVersion !== null) c.clientVersion = r.clientVersion;
  if (r.connectedWith !== null) c.connectedWith = r.connectedWith;
  return c;
}

/** Model tool of a row. */
export function rowToTool(r: ToolRow): ModelToolRecord {
  const t: ModelToolRecord = {
    clientId: r.clientId,
    name: r.name,
    status: r.status as ModelToolStatus,
    version: r.version,
    recordedAt: r.recordedAt,
  };
  if (r.description !== null) t.description = r.description;
  if (r.file !== null) t.file = r.file;
  if (r.updatedAt !== null) t.updatedAt = r.updatedAt;
  return t;
}
