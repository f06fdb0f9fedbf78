import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';

/** Version reported on /health. */
export const ORCHESTRATOR_VERSION = '0.1.0';

/** Options for {@link startServer}. */
export interface ServerOptions {
  host: string;
  port: number;
  dbPath: string;
}

/** A running orchestrator; `close()` stops accepting and resolves when every socket is closed. */
export interface RunningServer {
  url: string;
  close(): Promise<void>;
}

/** Starts the HTTP server (this shell answers `/health` only; the orchestrator issue composes the rest). */
export async function startServer(opts: ServerOptions): Promise<RunningServer> {
  const startedAt = Date.now();
  const server: Server = createServer((req, res) => {
    if (req.method === 'GET' && req.url === '/health') {
      res.writeHead(200, { 'content-type': 'application/json' });
      res.end(
        JSON.stringify({
          ok: true,
          version: ORCHESTRATOR_VERSION,
          uptime_s: (Date.now() - startedAt) / 1000,
          db: { path: opts.dbPath },
        }),
      );
      return;
    }
    res.writeHead(404, { 'content-type': 'application/json' });
    res.end(JSON.stringify({ error: { code: 'not_found', message: `no route ${req.method} ${req.url}` } }));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(opts.port, opts.host, () => resolve());
  });
  const addr = server.address() as AddressInfo;
  return {
    url: `http://${addr.family === 'IPv6' ? `[${addr.address}]` : addr.address}:${addr.port}`,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections();
      }),
  };
}
