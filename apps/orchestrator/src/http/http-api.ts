/**
 * The HTTP server's request listener (node:http; the route table is small enough that a router library would add
 * more than it saves): health, tasks, clients, tools, metrics, keys, the dashboard and the Lua client bundle. For
 * each request, in this order: the gate screens Host and Origin; the path is matched against the table
 * (routes/index.ts; 404, 405); the gate identifies the caller as the route's declared access requires (401, 429,
 * 415); the path and query are parsed once, into the route's typed parameters (400); the gate decides the route's
 * access on that parsed request (403); the handler runs on the same parsed request. Failures become answers: JSON
 * bodies are snake_case, errors `{"error": {"code", "message", "path"?}}`, and a refused request changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { storageFailureOf } from '@ccagent/store';
import type { Principal } from '@ccagent/security';
import { HttpError, parseQuery, pathParams, requestUrl, sendJson, setBodyLimits } from './http-kit.js';
import type { HttpApiOptions, Route, RouteRequest } from './route.js';
import { ROUTES } from './routes/index.js';

export type { HttpApiOptions, TaskPageSource } from './route.js';

/**
 * Who may send what (security/http-access.ts implements it): a port of the listener, so the order of the checks
 * lives here and their rules there. Each method refuses by throwing an `HttpError`.
 */
export interface RouteGate {
  /** Before the request is matched: Host, Origin. */
  screen(req: IncomingMessage): void;
  /** The caller, as `route.access` requires it (undefined where no credential is read), and the body's type. */
  identify(route: Route, req: IncomingMessage): Principal | undefined;
  /** Whether the caller may make this parsed request (a lookup on `route.access`); arranges the route's audit. */
  permit(route: Route, r: RouteRequest<unknown>): Promise<void>;
}

/** The HTTP request handler. */
export class HttpApi {
  constructor(
    private readonly gate: RouteGate,
    private readonly o: HttpApiOptions,
    private readonly routes: readonly Route[] = ROUTES,
  ) {}

  /** Node `request` listener. Never throws; unexpected failures become 500. */
  handle = (req: IncomingMessage, res: ServerResponse): void => {
    void this.dispatch(req, res);
  };

  private async dispatch(req: IncomingMessage, res: ServerResponse): Promise<void> {
    let routeName = 'unmatched';
    if (this.o.inputLimits) setBodyLimits(req, this.o.inputLimits);
    try {
      this.gate.screen(req);
      const url = requestUrl(req.url);
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      const [route, match] = this.match(method, url.pathname, req.method);
      routeName = route.name;
      const caller = this.gate.identify(route, req);
      const r: RouteRequest<unknown> = {
        req,
        res,
        path: url.pathname,
        params: pathParams(match),
        query: route.query !== undefined ? parseQuery(route.query, url.searchParams) : {},
        caller,
        routes: this.routes,
      };
      await this.gate.permit(route, r);
      await route.handler(this.o, r);
    } catch (err) {
      if (err instanceof HttpError) {
        const extra: Record<string, string> = {
          ...(err.status === 401 ? { 'www-authenticate': 'Bearer' } : {}),
          ...err.headers,
        };
        if (res.headersSent) res.destroy();
        else
          sendJson(
            res,
            err.status,
            { error: { code: err.code, message: err.message, ...(err.path ? { path: err.path } : {}) } },
            extra,
          );
      } else {
        const storage = storageFailureOf(err);
        this.o.logger.error({ err, route: routeName }, 'http handler failed');
        if (res.headersSent) res.destroy();
        else if (storage) {
          // The database cannot be used right now: say why, and that it is worth retrying.
          sendJson(
            res,
            503,
            { error: { code: 'unavailable', message: storage.message } },
            { 'retry-after': '5' },
          );
        } else sendJson(res, 500, { error: { code: 'internal', message: 'internal server error' } });
      }
    } finally {
      this.o.metrics.http(routeName, res.statusCode);
    }
  }

  /** The route of `method` on `path` with its match (404 when no route has the path, 405 when none has the method). */
  private match(method: string, path: string, asSent: string | undefined): [Route, RegExpExecArray] {
    let pathMatched = false;
    for (const r of this.routes) {
      const m = r.pattern.exec(path);
      if (!m) continue;
      pathMatched = true;
      if (r.method === method) return [r, m];
    }
    if (pathMatched) throw new HttpError(405, 'method_not_allowed', `${asSent} is not allowed on ${path}`);
    throw new HttpError(404, 'not_found', `no route ${asSent} ${path}`);
  }
}
