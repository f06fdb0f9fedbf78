/**
 * The HTTP API's bodies (snake_case, like the WebSocket messages): zod schemas of every record the orchestrator
 * answers with and of every query and request body it accepts. The orchestrator parses requests and types its answers
 * with them, the CLI parses answers with them, and docs/http-api.md's reference is generated from them
 * (`renderHttpApiReference`). Response records are open (`z.object`): a newer server may add fields; request bodies
 * and queries are strict (an unknown field is a 400).
 */
import { z } from 'zod';
import { TASK_STATUSES } from '../constants.js';
import { ClientIdSchema, PrintableIdSchema, TaskSettingsSchema, TOOL_STATUSES } from '../messages.js';

const time = z.number().describe('epoch ms');

/** A failure as the engine records it: on a failed task, a step. */
export const HttpErrorInfoSchema = z.object({
  code: z.string(),
  message: z.string(),
  details: z.unknown().optional(),
});

/** A task. `context`, `result` (completed), `error` (failed), `progress` and `progress_message` appear when set. */
export const HttpTaskSchema = z.object({
  id: z.string(),
  kind: z.string(),
  status: z.enum(TASK_STATUSES),
  /** null: bound to no client (each call goes to a client offering the command). */
  client_id: z.string().nullable(),
  prompt: z.string(),
  allowed_commands: z.array(z.string()),
  metadata: z.record(z.string(), z.unknown()),
  budgets: z.object({
    max_steps: z.number().optional(),
    max_tool_calls: z.number().optional(),
    deadline_at: time.optional(),
  }),
  counters: z.object({ steps: z.number(), tool_calls: z.number(), questions: z.number() }),
  context: z.unknown().optional(),
  result: z.unknown().optional(),
  error: HttpErrorInfoSchema.optional(),
  progress: z.number().optional(),
  progress_message: z.string().optional(),
  /** The per-task settings the create request chose (as given; omitted ones come from the task kind). */
  settings: z.record(z.string(), z.unknown()).optional(),
  created_at: time,
  updated_at: time,
});

/** One record of a task's step log: what a model saw and said, a decision, a tool result. */
export const HttpStepSchema = z.object({
  seq: z.number(),
  step: z.number(),
  kind: z.string(),
  at: time,
  model: z.string().optional(),
  input: z.unknown().optional(),
  output: z.unknown().optional(),
  directive: z.unknown().optional(),
  validation_errors: z.array(z.string()).optional(),
  tool_call: z.unknown().optional(),
  tool_result: z.unknown().optional(),
  error: HttpErrorInfoSchema.optional(),
  started_at: time.optional(),
  duration_ms: z.number().optional(),
  usage: z
    .object({
      prompt_tokens: z.number().optional(),
      completion_tokens: z.number().optional(),
      total_duration_ms: z.number().optional(),
    })
    .optional(),
});

/**
 * A step-log record in its short form (`GET /api/tasks/:id/steps?summary=1`, a timeline row): `input` and `output`
 * replaced by their sizes and a preview, `directive`, `tool_call` and `tool_result` cut to a few fields, texts cut to
 * 200 characters.
 */
export const HttpStepSummarySchema = HttpStepSchema.omit({ input: true, output: true }).extend({
  input_chars: z.number().optional().describe('length of the input’s JSON text'),
  output_chars: z.number().optional().describe('length of the output’s JSON text'),
  preview: z.string().optional().describe('the first 200 characters of the text out, or of the tool result'),
  /** A `model_request` record: the kind of the record its reply will have (same `step` and `started_at`). */
  role: z
    .string()
    .optional()
    .describe('on a `model_request` record: the kind of the record its reply will have'),
  directive: z
    .object({ type: z.string().optional(), command: z.string().optional() })
    .optional()
    .describe('only `type` and `command`'),
  tool_call: z
    .object({ command: z.string().optional(), callId: z.string().optional() })
    .optional()
    .describe('only `command` and `callId`'),
  tool_result: z.object({ ok: z.boolean().optional() }).optional().describe('only `ok`'),
});

/** One entry of a task's history (what its strategy sees): `type` says which; the other fields depend on it. */
export const HttpHistoryEntrySchema = z.looseObject({
  seq: z.number(),
  step: z.number(),
  type: z.string(),
  at: time,
});

/** A command call of a task. `sent_to`: the client a call of a task bound to no client was sent to. */
export const HttpCommandCallSchema = z.object({
  call_id: z.string(),
  command: z.string(),
  args: z.unknown(),
  status: z.string(),
  timeout_ms: z.number(),
  dispatch_count: z.number(),
  created_at: time,
  outcome: z.unknown().optional(),
  completed_at: time.optional(),
  sent_to: z.string().optional(),
});

/** A question a task asked the person at the computer, and its answer once given. */
export const HttpQuestionSchema = z.object({
  question_id: z.string(),
  question: z.string(),
  why: z.string().optional(),
  answer: z.string().optional(),
  asked_at: time,
  answered_at: time.optional(),
});

/** A command a client registered (as in `hello.commands`). */
export const HttpCommandSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  args_schema: z.unknown().optional(),
  timeout_ms: z.number().optional(),
});

/** A client ever seen, with its live state. `in_grace`: disconnected, its calls still kept for it. */
export const HttpClientSchema = z.object({
  client_id: z.string(),
  connected: z.boolean(),
  in_grace: z.boolean(),
  client_version: z.string().optional(),
  first_seen_at: time.optional(),
  last_seen_at: time,
  commands: z.array(HttpCommandSchema),
});

/** A model-written tool as its client last reported it. */
export const HttpToolSchema = z.object({
  client_id: z.string(),
  name: z.string(),
  status: z.enum(TOOL_STATUSES),
  version: z.number(),
  description: z.string().optional(),
  file: z.string().optional(),
  updated_at: time.optional(),
  recorded_at: time.optional(),
});

/** The error body of every route. `path`: the JSON path of the bad field. */
export const HttpErrorBodySchema = z.object({
  error: z.object({ code: z.string(), message: z.string(), path: z.string().optional() }),
});

// ------------------------------------------------------------------------------------------------ requests

const statusList = z
  .string()
  .transform((s) => s.split(',').filter((x) => x !== ''))
  .pipe(z.array(z.enum(TASK_STATUSES)));

/** A `0` / `1` query parameter. */
const flag = z.enum(['0', '1']).transform((v) => v === '1');

/** Query of `GET /api/tasks`. `status`: one status or a comma-separated list; `q`: id prefix or prompt words. */
export const TaskListQuerySchema = z.strictObject({
  status: statusList.optional(),
  q: z.string().max(200).optional().describe('search: the id’s start or words of the prompt, any case'),
  kind: z.string().min(1).optional(),
  client: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.coerce.number().int().min(0).default(0),
  order: z.enum(['newest', 'oldest']).default('newest'),
});

/** Body of `POST /api/tasks`. */
export const CreateTaskBodySchema = z.strictObject({
  task_kind: PrintableIdSchema,
  prompt: z.string(),
  client_id: ClientIdSchema.nullable().optional(),
  context: z.unknown().optional(),
  allowed_commands: z.array(PrintableIdSchema).optional(),
  request_id: PrintableIdSchema.max(200).optional(),
  settings: TaskSettingsSchema.optional(),
  name: PrintableIdSchema.max(100)
    .describe(
      'A name for the task: an in-game trigger may send events to it by this name. Refused (409 `conflict`, nothing created) while a task that has not ended has it among those of its computer (`client_id`; every task without one).',
    )
    .optional(),
});

/** Default `limit` of `GET /api/tasks/:id/steps`. */
export const STEP_PAGE_DEFAULT = 100;
/** Largest `limit` of `GET /api/tasks/:id/steps` (step records carry whole model inputs: pages stay bounded). */
export const STEP_PAGE_MAX = 500;

/** A query parameter that must be a whole number (no sign, exponent, blank or fraction). */
const wholeNumber = z
  .string()
  .regex(/^\d{1,15}$/, 'expected a whole number ≥ 0')
  .transform(Number);

/** Query of `GET /api/tasks/:id/steps`. */
export const StepsQuerySchema = z.strictObject({
  after_seq: wholeNumber.optional(),
  limit: wholeNumber.pipe(z.number().min(1).max(STEP_PAGE_MAX)).optional(),
  summary: flag.optional().describe('`1`: each record in its short form ([StepSummary](#stepsummary))'),
  input: flag
    .optional()
    .describe("`0`: each record whole but without the model's input (the dashboard's conversation view)"),
});

/** Query of `GET /api/tasks/:id`. */
export const TaskDetailQuerySchema = z.strictObject({
  steps: flag.optional().describe('`0`: without the step log and the history (the dashboard pages those)'),
  messages: flag
    .optional()
    .describe('`1` (with `steps=0`): also the follow-up messages, the history entries of type `message`'),
});

/** Body of `POST /api/tasks/:id/cancel` (may be empty). */
export const CancelBodySchema = z.strictObject({ reason: z.string().max(1000).optional() });

/** Body of `POST /api/tasks/:id/answer`. `question_id` defaults to the open question. */
export const AnswerBodySchema = z.strictObject({
  text: z.string(),
  question_id: z.string().min(1).optional(),
});

/** Body of `POST /api/tasks/:id/messages`. `from`: who writes (shown to the model as the source); default `http`. */
export const TaskMessageBodySchema = z.strictObject({
  text: z.string().min(1).max(20_000),
  from: z.string().min(1).max(100).optional(),
});

/** Body of `POST /api/tasks/:id/events`. */
export const TaskEventBodySchema = z.strictObject({
  name: z.string().min(1).max(100),
  data: z.unknown().optional(),
});

/**
 * Body of `POST /api/agents/:name/events`: the event, and optionally the computer whose agent is meant (the name is
 * then resolved among the tasks that computer may act on, as its own `task_event {agent}` is).
 */
export const AgentEventBodySchema = TaskEventBodySchema.extend({
  client_id: ClientIdSchema.optional().describe(
    'Only the agents this computer reaches (two computers may each run an agent of one name).',
  ),
});

/** Body of `POST /api/tasks/:id/retry` (empty, or `{}`). */
export const RetryBodySchema = z.strictObject({});

/** Query of `GET /api/events`: at most 100 task ids, each a plain id; `last_event_id` where a header cannot be sent. */
export const EventsQuerySchema = z.strictObject({
  task: z
    .string()
    .transform((s) => s.split(',').filter((x) => x !== ''))
    .pipe(z.array(z.string().min(1).max(200)).max(100))
    .optional()
    .describe('only the events of these tasks (comma-separated ids)'),
  last_event_id: z
    .string()
    .max(100)
    .optional()
    .describe('resume after this event (the `Last-Event-ID` header wins when both are sent)'),
});

/** Query of `GET /api/tools`. */
export const ToolsQuerySchema = z.strictObject({
  client: z.string().min(1).optional(),
  status: z.enum(TOOL_STATUSES).optional(),
});

// ------------------------------------------------------------------------------------------------ responses

/** `GET /api/tasks`. */
export const TaskListResponseSchema = z.object({
  tasks: z.array(HttpTaskSchema),
  total: z.number(),
  limit: z.number(),
  offset: z.number(),
});

/** `GET /api/tasks/:id`: the task with its whole record. */
export const TaskDetailResponseSchema = z.object({
  task: HttpTaskSchema,
  steps: z.array(HttpStepSchema),
  history: z.array(HttpHistoryEntrySchema),
  command_calls: z.array(HttpCommandCallSchema),
  questions: z.array(HttpQuestionSchema),
});

/** `GET /api/tasks/:id/steps`: one page of the step log, with the task, its questions and the page's calls. */
export const TaskStepsResponseSchema = z.object({
  task: HttpTaskSchema,
  steps: z.array(HttpStepSchema),
  questions: z.array(HttpQuestionSchema),
  command_calls: z.array(HttpCommandCallSchema),
  after_seq: z.number(),
  limit: z.number(),
  has_more: z.boolean(),
  next_after_seq: z.number(),
});

/** `GET /api/tasks/:id/steps?summary=1`: the same page with each record in its short form. */
export const TaskStepSummariesResponseSchema = TaskStepsResponseSchema.extend({
  steps: z.array(HttpStepSummarySchema),
});

/** `GET /api/tasks/:id?steps=0`: the task with its calls and questions, without its step log and history. */
export const TaskWithoutStepsResponseSchema = TaskDetailResponseSchema.omit({
  steps: true,
  history: true,
}).extend({
  messages: z
    .array(HttpHistoryEntrySchema)
    .optional()
    .describe(
      'with `messages=1`: the follow-up messages sent to the task (history entries of type `message`)',
    ),
});

/** `POST /api/tasks`: `created` false when a repeated `request_id` found the task it created before. */
export const CreateTaskResponseSchema = z.object({ task: HttpTaskSchema, created: z.boolean() });

/** `POST /api/tasks/:id/cancel`, `POST /api/tasks/:id/answer`. */
export const TaskResponseSchema = z.object({ task: HttpTaskSchema });

/** `GET /api/clients`. */
export const ClientsResponseSchema = z.object({ clients: z.array(HttpClientSchema) });

/** `GET /api/tools`. */
/** A server-side tool: run by the orchestrator itself, offered to every task beside the computers' commands. */
export const HttpServerToolSchema = z.object({
  name: z.string(),
  description: z.string().optional(),
  /** JSON Schema of its parameters (types, defaults, enums). */
  parameters: z.unknown().optional(),
  /** Its timeout, milliseconds. */
  timeout_ms: z.number().optional(),
});

export const ToolsResponseSchema = z.object({
  tools: z.array(HttpToolSchema),
  /** The server-side tools, in registration order (absent from servers that have none). */
  server_tools: z.array(HttpServerToolSchema).optional(),
});

/** `GET /api/dashboard`: what the dashboard may offer on this server, and who is asking. */
export const DashboardFeaturesResponseSchema = z.object({
  version: z.string(),
  /** Task kinds and aliases a create request may name. */
  task_kinds: z.array(z.string()),
  /** What this server has beyond the basic routes: `events`, `search`, `step_summary`, `message`, `retry`, `task_settings`. */
  features: z.array(z.string()),
  /** The caller's role (`operator` on a server without a token). */
  role: z.enum(['operator', 'computer', 'viewer']),
});

/** `GET /health`. */
export const HealthResponseSchema = z.object({
  ok: z.boolean(),
  degraded: z.boolean(),
  version: z.string(),
  uptime_s: z.number(),
  /** Orchestrators sharing a PostgreSQL database: `active` or `standby`. */
  role: z.string().optional(),
  holder: z.string().optional(),
  lease_token: z.unknown().optional(),
  db: z.object({
    ok: z.boolean(),
    path: z.string(),
    error: z.string().optional(),
    code: z.string().optional(),
  }),
  model_servers: z.array(
    z.object({
      provider: z.string(),
      url: z.string(),
      reachable: z.boolean(),
      version: z.string().optional(),
      error: z.string().optional(),
      present: z.array(z.string()),
      /** Models something would call on this server (a role's model, a kind's model on its endpoint) it lacks. */
      missing: z.array(z.string()),
      /** Models `limits.models` allows a task to choose here, called by nothing yet, that it lacks (not degraded). */
      allowed_missing: z.array(z.string()),
    }),
  ),
  models: z.object({ missing: z.array(z.string()), allowed_missing: z.array(z.string()) }),
  clients: z.object({ connected: z.number() }),
});

/** `GET /lua/manifest.json`. */
export const LuaManifestResponseSchema = z.object({
  version: z.string(),
  files: z.array(z.object({ path: z.string(), size: z.number(), sha256: z.string() })),
});

/** A task as the HTTP API sends it. */
export type HttpTask = z.infer<typeof HttpTaskSchema>;
/** A step-log record as the HTTP API sends it. */
export type HttpStep = z.infer<typeof HttpStepSchema>;
/** A step-log record in its short form (`summary=1`). */
export type HttpStepSummary = z.infer<typeof HttpStepSummarySchema>;
/** A history entry as the HTTP API sends it. */
export type HttpHistoryEntry = z.infer<typeof HttpHistoryEntrySchema>;
/** A command call as the HTTP API sends it. */
export type HttpCommandCall = z.infer<typeof HttpCommandCallSchema>;
/** A question as the HTTP API sends it. */
export type HttpQuestion = z.infer<typeof HttpQuestionSchema>;
/** A registered command as the HTTP API sends it. */
export type HttpCommand = z.infer<typeof HttpCommandSchema>;
/** A client as the HTTP API sends it. */
export type HttpClient = z.infer<typeof HttpClientSchema>;
/** A model-written tool as the HTTP API sends it. */
export type HttpTool = z.infer<typeof HttpToolSchema>;
export type HttpServerTool = z.infer<typeof HttpServerToolSchema>;
/** The error body of every route. */
export type HttpErrorBody = z.infer<typeof HttpErrorBodySchema>;
/** `GET /api/tasks` body. */
export type TaskListResponse = z.infer<typeof TaskListResponseSchema>;
/** `GET /api/tasks/:id` body. */
export type TaskDetailResponse = z.infer<typeof TaskDetailResponseSchema>;
/** `GET /api/tasks/:id/steps` body. */
export type TaskStepsResponse = z.infer<typeof TaskStepsResponseSchema>;
/** `GET /api/tasks/:id/steps?summary=1` body. */
export type TaskStepSummariesResponse = z.infer<typeof TaskStepSummariesResponseSchema>;
/** `GET /api/tasks/:id?steps=0` body. */
export type TaskWithoutStepsResponse = z.infer<typeof TaskWithoutStepsResponseSchema>;
/** `POST /api/tasks` body. */
export type CreateTaskResponse = z.infer<typeof CreateTaskResponseSchema>;
/** `POST /api/tasks/:id/cancel` and `/answer` body. */
export type TaskResponse = z.infer<typeof TaskResponseSchema>;
/** `GET /api/clients` body. */
export type ClientsResponse = z.infer<typeof ClientsResponseSchema>;
/** `GET /api/tools` body. */
export type ToolsResponse = z.infer<typeof ToolsResponseSchema>;
/** `GET /health` body. */
export type HealthResponse = z.infer<typeof HealthResponseSchema>;
export type DashboardFeaturesResponse = z.infer<typeof DashboardFeaturesResponseSchema>;
/** `GET /lua/manifest.json` body. */
export type LuaManifestResponse = z.infer<typeof LuaManifestResponseSchema>;
/** `POST /api/tasks` request body (parsed). */
export type CreateTaskBody = z.infer<typeof CreateTaskBodySchema>;
