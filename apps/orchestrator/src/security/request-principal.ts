/**
 * Where an HTTP request came from, as the audit log and the failure limiter name it. (Who made it travels with the
 * parsed request itself: `RouteRequest.caller`, set by the server from the gate's identification.)
 */
import type { IncomingMessage } from 'node:http';

/** Where a request came from, as the audit log and the failure limiter name it. */
export function requestSource(req: IncomingMessage): string {
  return `http ${req.socket.remoteAddress ?? 'unknown'}`;
}
