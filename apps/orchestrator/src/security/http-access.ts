/**
 * Who may send what over HTTP: the gate the HTTP server (http/http-api.ts) passes every request through. It screens
 * Host and Origin before anything else (a browser's request goes no further), identifies the caller as the matched
 * route's declared access requires (a key in the `Authorization` header, never in the URL; none for public and
 * pairing routes), checks the body's type, and decides the route's access — a lookup on the route's declaration
 * (route-access.ts) with the request the server parsed once, the same parsed request its handler then gets. Task
 * and Minecraft changes are audited under the caller once they succeed.
 */
import type { IncomingMessage } from 'node:http';
import type { Task } from '@ccagent/engine';
import type { RouteGate } from '../http/http-api.js';
import { HttpError } from '../http/http-kit.js';
import type { Route, RouteRequest } from '../http/route.js';
import { requestSource } from './request-principal.js';
import {
  checkContentType,
  checkHost,
  checkOrigin,
  type GuardPolicy,
  type GuardVerdict,
} from './request-guard.js';
import {
  decideAccess,
  needsCredential,
  refusalMessage,
  type AccessTarget,
  type PeerTest,
} from './route-access.js';
import type { Principal, SecurityService } from '@ccagent/security';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** Refusals of the gate are never cached. */
const NO_STORE = { 'cache-control': 'no-store' };

/** Dependencies of {@link HttpAccess}. */
export interface HttpAccessOptions {
  policy: GuardPolicy;
  security: SecurityService;
  getTask(id: string): Promise<Task | undefined>;
  /** A computer caller's group (`server.groups`): the tasks of its computers are as its own. */
  peerOf?: (who: Principal) => PeerTest | undefined;
  logger: { warn(obj: unknown, msg?: string): void };
}

/** The HTTP gate (see the module comment). */
export class HttpAccess implements RouteGate {
  constructor(private readonly o: HttpAccessOptions) {}

  screen(req: IncomingMessage): void {
    const method = (req.method ?? 'GET').toUpperCase();
    this.refuseUnless(req, checkHost(req.headers, this.o.policy));
    if (!SAFE_METHODS.has(method)) this.refuseUnless(req, checkOrigin(req.headers, this.o.policy));
    // The installer embeds the URL it was fetched with: say https when this server terminates TLS itself.
    if ((req.socket as { encrypted?: boolean }).encrypted) req.headers['x-forwarded-proto'] = 'https';
  }

  identify(route: Route, req: IncomingMessage): Principal | undefined {
    const method = (req.method ?? 'GET').toUpperCase();
    if (route.access === 'public') return undefined;
    if (!needsCredential(route.access)) {
      // Pairing: the enrollment code (or the pairing request's secret) in the body is the credential (the route
      // checks it, rate-limited per source); a pairing request only waits for an operator.
      this.refuseUnless(req, checkContentType(method, req.headers));
      return undefined;
    }
    const auth = this.o.security.authenticateBearer(req.headers.authorization, requestSource(req));
    if (!auth.ok) {
      if (auth.code === 'rate_limited') {
        throw new HttpError(429, 'rate_limited', auth.message, undefined, {
          ...NO_STORE,
          'retry-after': String(Math.ceil((auth.retryAfterMs ?? 1000) / 1000)),
        });
      }
      throw new HttpError(401, 'unauthorized', auth.message, undefined, NO_STORE);
    }
    this.refuseUnless(req, checkContentType(method, req.headers));
    return auth.principal;
  }

  async permit(route: Route, r: RouteRequest<unknown>): Promise<void> {
    const who = r.caller;
    if (who === undefined) return; // public and pairing routes
    const target: AccessTarget = {};
    if ((route.access === 'task_read' || route.access === 'task_act') && who.role === 'computer') {
      target.task = await this.o.getTask(r.params['id'] ?? '');
    }
    if (route.access === 'task_list') target.listsClient = (r.query as { client?: string }).client;
    if (who.role === 'computer') target.peer = this.o.peerOf?.(who);
    const decision = decideAccess(route.access, who, target);
    if (!decision.ok) {
      const reason = (who.role !== 'operator' ? route.refusal?.[who.role] : undefined) ?? decision.reason;
      throw new HttpError(
        403,
        'forbidden',
        refusalMessage(who, `${reason}: ${route.method} ${r.path}`),
        undefined,
        NO_STORE,
      );
    }
    if (route.audit !== undefined) this.auditAfter(route, r, who);
  }

  private refuseUnless(req: IncomingMessage, verdict: GuardVerdict): void {
    if (verdict.ok) return;
    this.o.logger.warn(
      { source: requestSource(req), origin: req.headers.origin, host: req.headers.host, code: verdict.code },
      'request refused',
    );
    throw new HttpError(verdict.status, verdict.code, verdict.message, undefined, NO_STORE);
  }

  /** Audit a state-changing request once it has been answered with success: the path's id, or the created task. */
  private auditAfter(route: Route, r: RouteRequest<unknown>, who: Principal): void {
    const action = route.audit as string;
    const { res } = r;
    const fromPath = r.params['id'] ?? r.params['name'];
    let body = '';
    if (fromPath === undefined) {
      const end = res.end.bind(res) as (...a: unknown[]) => typeof res;
      (res as { end: (...a: unknown[]) => typeof res }).end = (...args: unknown[]) => {
        const chunk = args[0];
        if (typeof chunk === 'string') body = chunk;
        else if (Buffer.isBuffer(chunk)) body = chunk.toString('utf8');
        return end(...args);
      };
    }
    res.once('finish', () => {
      if (res.statusCode >= 300) return;
      let target = fromPath;
      if (target === undefined) {
        try {
          // The created task, or what the seed's channels answer with: a task id, else the instance.
          const b = JSON.parse(body) as {
            task?: { id?: string };
            task_id?: string;
            instance_id?: string;
            active_instance?: string;
          };
          target = b.task?.id ?? b.task_id ?? b.instance_id ?? b.active_instance;
        } catch {
          target = undefined;
        }
      }
      void this.o.security.audit(who, action, target, 'ok', { via: 'http', status: res.statusCode });
    });
  }
}
