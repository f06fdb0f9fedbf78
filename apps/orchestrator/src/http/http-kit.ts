/**
 * What every HTTP route uses: the error a handler throws to refuse a request (`HttpError`, answered as
 * `{"error": {"code", "message", "path"?}}`), JSON in and out, zod parsing of a query or body into a 400 with the
 * JSON path of the first problem, and the mapping of a task operation's refusal to a status.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { TaskOperationError } from '@ccagent/engine';
import { DEFAULT_INPUT_LIMITS, nestingExceeds } from '@ccagent/protocol';
import type { z } from 'zod';

/** The size rules of a request body (`server.inputLimits`). */
export interface BodyLimits {
  /** Largest body, bytes (413 above). */
  maxRequestBytes: number;
  /** Deepest nesting of arrays/objects (400 `nesting_too_deep` above, before the body is parsed). */
  maxDepth: number;
}

const bodyLimits = new WeakMap<IncomingMessage, BodyLimits>();

/** The limits {@link readJson} applies to `req`'s body (the API sets the server's; default the protocol's). */
export function setBodyLimits(req: IncomingMessage, limits: BodyLimits): void {
  bodyLimits.set(req, limits);
}

/** A refused request: status, stable code, message, the JSON path of the bad field if any, extra headers. */
export class HttpError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
    readonly path?: string,
    readonly headers: Record<string, string> = {},
  ) {
    super(message);
  }
}

/** A path parameter, percent-decoded (400 when it is not valid percent-encoding). */
export function safeDecode(p: string): string {
  try {
    return decodeURIComponent(p);
  } catch {
    throw new HttpError(400, 'invalid_path', 'the path is not valid percent-encoding');
  }
}

/**
 * The request's target as a URL (path and query). An origin-form target (`/…`) is read as a path even when it
 * starts with `//` (which a URL parser would take for a host); an absolute-form one (`http://host/…`, sent to
 * proxies) keeps only its path and query; anything else is a 400.
 */
export function requestUrl(target: string | undefined): URL {
  const t = target ?? '/';
  try {
    return t.startsWith('/') ? new URL(`http://localhost${t}`) : new URL(t);
  } catch {
    throw new HttpError(400, 'invalid_path', 'the request target is not a path');
  }
}

/** The named groups of a route's match, each percent-decoded once (400 when one is not valid percent-encoding). */
export function pathParams(m: RegExpExecArray): Record<string, string> {
  const out: Record<string, string> = {};
  for (const [k, v] of Object.entries(m.groups ?? {})) if (v !== undefined) out[k] = safeDecode(v);
  return out;
}

/**
 * The query parsed with the route's schema, each parameter at most once: a repeated name (however it is spelled
 * in percent-encoding) is a 400 naming it, so no reader can take the first value where another takes the last.
 */
export function parseQuery<T extends z.ZodType>(schema: T, params: URLSearchParams): z.infer<T> {
  const seen = new Map<string, string>();
  for (const [k, v] of params) {
    if (seen.has(k)) {
      const path = /^[A-Za-z_][A-Za-z0-9_]*$/.test(k) ? `$.${k}` : `$[${JSON.stringify(k)}]`;
      throw new HttpError(
        400,
        'invalid_query',
        `${path}: given more than once; send each query parameter once`,
        path,
      );
    }
    seen.set(k, v);
  }
  return parseWith(schema, Object.fromEntries(seen), 'query');
}

/** Answer with a JSON body. */
export function sendJson(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    ...headers,
  });
  res.end(text);
}

/**
 * The request body as JSON: 413 over `maxRequestBytes` (1 MiB by default), 400 `nesting_too_deep` over `maxDepth`
 * (checked on the text, before parsing: a body nested thousands deep must not reach code that recurses), 400 when
 * empty (unless `emptyIsObject`) or not JSON.
 */
export async function readJson(req: IncomingMessage, emptyIsObject = false): Promise<unknown> {
  const { maxRequestBytes, maxDepth } = bodyLimits.get(req) ?? DEFAULT_INPUT_LIMITS;
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxRequestBytes)
      throw new HttpError(
        413,
        'body_too_large',
        `request body exceeds ${maxRequestBytes} bytes (server.inputLimits.maxRequestBytes)`,
      );
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') {
    if (emptyIsObject) return {};
    throw new HttpError(400, 'invalid_json', 'the request body is empty; send a JSON object');
  }
  if (nestingExceeds(text, maxDepth)) {
    throw new HttpError(
      400,
      'nesting_too_deep',
      `the request body nests arrays/objects deeper than ${maxDepth} levels (server.inputLimits.maxDepth)`,
    );
  }
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new HttpError(400, 'invalid_json', `the request body is not JSON: ${(err as Error).message}`);
  }
}

/** Parse a query or body with a zod schema; a 400 naming the first problem's JSON path otherwise. */
export function parseWith<T extends z.ZodType>(
  schema: T,
  input: unknown,
  where: 'body' | 'query',
): z.infer<T> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const path = `$${(issue?.path ?? []).map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`;
  const message = (issue?.message ?? 'invalid').replace(/^Invalid input: /, '');
  throw new HttpError(400, where === 'body' ? 'invalid_body' : 'invalid_query', `${path}: ${message}`, path);
}

/** The HTTP error for a refused task operation. */
export function serviceError(e: TaskOperationError): HttpError {
  const status =
    e.code === 'not_found'
      ? 404
      : e.code === 'forbidden'
        ? 403
        : e.code === 'conflict' || e.code === 'duplicate'
          ? 409
          : e.code === 'internal'
            ? 500
            : e.code === 'unavailable'
              ? 503
              : 400;
  const code = e.code === 'invalid_field' ? 'invalid_body' : e.code;
  return new HttpError(status, code, e.message, e.path);
}
