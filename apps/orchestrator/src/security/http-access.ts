/**
 * The front of the HTTP server: every request passes {@link guardHttp} (Host, Origin, Content-Type), then is
 * authenticated and checked against its role before the API handles it (the caller's principal travels with the
 * request to the security routes in http/routes/security.ts, which audit under it). The dashboard's routes get the same treatment by being served behind it: pages and assets are public,
 * everything under `/api/` needs a key in the `Authorization` header (never in the URL).
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { mayAccessTask, type Task } from '@ccagent/engine';
import { requestSource, setRequestPrincipal } from './request-principal.js';
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
    const source = requestSource(req);
    if (
      method === 'POST' &&
      (path === '/api/pair' || path === '/api/pair/request' || path === '/api/pair/collect')
    ) {
      // Open: the enrollment code (or the pairing request's secret) in the body is the credential (the route checks
      // it, rate-limited per source); a pairing request only waits for an operator.
      this.refuseUnless(req, checkContentType(method, req.headers));
      return this.o.next(req, res);
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
    // Every route may ask who called (the key routes audit the actor; GET /api/dashboard tells the page its role).
    setRequestPrincipal(req, who);
    this.refuseUnless(req, checkContentType(method, req.headers));
    if (path.startsWith('/api/credentials') || path === '/api/audit') {
      if (who.role !== 'operator')
        throw forbidden(who, 'only an operator manages keys and reads the audit log');
      return this.o.next(req, res);
    }
    await this.permit(who, method, path, url);
    this.auditAfter(req, res, method, path, who);
    this.o.next(req, res);
  }

  private refuseUnless(req: IncomingMessage, verdict: GuardVerdict): void {
    if (verdict.ok) return;
    this.o.logger.warn(
      { source: requestSource(req), origin: req.headers.origin, host: req.headers.host, code: verdict.code },
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
      // The engine's access rule; a computer key never reaches across clients here (crossClientAccess is WS-only).
      if (mayAccessTask(t, me, action === 'read' ? 'read' : 'act', { observeOthers: observe })) return;
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
    const m =
      /^\/api\/tasks(?:\/([^/]+)\/(cancel|answer))?$/.exec(path) ??
      /^\/api\/minecraft\/(?:tasks|instances\/([^/]+)\/stop|tasks\/([^/]+)\/retry)$/.exec(path);
    if (!m) return;
    const minecraft = path.startsWith('/api/minecraft/');
    const action = minecraft
      ? path.endsWith('/stop')
        ? 'minecraft.stop'
        : path.endsWith('/retry')
          ? 'minecraft.retry'
          : 'minecraft.create'
      : m[2] === undefined
        ? 'task.create'
        : `task.${m[2]}`;
    // The acted-on id from the path: the task, or the Minecraft instance a stop is for.
    const fromPath = minecraft ? (m[1] ?? m[2]) : m[1];
    let body = '';
    if (action === 'task.create' || action === 'minecraft.create') {
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
      let target = fromPath !== undefined ? safeDecode(fromPath) : undefined;
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
