import type { z } from 'zod';
import { DEFAULT_MAX_MESSAGE_BYTES, type ProtocolErrorCode } from './constants.js';
import { MESSAGE_CATALOG } from './catalog.js';
import type { ClientMessage, ErrorMessage, Message, ServerMessage } from './messages.js';
import { utf8ByteLength } from './utf8.js';

/** Why a frame (or chunk) was rejected; {@link toErrorMessage} turns it into an `error` reply. */
export interface ProtocolIssue {
  /** Stable error code. */
  code: ProtocolErrorCode;
  /** Human-readable explanation. */
  message: string;
  /** JSON path of the offending field (`$.allowed_commands[2]`), for `invalid_message`. */
  path?: string;
  /** `request_id` of the rejected message, when it had a string one. */
  request_id?: string;
  /** `call_id` of the rejected message, when it had a string one. */
  call_id?: string;
  /** `task_id` of the rejected message, when it had a string one. */
  task_id?: string;
}

/** Result of an operation that fails with a {@link ProtocolIssue} instead of throwing. */
export type ProtocolResult<T> = { ok: true; value: T } | { ok: false; error: ProtocolIssue };

/** Options of the parse functions. */
export interface ParseOptions {
  /** Largest accepted frame in UTF-8 bytes; default {@link DEFAULT_MAX_MESSAGE_BYTES}. */
  maxBytes?: number;
}

/** Which messages a side accepts. */
export type Receiver = 'server' | 'client';

// Echoed ids are capped so a hostile frame cannot make the error reply itself oversize.
const MAX_ECHOED_ID = 256;
const MAX_ECHOED_TYPE = 64;

const CLIENT_TYPES = new Set(
  MESSAGE_CATALOG.filter((m) => m.direction !== 'server_to_client').map((m) => m.type),
);
const SERVER_TYPES = new Set(
  MESSAGE_CATALOG.filter((m) => m.direction !== 'client_to_server').map((m) => m.type),
);
const SCHEMAS = new Map<string, z.ZodType>(MESSAGE_CATALOG.map((m) => [m.type, m.schema]));

/** Parse one frame received by the orchestrator. Never throws. */
export function parseClientMessage(raw: string, opts: ParseOptions = {}): ProtocolResult<ClientMessage> {
  return parseFrame(raw, CLIENT_TYPES, opts) as ProtocolResult<ClientMessage>;
}

/** Parse one frame received by a client. Never throws. */
export function parseServerMessage(raw: string, opts: ParseOptions = {}): ProtocolResult<ServerMessage> {
  return parseFrame(raw, SERVER_TYPES, opts) as ProtocolResult<ServerMessage>;
}

/** Turn a parse failure into the `error` message the receiver sends back. */
export function toErrorMessage(error: ProtocolIssue): ErrorMessage {
  const msg: ErrorMessage = { type: 'error', code: error.code, message: error.message };
  if (error.request_id !== undefined) msg.request_id = error.request_id;
  if (error.call_id !== undefined) msg.call_id = error.call_id;
  if (error.task_id !== undefined) msg.task_id = error.task_id;
  if (error.path !== undefined) msg.path = error.path;
  return msg;
}

/** Serialize a message to the JSON text of one frame (no chunking; see `encodeFrames`). */
export function serializeMessage(msg: Message): string {
  return JSON.stringify(msg);
}

function parseFrame(raw: string, accepted: ReadonlySet<string>, opts: ParseOptions): ProtocolResult<Message> {
  try {
    return parseFrameUnsafe(raw, accepted, opts);
  } catch (cause) {
    // Defence in depth: nothing above should throw, but a hostile frame must never crash the receiver.
    const detail = cause instanceof Error ? cause.message : String(cause);
    return {
      ok: false,
      error: { code: 'invalid_message', message: `message could not be validated: ${detail}` },
    };
  }
}

function parseFrameUnsafe(
  raw: string,
  accepted: ReadonlySet<string>,
  opts: ParseOptions,
): ProtocolResult<Message> {
  if (typeof raw !== 'string') {
    return { ok: false, error: { code: 'invalid_json', message: 'frame is not text' } };
  }
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  const size = utf8ByteLength(raw, maxBytes);
  if (size > maxBytes) {
    return {
      ok: false,
      error: {
        code: 'message_too_large',
        message: `frame exceeds ${maxBytes} bytes; send it as chunk frames`,
      },
    };
  }
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : 'syntax error';
    return { ok: false, error: { code: 'invalid_json', message: `frame is not valid JSON: ${detail}` } };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    const kind = data === null ? 'null' : Array.isArray(data) ? 'an array' : `a ${typeof data}`;
    return {
      ok: false,
      error: { code: 'invalid_message', message: `message must be a JSON object, got ${kind}`, path: '$' },
    };
  }
  const obj = data as Record<string, unknown>;
  const ids = echoedIds(obj);
  const type = obj['type'];
  if (type === undefined) {
    return {
      ok: false,
      error: { code: 'invalid_message', message: 'missing `type`', path: '$.type', ...ids },
    };
  }
  if (typeof type !== 'string') {
    return {
      ok: false,
      error: { code: 'invalid_message', message: '`type` must be a string', path: '$.type', ...ids },
    };
  }
  const schema = SCHEMAS.get(type);
  if (!accepted.has(type) || schema === undefined) {
    const shown = type.length > MAX_ECHOED_TYPE ? `${type.slice(0, MAX_ECHOED_TYPE)}…` : type;
    return {
      ok: false,
      error: {
        code: 'unknown_type',
        message: `unknown message type ${JSON.stringify(shown)}`,
        path: '$.type',
        ...ids,
      },
    };
  }
  const parsed = schema.safeParse(obj);
  if (parsed.success) return { ok: true, value: parsed.data as Message };
  const issue = deepestIssue(parsed.error.issues);
  return {
    ok: false,
    error: { code: 'invalid_message', message: issue.message, path: toJsonPath(issue.path), ...ids },
  };
}

interface FlatIssue {
  path: PropertyKey[];
  message: string;
}

// Unions (e.g. `error: {…} | string`) report one "invalid_union" issue; descend into the branch that got furthest
// so the path names the actual field (`$.error.message`) rather than the union.
function deepestIssue(issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[] = []): FlatIssue {
  const first = issues[0];
  if (first === undefined) return { path: prefix, message: 'invalid message' };
  let best: FlatIssue = { path: [...prefix, ...first.path], message: first.message };
  if (first.code === 'invalid_union') {
    const unionPath = best.path;
    for (const branch of first.errors) {
      const inner = deepestIssue(branch, unionPath);
      if (inner.path.length > best.path.length) best = inner;
    }
  }
  return best;
}

const IDENTIFIER = /^[A-Za-z_$][A-Za-z0-9_$]*$/;

/** Render a zod issue path as a JSON path: `$.allowed_commands[2]`, `$["odd key"]`. */
export function toJsonPath(path: readonly PropertyKey[]): string {
  let out = '$';
  for (const key of path) {
    if (typeof key === 'number') out += `[${key}]`;
    else if (typeof key === 'string' && IDENTIFIER.test(key)) out += `.${key}`;
    else out += `[${JSON.stringify(String(key))}]`;
  }
  return out;
}

function echoedIds(obj: Record<string, unknown>): Pick<ProtocolIssue, 'request_id' | 'call_id' | 'task_id'> {
  const ids: Pick<ProtocolIssue, 'request_id' | 'call_id' | 'task_id'> = {};
  for (const key of ['request_id', 'call_id', 'task_id'] as const) {
    const v = obj[key];
    if (typeof v === 'string' && v.length <= MAX_ECHOED_ID) ids[key] = v;
  }
  return ids;
}
