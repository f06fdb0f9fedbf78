/**
 * The orchestrator's HTTP bodies (snake_case, see docs/http-api.md) → the CLI's views. Every body is parsed with its
 * schema from @ccagent/protocol (the same the server types its answers with), so a server that answers something
 * unexpected is one clear error instead of `undefined` in a table; the transforms here only map to the views.
 */
import {
  ClientsResponseSchema,
  ModelsResponseSchema,
  CreateTaskResponseSchema,
  HttpClientSchema,
  HttpCommandCallSchema,
  HttpErrorBodySchema,
  HttpQuestionSchema,
  HttpStepSchema,
  HttpTaskSchema,
  HttpToolSchema,
  TaskDetailResponseSchema,
  TaskListResponseSchema,
  TaskResponseSchema,
  TaskStepsResponseSchema,
  type HttpStepEvent,
  ToolsResponseSchema,
} from '@ccagent/protocol';
import { z } from 'zod';
import { routingOf, withSentTo, type CallRouting } from './sent-to.js';
import type {
  ClientView,
  QuestionView,
  StepView,
  TaskDetail,
  TaskPageView,
  TaskUpdates,
  TaskView,
  ToolView,
} from './source.js';

/** `taskToWire` of the orchestrator. */
const wireTask = HttpTaskSchema.transform((t): TaskView => {
  const budgets: TaskView['budgets'] = {};
  if (t.budgets.max_steps !== undefined) budgets.maxSteps = t.budgets.max_steps;
  if (t.budgets.max_tool_calls !== undefined) budgets.maxToolCalls = t.budgets.max_tool_calls;
  if (t.budgets.deadline_at !== undefined) budgets.deadlineAt = t.budgets.deadline_at;
  const out: TaskView = {
    id: t.id,
    kind: t.kind,
    status: t.status,
    clientId: t.client_id,
    prompt: t.prompt,
    allowedCommands: t.allowed_commands,
    counters: {
      steps: t.counters.steps,
      toolCalls: t.counters.tool_calls,
      questions: t.counters.questions,
    },
    budgets,
    createdAt: t.created_at,
    updatedAt: t.updated_at,
  };
  // Parsed from JSON text, so JSON values by construction.
  if (t.result !== undefined) out.result = t.result as TaskView['result'];
  if (t.error !== undefined) out.error = t.error as TaskView['error'];
  if (t.progress !== undefined) out.progress = t.progress;
  if (t.progress_message !== undefined) out.progressMessage = t.progress_message;
  if (t.settings !== undefined) out.settings = t.settings;
  return out;
});

/** `stepToWire` of the orchestrator. */
const wireStep = HttpStepSchema.transform((s): StepView => {
  const out: StepView = { seq: s.seq, step: s.step, kind: s.kind, at: s.at };
  if (s.model !== undefined) out.model = s.model;
  if (s.input !== undefined) out.input = s.input;
  if (s.output !== undefined) out.output = s.output;
  if (s.directive !== undefined) out.directive = s.directive;
  if (s.validation_errors !== undefined) out.validationErrors = s.validation_errors;
  if (s.tool_call !== undefined) out.toolCall = s.tool_call;
  if (s.tool_result !== undefined) out.toolResult = s.tool_result;
  if (s.error !== undefined) out.error = s.error;
  if (s.started_at !== undefined) out.startedAt = s.started_at;
  if (s.duration_ms !== undefined) out.durationMs = s.duration_ms;
  if (s.usage !== undefined) out.usage = usageView(s.usage);
  return out;
});

function usageView(w: NonNullable<HttpStepEvent['usage']>): NonNullable<StepView['usage']> {
  const u: NonNullable<StepView['usage']> = {};
  if (w.prompt_tokens !== undefined) u.promptTokens = w.prompt_tokens;
  if (w.completion_tokens !== undefined) u.completionTokens = w.completion_tokens;
  if (w.total_duration_ms !== undefined) u.totalDurationMs = w.total_duration_ms;
  return u;
}

/**
 * A `step` record's short form (the event stream's `summary: true`) → the view `tasks follow` paints: the model's
 * text out and a tool result as their 200-character `preview`, a call as its command, no model input.
 */
export function stepSummaryView(s: HttpStepEvent): StepView {
  const out: StepView = { seq: s.seq, step: s.step, kind: s.kind, at: s.at };
  if (s.model !== undefined) out.model = s.model;
  // A request record's role is what pairs it with its reply's record (answeredRequests).
  if (s.role !== undefined) out.output = { role: s.role };
  else if (s.output_chars !== undefined && s.preview !== undefined) out.output = s.preview;
  if (s.directive !== undefined) out.directive = s.directive;
  if (s.validation_errors !== undefined) out.validationErrors = s.validation_errors;
  if (s.tool_call !== undefined) out.toolCall = s.tool_call;
  if (s.tool_result !== undefined) {
    const preview = out.output === undefined ? s.preview : undefined;
    const ok = s.tool_result.ok;
    out.toolResult =
      ok === true
        ? { ok, result: preview }
        : ok === false
          ? { ok, error: { message: preview ?? '' } }
          : (preview ?? s.tool_result);
  }
  if (s.error !== undefined) out.error = s.error;
  if (s.started_at !== undefined) out.startedAt = s.started_at;
  if (s.duration_ms !== undefined) out.durationMs = s.duration_ms;
  if (s.usage !== undefined) out.usage = usageView(s.usage);
  return out;
}

const wireQuestion = HttpQuestionSchema.transform((q): QuestionView => {
  const out: QuestionView = { questionId: q.question_id, question: q.question, askedAt: q.asked_at };
  if (q.why !== undefined) out.why = q.why;
  if (q.answer !== undefined) out.answer = q.answer;
  if (q.answered_at !== undefined) out.answeredAt = q.answered_at;
  return out;
});

const wireClient = HttpClientSchema.transform((c): ClientView => {
  const out: ClientView = {
    clientId: c.client_id,
    connected: c.connected,
    commands: c.commands.map((d) => d.name),
  };
  if (c.client_version !== undefined) out.clientVersion = c.client_version;
  if (c.first_seen_at !== undefined) out.firstSeenAt = c.first_seen_at;
  if (c.last_seen_at !== undefined) out.lastSeenAt = c.last_seen_at;
  return out;
});

const wireTool = HttpToolSchema.transform((t): ToolView => {
  const out: ToolView = { clientId: t.client_id, name: t.name, status: t.status, version: t.version };
  if (t.description !== undefined) out.description = t.description;
  if (t.file !== undefined) out.file = t.file;
  if (t.updated_at !== undefined) out.updatedAt = t.updated_at;
  if (t.recorded_at !== undefined) out.recordedAt = t.recorded_at;
  return out;
});

/** What the CLI reads of `callToWire`: the call, its state, and the client it was sent to (unbound tasks only). */
const wireCallRouting = HttpCommandCallSchema.transform((c): CallRouting => {
  const out: CallRouting = { callId: c.call_id, command: c.command, status: c.status };
  if (c.sent_to !== undefined) out.sentTo = c.sent_to;
  return out;
});

/** Body schemas of the routes the CLI calls, each already mapped to views. */
export const wireBodies = {
  /** `GET /api/tasks` */
  taskPage: TaskListResponseSchema.extend({ tasks: z.array(wireTask) }).transform((b): TaskPageView => ({
    tasks: b.tasks,
    total: b.total,
  })),
  /** `GET /api/tasks/:id` (its `command_calls` give the client each call of an unbound task was sent to) */
  taskDetail: TaskDetailResponseSchema.extend({
    task: wireTask,
    steps: z.array(wireStep),
    questions: z.array(wireQuestion),
    command_calls: z.array(wireCallRouting),
  }).transform((b): TaskDetail => {
    // A bound task's calls go to its client: only an unbound task's calls say where they went.
    const { sentTo, openCall } = routingOf(b.task.clientId === null ? b.command_calls : []);
    const detail: TaskDetail = {
      task: b.task,
      steps: withSentTo(b.steps, sentTo),
      questions: b.questions,
      messages: b.history.flatMap((h) => {
        const m = h as { type?: unknown; text?: unknown; from?: unknown; at: number };
        if (m.type !== 'message' || typeof m.text !== 'string') return [];
        return [{ text: m.text, at: m.at, ...(typeof m.from === 'string' ? { from: m.from } : {}) }];
      }),
    };
    if (openCall) detail.openCall = openCall;
    return detail;
  }),
  /** `GET /api/tasks/:id/steps` (with the calls of the page's tool records) */
  taskSteps: TaskStepsResponseSchema.extend({
    task: wireTask,
    steps: z.array(wireStep),
    questions: z.array(wireQuestion),
    command_calls: z.array(wireCallRouting),
  }).transform((b): TaskUpdates => ({
    task: b.task,
    steps: withSentTo(b.steps, routingOf(b.command_calls).sentTo),
    questions: b.questions,
    hasMore: b.has_more,
  })),
  /** `POST /api/tasks` */
  created: CreateTaskResponseSchema.extend({ task: wireTask }),
  /** `POST /api/tasks/:id/cancel`, `POST /api/tasks/:id/answer` */
  task: TaskResponseSchema.extend({ task: wireTask }).transform((b) => b.task),
  /** `GET /api/clients` */
  clients: ClientsResponseSchema.extend({ clients: z.array(wireClient) }).transform((b) => b.clients),
  /** `GET /api/models` */
  models: ModelsResponseSchema,
  /** `GET /api/tools` */
  tools: ToolsResponseSchema.extend({ tools: z.array(wireTool) }).transform((b) => b.tools),
  /** Error body of every route: `{"error": {"code", "message", "path"?}}`. */
  error: HttpErrorBodySchema,
};
