/**
 * The HTTP API (node:http; the route table is small enough that a router library would add more than it saves):
 * health, tasks, clients, tools, metrics and the Lua client bundle. This file matches a request against the table
 * (routes/index.ts), checks the bearer token of routes that are not open, and turns failures into answers; the
 * routes themselves live in routes/. JSON bodies are snake_case; errors are `{"error": {"code", "message",
 * "path"?}}`; a refused request changes nothing.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { storageFailureOf } from '@ccagent/store';
import { secretMatches } from '../security/keys.js';
import { HttpError, safeDecode, sendJson, setBodyLimits } from './http-kit.js';
import type { HttpApiOptions, Route } from './route.js';
import { ROUTES } from './routes/index.js';

export type { HttpApiOptions, TaskPageSource } from './route.js';

/** The HTTP request handler. */
export class HttpApi {
  constructor(
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
      const url = new URL(req.url ?? '/', 'http://localhost');
      const method = req.method === 'HEAD' ? 'GET' : (req.method ?? 'GET');
      let matchedPath = false;
      for (const r of this.routes) {
        const m = r.pattern.exec(url.pathname);
        if (!m) continue;
        matchedPath = true;
        if (r.method !== method) continue;
        routeName = r.name;
        if (!r.open && this.o.token !== undefined) this.authorize(req);
        const params = m.slice(1).map((p) => safeDecode(p));
        await r.handler(this.o, { req, res, params, url });
        return;
      }
      if (matchedPath)
        throw new HttpError(405, 'method_not_allowed', `${req.method} is not allowed on ${url.pathname}`);
      throw new HttpError(404, 'not_found', `no route ${req.method} ${url.pathname}`);
    } catch (err) {
      if (err instanceof HttpError) {
        const extra: Record<string, string> = {
          ...(err.status === 401 ? { 'www-authenticate': 'Bearer' } : {}),
          ...err.headers,
        };
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

  private authorize(req: IncomingMessage): void {
    const h = req.headers.authorization;
    const m = h !== undefined ? /^Bearer\s+(.+)$/i.exec(h) : null;
    if (!m || !secretMatches(m[1], this.o.token as string)) {
      throw new HttpError(
        401,
        'unauthorized',
        m ? 'wrong token' : 'this server requires "Authorization: Bearer <token>"',
      );
    }
  }
}
