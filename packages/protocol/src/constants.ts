/**
 * The protocol's plain constants (statuses, event kinds, limits, error codes). This file imports nothing, and is also
 * published on its own as `@ccagent/protocol/constants`: a browser bundle (the dashboard) takes the lists from there
 * without bundling zod, which the main entry's schemas need.
 */
/** Wire protocol version spoken by this package; `hello`/`welcome` carry it. */
export const PROTOCOL_VERSION = 1;

/** Largest frame (UTF-8 bytes) sent without chunking by default: CC:Tweaked's websocket message limit. */
export const DEFAULT_MAX_MESSAGE_BYTES = 131_072;

/** Upper bound (UTF-8 bytes) of one message reassembled from `chunk` frames: 16 MiB. */
export const MAX_REASSEMBLED_BYTES = 16 * 1024 * 1024;

/**
 * Every task status, in lifecycle order. `waiting_for_user` is an extension of the base spec: the task asked
 * the person at the CC computer a question (`ask_user`) and waits for the `user_answer`.
 */
export const TASK_STATUSES = [
  'queued',
  'running',
  'waiting_for_command',
  'waiting_for_user',
  'completed',
  'failed',
  'cancelled',
] as const;

/** A task's status as it appears on the wire. */
export type TaskStatus = (typeof TASK_STATUSES)[number];

/**
 * The kinds of record `GET /api/events` (Server-Sent Events) sends, as each record's `event:` line names them. Readers
 * must skip kinds they do not know (the list may grow).
 */
export const HTTP_EVENT_TYPES = [
  'task',
  'step',
  'question',
  'call',
  'client',
  'tool',
  'delta',
  'resync',
  'hello',
  'mc_instance',
  'mc_log',
  'mc_action',
  'schedule',
] as const;

/** One of {@link HTTP_EVENT_TYPES}. */
export type HttpEventType = (typeof HTTP_EVENT_TYPES)[number];

/** Deepest accepted nesting of arrays/objects in one message (the message object itself is depth 1). */
export const DEFAULT_MAX_DEPTH = 64;

/**
 * The size limits of what enters the orchestrator, one set for every entry point (HTTP, the ComputerCraft WebSocket,
 * the Minecraft mod endpoint); the server's `server.inputLimits` changes them. `maxRequestBytes`: an HTTP body, or a
 * WebSocket message reassembled from chunks (other than a `command_result`); `maxToolOutputBytes`: a `command_result`
 * reassembled from chunks; `maxPromptBytes`: a task's prompt (UTF-8); `maxContextBytes` and `maxDepth`: a task's
 * `context` as JSON, and the nesting of any body, message or context.
 */
export const DEFAULT_INPUT_LIMITS = {
  maxRequestBytes: 1024 * 1024,
  maxToolOutputBytes: MAX_REASSEMBLED_BYTES,
  maxPromptBytes: 1024 * 1024,
  maxContextBytes: 256 * 1024,
  maxDepth: DEFAULT_MAX_DEPTH,
} as const;

/**
 * Stable machine-readable error codes carried by `error` messages. The first seven are produced by the parse
 * functions of this package; the rest are for the orchestrator's (and client's) own checks. Receivers must accept
 * codes they do not know (the list may grow).
 */
export const ERROR_CODES = [
  'invalid_json',
  'message_too_large',
  'nesting_too_deep',
  'invalid_message',
  'unknown_type',
  'missing_field',
  'invalid_field',
  'chunk_error',
  'unauthorized',
  'protocol_version',
  'not_found',
  'forbidden',
  'rate_limited',
  'unknown_call',
  'duplicate',
  'internal',
  'unavailable',
] as const;

/** One of {@link ERROR_CODES}. */
export type ProtocolErrorCode = (typeof ERROR_CODES)[number];

/** What each error code means; rendered into docs/protocol.md. */
export const ERROR_CODE_DESCRIPTIONS: Readonly<Record<ProtocolErrorCode, string>> = {
  invalid_json: 'The frame is not valid JSON text (empty, truncated, a syntax error, or not text at all).',
  message_too_large:
    'The frame exceeds the size limit (UTF-8 bytes; `max_message_bytes`, 128 KiB by default), or a chunked message exceeds the reassembly limit. Send large messages as `chunk` frames.',
  nesting_too_deep: 'Arrays/objects are nested deeper than the limit (64 levels by default).',
  invalid_message: 'The frame is JSON but not a JSON object, or breaks a rule that spans several fields.',
  unknown_type:
    'The `type` is not a message this side accepts (unknown, or a message only the other side sends).',
  missing_field: 'A required field is absent; `path` names it, e.g. `$.task_id`.',
  invalid_field:
    'A field has the wrong JSON type (including `null` for a required field) or an out-of-range value (empty id, unknown status, progress above 1…); `path` names it.',
  chunk_error:
    'A `chunk` frame is inconsistent (index out of range, `count` changed, duplicate index), too many chunked messages are in flight, or a transfer timed out; the whole chunked message is dropped.',
  unauthorized: 'The `hello` token is missing or wrong, or a message other than `hello` arrived first.',
  protocol_version: 'The `hello` protocol version is not supported by the server.',
  not_found: 'The referenced task (or question) does not exist.',
  forbidden:
    'The client may not do this (e.g. act on another client’s task, or let a task call a command the client did not register).',
  rate_limited: 'Too many messages or tasks; retry later.',
  unknown_call: 'A `command_result` names a `call_id` the server is not waiting for.',
  duplicate: 'The request was already handled (e.g. a repeated `request_id`); the original outcome stands.',
  internal: 'The server failed unexpectedly; the request may be retried.',
  unavailable:
    'The server cannot do this right now: it is starting or shutting down, a dependency (e.g. the model server) is unreachable, or its storage is failing (disk full, database locked by another process, I/O error; the message says which). The request was not carried out; retry later.',
};
