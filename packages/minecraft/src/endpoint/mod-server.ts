/**
 * Who may open the mod endpoint: the check every WebSocket upgrade passes before the handshake, its default (no
 * browser pages, no foreign host names), the HTTP answer of a refusal, and the endpoint's HTTP server that applies
 * them before handing an upgrade to `ws`.
 */
import { createServer, type IncomingMessage, type RequestListener, type Server } from 'node:http';
import { createServer as createTlsServer } from 'node:https';
import { isIP, type Socket } from 'node:net';
import type { Logger } from '@ccagent/engine';
import { WebSocketServer, type WebSocket } from 'ws';
import { MAX_FRAME_BYTES } from '../protocol/constants.js';

/**
 * Whether an upgrade may become a mod connection. `instanceId`: the only instance this connection may register as
 * (a key bound to one instance). A refusal is answered with `status` and `{error: {code, message}}`, and the
 * connection changes nothing.
 */
export type McUpgradeVerdict =
  { ok: true; instanceId?: string } | { ok: false; status: number; code: string; message: string };

/** A certificate and its key (PEM text) for `wss://`. */
export interface McTls {
  cert: string | Buffer;
  key: string | Buffer;
}

/** Decides an upgrade request from its headers and socket. */
export type McUpgradeCheck = (req: IncomingMessage) => McUpgradeVerdict;

/**
 * The default {@link McUpgradeCheck}: mods are not web pages. Refuses an upgrade that carries `Origin` (every browser
 * sends it on a WebSocket upgrade; mods, the bridge and Java's WebSocket clients do not) or `Sec-Fetch-Site`, and a
 * `Host` that is not an IP literal or `localhost` (a DNS-rebinding page reaches the port under its own name).
 */
export function refuseBrowserUpgrades(req: IncomingMessage): McUpgradeVerdict {
  const h = req.headers;
  if (h.origin !== undefined || h['sec-fetch-site'] !== undefined) {
    return {
      ok: false,
      status: 403,
      code: 'forbidden_origin',
      message: `a web page (origin ${h.origin ?? 'unknown'}) may not connect to the mod endpoint`,
    };
  }
  const host = h.host?.trim().toLowerCase();
  if (host !== undefined) {
    const name = host.startsWith('[') ? host.slice(1, host.indexOf(']')) : host.replace(/:\d*$/, '');
    if (isIP(name) === 0 && name !== 'localhost' && !name.endsWith('.localhost')) {
      return {
        ok: false,
        status: 421,
        code: 'forbidden_host',
        message: 'the Host header is not one of this endpoint’s names',
      };
    }
  }
  return { ok: true };
}

/**
 * Headers on every HTTP answer of the endpoint (it serves no page): no sniffing, no embedding by another site, no
 * framing, no caching.
 */
export const MOD_RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'same-origin',
  'content-security-policy': "frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'cache-control': 'no-store',
};

const STATUS_TEXT: Record<number, string> = {
  400: 'Bad Request',
  401: 'Unauthorized',
  403: 'Forbidden',
  421: 'Misdirected Request',
  429: 'Too Many Requests',
};

/** The raw HTTP response that refuses an upgrade: `status` and `{error: {code, message}}`, connection closed. */
export function upgradeRefusal(v: { status: number; code: string; message: string }): string {
  const text = JSON.stringify({ error: { code: v.code, message: v.message } });
  return (
    `HTTP/1.1 ${v.status} ${STATUS_TEXT[v.status] ?? 'Error'}\r\nConnection: close\r\n` +
    Object.entries(MOD_RESPONSE_HEADERS)
      .map(([name, value]) => `${name}: ${value}\r\n`)
      .join('') +
    `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`
  );
}

/**
 * The mod endpoint's HTTP server (not listening yet): every upgrade passes `authorize` first (a refusal is logged and
 * answered, nothing else happens), then becomes a WebSocket handed to `onConnection` with the instance id it is bound
 * to; a plain HTTP request gets 426.
 */
export function createModServer(o: {
  authorize: McUpgradeCheck;
  /** Serve TLS (`wss://`) with this certificate. */
  tls?: McTls;
  logger: Logger;
  onConnection: (ws: WebSocket, bound: string | undefined) => void;
}): { server: Server; wss: WebSocketServer } {
  const wss = new WebSocketServer({ noServer: true, maxPayload: MAX_FRAME_BYTES * 2 });
  const onRequest: RequestListener = (_req, res) => {
    const body = JSON.stringify({
      error: {
        code: 'upgrade_required',
        message: 'this is the Minecraft mod endpoint: connect with a WebSocket',
      },
    });
    res.writeHead(426, { ...MOD_RESPONSE_HEADERS, 'content-type': 'application/json', connection: 'close' });
    res.end(body);
  };
  const server: Server =
    o.tls !== undefined
      ? createTlsServer({ cert: o.tls.cert, key: o.tls.key }, onRequest)
      : createServer(onRequest);
  server.on('upgrade', (req: IncomingMessage, socket: Socket, head: Buffer) => {
    socket.on('error', () => socket.destroy());
    let v: McUpgradeVerdict;
    try {
      v = o.authorize(req);
    } catch (e) {
      o.logger.error({ err: (e as Error).message }, 'mod upgrade check failed');
      v = { ok: false, status: 500, code: 'internal', message: 'internal error' };
    }
    if (!v.ok) {
      o.logger.warn(
        {
          source: req.socket.remoteAddress,
          origin: req.headers.origin,
          host: req.headers.host,
          code: v.code,
        },
        'mod connection refused',
      );
      socket.end(upgradeRefusal(v));
      return;
    }
    const bound = v.instanceId;
    wss.handleUpgrade(req, socket, head, (ws) => o.onConnection(ws, bound));
  });
  server.on('clientError', (_e, socket) => {
    if (socket.writable) socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\n\r\n');
  });
  return { server, wss };
}
