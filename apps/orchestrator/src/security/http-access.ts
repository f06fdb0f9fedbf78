/**
 * The front of the HTTP server: every request passes {@link guardHttp} (Host, Origin, Content-Type), then is
 * authenticated and checked against its role before the API handles it; the security routes (pairing, keys, audit)
 * live here. The dashboard's routes get the same treatment by being served behind it: pages and assets are public,
 * everything under `/api/` needs a key in the `Authorization` header (never in the URL).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Task } from '@ccagent/engine';
import { z } from 'zod';
import { CREATOR_KEY } from '../wire.js';
import {
  checkContentType,
  checkHost,
  checkOrigin,
  type GuardPolicy,
  type GuardVerdict,
} from './request-guard.js';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
import type { Principal, SecurityService } from './security-service.js';

/** Dependencies of {@link HttpAccess}. */
export interface HttpAccessOptions {
  policy: GuardPolicy;
  security: SecurityService;
  getTask(id: string): Promise<Task | undefined>;
  /** The API behind the front. */
  next(req: IncomingMessage, res: ServerResponse): void;
  logger: { warn(obj: unknown, msg?: string): void; error(obj: unknown, msg?: string): void };
}

const MAX_BODY = 64 * 1024;

const pairBody = z.strictObject({ code: z.string().min(1).max(64), client_id: z.string().min(1).max(200) });
const enrollBody = z.strictObject({
  client_id: z.string().min(1).max(200).optional(),
  name: z.string().min(1).max(200).optional(),
  kinds: z.array(z.string().min(1)).optional(),
  observe_others: z.boolean().optional(),
  ttl_s: z
    .number()
    .int()
    .min(10)
    .max(7 * 24 * 3600)
    .optional(),
});
const revokeBody = z.union([
  z.strictObject({ id: z.string().min(1) }),
  z.strictObject({ client_id: z.string().min(1) }),
]);
const rotateBody = z.strictObject({ client_id: z.string().min(1) });
const keyBody = z.strictObject({
  role: z.enum(['viewer', 'operator']),
  name: z.string().min(1).max(200).optional(),
});
const auditQuery = z.strictObject({
  limit: z.coerce.number().int().min(1).max(1000).optional(),
  before: z.coerce.number().int().min(1).optional(),
  actor: z.string().min(1).optional(),
  action: z.string().min(1).optional(),
});

/** An HTTP refusal: status, stable code, message. */
class Refusal {
  constructor(
    readonly status: number,
    readonly code: string,
    readonly message: string,
    readonly headers: Record<string, string> = {},
  ) {}
}

/** Which task a route acts on and how. */
type TaskAction = 'read' | 'cancel' | 'answer';

/** The HTTP front (see the module comment). */
export class HttpAccess {
  constructor(private readonly o: HttpAccessOptions) {}

  /** Node `request` listener. */
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    this.dispatch(req, res).catch((err: unknown) => {
      if (err instanceof Refusal) {
        send(res, err.status, { error: { code: err.code, message: err.message } }, err.headers);
        return;
      }
      this.o.logger.error({ err }, 'http access check failed');
      if (!res.headersSent) send(res, 500, { error: { code: 'internal', message: 'internal server error' } });
      else res.destroy();
    });
  };

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const method = (req.method ?? 'GET').toUpperCase();
    // Host and Origin first (a browser's request goes no further), then who it is, then the body's type.
    this.refuseUnless(req, checkHost(req.headers, this.o.policy));
    if (!SAFE_METHODS.has(method)) this.refuseUnless(req, checkOrigin(req.headers, this.o.policy));
    // The installer embeds the URL it was fetched with: say https when this server terminates TLS itself.
    if ((req.socket as { encrypted?: boolean }).encrypted) req.headers['x-forwarded-proto'] = 'https';
    const url = new URL(req.url ?? '/', 'http://localhost');
    const path = url.pathname;
    if (isPublic(method, path)) return this.o.next(req, res);
    const source = sourceOf(req);
    if (method === 'POST' && path === '/api/pair') {
      this.refuseUnless(req, checkContentType(method, req.headers));
      return this.pair(req, res, source);
    }

    const auth = this.o.security.authenticateBearer(req.headers.authorization, source);
    if (!auth.ok) {
      if (auth.code === 'rate_limited') {
        throw new Refusal(429, 'rate_limited', auth.message, {
          'retry-after': String(Math.ceil((auth.retryAfterMs ?? 1000) / 1000)),
        });
      }
      throw new Refusal(401, 'unauthorized', auth.message, { 'www-authenticate': 'Bearer' });
    }
    const who = auth.principal;
    this.refuseUnless(req, checkContentType(method, req.headers));
    if (path.startsWith('/api/credentials') || path === '/api/audit') {
      if (who.role !== 'operator')
        throw forbidden(who, 'only an operator manages keys and reads the audit log');
      return this.securityRoute(req, res, method, path, url, who);
    }
    await this.permit(who, method, path, url);
    this.auditAfter(req, res, method, path, who);
    this.o.next(req, res);
  }

  private refuseUnless(req: IncomingMessage, verdict: GuardVerdict): void {
    if (verdict.ok) return;
    this.o.logger.warn(
      { source: sourceOf(req), origin: req.headers.origin, host: req.headers.host, code: verdict.code },
      'request refused',
    );
    throw new Refusal(verdict.status, verdict.code, verdict.message);
  }

  /** Role rules of the task API (the API itself then runs as for the operator). */
  private async permit(who: Principal, method: string, path: string, url: URL): Promise<void> {
    if (who.role === 'operator') return;
    if (who.role === 'viewer') {
      if (method === 'GET' || method === 'HEAD') return;
      throw forbidden(who, 'a viewer key is read-only');
    }
    // A computer: its own tasks (and what it was granted).
    const me = who.clientId as string;
    const observe = who.grants.observeOthers === true;
    const task = /^\/api\/tasks\/([^/]+)(\/(steps|cancel|answer))?$/.exec(path);
    if (task) {
      const action: TaskAction = task[3] === 'cancel' ? 'cancel' : task[3] === 'answer' ? 'answer' : 'read';
      if ((action === 'read') !== (method === 'GET' || method === 'HEAD')) return; // the API answers 405
      const id = safeDecode(task[1] as string);
      const t = await this.o.getTask(id);
      if (!t) return; // the API answers 404
      const own = t.clientId === me || t.metadata[CREATOR_KEY] === me;
      if (own || (action === 'read' && observe)) return;
      throw forbidden(who, `task ${id} belongs to another client`);
    }
    if (path === '/api/tasks' && method === 'GET') {
      if (observe || url.searchParams.get('client') === me) return;
      throw forbidden(who, `a computer lists its own tasks: add ?client=${me}`);
    }
    if (
      (path === '/api/clients' || path === '/api/tools' || path === '/metrics') &&
      method === 'GET' &&
      observe
    )
      return;
    if (path === '/api/tasks' && method === 'POST') {
      throw forbidden(who, 'a computer creates tasks over its WebSocket (create_task)');
    }
    throw forbidden(who, `${method} ${path} is not open to computer keys`);
  }

  /** Audit a state-changing task request once it has been answered with success. */
  private auditAfter(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    path: string,
    who: Principal,
  ): void {
    if (method !== 'POST') return;
    const m = /^\/api\/tasks(?:\/([^/]+)\/(cancel|answer))?$/.exec(path);
    if (!m) return;
    const action = m[2] === undefined ? 'task.create' : `task.${m[2]}`;
    let body = '';
    if (action === 'task.create') {
      const end = res.end.bind(res) as (...a: unknown[]) => ServerResponse;
      (res as { end: (...a: unknown[]) => ServerResponse }).end = (...args: unknown[]) => {
        const chunk = args[0];
        if (typeof chunk === 'string') body = chunk;
        else if (Buffer.isBuffer(chunk)) body = chunk.toString('utf8');
        return end(...args);
      };
    }
    res.once('finish', () => {
      if (res.statusCode >= 300) return;
      let target = m[1] !== undefined ? safeDecode(m[1]) : undefined;
      if (target === undefined) {
        try {
          target = (JSON.parse(body) as { task?: { id?: string } }).task?.id;
        } catch {
          target = undefined;
        }
      }
      void this.o.security.audit(who, action, target, 'ok', { via: 'http', status: res.statusCode });
    });
  }

  /** `POST /api/pair`: a computer trades an enrollment code for its key (the code is the credential). */
  private async pair(req: IncomingMessage, res: ServerResponse, source: string): Promise<void> {
    const b = parse(pairBody, await readJson(req));
    const r = await this.o.security.redeem(b.code, b.client_id, source);
    if (!r.ok) {
      if (r.code === 'rate_limited') {
        throw new Refusal(429, r.code, r.message, {
          'retry-after': String(Math.ceil((r.retryAfterMs ?? 1000) / 1000)),
        });
      }
      throw new Refusal(r.code === 'client_taken' ? 409 : 403, r.code, r.message);
    }
    send(res, 200, {
      client_id: r.credential.clientId,
      key: r.key,
      credential_id: r.credential.id,
    });
  }

  private async securityRoute(
    req: IncomingMessage,
    res: ServerResponse,
    method: string,
    path: string,
    url: URL,
    who: Principal,
  ): Promise<void> {
    const s = this.o.security;
    if (method === 'GET' && path === '/api/audit') {
      const q = parse(auditQuery, Object.fromEntries(url.searchParams));
      const entries = await s.listAudit({
        ...(q.limit !== undefined ? { limit: q.limit } : {}),
        ...(q.before !== undefined ? { beforeId: q.before } : {}),
        ...(q.actor !== undefined ? { actor: q.actor } : {}),
        ...(q.action !== undefined ? { action: q.action } : {}),
      });
      return send(res, 200, { entries: entries.map(auditToWire) });
    }
    if (method === 'GET' && path === '/api/credentials') {
      return send(res, 200, { credentials: (await s.listCredentials()).map(credentialToWire) });
    }
    if (method === 'POST' && path === '/api/credentials/enroll') {
      const b = parse(enrollBody, await readJson(req));
      const t = await s.enroll(
        {
          ...(b.client_id !== undefined ? { clientId: b.client_id } : {}),
          ...(b.name !== undefined ? { name: b.name } : {}),
          grants: {
            ...(b.kinds !== undefined ? { kinds: b.kinds } : {}),
            ...(b.observe_others !== undefined ? { observeOthers: b.observe_others } : {}),
          },
          ...(b.ttl_s !== undefined ? { ttlMs: b.ttl_s * 1000 } : {}),
        },
        who,
      );
      return send(res, 201, {
        code: t.code,
        expires_at: t.expiresAt,
        ...(t.clientId !== undefined ? { client_id: t.clientId } : {}),
      });
    }
    if (method === 'POST' && path === '/api/credentials/revoke') {
      const b = parse(revokeBody, await readJson(req));
      const revoked = await s.revoke('id' in b ? { id: b.id } : { clientId: b.client_id }, who);
      if (revoked.length === 0) throw new Refusal(404, 'not_found', 'no live key matches');
      return send(res, 200, { revoked: revoked.map(credentialToWire) });
    }
    if (method === 'POST' && path === '/api/credentials/rotate') {
      const b = parse(rotateBody, await readJson(req));
      const r = await s.rotate(b.client_id, who);
      if (!r) throw new Refusal(404, 'not_found', `client "${b.client_id}" has no key to rotate`);
      return send(res, 201, {
        key: r.key,
        credential: credentialToWire(r.credential),
        old_valid_until: r.oldValidUntil,
      });
    }
    if (method === 'POST' && path === '/api/credentials/keys') {
      const b = parse(keyBody, await readJson(req));
      const r = await s.createKey(b.role, b.name, who);
      return send(res, 201, { key: r.key, credential: credentialToWire(r.credential) });
    }
    throw new Refusal(404, 'not_found', `no route ${method} ${path}`);
  }
}

/** Routes anyone may call: health, the Lua bundle, and the dashboard's pages and assets (not the API). */
function isPublic(method: string, path: string): boolean {
  if (method !== 'GET' && method !== 'HEAD') return false;
  if (path === '/health' || path.startsWith('/lua/')) return true;
  return !path.startsWith('/api/') && path !== '/api' && path !== '/metrics';
}

function forbidden(who: Principal, message: string): Refusal {
  return new Refusal(403, 'forbidden', `${message} (${who.role} ${who.actor})`);
}

function sourceOf(req: IncomingMessage): string {
  return `http ${req.socket.remoteAddress ?? 'unknown'}`;
}

function safeDecode(p: string): string {
  try {
    return decodeURIComponent(p);
  } catch {
    return p;
  }
}

function send(
  res: ServerResponse,
  status: number,
  body: unknown,
  headers: Record<string, string> = {},
): void {
  const text = JSON.stringify(body);
  res.writeHead(status, {
    'content-type': 'application/json; charset=utf-8',
    'content-length': Buffer.byteLength(text),
    'cache-control': 'no-store',
    ...headers,
  });
  res.end(text);
}

async function readJson(req: IncomingMessage): Promise<unknown> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > MAX_BODY) throw new Refusal(413, 'body_too_large', `request body exceeds ${MAX_BODY} bytes`);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') return {};
  try {
    return JSON.parse(text);
  } catch (err) {
    throw new Refusal(400, 'invalid_json', `the request body is not JSON: ${(err as Error).message}`);
  }
}

function parse<T extends z.ZodType>(schema: T, input: unknown): z.infer<T> {
  const r = schema.safeParse(input);
  if (r.success) return r.data;
  const issue = r.error.issues[0];
  const path = `$${(issue?.path ?? []).map((k) => (typeof k === 'number' ? `[${k}]` : `.${String(k)}`)).join('')}`;
  throw new Refusal(
    400,
    'invalid_body',
    `${path}: ${(issue?.message ?? 'invalid').replace(/^Invalid input: /, '')}`,
  );
}

function credentialToWire(c: {
  id: string;
  role: string;
  clientId?: string;
  name?: string;
  grants: { kinds?: string[]; observeOthers?: boolean };
  createdAt: number;
  expiresAt?: number;
  revokedAt?: number;
}): Record<string, unknown> {
  return {
    id: c.id,
    role: c.role,
    ...(c.clientId !== undefined ? { client_id: c.clientId } : {}),
    ...(c.name !== undefined ? { name: c.name } : {}),
    grants: {
      ...(c.grants.kinds !== undefined ? { kinds: c.grants.kinds } : {}),
      ...(c.grants.observeOthers !== undefined ? { observe_others: c.grants.observeOthers } : {}),
    },
    created_at: c.createdAt,
    ...(c.expiresAt !== undefined ? { expires_at: c.expiresAt } : {}),
    ...(c.revokedAt !== undefined ? { revoked_at: c.revokedAt } : {}),
  };
}

function auditToWire(r: {
  id: number;
  at: number;
  actor: string;
  role: string;
  source: string;
  action: string;
  target?: string;
  outcome: string;
  detail?: unknown;
}): Record<string, unknown> {
  return {
    id: r.id,
    at: r.at,
    actor: r.actor,
    role: r.role,
    source: r.source,
    action: r.action,
    ...(r.target !== undefined ? { target: r.target } : {}),
    outcome: r.outcome,
    ...(r.detail !== undefined ? { detail: r.detail } : {}),
  };
}
