import { DEFAULT_MAX_DEPTH, nestingExceeds } from '@ccagent/protocol';
import type { z } from 'zod';
import { MAX_FRAME_BYTES, type McFrameErrorCode } from './constants.js';
import { BackendMessageSchema, ModMessageSchema, type BackendMessage, type ModMessage } from './messages.js';

/** Why a frame was refused: what the backend sends back as an `error` frame. */
export interface McFrameError {
  code: McFrameErrorCode;
  message: string;
  /** JSON path of the offending field, when one is to blame. */
  path?: Array<string | number>;
  /** The action the frame named, if it named one. */
  actionId?: string;
}

/** Outcome of parsing one frame. */
export type McParseResult<T> = { ok: true; value: T } | { ok: false; error: McFrameError };

function parseWith<T>(
  schema: z.ZodType<T>,
  types: readonly string[],
  text: string | Buffer,
): McParseResult<T> {
  const raw = typeof text === 'string' ? text : text.toString('utf8');
  if (Buffer.byteLength(raw, 'utf8') > MAX_FRAME_BYTES) {
    return { ok: false, error: { code: 'frame_too_large', message: `frame over ${MAX_FRAME_BYTES} bytes` } };
  }
  // The nesting limit of every other entry point (the CC protocol's), checked on the text before anything recurses.
  if (nestingExceeds(raw, DEFAULT_MAX_DEPTH)) {
    return {
      ok: false,
      error: {
        code: 'invalid_message',
        message: `frame nests arrays/objects deeper than ${DEFAULT_MAX_DEPTH} levels`,
        path: [],
      },
    };
  }
  let data: unknown;
  try {
    data = JSON.parse(raw);
  } catch (e) {
    return { ok: false, error: { code: 'not_json', message: `frame is not JSON: ${(e as Error).message}` } };
  }
  if (typeof data !== 'object' || data === null || Array.isArray(data)) {
    return {
      ok: false,
      error: { code: 'invalid_message', message: 'frame must be a JSON object', path: [] },
    };
  }
  const rec = data as Record<string, unknown>;
  const actionId = typeof rec['actionId'] === 'string' ? { actionId: rec['actionId'] } : {};
  if (typeof rec['type'] !== 'string' || !types.includes(rec['type'])) {
    return {
      ok: false,
      error: {
        code: 'unknown_type',
        message: `unknown message type ${JSON.stringify(rec['type'])}; expected one of ${types.join(', ')}`,
        path: ['type'],
        ...actionId,
      },
    };
  }
  const parsed = schema.safeParse(data);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    const path = (issue?.path ?? []).map((p) => (typeof p === 'number' ? p : String(p)));
    return {
      ok: false,
      error: {
        code: 'invalid_message',
        message: `${rec['type']}: ${path.length > 0 ? path.join('.') + ': ' : ''}${issue?.message ?? 'invalid'}`,
        path,
        ...actionId,
      },
    };
  }
  return { ok: true, value: parsed.data };
}

const MOD_TYPES = ['register', 'state_update', 'action_complete', 'action_failed', 'log'] as const;
const BACKEND_TYPES = ['registered', 'execute_action', 'stop', 'error'] as const;

/** Parse a frame a mod sent. Never throws: a bad frame is `{ ok: false, error }` with a code and a JSON path. */
export function parseModMessage(text: string | Buffer): McParseResult<ModMessage> {
  return parseWith(ModMessageSchema as z.ZodType<ModMessage>, MOD_TYPES, text);
}

/** Parse a frame the backend sent (what a mod, the bridge or the conformance kit's peer uses). */
export function parseBackendMessage(text: string | Buffer): McParseResult<BackendMessage> {
  return parseWith(BackendMessageSchema as z.ZodType<BackendMessage>, BACKEND_TYPES, text);
}
