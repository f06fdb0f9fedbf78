/**
 * WebSocket close codes the orchestrator uses. 1000–1011 are RFC 6455's; 4000–4999 are ours (the range the RFC
 * leaves to applications). Every close also carries a human-readable reason (≤ 123 bytes).
 */
export const CLOSE_CODES = {
  /** The server is shutting down (SIGINT/SIGTERM); reconnect later. */
  goingAway: 1001,
  /** A frame above the hard size cap (the `ws` library closes the socket itself). */
  tooBig: 1009,
  /** The server cannot serve this client right now (its database is locked or full); reconnect later. */
  tryAgainLater: 1013,
  /** `hello` had a missing or wrong token, or another message came before `hello`. */
  unauthorized: 4001,
  /** `hello` asked for a protocol version the server does not speak. */
  protocolVersion: 4002,
  /** Another connection identified itself with the same `client_id` and replaced this one. */
  replaced: 4003,
  /** No valid `hello` arrived within `server.helloTimeoutMs`. */
  helloTimeout: 4004,
  /** The first frame was not a valid `hello`. */
  invalidHello: 4005,
  /** The client kept sending far beyond its rate limit. */
  rateLimited: 4008,
  /** The client did not read its messages fast enough; its send buffer overflowed. */
  slowConsumer: 4009,
} as const;

/** Name of one close code. */
export type CloseCodeName = keyof typeof CLOSE_CODES;

/** A close reason cut to the 123 bytes a close frame allows. */
export function closeReason(text: string): string {
  const buf = Buffer.from(text, 'utf8');
  if (buf.length <= 123) return text;
  let cut = buf.subarray(0, 120).toString('utf8');
  // Drop a trailing replacement char from a split multi-byte sequence.
  cut = cut.replace(/\uFFFD$/, '');
  return `${cut}...`;
}
