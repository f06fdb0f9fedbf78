import { randomUUID } from 'node:crypto';
import type { Principal } from '@ccagent/security';
import { ChunkAssembler, encodeFrames, type ServerMessage } from '@ccagent/protocol';
import WebSocket from 'ws';
import type { RateLimitState } from './client-rate-limits.js';
import { closeReason } from './close-codes.js';
import { TokenBucket } from './token-bucket.js';

/** Limits of one connection. */
export interface ConnectionLimits {
  maxMessageBytes: number;
  /** Largest message reassembled from inbound chunks (`server.inputLimits`). */
  maxReassembledBytes: number;
  maxBufferedBytes: number;
  messagesPerSecond: number;
  burst: number;
}

/** Lifecycle of one socket: waiting for `hello`, identified, or closing. */
export type ConnectionState = 'awaiting_hello' | 'ready' | 'closing';

let nextSerial = 1;

/**
 * One WebSocket connection: outbound framing (chunking above `max_message_bytes`), backpressure (a socket whose
 * unsent buffer exceeds the bound is closed as a slow consumer), the inbound chunk assembler and rate limit. Frames
 * are charged to the connection's own bucket until its client is known, then to the client's (see
 * {@link Connection.useClientLimit}). Owns nothing about tasks; the gateway decides what messages mean.
 */
export class Connection {
  /** Process-unique serial, for logs. */
  readonly serial = nextSerial++;
  /** Set by a valid `hello`. */
  clientId: string | undefined;
  /** Who the connection authenticated as in its `hello` (set with `state = 'ready'`). */
  principal: Principal | undefined;
  state: ConnectionState = 'awaiting_hello';
  /** Last time any frame arrived (ms), for the heartbeat. */
  lastRxAt: number;
  /** Inbound `chunk` reassembly for this socket. */
  readonly assembler: ChunkAssembler;
  /** When the last `rate_limited` error was sent (ms), so a flood does not get one reply per frame. */
  lastRateErrorAt = 0;
  /** Set when the connection is to be closed once its admitted messages are handled; new frames are dropped. */
  draining = false;
  /** The limit frames are charged to now: {@link ownLimit} before `hello`, then the client's. */
  private limit: RateLimitState;
  /** Per-connection limit for the frames before the client is known. */
  private readonly ownLimit: RateLimitState;
  /** Frames admitted under {@link ownLimit}, charged to the client's limit when it is known. */
  private admittedOwn = 0;
  private terminateTimer: NodeJS.Timeout | undefined;
  /** True while outgoing frames are being gathered for one write (until the end of this tick). */
  private corked = false;
  private chunkSeq = 0;
  private readonly chunkPrefix = randomUUID().slice(0, 8);

  constructor(
    readonly socket: WebSocket,
    readonly remoteAddress: string,
    /** The remote address as the per-address limits count it (IPv4-mapped IPv6 written as IPv4). */
    readonly address: string,
    private readonly limits: ConnectionLimits,
    now: number,
    private readonly onSlowConsumer: (conn: Connection) => void,
  ) {
    this.lastRxAt = now;
    this.ownLimit = {
      bucket: new TokenBucket(limits.messagesPerSecond, limits.burst, now),
      rejectedInARow: 0,
    };
    this.limit = this.ownLimit;
    this.assembler = new ChunkAssembler({ maxTransfers: 4, maxMessageBytes: limits.maxReassembledBytes });
  }

  /** True while messages can be sent. */
  get open(): boolean {
    return this.state !== 'closing' && this.socket.readyState === WebSocket.OPEN;
  }

  /** Charge one inbound frame to the rate limit; false when over it. */
  admit(now: number): boolean {
    if (!this.limit.bucket.take(now)) {
      this.limit.rejectedInARow++;
      return false;
    }
    // Refusals are forgiven only once the client has a message to spare. A frame let through by the refill of its
    // last token does not end a flood: a client sending far over its rate gets one through at each refill, and
    // counting refusals "since the last admitted frame" would never reach the cut-off unless the whole flood came
    // in one read.
    if (this.limit.bucket.spare(now) >= 1) this.limit.rejectedInARow = 0;
    if (this.limit === this.ownLimit) this.admittedOwn++;
    return true;
  }

  /** Frames refused by the rate limit since the client last had one to spare (carried with the client's limit). */
  get rejectedInARow(): number {
    return this.limit.rejectedInARow;
  }

  /** The client's shared limit, once {@link useClientLimit} was called. */
  get clientLimit(): RateLimitState | undefined {
    return this.limit === this.ownLimit ? undefined : this.limit;
  }

  /**
   * From now on charge frames to the client's limit (kept across its reconnects), and charge it for the frames this
   * connection admitted before (`hello` and whatever came with it): a reconnect must not buy a fresh burst.
   */
  useClientLimit(state: RateLimitState, now: number): void {
    if (this.limit !== this.ownLimit) return;
    state.bucket.charge(this.admittedOwn, now);
    this.limit = state;
  }

  /**
   * Send one message (as chunks when it is larger than `max_message_bytes`). Returns false when the socket is not
   * open or its unsent backlog is over the bound — in which case the connection is closed as a slow consumer.
   */
  send(msg: ServerMessage): boolean {
    if (!this.open) return false;
    // The backlog already queued decides, not the new message's size: one big (chunked) message must not look
    // like a slow reader, while a reader that drains nothing is cut off once its backlog passes the bound.
    if (this.socket.bufferedAmount > this.limits.maxBufferedBytes) {
      this.onSlowConsumer(this);
      return false;
    }
    const frames = encodeFrames(msg, `${this.chunkPrefix}-${this.chunkSeq++}`, this.limits.maxMessageBytes);
    this.cork();
    for (const f of frames) this.socket.send(f);
    return true;
  }

  /**
   * Gather every frame sent to this socket during the current tick into one write: a command round trip sends up
   * to four messages at once (`task_update`, `command_ack`, `task_update`, `command_call`), and one system call
   * per frame was a visible share of the server's time.
   */
  private cork(): void {
    if (this.corked) return;
    // `ws` keeps the net.Socket in `_socket` (no public accessor); without it frames are simply written one by one.
    const raw = (this.socket as unknown as { _socket?: { cork(): void; uncork(): void } | null })._socket;
    if (!raw) return;
    raw.cork();
    this.corked = true;
    process.nextTick(() => {
      this.corked = false;
      raw.uncork();
    });
  }

  /** Close with a code and reason; a socket that does not finish the closing handshake in 2 s is destroyed. */
  close(code: number, reason: string): void {
    if (this.state === 'closing') return;
    this.state = 'closing';
    this.assembler.clear();
    try {
      this.socket.close(code, closeReason(reason));
    } catch {
      this.socket.terminate();
      return;
    }
    this.terminateTimer = setTimeout(() => this.socket.terminate(), 2000);
    this.terminateTimer.unref();
  }

  /** Destroy the socket without a closing handshake (dead peer). */
  terminate(): void {
    this.state = 'closing';
    this.assembler.clear();
    this.socket.terminate();
  }

  /** Called when the socket has closed, to release timers. */
  disposed(): void {
    if (this.terminateTimer) clearTimeout(this.terminateTimer);
    this.assembler.clear();
  }
}
