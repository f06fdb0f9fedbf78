/**
 * The HTTP routes and the schemas of what each takes and answers, for the generated reference in docs/http-api.md.
 * The orchestrator's route table (apps/orchestrator/src/http/routes/index.ts) must list the same routes (a test in
 * the orchestrator checks it).
 */
import { z } from 'zod';
import { HttpModelServerSchema, ModelsResponseSchema } from './models-http-schemas.js';
import {
  AnswerBodySchema,
  CancelBodySchema,
  ClientsResponseSchema,
  CreateTaskBodySchema,
  CreateTaskResponseSchema,
  DashboardFeaturesResponseSchema,
  EventsQuerySchema,
  HealthResponseSchema,
  HttpClientSchema,
  HttpCommandCallSchema,
  HttpCommandSchema,
  HttpErrorBodySchema,
  HttpErrorInfoSchema,
  HttpHistoryEntrySchema,
  HttpQuestionSchema,
  HttpStepSchema,
  HttpTaskSchema,
  HttpToolSchema,
  HttpServerToolSchema,
  LuaManifestResponseSchema,
  StepsQuerySchema,
  TaskDetailQuerySchema,
  TaskDetailResponseSchema,
  TaskListQuerySchema,
  TaskStepSummariesResponseSchema,
  TaskWithoutStepsResponseSchema,
  HttpStepSummarySchema,
  TaskListResponseSchema,
  TaskResponseSchema,
  TaskStepsResponseSchema,
  ToolsQuerySchema,
  ToolsResponseSchema,
  RetryBodySchema,
  TaskEventBodySchema,
  AgentEventBodySchema,
  TaskMessageBodySchema,
} from './http-schemas.js';
import { HTTP_EVENTS } from './event-schemas.js';
import {
  HttpScreenSchema,
  ScreenResponseSchema,
  ScreenSwitchBodySchema,
  ScreenSwitchResponseSchema,
} from '../screen.js';
import {
  CreateScheduleBodySchema,
  EmptyScheduleBodySchema,
  HttpScheduleSchema,
  ScheduleRemovedResponseSchema,
  ScheduleResponseSchema,
  SchedulesResponseSchema,
} from './schedule-schemas.js';
import {
  HttpTaskKindSchema,
  RemoveTaskKindBodySchema,
  SaveTaskKindBodySchema,
  TaskKindRemovedResponseSchema,
  TaskKindResponseSchema,
  TaskKindsResponseSchema,
} from './task-kind-schemas.js';
import {
  HttpPairingSchema,
  PairCollectBodySchema,
  PairCollectPendingSchema,
  PairingApproveBodySchema,
  PairingDecisionResponseSchema,
  PairingDenyBodySchema,
  PairingsResponseSchema,
  PairRequestBodySchema,
  PairRequestResponseSchema,
} from './pairing-schemas.js';
import {
  AuditQuerySchema,
  AuditResponseSchema,
  CreateKeyBodySchema,
  CreateKeyResponseSchema,
  CredentialsResponseSchema,
  EnrollBodySchema,
  EnrollResponseSchema,
  HttpAuditEntrySchema,
  HttpCredentialSchema,
  PairBodySchema,
  PairResponseSchema,
  RevokeBodySchema,
  RevokeResponseSchema,
  RotateBodySchema,
  RotateResponseSchema,
} from './security-schemas.js';
import {
  HttpMinecraftInstanceSchema,
  MinecraftEmptyBodySchema,
  MinecraftActivityResponseSchema,
  MinecraftInstancesResponseSchema,
  MinecraftStopResponseSchema,
  MinecraftTaskBodySchema,
  MinecraftTaskResponseSchema,
} from './minecraft-http-schemas.js';
import {
  MinecraftActionPolicyResponseSchema,
  MinecraftActionPolicySchema,
  MinecraftConnectBodySchema,
  MinecraftConnectResponseSchema,
  MinecraftDetectResponseSchema,
  MinecraftSendPromptBodySchema,
  MinecraftSendPromptResponseSchema,
  MinecraftStatusResponseSchema,
  MinecraftStopTaskBodySchema,
  MinecraftStopTaskResponseSchema,
} from './minecraft-channels-http-schemas.js';

/** One route of the HTTP API. */
export interface HttpRouteSpec {
  method: 'GET' | 'POST';
  /** Path with `:param` placeholders (`/lua/files/<path>` takes the rest of the path). */
  path: string;
  summary: string;
  /** Open even when the server has a token. */
  open?: boolean;
  query?: z.ZodType;
  body?: z.ZodType;
  /** Success status → body schema (undefined: not JSON); `when`: the query that selects this body. */
  responses: Array<{ status: number; schema?: z.ZodType; contentType?: string; when?: string }>;
  /** A Server-Sent Events route: the records it sends, by `event:` name, with the schema of their `data:`. */
  events?: ReadonlyArray<{ name: string; schema: z.ZodType; description: string }>;
}

/** The records responses are made of, by the name the reference gives them. */
export const HTTP_RECORDS: ReadonlyArray<{ name: string; schema: z.ZodType; description: string }> = [
  { name: 'Task', schema: HttpTaskSchema, description: 'A task.' },
  { name: 'Schedule', schema: HttpScheduleSchema, description: 'A durable schedule.' },
  {
    name: 'TaskKind',
    schema: HttpTaskKindSchema,
    description: 'A task kind in effect, and where it comes from.',
  },
  { name: 'Step', schema: HttpStepSchema, description: 'One record of the step log.' },
  {
    name: 'StepSummary',
    schema: HttpStepSummarySchema,
    description: 'A record of the step log in its short form (`summary=1`: a timeline row).',
  },
  {
    name: 'HistoryEntry',
    schema: HttpHistoryEntrySchema,
    description: 'One entry of the history; more fields by `type`.',
  },
  { name: 'CommandCall', schema: HttpCommandCallSchema, description: 'A command call of a task.' },
  { name: 'Question', schema: HttpQuestionSchema, description: 'A question the task asked.' },
  { name: 'Client', schema: HttpClientSchema, description: 'A client ever seen, with its live state.' },
  { name: 'Command', schema: HttpCommandSchema, description: 'A command a client registered.' },
  {
    name: 'Tool',
    schema: HttpToolSchema,
    description: 'A model-written tool as its client last reported it.',
  },
  {
    name: 'ServerTool',
    schema: HttpServerToolSchema,
    description:
      'A server-side tool: run by the orchestrator, offered to every task beside the computers’ commands.',
  },
  {
    name: 'Credential',
    schema: HttpCredentialSchema,
    description: 'A key (its secret is shown once, when it is made; the server keeps a hash).',
  },
  { name: 'AuditEntry', schema: HttpAuditEntrySchema, description: 'Who did what, from where, when.' },
  {
    name: 'MinecraftInstance',
    schema: HttpMinecraftInstanceSchema,
    description: 'A Minecraft mod instance the mod endpoint knows (docs/minecraft.md).',
  },
  {
    name: 'Pairing',
    schema: HttpPairingSchema,
    description: 'A request of a computer to pair, as operators see it.',
  },
  {
    name: 'ModelServer',
    schema: HttpModelServerSchema,
    description: 'A server of a model pool: its state, load, failures and cache affinity.',
  },
  {
    name: 'Screen',
    schema: HttpScreenSchema,
    description: 'A computer’s mirrored screen (its rows in CC’s blit form), or the rows of it that changed.',
  },
  { name: 'ErrorInfo', schema: HttpErrorInfoSchema, description: 'A failure (of a task, of a step).' },
  { name: 'Error', schema: HttpErrorBodySchema, description: 'The body of every refusal.' },
];

/** Every route, in the order of the server's table. */
export const HTTP_ROUTES: readonly HttpRouteSpec[] = [
  {
    method: 'GET',
    path: '/health',
    summary: 'Database, model servers and connected clients; 503 when the database does not work.',
    open: true,
    responses: [
      { status: 200, schema: HealthResponseSchema },
      { status: 503, schema: HealthResponseSchema },
    ],
  },
  {
    method: 'GET',
    path: '/api/tasks',
    summary: 'A page of tasks, newest first by default.',
    query: TaskListQuerySchema,
    responses: [{ status: 200, schema: TaskListResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/tasks',
    summary: 'Create a task (201), or find the one a repeated `request_id` created (200).',
    body: CreateTaskBodySchema,
    responses: [
      { status: 201, schema: CreateTaskResponseSchema },
      { status: 200, schema: CreateTaskResponseSchema },
    ],
  },
  {
    method: 'GET',
    path: '/api/tasks/:id',
    summary: 'The task with its whole step log, history, calls and questions.',
    query: TaskDetailQuerySchema,
    responses: [
      { status: 200, schema: TaskDetailResponseSchema },
      { status: 200, schema: TaskWithoutStepsResponseSchema, when: 'steps=0' },
    ],
  },
  {
    method: 'GET',
    path: '/api/tasks/:id/steps',
    summary:
      'One page of the step log (`seq > after_seq`), with the task, its questions and the page’s calls.',
    query: StepsQuerySchema,
    responses: [
      { status: 200, schema: TaskStepsResponseSchema },
      { status: 200, schema: TaskStepSummariesResponseSchema, when: 'summary=1' },
    ],
  },
  {
    method: 'POST',
    path: '/api/tasks/:id/cancel',
    summary: 'Cancel the task (a cancelled one is returned unchanged).',
    body: CancelBodySchema,
    responses: [{ status: 200, schema: TaskResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/tasks/:id/answer',
    summary: 'Answer the task’s open question.',
    body: AnswerBodySchema,
    responses: [{ status: 200, schema: TaskResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/tasks/:id/messages',
    summary: 'A follow-up message: a running task sees it next step; an ended one continues with it.',
    body: TaskMessageBodySchema,
    responses: [{ status: 200, schema: TaskResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/tasks/:id/events',
    summary: 'An outside event into the history of a task that has not ended; a sleeping task wakes.',
    body: TaskEventBodySchema,
    responses: [{ status: 200, schema: TaskResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/agents/:name/events',
    summary:
      'An outside event to the agent of that name: the one task that has not ended and was created with `name` (or whose id it is), among all, or those `client_id` reaches. None is 404 `not_found`; several is 400 `invalid_body` listing their ids. A refusal posts nothing.',
    body: AgentEventBodySchema,
    responses: [{ status: 200, schema: TaskResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/tasks/:id/retry',
    summary: 'A failed or cancelled task resumes from its memory with fresh budgets.',
    body: RetryBodySchema,
    responses: [{ status: 200, schema: TaskResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/task-kinds',
    summary:
      'The task kinds in effect: the config file’s, and those saved at run time, which win over a file kind of the same name.',
    responses: [{ status: 200, schema: TaskKindsResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/task-kinds/:name',
    summary:
      'Save a task kind (operator): a new kind, or a new definition that wins over the current one; validated like the config file, stored and audited, used by tasks created after it (running tasks keep theirs).',
    body: SaveTaskKindBodySchema,
    responses: [{ status: 200, schema: TaskKindResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/task-kinds/:name/remove',
    summary:
      'Remove a stored task kind (operator): the config file’s definition applies again, or the kind is gone when the file has none.',
    body: RemoveTaskKindBodySchema,
    responses: [{ status: 200, schema: TaskKindRemovedResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/schedules',
    summary: 'Every durable schedule with its next due time, and the latest firings (newest first).',
    responses: [{ status: 200, schema: SchedulesResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/schedules',
    summary:
      'Add a schedule (operator): a cron expression in a time zone or an interval; each firing creates a task from `task` or posts `event` to a running task.',
    body: CreateScheduleBodySchema,
    responses: [{ status: 201, schema: ScheduleResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/schedules/:id/pause',
    summary: 'Pause a schedule (operator): it records and fires nothing until resumed.',
    body: EmptyScheduleBodySchema,
    responses: [{ status: 200, schema: ScheduleResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/schedules/:id/resume',
    summary:
      'Resume a paused schedule (operator): occurrences while it was paused are not fired; the next one is.',
    body: EmptyScheduleBodySchema,
    responses: [{ status: 200, schema: ScheduleResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/schedules/:id/remove',
    summary: 'Remove a schedule and its firing records (operator).',
    body: EmptyScheduleBodySchema,
    responses: [{ status: 200, schema: ScheduleRemovedResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/events',
    summary:
      'Server-Sent Events: task, step, question, call, client and tool events, `delta` (a chat task’s reply as it is written), and a Minecraft instance’s `mc_instance`, `mc_log` and `mc_action`, `schedule` (a schedule changed or fired); resumable with `Last-Event-ID`, `?task=ID[,ID…]` filters to those tasks, a `resync` event when a reader fell behind.',
    query: EventsQuerySchema,
    responses: [{ status: 200, contentType: 'text/event-stream' }],
    events: HTTP_EVENTS,
  },
  {
    method: 'GET',
    path: '/api/dashboard',
    summary:
      "What the dashboard may offer on this server: version, task kinds, features, and the caller's role.",
    responses: [{ status: 200, schema: DashboardFeaturesResponseSchema }],
  },
  {
    method: 'GET',
    path: '/',
    summary: 'The web dashboard (also `/index.html` and `/assets/*`), shipped inside the package.',
    open: true,
    responses: [{ status: 200, contentType: 'text/html' }],
  },
  {
    method: 'GET',
    path: '/api/clients',
    summary: 'Every client ever seen, with its live state.',
    responses: [{ status: 200, schema: ClientsResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/clients/:id/screen',
    summary:
      'The computer’s screen as its screen mirror last sent it (every row); 404 when it has sent none since the server started.',
    responses: [{ status: 200, schema: ScreenResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/clients/:id/screen/stream',
    summary:
      'Server-Sent Events: the computer’s screen live. A `screen` event with every row first (when there is one), then `screen` events with the rows that changed, at most 10 a second; `offline` when the computer disconnects. Viewers are capped per computer and in all (`server.screen.maxViewersPerComputer`, `maxViewers`): over a cap, 429 `too_many_viewers`.',
    responses: [{ status: 200, contentType: 'text/event-stream' }],
    events: [
      {
        name: 'screen',
        schema: HttpScreenSchema,
        description: 'The screen (`full`: every row) or the rows that changed since the previous event.',
      },
      {
        name: 'offline',
        schema: z.object({ client_id: z.string() }),
        description: 'The computer disconnected; the last screen stays.',
      },
      {
        name: 'off',
        schema: z.object({ client_id: z.string() }),
        description: 'An operator switched the computer’s screen mirror off; the stream ends.',
      },
    ],
  },
  {
    method: 'GET',
    path: '/api/clients/:id/screen/switch',
    summary:
      'The server’s word on the computer’s screen mirror: the operator’s switch, the config file’s, and the result sent to the computer.',
    responses: [{ status: 200, schema: ScreenSwitchResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/clients/:id/screen/switch',
    summary:
      'Switch the computer’s screen mirror on or off at the server, or clear the switch (operator). Stored before the answer and sent to the computer at once (`screen_switch`); off drops the screen the server holds, ends its streams and refuses further frames. The computer’s own off still wins.',
    body: ScreenSwitchBodySchema,
    responses: [{ status: 200, schema: ScreenSwitchResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/models',
    summary:
      'The model roles and every pool of servers with its servers’ state (what `ccagent models` lists).',
    responses: [{ status: 200, schema: ModelsResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/tools',
    summary:
      'Model-written tools as each client last reported them (filtered by `client` and `status`), and the server-side tools the orchestrator runs itself (`server_tools`, always all of them).',
    query: ToolsQuerySchema,
    responses: [{ status: 200, schema: ToolsResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/pair',
    summary:
      'A computer trades an enrollment code for its own key (open: the code is the credential; failures are rate-limited per source).',
    open: true,
    body: PairBodySchema,
    responses: [{ status: 200, schema: PairResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/pair/request',
    summary:
      'A computer without a code asks to pair (`install.lua --pair`; open): a secret to collect the key with and a match code; an operator approves or denies. 409 `client_taken`, 403 `pairing_disabled`, 429 `too_many_requests`.',
    open: true,
    body: PairRequestBodySchema,
    responses: [{ status: 202, schema: PairRequestResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/pair/collect',
    summary:
      "The computer polls with its request's secret (open): 202 while pending, then its key once; 403 `denied`, 410 `expired`, 409 `collected`, 404 `unknown_request` (a wrong secret, counted as a failed authentication).",
    open: true,
    body: PairCollectBodySchema,
    responses: [
      { status: 200, schema: PairResponseSchema },
      { status: 202, schema: PairCollectPendingSchema },
    ],
  },
  {
    method: 'GET',
    path: '/api/credentials',
    summary: 'Every key (operator only), live, rotated or revoked; never a secret.',
    responses: [{ status: 200, schema: CredentialsResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/credentials/enroll',
    summary: 'An enrollment code for one computer (operator only), for `install.lua --code`.',
    body: EnrollBodySchema,
    responses: [{ status: 201, schema: EnrollResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/credentials/revoke',
    summary:
      'Revoke one key by id, or every live key of a computer (operator only); its open connection closes at once. 404 when nothing matches.',
    body: RevokeBodySchema,
    responses: [{ status: 200, schema: RevokeResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/credentials/rotate',
    summary:
      'A new key for a computer (operator only); the old one works until `old_valid_until`, then its connection is closed.',
    body: RotateBodySchema,
    responses: [{ status: 201, schema: RotateResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/credentials/keys',
    summary: 'A key for a person: an operator, or a read-only viewer (operator only).',
    body: CreateKeyBodySchema,
    responses: [{ status: 201, schema: CreateKeyResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/credentials/pairings',
    summary: 'Pairing requests, newest first (operator only): what `ccagent clients pending` lists.',
    responses: [{ status: 200, schema: PairingsResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/credentials/pairings/approve',
    summary:
      'Approve a pending pairing request (operator only), with what the computer may do; it then collects its key. 404 unless pending.',
    body: PairingApproveBodySchema,
    responses: [{ status: 200, schema: PairingDecisionResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/credentials/pairings/deny',
    summary: 'Deny a pending pairing request (operator only). 404 unless pending.',
    body: PairingDenyBodySchema,
    responses: [{ status: 200, schema: PairingDecisionResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/audit',
    summary: 'The audit log, newest first (operator only).',
    query: AuditQuerySchema,
    responses: [{ status: 200, schema: AuditResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/minecraft/instances',
    summary:
      'The Minecraft mod instances: connected or not, version, last state (503 when the mod endpoint does not run).',
    responses: [{ status: 200, schema: MinecraftInstancesResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/minecraft/instances/:id/activity',
    summary:
      'One instance now, its last `log` lines and its last actions with their outcomes and durations (viewer); `GET /api/events` streams what follows (`mc_instance`, `mc_log`, `mc_action`). Lines and ended actions are kept in the database, so they are served after a restart (`instance` null until the mod is back). 404 for an instance neither the endpoint nor the database knows.',
    responses: [{ status: 200, schema: MinecraftActivityResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/minecraft/instances/:id/stop',
    summary:
      'Send `stop` to the mod and cancel the instance’s unfinished `minecraft_agent` tasks (operator).',
    body: MinecraftEmptyBodySchema,
    responses: [{ status: 200, schema: MinecraftStopResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/minecraft/tasks',
    summary:
      'Start a `minecraft_agent` task on an instance with its settings: plan mode, provider, model (operator).',
    body: MinecraftTaskBodySchema,
    responses: [{ status: 201, schema: MinecraftTaskResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/minecraft/tasks/:id/retry',
    summary:
      'A failed or cancelled `minecraft_agent` task resumes from its memory with fresh budgets, as any task’s retry (operator).',
    body: MinecraftEmptyBodySchema,
    responses: [{ status: 200, schema: MinecraftTaskResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/minecraft/detect-instances',
    summary:
      'The seed’s detect-instances: the instances with the game version, name and platform each mod reported, and the active one.',
    responses: [{ status: 200, schema: MinecraftDetectResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/minecraft/connect-instance',
    summary:
      'The seed’s connect-instance: make an instance the active one, where prompts without an instance go (operator).',
    body: MinecraftConnectBodySchema,
    responses: [{ status: 200, schema: MinecraftConnectResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/minecraft/send-prompt',
    summary:
      'The seed’s send-prompt: a `minecraft_agent` task on the given or the active instance; answers with its id (operator). 409 `instance_busy` while the instance runs a task.',
    body: MinecraftSendPromptBodySchema,
    responses: [{ status: 201, schema: MinecraftSendPromptResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/minecraft/stop-task',
    summary:
      'The seed’s stop-task: stop the current task of the given or the active instance, in the game too (operator).',
    body: MinecraftStopTaskBodySchema,
    responses: [{ status: 200, schema: MinecraftStopTaskResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/minecraft/get-status',
    summary:
      'The seed’s get-status: idle|processing|complete|error, the current task, the connected instances and the active one.',
    responses: [{ status: 200, schema: MinecraftStatusResponseSchema }],
  },
  {
    method: 'GET',
    path: '/api/minecraft/instances/:id/actions',
    summary: 'An instance’s action allow/deny lists.',
    responses: [{ status: 200, schema: MinecraftActionPolicyResponseSchema }],
  },
  {
    method: 'POST',
    path: '/api/minecraft/instances/:id/actions',
    summary:
      'Set an instance’s action allow/deny lists; a refused action never reaches the mod and the model is told (operator).',
    body: MinecraftActionPolicySchema,
    responses: [{ status: 200, schema: MinecraftActionPolicyResponseSchema }],
  },
  {
    method: 'GET',
    path: '/metrics',
    summary: 'Prometheus text format.',
    responses: [{ status: 200, contentType: 'text/plain; version=0.0.4' }],
  },
  {
    method: 'GET',
    path: '/lua/install.lua',
    summary: 'The installer, with this server’s URL filled in.',
    open: true,
    responses: [{ status: 200, contentType: 'text/x-lua' }],
  },
  {
    method: 'GET',
    path: '/lua/manifest.json',
    summary: 'The files of the Lua client bundle.',
    open: true,
    responses: [{ status: 200, schema: LuaManifestResponseSchema }],
  },
  {
    method: 'GET',
    path: '/lua/files/<path>',
    summary: 'One file of the manifest.',
    open: true,
    responses: [{ status: 200, contentType: 'text/x-lua' }],
  },
];
