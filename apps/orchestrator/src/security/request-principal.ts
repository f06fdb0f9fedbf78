/**
 * Who made an HTTP request, as the front (http-access.ts) authenticated it, for the routes that record the actor
 * (enrolling, revoking, rotating and creating keys are audited under the caller's credential). Kept beside the
 * request object, never in a header a client could set.
 */
import type { IncomingMessage } from 'node:http';
import type { Principal } from './security-service.js';

const principals = new WeakMap<IncomingMessage, Principal>();

/** Record the authenticated caller of `req` (the front does this before the API sees it). */
export function setRequestPrincipal(req: IncomingMessage, who: Principal): void {
  principals.set(req, who);
}

/** The authenticated caller of `req`, if the front authenticated one. */
export function requestPrincipal(req: IncomingMessage): Principal | undefined {
  return principals.get(req);
}

/** Where a request came from, as the audit log and the failure limiter name it. */
export function requestSource(req: IncomingMessage): string {
  return `http ${req.socket.remoteAddress ?? 'unknown'}`;
}
