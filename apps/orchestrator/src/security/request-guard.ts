/**
 * Browser-facing checks run before any route or WebSocket handler: the `Host` allow-list (DNS rebinding), the
 * `Origin` check (cross-site requests and cross-site WebSocket hijacking) and `Content-Type: application/json` on
 * every state-changing request (a form post or a `text/plain` fetch is a "simple" request that browsers send from
 * any page without a preflight). Pure functions of the request headers, so the dashboard's routes (`/`,
 * `/api/events`) and any future route get the same rules by going through {@link guardHttp}.
 */
import type { IncomingHttpHeaders } from 'node:http';
import { isIP } from 'node:net';

/** What the guard allows. */
export interface GuardPolicy {
  /**
   * Host names (lower case, no port) accepted in the `Host` header besides IP literals and `localhost`. `*` accepts
   * any name (only behind a proxy that checks it).
   */
  allowedHosts: readonly string[];
  /**
   * Origins (`scheme://host[:port]`) allowed to make state-changing requests and open WebSockets besides the
   * server's own. `*` is not accepted: list them.
   */
  allowedOrigins: readonly string[];
  /** The scheme the server is reached with (`https` with TLS or behind a proxy that says so). */
  scheme: 'http' | 'https';
}

/** Outcome of a check; a refusal says what to send. */
export type GuardVerdict =
  | { ok: true }
  | {
      ok: false;
      status: 403 | 415 | 421;
      code: 'forbidden_host' | 'forbidden_origin' | 'unsupported_media_type';
      message: string;
    };

const OK: GuardVerdict = { ok: true };

/** Methods that never change state (the API has no state-changing GET). */
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/** The host name of a `Host` header value (`[::1]:7420` → `::1`, `Example.com:80` → `example.com`). */
export function hostName(host: string): string | undefined {
  const h = host.trim().toLowerCase();
  if (h === '') return undefined;
  if (h.startsWith('[')) {
    const end = h.indexOf(']');
    return end > 0 ? h.slice(1, end) : undefined;
  }
  const colon = h.lastIndexOf(':');
  return colon >= 0 ? h.slice(0, colon) : h;
}

/**
 * The `Host` header names this server (an IP literal, `localhost`, or a configured name). A DNS-rebinding page
 * reaches the server under its own domain name, which is not on the list. A request without `Host` (HTTP/1.0
 * tools) is not from a browser and passes.
 */
export function checkHost(headers: IncomingHttpHeaders, policy: GuardPolicy): GuardVerdict {
  const raw = headers.host;
  if (raw === undefined) return OK;
  const name = hostName(raw);
  if (name !== undefined) {
    if (isIP(name) !== 0 || name === 'localhost' || name.endsWith('.localhost')) return OK;
    if (policy.allowedHosts.includes('*') || policy.allowedHosts.includes(name)) return OK;
  }
  return {
    ok: false,
    status: 421,
    code: 'forbidden_host',
    // The value is not echoed: it is the attacker's text.
    message: `the Host header is not one of this server's names; add the name to server.security.allowedHosts if it is yours`,
  };
}

/** The server's own origin as the browser sees it: the scheme it was reached with and the `Host` header. */
export function ownOrigin(headers: IncomingHttpHeaders, policy: GuardPolicy): string | undefined {
  const host = headers.host;
  if (host === undefined) return undefined;
  return normalizeOrigin(`${policy.scheme}://${host}`);
}

/** `scheme://host[:port]` in canonical form (default ports dropped, lower case), or undefined. */
export function normalizeOrigin(origin: string): string | undefined {
  try {
    const u = new URL(origin);
    if (u.protocol !== 'http:' && u.protocol !== 'https:') return undefined;
    return u.origin.toLowerCase();
  } catch {
    return undefined;
  }
}

/**
 * A browser's `Origin` is the server's own or on the allow-list. No `Origin` passes: CC:Tweaked's `http.websocket`
 * and `http.post`, the CLI and curl send none, and browsers always send it on cross-site posts and WebSocket
 * upgrades. `Origin: null` (sandboxed frames, `file:` pages) is refused.
 */
export function checkOrigin(headers: IncomingHttpHeaders, policy: GuardPolicy): GuardVerdict {
  const origin = headers.origin;
  if (origin === undefined) {
    // Browsers that omit Origin still say where a request came from.
    if (headers['sec-fetch-site'] === 'cross-site')
      return refusedOrigin('(none; Sec-Fetch-Site: cross-site)');
    return OK;
  }
  const o = normalizeOrigin(origin);
  if (o !== undefined) {
    if (o === ownOrigin(headers, policy)) return OK;
    // Behind a TLS-terminating proxy the browser's origin is https:// while this server speaks http://. A page
    // cannot add X-Forwarded-Proto to a cross-site request without a preflight, so trusting it here is safe.
    const forwarded = headers['x-forwarded-proto'];
    if (
      (forwarded === 'https' || forwarded === 'http') &&
      o === ownOrigin(headers, { ...policy, scheme: forwarded })
    )
      return OK;
    if (policy.allowedOrigins.some((a) => normalizeOrigin(a) === o)) return OK;
  }
  return refusedOrigin(origin);
}

function refusedOrigin(origin: string): GuardVerdict {
  return {
    ok: false,
    status: 403,
    code: 'forbidden_origin',
    message: `requests from origin ${origin} are not allowed; add it to server.security.allowedOrigins if it is yours`,
  };
}

/** A state-changing request carries `Content-Type: application/json` (forms and `text/plain` are refused). */
export function checkContentType(method: string, headers: IncomingHttpHeaders): GuardVerdict {
  if (SAFE_METHODS.has(method.toUpperCase())) return OK;
  const type = (headers['content-type'] ?? '').split(';')[0]?.trim().toLowerCase();
  if (type === 'application/json') return OK;
  return {
    ok: false,
    status: 415,
    code: 'unsupported_media_type',
    message: `${method} needs "Content-Type: application/json"${type ? ` (got ${type})` : ''}`,
  };
}

/** Every check of an HTTP request, in order: Host, then Origin and Content-Type for state-changing methods. */
export function guardHttp(method: string, headers: IncomingHttpHeaders, policy: GuardPolicy): GuardVerdict {
  const host = checkHost(headers, policy);
  if (!host.ok) return host;
  // A cross-origin page cannot read a GET's answer (no CORS headers are ever sent) and GETs change nothing.
  if (SAFE_METHODS.has(method.toUpperCase())) return OK;
  const origin = checkOrigin(headers, policy);
  if (!origin.ok) return origin;
  return checkContentType(method, headers);
}

/** The checks of a WebSocket upgrade: Host and Origin (browsers do not apply CORS to WebSockets). */
export function guardUpgrade(headers: IncomingHttpHeaders, policy: GuardPolicy): GuardVerdict {
  const host = checkHost(headers, policy);
  if (!host.ok) return host;
  return checkOrigin(headers, policy);
}

/**
 * The Origin rule of an endpoint that serves no page (the Minecraft mod endpoint): no origin is its own, so a browser
 * `Origin` passes only when it is on the allow-list, and a request without one passes unless `Sec-Fetch-Site` says a
 * page sent it. Accepting an `Origin` equal to the endpoint's own host would let a page served from that host and port
 * (there is none today, but any future one) or a rebinding name on the allow-list open the endpoint.
 */
export function checkPagelessOrigin(headers: IncomingHttpHeaders, policy: GuardPolicy): GuardVerdict {
  const origin = headers.origin;
  if (origin === undefined) {
    const site = headers['sec-fetch-site'];
    if (site !== undefined && site !== 'none') return refusedOrigin(`(none; Sec-Fetch-Site: ${site})`);
    return OK;
  }
  const o = normalizeOrigin(origin);
  if (o !== undefined && policy.allowedOrigins.some((a) => normalizeOrigin(a) === o)) return OK;
  return refusedOrigin(origin);
}

/** The checks of an upgrade to an endpoint that serves no page: Host, then {@link checkPagelessOrigin}. */
export function guardPagelessUpgrade(headers: IncomingHttpHeaders, policy: GuardPolicy): GuardVerdict {
  const host = checkHost(headers, policy);
  if (!host.ok) return host;
  return checkPagelessOrigin(headers, policy);
}
