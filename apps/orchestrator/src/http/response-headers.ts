/**
 * The headers every HTTP answer of the orchestrator carries, whatever route (or refusal, or 404) wrote it: no MIME
 * sniffing, no embedding by another site (`Cross-Origin-Resource-Policy`: a page elsewhere cannot load `/metrics` or
 * an API answer as a script, image or style and learn that ccagent runs), no framing, and `Cache-Control: no-store`
 * unless the route chose its own caching (the dashboard's hashed assets). They are set before the request reaches
 * the front (http-access.ts), so a route's own headers, given to `writeHead`, win over these defaults.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';

/** Headers on every answer (a route may replace the CSP with a stricter one, as the dashboard does). */
export const RESPONSE_HEADERS: Readonly<Record<string, string>> = {
  'x-content-type-options': 'nosniff',
  'cross-origin-resource-policy': 'same-origin',
  'content-security-policy': "frame-ancestors 'none'",
  'x-frame-options': 'DENY',
  'referrer-policy': 'no-referrer',
  'cache-control': 'no-store',
};

/** A request listener that answers with {@link RESPONSE_HEADERS} set, then hands the request to `next`. */
export function withResponseHeaders(
  next: (req: IncomingMessage, res: ServerResponse) => void,
): (req: IncomingMessage, res: ServerResponse) => void {
  return (req, res) => {
    for (const [name, value] of Object.entries(RESPONSE_HEADERS)) res.setHeader(name, value);
    next(req, res);
  };
}

/** The same headers as lines of a raw HTTP answer (an upgrade refused on the socket, before `ws` takes it). */
export function rawResponseHeaderLines(): string {
  return Object.entries(RESPONSE_HEADERS)
    .map(([name, value]) => `${name}: ${value}\r\n`)
    .join('');
}
