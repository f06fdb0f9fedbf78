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

/** Stable machine-readable error codes carried by `error` messages and parse failures. */
export const ERROR_CODES = [
  'invalid_json',
  'invalid_message',
  'unknown_type',
  'message_too_large',
  'unauthorized',
  'protocol_version',
  'not_found',
  'forbidden',
  'rate_limited',
  'unknown_call',
  'duplicate',
  'internal',
  'unavailable',
  'chunk_error',
] as const;

/** One of {@link ERROR_CODES}. */
export type ProtocolErrorCode = (typeof ERROR_CODES)[number];

/** What each error code means; used by the generated docs/protocol.md. */
export const ERROR_CODE_DESCRIPTIONS: Readonly<Record<ProtocolErrorCode, string>> = {
  invalid_json: 'The frame is not valid JSON text.',
  invalid_message:
    'The frame is JSON but not a valid message: not an object, a field has the wrong type, or a required field is missing. `path` names the offending field.',
  unknown_type: 'The `type` is not a message this side accepts.',
  message_too_large:
    'The frame (or a reassembled chunked message) exceeds the size limit; send it as `chunk` frames or make it smaller.',
  unauthorized: 'The `hello` token is missing or wrong, or a message arrived before `hello`.',
  protocol_version: 'The `hello` protocol version is not supported by the server.',
  not_found: 'The referenced task (or question) does not exist.',
  forbidden:
    'The client may not do this (e.g. act on another client’s task, or call a command it did not allow).',
  rate_limited: 'Too many messages or tasks; retry later.',
  unknown_call: 'A `command_result` names a `call_id` the server is not waiting for.',
  duplicate: 'The request was already handled (e.g. a repeated `request_id`); the original outcome stands.',
  internal: 'The server failed unexpectedly; the request may be retried.',
  unavailable: 'The server is shutting down or a dependency (e.g. the model server) is unreachable.',
  chunk_error:
    'A `chunk` frame is inconsistent (bad index/count, duplicate, too many transfers) and was dropped.',
};
