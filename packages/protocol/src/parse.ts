import type { z } from 'zod';
import { MESSAGE_CATALOG } from './catalog.js';
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_MESSAGE_BYTES, type ProtocolErrorCode } from './constants.js';
import type {
  ClientMessage,
  ClientMessageType,
  CommandResultMessage,
  ErrorMessage,
  Message,
  ServerMessage,
  ServerMessageType,
} from './messages.js';
import { fitsUtf8 } from './utf8.js';

/**
 * Why a frame (or chunk) was rejected: what {@link parseClientMessage} and friends return instead of throwing.
 * {@link toErrorMessage} turns it into the `error` reply.
 */
export interface ProtocolIssue {
  /** Stable error code (see `ERROR_CODES`). */
  code: ProtocolErrorCode;
  /** JSON path of the offending field (`$.allowed_commands[2]`); `$` when the frame as a whole is at fault. */
  path: string;
  /** Human-readable explanation, starting with the path when a field is at fault. */
  message: string;
  /** `request_id` of the rejected message, when it had a string one. */
  request_id?: string;
  /** `call_id` of the rejected message, when it had a string one. */
  call_id?: string;
  /** `task_id` of the rejected message, when it had a string one. */
  task_id?: string;
}

/** Result of an operation that fails with a {@link ProtocolIssue} instead of throwing. */
export type ProtocolResult<T> = { ok: true; value: T } | { ok: false; error: ProtocolIssue };

/** Limits applied by the parse functions. */
export interface ParseOptions {
  /** Largest accepted frame in UTF-8 bytes; default `DEFAULT_MAX_MESSAGE_BYTES` (128 KiB). */
  maxBytes?: number;
  /** Deepest accepted array/object nesting, the message object being level 1; default `DEFAULT_MAX_DEPTH`. */
  maxDepth?: number;
}

/** Which side receives the frame: the server parses client messages, a client parses server messages. */
export type ReceivingSide = 'server' | 'client';

// Echoed ids are capped so a hostile frame cannot make the error reply itself oversize.
const MAX_ECHOED_ID = 256;
const MAX_ECHOED_TYPE = 64;

/** Every `type` a client may send, in catalog order. */
export const CLIENT_MESSAGE_TYPES = MESSAGE_CATALOG.filter((m) => m.direction !== 'server_to_client').map(
  (m) => m.type,
) as readonly ClientMessageType[];

/** Every `type` the orchestrator may send, in catalog order. */
export const SERVER_MESSAGE_TYPES = MESSAGE_CATALOG.filter((m) => m.direction !== 'client_to_server').map(
  (m) => m.type,
) as readonly ServerMessageType[];

const ACCEPTED: Record<ReceivingSide, ReadonlySet<string>> = {
  server: new Set(CLIENT_MESSAGE_TYPES),
  client: new Set(SERVER_MESSAGE_TYPES),
};
const SCHEMAS = new Map<string, z.ZodType>(MESSAGE_CATALOG.map((m) => [m.type, m.schema]));

/**
 * Parse one frame received by the orchestrator into a typed client message. Never throws: oversize, non-JSON,
 * too deeply nested, unknown or invalid messages come back as `{ ok: false, error }`. Unknown extra fields are
 * ignored and dropped from the value.
 */
export function parseClientMessage(raw: string, opts: ParseOptions = {}): ProtocolResult<ClientMessage> {
  return parseFrame(raw, 'server', opts) as ProtocolResult<ClientMessage>;
}

/** Parse one frame received by a client into a typed server message; same contract as {@link parseClientMessage}. */
export function parseServerMessage(raw: string, opts: ParseOptions = {}): ProtocolResult<ServerMessage> {
  return parseFrame(raw, 'client', opts) as ProtocolResult<ServerMessage>;
}

/**
 * Build the `error` message that answers a rejected frame, carrying its code, path and the offending message's
 * `request_id` / `call_id` / `task_id` when known.
 */
export function toErrorMessage(issue: ProtocolIssue): ErrorMessage {
  const msg: ErrorMessage = { type: 'error', code: issue.code, message: issue.message, path: issue.path };
  if (issue.request_id !== undefined) msg.request_id = issue.request_id;
  if (issue.call_id !== undefined) msg.call_id = issue.call_id;
  if (issue.task_id !== undefined) msg.task_id = issue.task_id;
  return msg;
}

/** Serialize a message to the JSON text of one frame (no chunking; see `encodeFrames` for that). */
export function serializeMessage(msg: Message): string {
  return JSON.stringify(msg);
}

/** Parse one frame for the given receiving side. Internal to the package (used by the frame decoder). */
export function parseFrame(raw: string, side: ReceivingSide, opts: ParseOptions): ProtocolResult<Message> {
  try {
    return parseFrameUnsafe(raw, side, opts);
  } catch (cause) {
    // Defence in depth: nothing above should throw, but a hostile frame must never crash the receiver.
    const detail = cause instanceof Error ? cause.message : String(cause);
    return fail('invalid_message', '$', `message could not be validated: ${detail}`);
  }
}

function fail(
  code: ProtocolErrorCode,
  path: string,
  message: string,
  ids: EchoedIds = {},
): ProtocolResult<never> {
  return { ok: false, error: { code, path, message, ...ids } };
}

function parseFrameUnsafe(raw: string, side: ReceivingSide, opts: ParseOptions): ProtocolResult<Message> {
  if (typeof raw !== 'string') return fail('invalid_json', '$', 'frame is not text');
  const maxBytes = opts.maxBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  if (!fitsUtf8(raw, maxBytes)) {
    return fail('message_too_large', '$', `frame exceeds ${maxBytes} bytes; send it as chunk frames`);
  }
  const maxDepth = opts.maxDepth ?? DEFAULT_MAX_DEPTH;
  // Checked on the text, before JSON.parse builds anything: later stages (stringify, SQLite JSON) recurse.
  if (nestingExceeds(raw, maxDepth)) {
    return fail('nesting_too_deep', '$', `arrays/objects are nested deeper than ${maxDepth} levels`);
  }
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch (cause) {
    const detail = cause instanceof Error ? cause.message : 'syntax error';
    return fail('invalid_json', '$', `frame is not valid JSON: ${detail}`);
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    const kind = data === null ? 'null' : Array.isArray(data) ? 'an array' : `a ${typeof data}`;
    return fail('invalid_message', '$', `message must be a JSON object, got ${kind}`);
  }
  const obj = data as Record<string, unknown>;
  const type = obj['type'];
  if (!Object.hasOwn(obj, 'type'))
    return fail('missing_field', '$.type', '$.type: missing required field `type`', echoedIds(obj));
  if (typeof type !== 'string') {
    return fail(
      'invalid_field',
      '$.type',
      `$.type: expected string, received ${jsonKind(type)}`,
      echoedIds(obj),
    );
  }
  const schema = SCHEMAS.get(type);
  if (schema === undefined || !ACCEPTED[side].has(type)) {
    const shown = JSON.stringify(type.length > MAX_ECHOED_TYPE ? `${type.slice(0, MAX_ECHOED_TYPE)}…` : type);
    const why =
      schema === undefined
        ? `unknown message type ${shown}`
        : `message type ${shown} is not accepted by the ${side}`;
    return fail('unknown_type', '$.type', why, echoedIds(obj));
  }
  if (type === 'command_result') {
    const value = successfulCommandResult(obj);
    if (value !== undefined) return { ok: true, value };
  }
  const parsed = schema.safeParse(obj);
  if (parsed.success) return { ok: true, value: parsed.data as Message };
  const ids = echoedIds(obj);
  const issue = mostSpecificIssue(parsed.error.issues);
  const path = toJsonPath(issue.path);
  if (isMissing(obj, issue.path)) {
    const detail = issue.custom ? issue.message : `missing required field \`${String(issue.path.at(-1))}\``;
    return fail('missing_field', path, `${path}: ${detail}`, ids);
  }
  const code = issue.path.length === 0 ? 'invalid_message' : 'invalid_field';
  return fail(code, path, `${path}: ${issue.message}`, ids);
}

/**
 * The value `CommandResultSchema` produces for the common shape, a successful result (`ok: true`, a `result`, no
 * `error`), built without zod: one per command round trip, and zod was most of the parse cost. Undefined for any
 * other shape, which then goes through the schema (parse.test.ts checks both give the same value).
 */
function successfulCommandResult(obj: Record<string, unknown>): CommandResultMessage | undefined {
  const taskId = obj['task_id'];
  const callId = obj['call_id'];
  if (
    obj['ok'] !== true ||
    typeof taskId !== 'string' ||
    taskId.length === 0 ||
    typeof callId !== 'string' ||
    callId.length === 0 ||
    !Object.hasOwn(obj, 'result') ||
    Object.hasOwn(obj, 'error')
  ) {
    return undefined;
  }
  return { type: 'command_result', task_id: taskId, call_id: callId, ok: true, result: obj['result'] };
}

interface FlatIssue {
  path: PropertyKey[];
  message: string;
  custom: boolean;
}

// Unions (e.g. `error: {…} | string`) report one "invalid_union" issue; descend into the branch that got furthest
// so the path names the actual field (`$.error.message`) rather than the union.
function mostSpecificIssue(issues: readonly z.core.$ZodIssue[], prefix: PropertyKey[] = []): FlatIssue {
  const first = issues[0];
  if (first === undefined) return { path: prefix, message: 'invalid message', custom: false };
  let best: FlatIssue = {
    path: [...prefix, ...first.path],
    message: unionMessage(first) ?? first.message,
    custom: first.code === 'custom',
  };
  if (first.code === 'invalid_union') {
    const unionPath = best.path;
    for (const branch of first.errors) {
      const inner = mostSpecificIssue(branch, unionPath);
      if (inner.path.length > best.path.length) best = inner;
    }
  }
  return best;
}

// zod's union message is a bare "Invalid input"; name the accepted shapes instead.
function unionMessage(issue: z.core.$ZodIssue): string | undefined {
  if (issue.code !== 'invalid_union') return undefined;
  const expected = issue.errors.flatMap((branch) =>
    branch.flatMap((i) => (i.code === 'invalid_type' && i.path.length === 0 ? [i.expected] : [])),
  );
  return expected.length > 0 ? `Invalid input: expected ${expected.join(' or ')}` : undefined;
}

// A field is missing when its parent is an object that does not have it as an own property.
function isMissing(root: unknown, path: readonly PropertyKey[]): boolean {
  if (path.length === 0) return false;
  let parent: unknown = root;
  for (const key of path.slice(0, -1)) {
    if (typeof parent !== 'object' || parent === null) return false;
    parent = (parent as Record<PropertyKey, unknown>)[key];
  }
  const last = path[path.length - 1] as PropertyKey;
  return (
    typeof parent === 'object' && parent !== null && !Array.isArray(parent) && !Object.hasOwn(parent, last)
  );
}

function jsonKind(v: unknown): string {
  if (v === null) return 'null';
  if (Array.isArray(v)) return 'array';
  return typeof v;
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

/**
 * True when the JSON text nests arrays/objects deeper than `maxDepth`. Scans the raw text (skipping string
 * contents), so it is linear and allocation-free; on invalid JSON its answer is irrelevant because parsing fails.
 */
export function nestingExceeds(text: string, maxDepth: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text.charCodeAt(i);
    if (inString) {
      if (c === 0x5c)
        i++; // backslash: skip the escaped character
      else if (c === 0x22) inString = false;
    } else if (c === 0x22) inString = true;
    else if (c === 0x5b || c === 0x7b) {
      if (++depth > maxDepth) return true;
    } else if (c === 0x5d || c === 0x7d) depth--;
  }
  return false;
}

type EchoedIds = Pick<ProtocolIssue, 'request_id' | 'call_id' | 'task_id'>;

function echoedIds(obj: Record<string, unknown>): EchoedIds {
  const ids: EchoedIds = {};
  for (const key of ['request_id', 'call_id', 'task_id'] as const) {
    const v = obj[key];
    if (typeof v === 'string' && v.length > 0 && v.length <= MAX_ECHOED_ID) ids[key] = v;
  }
  return ids;
}
