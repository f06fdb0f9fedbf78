/**
 * Orchestrators sharing one PostgreSQL database: exactly one is active (it holds the leader lease), the others are
 * standbys. A standby listens on its address like the active one but serves nothing: `/health` says it is a standby
 * and which orchestrator is active, every other request gets 503 naming the active one's URL, and a WebSocket
 * upgrade is refused with 503, so a Lua client with several server URLs moves on to the next one. When the lease
 * comes free the standby closes this server and starts the real one on the same address.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Logger } from '@ccagent/engine';
import type { LeaseHolder } from '@ccagent/store-postgres';
import { withResponseHeaders } from './http/response-headers.js';
import { OrchestratorError } from './orchestrator-error.js';
import { ORCHESTRATOR_VERSION } from './version.js';

/** Options of {@link startStandby}. */
export interface StandbyOptions {
  host: string;
  port: number;
  /** Who this process is (as written into the lease when it leads). */
  holder: string;
  /** The database, password hidden. */
  dbLabel: string;
  logger: Logger;
  now: () => number;
}

/** A running standby server. */
export interface StandbyServer {
  url: string;
  port: number;
  /** What the last poll of the lease found (shown in `/health` and in refusals). */
  setActive(holder: LeaseHolder | undefined): void;
  /** Stop listening and drop every connection (before the active server takes the address). */
  close(): Promise<void>;
}

/** Listen as a standby; rejects with `OrchestratorError('listen_failed')` when the address is taken. */
export async function startStandby(o: StandbyOptions): Promise<StandbyServer> {
  const startedAt = o.now();
  let active: LeaseHolder | undefined;
  const activeView = () =>
    active === undefined
      ? null
      : {
          holder: active.holder,
          url: active.url,
          lease_token: active.token,
          lease_expires_in_ms: Math.round(active.expiresInMs),
        };
  const handle = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    const send = (status: number, body: unknown): void => {
      res.writeHead(status, {
        'content-type': 'application/json; charset=utf-8',
        'cache-control': 'no-store',
        'retry-after': '1',
      });
      res.end(JSON.stringify(body));
    };
    if (path === '/health' || path === '/healthz') {
      send(503, {
        ok: false,
        role: 'standby',
        version: ORCHESTRATOR_VERSION,
        uptime_s: Math.round((o.now() - startedAt) / 100) / 10,
        holder: o.holder,
        db: { path: o.dbLabel },
        active: activeView(),
      });
      return;
    }
    const where = active?.url ? ` at ${active.url}` : '';
    send(503, {
      error: {
        code: 'standby',
        message: `this orchestrator is a standby; the active one${where} serves requests (it takes over if that one stops)`,
        ...(active?.url ? { details: { active_url: active.url } } : {}),
      },
    });
  };
  const server: Server = createServer(withResponseHeaders(handle));
  server.on('upgrade', (_req, socket) => {
    // No WebSocket here: a client with several server URLs tries the next one.
    socket.end(
      'HTTP/1.1 503 Service Unavailable\r\nRetry-After: 1\r\nConnection: close\r\nContent-Length: 0\r\n\r\n',
    );
  });
  server.on('clientError', (_err, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  });
  try {
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(o.port, o.host, () => {
        server.off('error', reject);
        resolve();
      });
    });
  } catch (cause) {
    throw new OrchestratorError(
      'listen_failed',
      `cannot listen on ${o.host}:${o.port}: ${(cause as Error).message}`,
      {
        cause,
      },
    );
  }
  const addr = server.address() as AddressInfo;
  const hostText = addr.family === 'IPv6' ? `[${addr.address}]` : addr.address;
  const url = `http://${hostText}:${addr.port}`;
  o.logger.info({ url, holder: o.holder }, 'standby: waiting for the leader lease');
  return {
    url,
    port: addr.port,
    setActive: (h) => {
      active = h;
    },
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
