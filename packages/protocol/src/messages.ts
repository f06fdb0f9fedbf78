import { z } from 'zod';
import { TASK_STATUSES } from './constants.js';
import { ScreenFrameSchema, ScreenSwitchSchema } from './screen.js';
import { ID_CHARSET_MESSAGE, ID_CHARSET_PATTERN } from './text.js';

/** Longest identifier (request, call, chunk, tool, command …) a message may carry. */
export const MAX_ID_LENGTH = 256;
/** Longest client id (a request id made from it still fits {@link MAX_ID_LENGTH}). */
export const MAX_CLIENT_ID_LENGTH = 200;

/**
 * An identifier a computer or a model chooses (request id, command and tool name, chunk id …): 1 to
 * {@link MAX_ID_LENGTH} printable ASCII characters of `@ccagent/protocol/text`'s charset, so it can be printed on an
 * operator's terminal or a table as it is. Anything else is an `invalid_field` error that says which characters.
 */
export const PrintableIdSchema = z
  .string()
  .min(1)
  .max(MAX_ID_LENGTH)
  .regex(ID_CHARSET_PATTERN, ID_CHARSET_MESSAGE);

/** A client id: a {@link PrintableIdSchema} of at most {@link MAX_CLIENT_ID_LENGTH} characters. */
export const ClientIdSchema = PrintableIdSchema.max(MAX_CLIENT_ID_LENGTH);

// Field schemas shared by several messages. Ids are opaque, non-empty and printable (PrintableIdSchema).
const id = (what: string) => PrintableIdSchema.describe(what);
const clientId = (what: string) => ClientIdSchema.describe(what);
const taskId = id('Task id assigned by the orchestrator.');
const callId = id(
  'Id of one command call; the same call_id is never reused for another call (idempotency key).',
);
const requestId = id('Client-chosen id echoed in the reply so the client can match it.');
const anyJson = (what: string) => z.unknown().describe(`${what} Any JSON value.`);
const positiveInt = (what: string) => z.number().int().positive().describe(what);

/** Schema of a task status value (see {@link TASK_STATUSES}). */
export const TaskStatusSchema = z.enum(TASK_STATUSES).describe('Task status.');

/** Schema of one command a client registers in `hello`. */
export const CommandSpecSchema = z.object({
  name: id('Command name as used in `command_call.command` and `allowed_commands`.'),
  description: z.string().optional().describe('What the command does, shown to the model.'),
  args_schema: z
    .record(z.string(), z.unknown())
    .optional()
    .describe('JSON Schema (an object) of the command arguments.'),
  timeout_ms: positiveInt(
    'How long the server waits for the result of one call, in milliseconds.',
  ).optional(),
});

// Printable like every id, but of any length the frame allows: a pong echoes it, nothing stores it.
const pingId = z
  .string()
  .regex(ID_CHARSET_PATTERN, ID_CHARSET_MESSAGE)
  .optional()
  .describe('Opaque id echoed by the matching `pong`.');

/** Lifecycle stages of a model-written tool on a client: `draft` → `test` → `active` → `retired`. */
export const TOOL_STATUSES = ['draft', 'test', 'active', 'retired'] as const;

/** Schema of a tool's lifecycle stage (see {@link TOOL_STATUSES}). */
export const ToolStatusSchema = z.enum(TOOL_STATUSES).describe('Lifecycle stage of a model-written tool.');

/** Schema of one entry of a client's model-written tool registry (`tools_update.tools`, `hello.tools`). */
export const ToolInfoSchema = z.object({
  name: id('Tool name, unique within the client.'),
  status: ToolStatusSchema,
  version: positiveInt('Version of the tool, incremented by the client on every rewrite.'),
  description: z.string().optional().describe('What the tool does, as written by the model.'),
  file: z.string().optional().describe('Path of the tool file on the CC computer.'),
  updated_at: z
    .number()
    .nonnegative()
    .optional()
    .describe('When the tool last changed, epoch milliseconds (CC: `os.epoch("utc")`).'),
});

/** Per-task budgets a request may set; the orchestrator refuses values above its operator maximums. */
export const TaskBudgetSettingsSchema = z.strictObject({
  max_steps: positiveInt('Most decisions (model steps) the task may take.').optional(),
  max_tool_calls: positiveInt('Most command calls the task may make.').optional(),
  max_model_calls: positiveInt(
    'Native loop: most model calls before it ends with a summary (chat: per reply).',
  ).optional(),
  max_prompt_tokens: positiveInt(
    'Most prompt tokens the task may use, summed from the model server’s reported counts; then it ends with a summary.',
  ).optional(),
  max_output_tokens: positiveInt(
    'Most output tokens the task may use, summed from the model server’s reported counts; then it ends with a summary.',
  ).optional(),
  deadline_ms: positiveInt(
    'Wall-clock budget from creation (or from a continuation/retry), in milliseconds.',
  ).optional(),
});

/** When a DONE is believed (planner/executor tasks); the wire form of the agent's completion criteria. */
export const CompletionSettingsSchema = z.strictObject({
  require_successful_run: z
    .boolean()
    .optional()
    .describe('A program run must have succeeded after the last file write.'),
  require_last_run_ok: z.boolean().optional().describe('The most recent run must have succeeded.'),
  required_commands: z
    .array(PrintableIdSchema)
    .optional()
    .describe('Commands that must each have succeeded at least once.'),
  required_runs: z
    .array(z.strictObject({ path: z.string().min(1), args: z.array(z.string()).optional() }))
    .optional()
    .describe('Program runs that must have succeeded after the last write of their file.'),
});

/**
 * Settings of one task, chosen by the requester at creation (every field optional: the task kind's configuration
 * fills the rest). Validated here for shape; the orchestrator also checks them against its operator maximums.
 */
export const TaskSettingsSchema = z
  .strictObject({
    models: z
      .strictObject({
        planner: z.string().min(1).optional(),
        executor: z.string().min(1).optional(),
        native: z.string().min(1).optional(),
        chat: z.string().min(1).optional(),
      })
      .optional()
      .describe('Model name per role (`planner`, `executor`, `native`, `chat`).'),
    provider: z
      .enum(['ollama', 'openai-compatible'])
      .optional()
      .describe('Model provider; the server must have one configured.'),
    temperature: z.number().min(0).max(2).optional().describe('Sampling temperature of every role.'),
    num_ctx: positiveInt('Context window (tokens) of every role.').optional(),
    executor_mode: z
      .enum(['parser', 'model', 'parser-then-model'])
      .optional()
      .describe('Planner/executor: how a directive becomes a tool call.'),
    budgets: TaskBudgetSettingsSchema.optional(),
    interactive: z.boolean().optional().describe('A person is watching: the question limit is lifted.'),
    completion: CompletionSettingsSchema.optional(),
  })
  .describe('Per-task settings; omitted fields come from the task kind.');

// ---- client → orchestrator ------------------------------------------------------------------------------

/** `hello`: first client message; authenticates and (re)registers the client's commands. */
export const HelloSchema = z.object({
  type: z.literal('hello'),
  client_id: clientId('Stable id of this CC computer (e.g. its computer label or id).'),
  token: z.string().optional().describe('Shared secret when the server requires one.'),
  protocol_version: positiveInt('Protocol version the client speaks.'),
  client_version: z.string().optional().describe('Client software version, for logs.'),
  commands: z
    .array(CommandSpecSchema)
    .describe('Commands this client can execute; replaces any earlier list.'),
  tools: z
    .array(ToolInfoSchema)
    .optional()
    .describe('Snapshot of the client’s model-written tool registry, as in `tools_update`.'),
});

/** `tools_update`: full snapshot of the client's model-written tool registry, replacing the previous one. */
export const ToolsUpdateSchema = z.object({
  type: z.literal('tools_update'),
  tools: z
    .array(ToolInfoSchema)
    .describe('Every tool the client has now, in any status; replaces the last list.'),
});

/** `create_task`: ask the orchestrator to start a task. */
export const CreateTaskSchema = z.object({
  type: z.literal('create_task'),
  request_id: requestId,
  task_kind: id('Kind of task (selects the agent strategy).'),
  client_id: clientId('Client that owns the task and executes its commands.'),
  prompt: z.string().describe('What the task should achieve, in natural language.'),
  context: anyJson('Extra context for the task.').optional(),
  allowed_commands: z
    .array(PrintableIdSchema)
    .describe('Command names the task may call on this client; a subset of the registered commands.'),
  settings: TaskSettingsSchema.optional(),
  name: PrintableIdSchema.max(100)
    .describe(
      'A name for the task (e.g. `farm-watcher`): an in-game trigger may send events to it by this name (`task_event.agent`). Refused (`forbidden`, path `$.name`, nothing created) while a task this computer may act on that has not ended has it.',
    )
    .optional(),
  trigger: PrintableIdSchema.max(100)
    .describe(
      'Name of the in-game trigger that sent this (the computer’s triggers file); such requests are rate-limited per computer and trigger.',
    )
    .optional(),
});

/** Structured error a client reports for a failed command. */
export const CommandErrorSchema = z.union([
  z.object({
    code: z.string().optional().describe('Machine-readable error code.'),
    message: z.string().describe('Human-readable error.'),
    traceback: z
      .string()
      .optional()
      .describe(
        "Lua traceback, when available, without the client library's own frames (what the model reads).",
      ),
    host_traceback: z
      .string()
      .optional()
      .describe(
        'The untrimmed traceback, when frames of the client library were cut from `traceback` (step log only).',
      ),
  }),
  z.string(),
]);

/** `command_result`: the outcome of a `command_call`. `result` is required when `ok`, `error` when not. */
export const CommandResultSchema = z
  .object({
    type: z.literal('command_result'),
    task_id: taskId,
    call_id: callId,
    ok: z.boolean().describe('Whether the command succeeded.'),
    result: anyJson('Command result; required when `ok` is true.').optional(),
    error: CommandErrorSchema.optional().describe(
      'Error as `{code?, message, traceback?}` or a string; required when `ok` is false.',
    ),
  })
  .superRefine((msg, ctx) => {
    if (msg.ok && !('result' in msg)) {
      ctx.addIssue({ code: 'custom', path: ['result'], message: '`result` is required when `ok` is true' });
    }
    if (!msg.ok && msg.error === undefined) {
      ctx.addIssue({ code: 'custom', path: ['error'], message: '`error` is required when `ok` is false' });
    }
  });

/** `cancel_task`: stop a task. */
export const CancelTaskSchema = z.object({
  type: z.literal('cancel_task'),
  task_id: taskId,
  request_id: requestId.optional(),
});

/** `task_message`: a follow-up message from the person to a task (running: seen by its next step; ended: continues it). */
export const TaskMessageSchema = z.object({
  type: z.literal('task_message'),
  task_id: taskId,
  text: z.string().min(1).max(20_000).describe('The message, as typed by the person.'),
  request_id: requestId.optional(),
});

/** `task_event`: something happened on the computer that a task should know (a redstone signal, an inventory). */
export const TaskEventSchema = z.object({
  type: z.literal('task_event'),
  task_id: taskId.optional(),
  agent: PrintableIdSchema.max(100)
    .describe(
      'Instead of `task_id`: the name of a running task (given at its creation), or its id. The server picks the one task of that name this client may act on; none is `not_found`, several are `invalid_field`.',
    )
    .optional(),
  name: PrintableIdSchema.max(100).describe('Event name, e.g. `redstone` or `state_update`.'),
  data: anyJson('Event payload.').optional(),
  request_id: requestId.optional(),
  trigger: PrintableIdSchema.max(100)
    .describe(
      'Name of the in-game trigger that sent this (the computer’s triggers file); such events are rate-limited per computer and trigger.',
    )
    .optional(),
});

/** `subscribe`: receive `task_update`/`task_completed`/`task_failed`/`ask_user` for a task. */
export const SubscribeSchema = z.object({
  type: z.literal('subscribe'),
  task_id: taskId,
  request_id: requestId.optional(),
});

/** `unsubscribe`: stop receiving a task's updates. */
export const UnsubscribeSchema = z.object({
  type: z.literal('unsubscribe'),
  task_id: taskId,
});

/** `user_answer`: the person's answer to an `ask_user` question. */
export const UserAnswerSchema = z.object({
  type: z.literal('user_answer'),
  task_id: taskId,
  question_id: id('Id of the `ask_user` question being answered.'),
  text: z.string().describe('The answer as typed by the person.'),
});

/** `ping`: liveness check, either direction; answered by `pong` with the same id. */
export const PingSchema = z.object({ type: z.literal('ping'), id: pingId });

/** `pong`: answer to a `ping`, either direction. */
export const PongSchema = z.object({ type: z.literal('pong'), id: pingId });

/** `chunk`: one piece of a message too large for one frame, either direction. */
export const ChunkSchema = z
  .object({
    type: z.literal('chunk'),
    chunk_id: id('Id shared by every chunk of one message; unique per sender while in flight.'),
    index: z.number().int().min(0).describe('0-based position of this chunk.'),
    count: positiveInt('Total number of chunks of the message.'),
    data: z.string().describe('This piece of the original JSON text.'),
  })
  .superRefine((msg, ctx) => {
    if (msg.index >= msg.count) {
      ctx.addIssue({ code: 'custom', path: ['index'], message: '`index` must be less than `count`' });
    }
  });

// ---- orchestrator → client ------------------------------------------------------------------------------

/** `welcome`: the server's answer to a valid `hello`. */
export const WelcomeSchema = z.object({
  type: z.literal('welcome'),
  client_id: clientId('The client id the server registered.'),
  server_version: z.string().describe('Orchestrator software version.'),
  protocol_version: positiveInt('Protocol version the server speaks.'),
  heartbeat_ms: positiveInt(
    'Interval at which the server pings; a client silent for ~2 intervals is dropped.',
  ),
  max_message_bytes: positiveInt(
    'Largest frame (UTF-8 bytes) either side may send; larger messages are chunked.',
  ),
  max_tool_output_bytes: positiveInt(
    'Largest `command_result` the server takes (UTF-8 bytes of its JSON, reassembled); a larger one fails its call with `output_too_large`, so a client cuts its result down (marked as truncated) before sending.',
  ).optional(),
  task_kinds: z
    .array(PrintableIdSchema)
    .optional()
    .describe('Task kinds (and aliases) this client may create, for a menu on the computer.'),
  models: z
    .array(z.string())
    .optional()
    .describe(
      'Model names a task may choose in `create_task.settings.models` (the operator’s `limits.models`).',
    ),
  model_roles: z
    .record(z.string(), z.array(z.string()))
    .optional()
    .describe('Per task kind, the model roles it calls (the keys its `settings.models` may set).'),
  server_tools: z
    .array(z.string())
    .optional()
    .describe(
      "Names of the orchestrator's server-side tools: offered to tasks beside the computers' commands. A client " +
        "that lists a task's allowed_commands itself adds the ones the task may call; none is a computer's command.",
    ),
  screen: z
    .boolean()
    .optional()
    .describe(
      'The server’s word on this computer’s screen mirror: `true` on, `false` off (its `screen_frame`s are refused); absent: the computer’s own setting decides. Changes arrive as `screen_switch`.',
    ),
});

/** `task_created`: the reply to `create_task`. */
export const TaskCreatedSchema = z.object({
  type: z.literal('task_created'),
  request_id: requestId,
  task_id: taskId,
  status: TaskStatusSchema,
});

/** `task_update`: a task's status or progress changed. */
export const TaskUpdateSchema = z.object({
  type: z.literal('task_update'),
  task_id: taskId,
  status: TaskStatusSchema,
  progress: z.number().min(0).max(1).optional().describe('Estimated progress from 0 to 1.'),
  message: z.string().optional().describe('Short human-readable progress note.'),
  delta: z
    .string()
    .optional()
    .describe(
      'Chat tasks: text the model wrote since the previous update (its streamed reply, at most 10 updates a second; the whole reply is in `task_completed.result.message` and the step log).',
    ),
});

/** `task_completed`: the task finished successfully. */
export const TaskCompletedSchema = z.object({
  type: z.literal('task_completed'),
  task_id: taskId,
  result: anyJson('Final result of the task.'),
});

/** `task_failed`: the task ended in failure. */
export const TaskFailedSchema = z.object({
  type: z.literal('task_failed'),
  task_id: taskId,
  error: z
    .union([
      z.object({
        code: z.string().describe('Machine-readable error code.'),
        message: z.string().describe('Human-readable error.'),
      }),
      z.string(),
    ])
    .describe('Why the task failed: `{code, message}` or a string.'),
});

/** `command_call`: the orchestrator asks the client to run a command. */
export const CommandCallSchema = z.object({
  type: z.literal('command_call'),
  task_id: taskId,
  call_id: callId,
  command: z.string().min(1).describe('Registered command name.'),
  args: z.record(z.string(), z.unknown()).describe('Arguments, valid against the command’s `args_schema`.'),
  timeout_ms: positiveInt('How long the server waits for the result, in milliseconds.').optional(),
});

/** `command_cancel`: stop running a call; the client answers its `command_result` once (a `cancelled` error). */
export const CommandCancelSchema = z.object({
  type: z.literal('command_cancel'),
  task_id: taskId,
  call_id: callId,
  reason: z
    .string()
    .describe('Why: `task cancelled`, `task failed`, `timeout` …, for logs and the command result.'),
});

/** `command_ack`: the `command_result` is durably stored; the client may forget it. */
export const CommandAckSchema = z.object({
  type: z.literal('command_ack'),
  task_id: taskId,
  call_id: callId,
});

/** `ask_user`: a task asks the person at the CC computer a question. */
export const AskUserSchema = z.object({
  type: z.literal('ask_user'),
  task_id: taskId,
  question_id: id('Id to quote in the `user_answer`.'),
  question: z.string().describe('The question to show.'),
  why: z.string().optional().describe('Why the task needs the answer.'),
});

/** `error`: a request failed or a frame was rejected. */
export const ErrorMessageSchema = z.object({
  type: z.literal('error'),
  message: z.string().describe('Human-readable explanation.'),
  code: z
    .string()
    .min(1)
    .describe('Machine-readable code (see the error code table); receivers must accept unknown codes.'),
  request_id: z.string().optional().describe('`request_id` of the offending message, when known.'),
  call_id: z.string().optional().describe('`call_id` of the offending message, when known.'),
  task_id: z.string().optional().describe('`task_id` of the offending message, when known.'),
  path: z.string().optional().describe('JSON path of the offending field, e.g. `$.allowed_commands[2]`.'),
});

// ---- unions ---------------------------------------------------------------------------------------------

/** Every message a client may send to the orchestrator, discriminated on `type`. */
export const ClientMessageSchema = z.discriminatedUnion('type', [
  HelloSchema,
  ToolsUpdateSchema,
  CreateTaskSchema,
  CommandResultSchema,
  CancelTaskSchema,
  TaskMessageSchema,
  TaskEventSchema,
  SubscribeSchema,
  UnsubscribeSchema,
  UserAnswerSchema,
  PingSchema,
  PongSchema,
  ErrorMessageSchema,
  ChunkSchema,
  ScreenFrameSchema,
]);

/** Every message the orchestrator may send to a client, discriminated on `type`. */
export const ServerMessageSchema = z.discriminatedUnion('type', [
  WelcomeSchema,
  TaskCreatedSchema,
  TaskUpdateSchema,
  TaskCompletedSchema,
  TaskFailedSchema,
  CommandCallSchema,
  CommandCancelSchema,
  CommandAckSchema,
  AskUserSchema,
  PingSchema,
  PongSchema,
  ErrorMessageSchema,
  ChunkSchema,
  ScreenSwitchSchema,
]);

/** A message from client to orchestrator. */
export type ClientMessage = z.infer<typeof ClientMessageSchema>;
/** A message from orchestrator to client. */
export type ServerMessage = z.infer<typeof ServerMessageSchema>;
/** Any protocol message. */
export type Message = ClientMessage | ServerMessage;
/** The `type` of a client message. */
export type ClientMessageType = ClientMessage['type'];
/** The `type` of a server message. */
export type ServerMessageType = ServerMessage['type'];
/** The `type` of any message. */
export type MessageType = Message['type'];

/** One registered command of `hello`. */
export type CommandSpec = z.infer<typeof CommandSpecSchema>;
/** `hello` message. */
export type HelloMessage = z.infer<typeof HelloSchema>;
/** A tool's lifecycle stage. */
export type ToolStatus = z.infer<typeof ToolStatusSchema>;
/** One entry of a client's model-written tool registry. */
export type ToolInfo = z.infer<typeof ToolInfoSchema>;
/** `tools_update` message. */
export type ToolsUpdateMessage = z.infer<typeof ToolsUpdateSchema>;
/** `create_task` message. */
export type CreateTaskMessage = z.infer<typeof CreateTaskSchema>;
/** Error payload of a failed `command_result`. */
export type CommandError = z.infer<typeof CommandErrorSchema>;
/** `command_result` message. */
export type CommandResultMessage = z.infer<typeof CommandResultSchema>;
/** `cancel_task` message. */
export type CancelTaskMessage = z.infer<typeof CancelTaskSchema>;
/** `task_message` message. */
export type TaskMessageMessage = z.infer<typeof TaskMessageSchema>;
/** `task_event` message. */
export type TaskEventMessage = z.infer<typeof TaskEventSchema>;
/** `command_cancel` message. */
export type CommandCancelMessage = z.infer<typeof CommandCancelSchema>;
/** Per-task settings (`create_task.settings`, the HTTP create body's `settings`). */
export type TaskSettings = z.infer<typeof TaskSettingsSchema>;
/** `subscribe` message. */
export type SubscribeMessage = z.infer<typeof SubscribeSchema>;
/** `unsubscribe` message. */
export type UnsubscribeMessage = z.infer<typeof UnsubscribeSchema>;
/** `user_answer` message. */
export type UserAnswerMessage = z.infer<typeof UserAnswerSchema>;
/** `ping` message (either direction). */
export type PingMessage = z.infer<typeof PingSchema>;
/** `pong` message (either direction). */
export type PongMessage = z.infer<typeof PongSchema>;
/** `chunk` message (either direction). */
export type ChunkMessage = z.infer<typeof ChunkSchema>;
/** `welcome` message. */
export type WelcomeMessage = z.infer<typeof WelcomeSchema>;
/** `task_created` message. */
export type TaskCreatedMessage = z.infer<typeof TaskCreatedSchema>;
/** `task_update` message. */
export type TaskUpdateMessage = z.infer<typeof TaskUpdateSchema>;
/** `task_completed` message. */
export type TaskCompletedMessage = z.infer<typeof TaskCompletedSchema>;
/** `task_failed` message. */
export type TaskFailedMessage = z.infer<typeof TaskFailedSchema>;
/** `command_call` message. */
export type CommandCallMessage = z.infer<typeof CommandCallSchema>;
/** `command_ack` message. */
export type CommandAckMessage = z.infer<typeof CommandAckSchema>;
/** `ask_user` message. */
export type AskUserMessage = z.infer<typeof AskUserSchema>;
/** `error` message. */
export type ErrorMessage = z.infer<typeof ErrorMessageSchema>;
