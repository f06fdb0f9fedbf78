/**
 * The one place where the engine's camelCase domain values meet the snake_case wire: WebSocket messages and HTTP
 * bodies. Everything that leaves or enters the orchestrator goes through these functions.
 */
import type {
  CommandCallRecord,
  CommandDescriptor,
  CommandOutcome,
  HistoryEntry,
  JsonValue,
  QuestionRecord,
  StepUsage,
  StoredStep,
  Task,
} from '@ccagent/engine';
import { MODEL_REQUEST_KIND, TASK_METADATA_KEYS } from '@ccagent/engine';
import type {
  HttpCommand,
  HttpCommandCall,
  HttpHistoryEntry,
  HttpQuestion,
  HttpStep,
  HttpStepSummary,
  HttpTask,
  AskUserMessage,
  CommandCallMessage,
  CommandResultMessage,
  CommandSpec,
  TaskCompletedMessage,
  TaskFailedMessage,
  TaskUpdateMessage,
} from '@ccagent/protocol';

/** `hello.commands[]` → the engine's command descriptor. */
export function commandSpecToDescriptor(spec: CommandSpec): CommandDescriptor {
  const d: CommandDescriptor = { name: spec.name };
  if (spec.description !== undefined) d.description = spec.description;
  if (spec.args_schema !== undefined) d.argsSchema = spec.args_schema as JsonValue;
  if (spec.timeout_ms !== undefined) d.timeoutMs = spec.timeout_ms;
  return d;
}

/** Command descriptor → the snake_case shape shown by `GET /api/clients`. */
export function descriptorToWire(d: CommandDescriptor): HttpCommand {
  const out: HttpCommand = { name: d.name };
  if (d.description !== undefined) out.description = d.description;
  if (d.argsSchema !== undefined) out.args_schema = d.argsSchema;
  if (d.timeoutMs !== undefined) out.timeout_ms = d.timeoutMs;
  return out;
}

/** `command_result` → the engine's outcome (a string error becomes `{message}`). */
export function resultToOutcome(msg: CommandResultMessage): CommandOutcome {
  if (msg.ok) return { ok: true, result: (msg.result ?? null) as JsonValue };
  const e = msg.error;
  if (typeof e === 'string' || e === undefined)
    return { ok: false, error: { message: e ?? 'command failed' } };
  const error: { code?: string; message: string; traceback?: string; hostTraceback?: string } = {
    message: e.message,
  };
  if (e.code !== undefined) error.code = e.code;
  if (e.traceback !== undefined) error.traceback = e.traceback;
  if (e.host_traceback !== undefined) error.hostTraceback = e.host_traceback;
  return { ok: false, error };
}

/** A command call the executor hands out → `command_call`. */
export function toCommandCall(c: {
  taskId: string;
  callId: string;
  command: string;
  args: JsonValue;
  timeoutMs: number;
}): CommandCallMessage {
  const args =
    typeof c.args === 'object' && c.args !== null && !Array.isArray(c.args)
      ? (c.args as Record<string, unknown>)
      : {};
  return {
    type: 'command_call',
    task_id: c.taskId,
    call_id: c.callId,
    command: c.command,
    args,
    timeout_ms: c.timeoutMs,
  };
}

/** Task status/progress → `task_update`. Progress outside 0..1 is clamped (the wire schema requires it). */
export function toTaskUpdate(task: Task, progress?: number, message?: string): TaskUpdateMessage {
  const msg: TaskUpdateMessage = { type: 'task_update', task_id: task.id, status: task.status };
  const p = progress ?? task.progress;
  if (p !== undefined && Number.isFinite(p)) msg.progress = Math.min(1, Math.max(0, p));
  const m = message ?? task.progressMessage;
  if (m !== undefined) msg.message = m;
  return msg;
}

/** Completed task → `task_completed`. */
export function toTaskCompleted(task: Task): TaskCompletedMessage {
  return { type: 'task_completed', task_id: task.id, result: task.result ?? null };
}

/** Failed task → `task_failed`. */
export function toTaskFailed(task: Task): TaskFailedMessage {
  const e = task.error ?? { code: 'failed', message: 'task failed' };
  return { type: 'task_failed', task_id: task.id, error: { code: e.code, message: e.message } };
}

/** Question → `ask_user`. */
export function toAskUser(q: QuestionRecord): AskUserMessage {
  const msg: AskUserMessage = {
    type: 'ask_user',
    task_id: q.taskId,
    question_id: q.questionId,
    question: q.question,
  };
  if (q.why !== undefined) msg.why = q.why;
  return msg;
}

/** Task → HTTP JSON (`HttpTask` of @ccagent/protocol). */
export function taskToWire(t: Task): HttpTask {
  const out: HttpTask = {
    id: t.id,
    kind: t.kind,
    status: t.status,
    client_id: t.clientId,
    prompt: t.prompt,
    allowed_commands: t.allowedCommands,
    metadata: t.metadata,
    budgets: {
      ...(t.budgets.maxSteps !== undefined ? { max_steps: t.budgets.maxSteps } : {}),
      ...(t.budgets.maxToolCalls !== undefined ? { max_tool_calls: t.budgets.maxToolCalls } : {}),
      ...(t.budgets.deadlineAt !== undefined ? { deadline_at: t.budgets.deadlineAt } : {}),
    },
    counters: { steps: t.counters.steps, tool_calls: t.counters.toolCalls, questions: t.counters.questions },
    created_at: t.createdAt,
    updated_at: t.updatedAt,
  };
  if (t.context !== undefined) out.context = t.context;
  if (t.result !== undefined) out.result = t.result;
  if (t.error !== undefined) out.error = t.error;
  if (t.progress !== undefined) out.progress = t.progress;
  if (t.progressMessage !== undefined) out.progress_message = t.progressMessage;
  // The per-task settings the request chose (as given; omitted fields come from the task kind).
  const settings = t.metadata[TASK_METADATA_KEYS.settings];
  if (settings !== undefined) out.settings = settings as Record<string, unknown>;
  return out;
}

/** Step-log record → HTTP JSON (everything the model saw and said, unabridged). */
export function stepToWire(s: StoredStep): HttpStep {
  const out: HttpStep = { seq: s.seq, step: s.step, kind: s.kind, at: s.at };
  if (s.model !== undefined) out.model = s.model;
  if (s.input !== undefined) out.input = s.input;
  if (s.output !== undefined) out.output = s.output;
  if (s.directive !== undefined) out.directive = s.directive;
  if (s.validationErrors !== undefined) out.validation_errors = s.validationErrors;
  if (s.toolCall !== undefined) out.tool_call = s.toolCall;
  if (s.toolResult !== undefined) out.tool_result = s.toolResult;
  if (s.error !== undefined) out.error = s.error;
  if (s.startedAt !== undefined) out.started_at = s.startedAt;
  if (s.durationMs !== undefined) out.duration_ms = s.durationMs;
  if (s.usage !== undefined) out.usage = usageToWire(s.usage);
  return out;
}

function usageToWire(u: StepUsage): WireObject {
  return {
    ...(u.promptTokens !== undefined ? { prompt_tokens: u.promptTokens } : {}),
    ...(u.completionTokens !== undefined ? { completion_tokens: u.completionTokens } : {}),
    ...(u.totalDurationMs !== undefined ? { total_duration_ms: u.totalDurationMs } : {}),
  };
}

/** The call id of a step-log record's tool call (`tool_call.callId`), if it has one. */
export function stepCallId(s: StoredStep): string | undefined {
  const c = s.toolCall;
  if (typeof c !== 'object' || c === null || Array.isArray(c)) return undefined;
  const id = c.callId;
  return typeof id === 'string' ? id : undefined;
}

/** History entry → HTTP JSON. */
export function historyToWire(h: HistoryEntry): HttpHistoryEntry {
  const {
    taskId: _taskId,
    callId,
    questionId,
    ...rest
  } = h as HistoryEntry & {
    callId?: string;
    questionId?: string;
  };
  const out: HttpHistoryEntry = { ...rest };
  if (callId !== undefined) out.call_id = callId;
  if (questionId !== undefined) out.question_id = questionId;
  if ('timedOut' in out) {
    out.timed_out = out.timedOut;
    delete out.timedOut;
  }
  return out;
}

/**
 * Command call row → HTTP JSON. `sent_to` (the client a call of a task bound to no client was sent to, recorded before
 * it was first sent) appears only when recorded: calls of bound tasks and calls never sent have none.
 */
export function callToWire(c: CommandCallRecord): HttpCommandCall {
  const out: HttpCommandCall = {
    call_id: c.callId,
    command: c.command,
    args: c.args,
    status: c.status,
    timeout_ms: c.timeoutMs,
    dispatch_count: c.dispatchCount,
    created_at: c.createdAt,
  };
  if (c.outcome !== undefined) out.outcome = c.outcome;
  if (c.completedAt !== undefined) out.completed_at = c.completedAt;
  if (c.sentTo !== undefined) out.sent_to = c.sentTo;
  return out;
}

/** Question row → HTTP JSON. */
export function questionToWire(q: QuestionRecord): HttpQuestion {
  const out: HttpQuestion = { question_id: q.questionId, question: q.question, asked_at: q.askedAt };
  if (q.why !== undefined) out.why = q.why;
  if (q.answer !== undefined) out.answer = q.answer;
  if (q.answeredAt !== undefined) out.answered_at = q.answeredAt;
  return out;
}

/** A wire JSON object (a step's usage). */
export type WireObject = Record<string, unknown>;

/** Longest text a step summary carries in `preview` and per validation error. */
export const STEP_PREVIEW_CHARS = 200;

function clipText(s: string): string {
  return s.length > STEP_PREVIEW_CHARS ? `${s.slice(0, STEP_PREVIEW_CHARS)}…` : s;
}

function jsonChars(v: JsonValue | undefined): number | undefined {
  return v === undefined ? undefined : JSON.stringify(v).length;
}

/**
 * Step-log record → the short form of `GET /api/tasks/:id/steps?summary=1` (a timeline row): everything small kept,
 * the model input and output replaced by their sizes and a `preview` of the text out, tool results cut to `ok` and a
 * preview, so a 5,000-step timeline is a few hundred KiB instead of every prompt the model ever saw.
 */
export function stepSummaryToWire(s: StoredStep): HttpStepSummary {
  return summarize(s, true);
}

/** The short form without `input_chars`: every prompt the model saw is a JSON.stringify the live `step` record skips. */
export function liveStepSummaryToWire(s: StoredStep): HttpStepSummary {
  return summarize(s, false);
}

function summarize(s: StoredStep, withInputChars: boolean): HttpStepSummary {
  const out: HttpStepSummary = { seq: s.seq, step: s.step, kind: s.kind, at: s.at };
  if (s.model !== undefined) out.model = s.model;
  const inChars = withInputChars ? jsonChars(s.input) : undefined;
  const outChars = jsonChars(s.output);
  if (inChars !== undefined) out.input_chars = inChars;
  if (outChars !== undefined) out.output_chars = outChars;
  const o = s.output;
  // A request record announces the call of this role; its finished record (same step and start) replaces it.
  if (s.kind === MODEL_REQUEST_KIND && typeof o === 'object' && o !== null && !Array.isArray(o)) {
    if (typeof o.role === 'string') out.role = o.role;
  }
  if (o !== undefined) {
    const content =
      typeof o === 'object' && o !== null && !Array.isArray(o) && typeof o.content === 'string'
        ? o.content
        : JSON.stringify(o);
    out.preview = clipText(content.trim() === '' && typeof o === 'object' ? JSON.stringify(o) : content);
  }
  if (s.directive !== undefined) {
    const d = s.directive;
    out.directive =
      typeof d === 'object' && d !== null && !Array.isArray(d)
        ? {
            ...(typeof d.type === 'string' ? { type: d.type } : {}),
            ...(typeof d.command === 'string' ? { command: d.command } : {}),
          }
        : {};
  }
  if (s.validationErrors !== undefined) out.validation_errors = s.validationErrors.slice(0, 3).map(clipText);
  const tc = s.toolCall;
  if (tc !== undefined && typeof tc === 'object' && tc !== null && !Array.isArray(tc)) {
    out.tool_call = {
      ...(typeof tc.command === 'string' ? { command: tc.command } : {}),
      ...(typeof tc.callId === 'string' ? { callId: tc.callId } : {}),
    };
  }
  const tr = s.toolResult;
  if (tr !== undefined) {
    const ok =
      typeof tr === 'object' && tr !== null && !Array.isArray(tr) && typeof tr.ok === 'boolean'
        ? tr.ok
        : undefined;
    out.tool_result = ok === undefined ? {} : { ok };
    if (out.preview === undefined) out.preview = clipText(JSON.stringify(tr));
  }
  if (s.error !== undefined) out.error = { code: s.error.code, message: clipText(s.error.message) };
  if (s.startedAt !== undefined) out.started_at = s.startedAt;
  if (s.durationMs !== undefined) out.duration_ms = s.durationMs;
  if (s.usage !== undefined) out.usage = usageToWire(s.usage);
  return out;
}
