import { TokenBucket } from './token-bucket.js';

/** Rate-limit state messages are charged to: a bucket and how many messages in a row it refused. */
export interface RateLimitState {
  readonly bucket: TokenBucket;
  /** Messages refused since the client last had one to spare (a flooder is closed when this grows too large). */
  rejectedInARow: number;
}

/** The rate-limit state of one client id, shared by its connections. */
interface ClientState extends RateLimitState {
  /** Connections using it now. */
  refs: number;
}

/** Options of {@link ClientRateLimits}. */
export interface ClientRateLimitOptions {
  messagesPerSecond: number;
  burst: number;
  /**
   * Most states kept for client ids with no connection (default 10,000); beyond it the least recently released go
   * first. States in use by a connection are never dropped, so they are bounded by the connection limit.
   */
  maxIdle?: number;
}

/** Default of {@link ClientRateLimitOptions.maxIdle}. */
export const DEFAULT_MAX_IDLE_RATE_STATES = 10_000;

/**
 * Rate limits keyed by client id, so that a client that floods, is closed and reconnects (or opens a second
 * connection that replaces the first) finds its bucket as it left it instead of a fresh one. A state no connection
 * uses is kept until its bucket is full again — from then on a fresh state would behave the same (the next message
 * is admitted and resets the refusal count) — and at most {@link ClientRateLimitOptions.maxIdle} of them are kept.
 * Time comes from the caller (ms).
 */
export class ClientRateLimits {
  private readonly states = new Map<string, ClientState>();
  /** Client ids whose state no connection uses, least recently released first. */
  private readonly idle = new Set<string>();
  private readonly maxIdle: number;

  constructor(private readonly o: ClientRateLimitOptions) {
    this.maxIdle = o.maxIdle ?? DEFAULT_MAX_IDLE_RATE_STATES;
  }

  /** Number of client ids with a kept state (in use or idle). */
  get size(): number {
    return this.states.size;
  }

  /**
   * How long (ms) `clientId` stays cut off: while its last connection's refusals in a row are over `maxRejected` (it
   * was closed for flooding) and its bucket is empty, a new connection is refused. `0` when it may connect.
   */
  cutOffFor(clientId: string, maxRejected: number, now: number): number {
    const s = this.states.get(clientId);
    if (!s || s.rejectedInARow <= maxRejected) return 0;
    return s.bucket.msUntilToken(now);
  }

  /**
   * The state of `clientId` for a connection that identified as it; pair with {@link release}. The refusal count
   * starts again (check {@link cutOffFor} first); the bucket is carried over.
   */
  acquire(clientId: string, now: number): RateLimitState {
    this.sweep(now);
    let s = this.states.get(clientId);
    if (!s) {
      s = {
        bucket: new TokenBucket(this.o.messagesPerSecond, this.o.burst, now),
        rejectedInARow: 0,
        refs: 0,
      };
      this.states.set(clientId, s);
    }
    this.idle.delete(clientId);
    s.rejectedInARow = 0;
    s.refs++;
    return s;
  }

  /** A connection of `clientId` that got `state` from {@link acquire} has closed. */
  release(clientId: string, state: RateLimitState, now: number): void {
    const s = this.states.get(clientId);
    if (s !== state || s.refs <= 0) return;
    s.refs--;
    if (s.refs === 0) this.idle.add(clientId);
    this.sweep(now);
  }

  /**
   * Drop idle states from the least recently released on while they are over the bound or their bucket is full
   * again; stops at the first one still needed, so each call costs what it drops plus one. (One released earlier may
   * refill later than one behind it; that one then waits its turn, which changes nothing but memory, bounded.)
   */
  private sweep(now: number): void {
    for (const id of this.idle) {
      const s = this.states.get(id);
      if (s && this.idle.size <= this.maxIdle && s.bucket.msUntilFull(now) > 0) return;
      this.idle.delete(id);
      this.states.delete(id);
    }
  }
}
