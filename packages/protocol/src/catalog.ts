import type { z } from 'zod';
import {
  AskUserSchema,
  CancelTaskSchema,
  ChunkSchema,
  CommandAckSchema,
  CommandCallSchema,
  CommandCancelSchema,
  CommandResultSchema,
  CreateTaskSchema,
  ErrorMessageSchema,
  HelloSchema,
  PingSchema,
  PongSchema,
  SubscribeSchema,
  TaskCompletedSchema,
  TaskCreatedSchema,
  TaskFailedSchema,
  TaskEventSchema,
  TaskMessageSchema,
  TaskUpdateSchema,
  ToolsUpdateSchema,
  UnsubscribeSchema,
  UserAnswerSchema,
  WelcomeSchema,
} from './messages.js';
import { ScreenFrameSchema, ScreenSwitchSchema } from './screen.js';

/** Who may send a message: the client, the orchestrator (server), or both. */
export type MessageDirection = 'client_to_server' | 'server_to_client' | 'both';

/** Documentation and schema of one message type. */
export interface MessageCatalogEntry {
  /** The `type` discriminator. */
  readonly type: string;
  /** Who sends it. */
  readonly direction: MessageDirection;
  /** True when the message is an addition to the base framework spec. */
  readonly extension: boolean;
  /** One-paragraph description for docs/protocol.md. */
  readonly description: string;
  /** The zod schema that parses it. */
  readonly schema: z.ZodType;
  /** Valid example messages (the first is shown in the docs); tests parse every one. */
  readonly examples: readonly Record<string, unknown>[];
}

/** Every message type of the protocol in documentation order, with its examples. */
export const MESSAGE_CATALOG: readonly MessageCatalogEntry[] = [
  {
    type: 'hello',
    direction: 'client_to_server',
    extension: true,
    description:
      'First message on every connection. Authenticates the client and (re)registers the commands it can run; a reconnecting client sends it again and its command list replaces the old one. It may also carry the client’s model-written tools (`tools`, as in `tools_update`). The server answers `welcome`, or `error` (`unauthorized`, `protocol_version`, or a parse error such as `missing_field`) and closes the connection.',
    schema: HelloSchema,
    examples: [
      {
        type: 'hello',
        client_id: 'turtle-7',
        token: 's3cret',
        protocol_version: 1,
        client_version: '0.1.0',
        commands: [
          {
            name: 'turtle.forward',
            description: 'Move the turtle one block forward.',
            args_schema: { type: 'object', properties: {}, additionalProperties: false },
            timeout_ms: 5000,
          },
          { name: 'fs.list' },
        ],
        tools: [{ name: 'count_logs', status: 'active', version: 3, file: '/tools/count_logs.lua' }],
      },
      { type: 'hello', client_id: 'pc-1', protocol_version: 1, commands: [] },
    ],
  },
  {
    type: 'tools_update',
    direction: 'client_to_server',
    extension: true,
    description:
      'A full snapshot of the client’s registry of model-written tools, replacing the previous one (an empty list means the client has none). Sent after `hello` and whenever the registry changes; `hello` may carry the same list in its optional `tools` field. The server keeps the latest snapshot per client.',
    schema: ToolsUpdateSchema,
    examples: [
      {
        type: 'tools_update',
        tools: [
          {
            name: 'count_logs',
            status: 'active',
            version: 3,
            description: 'Count the logs in the chest in front of the turtle.',
            file: '/tools/count_logs.lua',
            updated_at: 1763891234567,
          },
          { name: 'smelt_all', status: 'draft', version: 1 },
          { name: 'old_miner', status: 'retired', version: 7, updated_at: 1763800000000 },
        ],
      },
      { type: 'tools_update', tools: [] },
    ],
  },
  {
    type: 'create_task',
    direction: 'client_to_server',
    extension: false,
    description:
      'Start a task. The server answers `task_created` carrying the same `request_id`; repeating a `request_id` returns the same task instead of creating a second one. The creating client is subscribed to the task automatically. `settings` (optional, an extension) chooses models, temperature, context size, executor mode, budgets, interactivity and completion criteria for this task; values above the server’s operator maximums are refused with `error` (`invalid_field`, `path` naming the field). `client_id` is the creating client itself or, with `server.groups`, a computer of its group (else `forbidden`). A task an in-game trigger starts names it in `trigger` (rate-limited per computer and trigger, `rate_limited`).',
    schema: CreateTaskSchema,
    examples: [
      {
        type: 'create_task',
        request_id: 'req-1',
        task_kind: 'agent',
        client_id: 'turtle-7',
        prompt: 'Dig a 3x3 hole and report how many blocks you mined.',
        context: { position: { x: 10, y: 64, z: -3 } },
        allowed_commands: ['turtle.dig', 'turtle.forward'],
      },
      {
        type: 'create_task',
        request_id: 'req-2',
        task_kind: 'agent',
        client_id: 'pc-1',
        prompt: 'List the files.',
        allowed_commands: [],
      },
      {
        type: 'create_task',
        request_id: 'req-3',
        task_kind: 'general_agent',
        client_id: 'farm-1',
        prompt: 'Every 10 minutes check the farm and replant.',
        allowed_commands: [],
        settings: {
          models: { native: 'qwen3:14b' },
          temperature: 0.1,
          num_ctx: 32768,
          budgets: { max_steps: 5000, max_tool_calls: 20000, deadline_ms: 259200000 },
        },
      },
    ],
  },
  {
    type: 'command_result',
    direction: 'client_to_server',
    extension: false,
    description:
      'The outcome of a `command_call`. Clients keep the result until the matching `command_ack` arrives and resend it after a reconnect; the server treats a repeated `call_id` idempotently.',
    schema: CommandResultSchema,
    examples: [
      { type: 'command_result', task_id: 't-42', call_id: 'c-7', ok: true, result: { mined: 9 } },
      {
        type: 'command_result',
        task_id: 't-42',
        call_id: 'c-8',
        ok: false,
        error: { code: 'blocked', message: 'Movement obstructed', traceback: 'turtle.lua:12' },
      },
      { type: 'command_result', task_id: 't-42', call_id: 'c-9', ok: false, error: 'no fuel' },
      { type: 'command_result', task_id: 't-42', call_id: 'c-10', ok: true, result: null },
    ],
  },
  {
    type: 'cancel_task',
    direction: 'client_to_server',
    extension: false,
    description: 'Cancel a task. The task ends with status `cancelled`, announced by `task_update`.',
    schema: CancelTaskSchema,
    examples: [
      { type: 'cancel_task', task_id: 't-42' },
      { type: 'cancel_task', task_id: 't-42', request_id: 'req-3' },
    ],
  },
  {
    type: 'task_message',
    direction: 'client_to_server',
    extension: true,
    description:
      'A follow-up message from the person to a task: a running (or waiting) task sees it in its next model step; an ended task (completed, failed or cancelled) is continued with it: same task, same memory, fresh budgets. The server answers `task_update` with the task’s status, or `error` (`not_found`, `forbidden`, `conflict` when the task cannot take messages).',
    schema: TaskMessageSchema,
    examples: [
      { type: 'task_message', task_id: 't-42', text: 'Use the birch logs instead.', request_id: 'req-7' },
    ],
  },
  {
    type: 'task_event',
    direction: 'client_to_server',
    extension: true,
    description:
      'Something happened that a task should know: a redstone signal, a turtle’s inventory, a game `state_update`. It enters the task’s history (the model sees it in its prompt) and wakes a task that is waiting for an event or a timer. The server answers `task_update` with the task’s status, or `error`. Give `task_id`, or `agent`: the name the task was created with (`create_task.name`) — the server resolves it among the running tasks this client may act on (`not_found` when none is, `invalid_field` with the candidates when several are). An event an in-game trigger sends names it in `trigger`; more than the server’s `triggerRateLimit` per computer and trigger is refused with `error` (`rate_limited`).',
    schema: TaskEventSchema,
    examples: [
      { type: 'task_event', task_id: 't-42', name: 'redstone', data: { side: 'left', on: true } },
      {
        type: 'task_event',
        task_id: 't-42',
        name: 'redstone',
        data: { side: 'back', on: false },
        trigger: 'crop_sensor',
        request_id: 'req-9',
      },
      {
        type: 'task_event',
        agent: 'farm-watcher',
        name: 'redstone',
        data: { side: 'back', on: true, level: 15 },
        trigger: 'crops',
        request_id: 'req-10',
      },
    ],
  },
  {
    type: 'subscribe',
    direction: 'client_to_server',
    extension: true,
    description:
      'Receive a task’s `task_update`, `task_completed`, `task_failed` and `ask_user` messages; the server replies with a `task_update` carrying the current status.',
    schema: SubscribeSchema,
    examples: [{ type: 'subscribe', task_id: 't-42', request_id: 'req-4' }],
  },
  {
    type: 'unsubscribe',
    direction: 'client_to_server',
    extension: true,
    description: 'Stop receiving a task’s updates.',
    schema: UnsubscribeSchema,
    examples: [{ type: 'unsubscribe', task_id: 't-42' }],
  },
  {
    type: 'user_answer',
    direction: 'client_to_server',
    extension: true,
    description: 'The person’s answer to an `ask_user` question; the task resumes with it.',
    schema: UserAnswerSchema,
    examples: [{ type: 'user_answer', task_id: 't-42', question_id: 'q-1', text: 'Use the oak logs.' }],
  },
  {
    type: 'screen_frame',
    direction: 'client_to_server',
    extension: true,
    description:
      'The computer’s screen, mirrored (sent only when its screen mirror is on: `ccagent.screen` or `"screen": true` in its config). Rows are in CC’s `blit` form: `text`, and one colour digit per cell in `fg` and `bg` (`0` white … `f` black). A `full` frame carries every row and replaces the screen (sent on connect and after a resize); the others carry only the rows that changed. At most 10 frames a second. The server keeps the latest screen per computer in memory for the dashboard; a frame that does not fit (rows of the wrong length, a row below the screen, a partial frame of another size than the screen the server holds, or none) is refused with `error` (`invalid_field`, or `invalid_message` with `path` `$.full` for a partial frame the server cannot place: the host sends a full frame when it reconnects) and changes nothing. Nothing answers a frame that is taken.',
    schema: ScreenFrameSchema,
    examples: [
      {
        type: 'screen_frame',
        seq: 0,
        width: 5,
        height: 2,
        full: true,
        cursor: { x: 1, y: 2, blink: true, fg: '0' },
        lines: [
          { y: 1, text: 'Hi CC', fg: '00e00', bg: 'fffff' },
          { y: 2, text: '     ', fg: '00000', bg: 'fffff' },
        ],
      },
      {
        type: 'screen_frame',
        seq: 1,
        width: 5,
        height: 2,
        full: false,
        cursor: { x: 3, y: 2, blink: true },
        lines: [{ y: 2, text: '> ok ', fg: '40000', bg: 'fffff' }],
      },
    ],
  },
  {
    type: 'screen_switch',
    direction: 'server_to_client',
    extension: true,
    description:
      'An operator changed the server’s word on this computer’s screen mirror (`POST /api/clients/:id/screen/switch`); the `welcome` carries it too (`screen`). `true` on, `false` off, `null` no opinion. The mirror runs when neither the server nor the computer’s own setting (`ccagent.screen`) says off and one of them says on: off on either side wins, so a player can always keep a screen private and an operator can always stop receiving it. While the server says off, every `screen_frame` is refused with `error` `forbidden` and neither kept nor shown.',
    schema: ScreenSwitchSchema,
    examples: [
      { type: 'screen_switch', screen: true },
      { type: 'screen_switch', screen: null },
    ],
  },
  {
    type: 'welcome',
    direction: 'server_to_client',
    extension: true,
    description:
      'Accepts a `hello`: tells the client the server version, heartbeat interval and frame size limit, and (optional) the task kinds it may create and the models the server has, for the computer’s own menus.',
    schema: WelcomeSchema,
    examples: [
      {
        type: 'welcome',
        client_id: 'turtle-7',
        server_version: '0.1.0',
        protocol_version: 1,
        heartbeat_ms: 15000,
        max_message_bytes: 131072,
      },
      {
        type: 'welcome',
        client_id: 'pocket-1',
        server_version: '0.1.0',
        protocol_version: 1,
        heartbeat_ms: 15000,
        max_message_bytes: 131072,
        task_kinds: ['general_agent', 'code_job', 'chat'],
        models: ['qwen3:14b', 'qwen3:1.7b'],
        model_roles: { general_agent: ['native'], code_job: ['planner', 'executor'], chat: ['chat'] },
      },
    ],
  },
  {
    type: 'task_created',
    direction: 'server_to_client',
    extension: false,
    description: 'Reply to `create_task`: the new (or, for a repeated `request_id`, existing) task.',
    schema: TaskCreatedSchema,
    examples: [{ type: 'task_created', request_id: 'req-1', task_id: 't-42', status: 'queued' }],
  },
  {
    type: 'task_update',
    direction: 'server_to_client',
    extension: false,
    description: 'A task’s status or progress changed.',
    schema: TaskUpdateSchema,
    examples: [
      {
        type: 'task_update',
        task_id: 't-42',
        status: 'running',
        progress: 0.25,
        message: 'Digging row 1 of 3',
      },
      { type: 'task_update', task_id: 't-42', status: 'waiting_for_user' },
      { type: 'task_update', task_id: 't-44', status: 'running', delta: 'The furnace holds ' },
    ],
  },
  {
    type: 'task_completed',
    direction: 'server_to_client',
    extension: false,
    description: 'The task finished; `result` is its final answer.',
    schema: TaskCompletedSchema,
    examples: [
      { type: 'task_completed', task_id: 't-42', result: { mined: 9, summary: 'Dug a 3x3 hole.' } },
      { type: 'task_completed', task_id: 't-43', result: 'done' },
    ],
  },
  {
    type: 'task_failed',
    direction: 'server_to_client',
    extension: false,
    description: 'The task ended in failure.',
    schema: TaskFailedSchema,
    examples: [
      {
        type: 'task_failed',
        task_id: 't-42',
        error: { code: 'step_limit', message: 'Gave up after 50 steps.' },
      },
      { type: 'task_failed', task_id: 't-43', error: 'model unavailable' },
    ],
  },
  {
    type: 'command_call',
    direction: 'server_to_client',
    extension: false,
    description:
      'Run a registered command. The client answers `command_result` with the same `call_id`; a `call_id` already executed must not run again — resend the stored result instead.',
    schema: CommandCallSchema,
    examples: [
      {
        type: 'command_call',
        task_id: 't-42',
        call_id: 'c-7',
        command: 'turtle.dig',
        args: {},
        timeout_ms: 5000,
      },
      { type: 'command_call', task_id: 't-42', call_id: 'c-8', command: 'fs.list', args: { path: '/' } },
    ],
  },
  {
    type: 'command_cancel',
    direction: 'server_to_client',
    extension: true,
    description:
      'Stop a running call: its task was cancelled or failed, or the call timed out. The client stops the handler (the Lua host terminates its coroutine as CC’s `terminate` event would) and answers `command_result` once, with `ok: false` and error code `cancelled`; a call it does not know or has finished is ignored.',
    schema: CommandCancelSchema,
    examples: [{ type: 'command_cancel', task_id: 't-42', call_id: 'c-7', reason: 'task cancelled' }],
  },
  {
    type: 'command_ack',
    direction: 'server_to_client',
    extension: true,
    description: 'The `command_result` for this `call_id` is durably stored; the client may forget it.',
    schema: CommandAckSchema,
    examples: [{ type: 'command_ack', task_id: 't-42', call_id: 'c-7' }],
  },
  {
    type: 'ask_user',
    direction: 'server_to_client',
    extension: true,
    description:
      'The task needs an answer from the person at the CC computer; its status is `waiting_for_user` until a `user_answer` arrives.',
    schema: AskUserSchema,
    examples: [
      {
        type: 'ask_user',
        task_id: 't-42',
        question_id: 'q-1',
        question: 'Which wood should I use?',
        why: 'There are oak and birch logs in the chest.',
      },
    ],
  },
  {
    type: 'error',
    direction: 'both',
    extension: false,
    description:
      'A request failed or a frame was rejected. `code` is one of the error codes below (receivers must tolerate codes they do not know); `request_id`, `call_id`, `task_id` and `path` identify the offending message and field when known. The base spec has the server send it; clients may send it too (e.g. `chunk_error` for a broken chunked message). Never answer an `error` with an `error`.',
    schema: ErrorMessageSchema,
    examples: [
      {
        type: 'error',
        code: 'invalid_field',
        message: '$.allowed_commands[2]: Invalid input: expected string, received number',
        request_id: 'req-1',
        path: '$.allowed_commands[2]',
      },
      {
        type: 'error',
        code: 'unknown_call',
        message: 'no pending call c-99',
        call_id: 'c-99',
        task_id: 't-42',
      },
      { type: 'error', code: 'chunk_error', message: 'chunk "m-5": duplicate index 1', path: '$.index' },
    ],
  },
  {
    type: 'ping',
    direction: 'both',
    extension: false,
    description:
      'Liveness check. The receiver answers `pong` with the same `id`. The server pings every `heartbeat_ms`.',
    schema: PingSchema,
    examples: [{ type: 'ping', id: 'hb-12' }, { type: 'ping' }],
  },
  {
    type: 'pong',
    direction: 'both',
    extension: true,
    description: 'Answer to a `ping`, echoing its `id`.',
    schema: PongSchema,
    examples: [{ type: 'pong', id: 'hb-12' }, { type: 'pong' }],
  },
  {
    type: 'chunk',
    direction: 'both',
    extension: true,
    description:
      'One piece of a message whose JSON text exceeds `max_message_bytes`. The `data` strings of chunks 0..count-1 concatenate to the original JSON text, which the receiver then parses as a normal message.',
    schema: ChunkSchema,
    examples: [{ type: 'chunk', chunk_id: 'm-5', index: 0, count: 2, data: '{"type":"task_completed",' }],
  },
];
