/**
 * The WebSocket side of the orchestrator: accepts connections on `/ws`, reads frames (rate limit, flood cut-off,
 * chunk reassembly, parsing) and hands each message to its entry in the handler table (message-handlers.ts), one
 * message of a connection at a time, in order; a connection must complete the handshake (handshake.ts) first. What
 * the messages mean lives in the handlers: task requests (task-requests.ts), subscriptions and event relay
 * (subscriptions.ts, replay.ts); the heartbeat in heartbeat.ts.
 */
import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock, Logger } from '@ccagent/engine';
import { parseClientMessage, toErrorMessage, type ClientMessage } from '@ccagent/protocol';
import { storageFailureOf } from '@ccagent/store';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { ClientRegistry } from '../clients/client-registry.js';
import type { ClientPersistence } from '../client-persistence.js';
import type { OrchestratorConfig } from '../config.js';
import { rawResponseHeaderLines } from '../http/response-headers.js';
import { sourceAddress } from '@ccagent/security';
import type { Metrics } from '../metrics.js';
import type { ClientRateLimits } from './client-rate-limits.js';
import { CLOSE_CODES } from './close-codes.js';
import { Connection } from './connection.js';
import type { Handshake } from './handshake.js';
import { Heartbeat } from './heartbeat.js';
import type { MessageHandlers } from './message-handlers.js';
import { ChunkHeads, topLevelIds, type LeadingIds } from './oversized-result.js';
import type { WsReplies } from './ws-replies.js';

/** Dependencies of {@link WsGateway}. */
export interface WsGatewayOptions {
  config: OrchestratorConfig;
  /** One handler per message type (see message-handlers.ts). */
  handlers: MessageHandlers;
  handshake: Handshake;
  rateLimits: ClientRateLimits;
  /** Refusals in a row after which a connection is closed as a flooder (4008). */
  maxRejected: number;
  registry: ClientRegistry;
  clients: ClientPersistence;
  replies: WsReplies;
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
  /**
   * A `command_result` of a welcomed client refused for its size, with the ids read from its start: fail the call it
   * answers at once (task-requests.ts) instead of leaving it to its timeout. `why` says which limit.
   */
  oversizedResult?: (
    conn: Connection,
    sender: string,
    ids: { call_id: string; task_id?: string },
    why: string,
  ) => Promise<void>;
}

/** Messages queued on one connection before it is closed as a flooder. */
const MAX_QUEUED = 512;
/** Longest wait for a flooder's admitted messages to be handled before its socket is closed anyway (ms). */
const DRAIN_CLOSE_MS = 5000;
/** Frames above this are refused by the `ws` library itself (close 1009); up to it, an `error` reply is sent. */
const HARD_FRAME_CAP_FACTOR = 8;

/** Refusals in a row after which a connection (and its client's next hello) counts as a flooder. */
export function maxRejectedFor(config: OrchestratorConfig): number {
  return 4 * config.server.rateLimit.burst;
}

/** See the module comment. */
export class WsGateway {
  private readonly wss: WebSocketServer;
  private readonly conns = new Set<Connection>();
  private readonly queues = new WeakMap<Connection, { tail: Promise<void>; size: number }>();
  /** Open sockets per remote address, and how many of them have not completed the handshake yet. */
  private readonly perAddress = new Map<string, { open: number; unauthenticated: number }>();
  /** Bytes each connection sent while awaiting its `hello`; absent once the handshake is done. */
  private readonly preAuthBytes = new WeakMap<Connection, number>();
  /** The start of each chunked transfer in flight, per connection: the ids of one refused for its size. */
  private readonly chunkHeads = new WeakMap<Connection, ChunkHeads>();
  private readonly heartbeat: Heartbeat;
  private accepting = true;
  private readonly maxBytes: number;

  constructor(private readonly o: WsGatewayOptions) {
    this.maxBytes = o.config.server.maxMessageBytes;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: Math.max(this.maxBytes * HARD_FRAME_CAP_FACTOR, 1024 * 1024),
      perMessageDeflate: false,
    });
    this.heartbeat = new Heartbeat({
      heartbeatMs: o.config.server.heartbeatMs,
      connections: () => this.conns,
      clock: o.clock,
      logger: o.logger,
    });
  }

  /** Number of open sockets (welcomed or not). */
  get connectionCount(): number {
    return this.conns.size;
  }

  /** Handle an HTTP upgrade request (from the HTTP server's `upgrade` event). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/ws') {
      socket.end(
        `HTTP/1.1 404 Not Found\r\nConnection: close\r\n${rawResponseHeaderLines()}Content-Length: 0\r\n\r\n`,
      );
      return;
    }
    if (!this.accepting) {
      socket.end(
        `HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n${rawResponseHeaderLines()}Content-Length: 0\r\n\r\n`,
      );
      return;
    }
    if (this.conns.size >= this.o.config.server.maxConnections) {
      this.o.logger.warn({ connections: this.conns.size }, 'connection refused: at maxConnections');
      socket.end(
        `HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n${rawResponseHeaderLines()}Content-Length: 0\r\n\r\n`,
      );
      return;
    }
    const refusal = this.addressRefusal(addressOf(req));
    if (refusal !== undefined) {
      this.o.logger.warn({ source: req.socket.remoteAddress }, `connection refused: ${refusal}`);
      const text = JSON.stringify({ error: { code: 'too_many_connections', message: refusal } });
      socket.end(
        `HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\n${rawResponseHeaderLines()}Retry-After: 5\r\n` +
          `Content-Type: application/json\r\nContent-Length: ${Buffer.byteLength(text)}\r\n\r\n${text}`,
      );
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, req));
  }

  /**
   * Why a new socket from `address` is refused, if it is: the address has `maxConnectionsPerAddress` sockets open, or
   * `maxUnauthenticatedPerAddress` that have not said a valid `hello` yet (each may hold up to `maxHelloBytes`).
   */
  private addressRefusal(address: string): string | undefined {
    const s = this.o.config.server;
    const n = this.perAddress.get(address);
    if (n === undefined) return undefined;
    if (n.open >= s.maxConnectionsPerAddress)
      return `this address has ${n.open} connections open (server.maxConnectionsPerAddress)`;
    if (n.unauthenticated >= s.maxUnauthenticatedPerAddress)
      return `this address has ${n.unauthenticated} connections waiting for their hello (server.maxUnauthenticatedPerAddress)`;
    return undefined;
  }

  /** The connection completed its handshake (or closed): it no longer counts as unauthenticated for its address. */
  private authenticated(conn: Connection): void {
    if (!this.preAuthBytes.has(conn)) return;
    this.preAuthBytes.delete(conn);
    const n = this.perAddress.get(conn.address);
    if (n) n.unauthenticated--;
  }

  /** Stop accepting connections (first step of shutdown). */
  stopAccepting(): void {
    this.accepting = false;
  }

  /** Close every socket with 1001 and release timers. */
  async close(): Promise<void> {
    this.accepting = false;
    this.heartbeat.stop();
    const closed = [...this.conns].map(
      (c) =>
        new Promise<void>((resolve) => {
          if (c.socket.readyState === c.socket.CLOSED) return resolve();
          c.socket.once('close', () => resolve());
          c.close(CLOSE_CODES.goingAway, 'server shutting down; reconnect later');
        }),
    );
    await Promise.race([Promise.all(closed), new Promise((r) => setTimeout(r, 3000).unref())]);
    for (const c of this.conns) c.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
  }

  // ---------------------------------------------------------------- connection lifecycle

  private onConnection(ws: WebSocket, req: IncomingMessage): void {
    const s = this.o.config.server;
    const conn = new Connection(
      ws,
      req.socket.remoteAddress ?? 'unknown',
      addressOf(req),
      {
        maxMessageBytes: this.maxBytes,
        maxReassembledBytes: Math.max(s.inputLimits.maxRequestBytes, s.inputLimits.maxToolOutputBytes),
        maxBufferedBytes: s.maxBufferedBytes,
        messagesPerSecond: s.rateLimit.messagesPerSecond,
        burst: s.rateLimit.burst,
      },
      this.o.clock.now(),
      (c) => {
        this.o.logger.warn({ client_id: c.clientId, conn: c.serial }, 'closing slow consumer');
        c.close(
          CLOSE_CODES.slowConsumer,
          'send buffer overflow: the client does not read its messages fast enough',
        );
      },
    );
    this.conns.add(conn);
    this.queues.set(conn, { tail: Promise.resolve(), size: 0 });
    const n = this.perAddress.get(conn.address) ?? { open: 0, unauthenticated: 0 };
    n.open++;
    n.unauthenticated++;
    this.perAddress.set(conn.address, n);
    this.preAuthBytes.set(conn, 0);
    this.o.handshake.arm(conn);
    ws.on('message', (data: RawData, isBinary: boolean) => this.onFrame(conn, data, isBinary));
    ws.on('error', (err) =>
      this.o.logger.warn({ err, client_id: conn.clientId, conn: conn.serial }, 'socket error'),
    );
    ws.on('close', (code: number, reason: Buffer) => this.onClose(conn, code, reason.toString('utf8')));
    this.o.logger.debug({ conn: conn.serial, remote: conn.remoteAddress }, 'socket opened');
  }

  private onClose(conn: Connection, code: number, reason: string): void {
    if (!this.conns.delete(conn)) return;
    this.authenticated(conn);
    const n = this.perAddress.get(conn.address);
    if (n && --n.open <= 0) this.perAddress.delete(conn.address);
    this.o.handshake.disarm(conn);
    conn.disposed();
    const limit = conn.clientLimit;
    if (limit && conn.clientId !== undefined)
      this.o.rateLimits.release(conn.clientId, limit, this.o.clock.now());
    const entry = this.o.registry.detach(conn);
    this.o.logger.info({ client_id: conn.clientId, conn: conn.serial, code, reason }, 'socket closed');
    if (entry) {
      this.o.clients.clientDisconnected(entry.clientId, this.o.clock.now()).catch((err: unknown) => {
        this.o.logger.error({ err, client_id: entry.clientId }, 'could not record the disconnect');
      });
    }
  }

  // ---------------------------------------------------------------- inbound

  private onFrame(conn: Connection, data: RawData, isBinary: boolean): void {
    if (conn.state === 'closing' || conn.draining) return;
    const now = this.o.clock.now();
    conn.lastRxAt = now;
    const before = this.preAuthBytes.get(conn);
    if (before !== undefined) {
      // Before its hello is accepted a socket is nobody: it may send its hello (whole or in chunks) and no more.
      const sent = before + rawLength(data);
      this.preAuthBytes.set(conn, sent);
      const max = this.o.config.server.maxHelloBytes;
      if (sent > max) {
        this.o.logger.warn(
          { conn: conn.serial, remote: conn.remoteAddress, bytes: sent },
          'closing a connection that sent too much before its hello',
        );
        this.o.replies.error(
          conn,
          'message_too_large',
          `more than ${max} bytes before the hello was accepted`,
        );
        conn.close(CLOSE_CODES.tooBig, `more than ${max} bytes before hello (server.maxHelloBytes)`);
        // Read nothing more of it: what it already queued would otherwise still be received and parsed.
        conn.socket.pause();
        return;
      }
    }
    if (!conn.admit(now)) {
      if (conn.rejectedInARow > this.o.maxRejected) {
        this.o.logger.warn({ client_id: conn.clientId, conn: conn.serial }, 'closing flooding client');
        this.closeAfterQueue(conn, CLOSE_CODES.rateLimited, 'rate limit exceeded for too long');
      } else if (now - conn.lastRateErrorAt >= 1000) {
        conn.lastRateErrorAt = now;
        this.o.replies.error(conn, 'rate_limited', 'too many messages; this one was dropped, slow down');
      }
      return;
    }
    const text = isBinary ? undefined : rawToString(data);
    const q = this.queues.get(conn);
    if (!q) return;
    if (q.size >= MAX_QUEUED) {
      this.closeAfterQueue(conn, CLOSE_CODES.rateLimited, 'too many messages waiting to be processed');
      return;
    }
    q.size++;
    // One promise per message on the queue (a then/catch/finally chain built three, every frame).
    q.tail = q.tail.then(() => this.handle(conn, q, text));
  }

  /** Handle one queued frame; never rejects (the queue goes on with the next message). */
  private async handle(conn: Connection, q: { size: number }, text: string | undefined): Promise<void> {
    try {
      if (text === undefined) this.binary(conn);
      else await this.onText(conn, text, false);
      if (conn.state === 'ready') this.authenticated(conn);
    } catch (err) {
      this.o.logger.error({ err, client_id: conn.clientId, conn: conn.serial }, 'message handler failed');
      this.o.replies.error(conn, 'internal', 'the server failed to handle this message');
    } finally {
      q.size--;
    }
  }

  /**
   * Close a flooding connection once every message already admitted has been handled, reading nothing more
   * meanwhile. A busy server parses a whole receive buffer of frames in one pass, so the cut-off often comes before
   * any admitted message was handled; closing at once dropped the replies to everything the client sent within its
   * limit. A handler that does not finish within {@link DRAIN_CLOSE_MS} does not keep the socket open.
   */
  private closeAfterQueue(conn: Connection, code: number, reason: string): void {
    if (conn.draining) return;
    conn.draining = true;
    const close = (): void => {
      this.o.clock.clearTimeout(fallback);
      conn.close(code, reason);
    };
    const fallback = this.o.clock.setTimeout(close, DRAIN_CLOSE_MS);
    const q = this.queues.get(conn);
    if (q) q.tail = q.tail.then(close);
    else close();
  }

  private binary(conn: Connection): void {
    this.o.replies.error(conn, 'invalid_json', 'binary frames are not accepted; send JSON text');
    if (conn.state === 'awaiting_hello')
      conn.close(CLOSE_CODES.invalidHello, 'the first message must be hello');
  }

  private async onText(conn: Connection, text: string, reassembled: boolean): Promise<void> {
    if (conn.state === 'closing') return;
    const limits = this.o.config.server.inputLimits;
    const parsed = parseClientMessage(text, {
      maxBytes: reassembled ? Math.max(limits.maxRequestBytes, limits.maxToolOutputBytes) : this.maxBytes,
      maxDepth: limits.maxDepth,
    });
    if (!parsed.ok) {
      const issue = parsed.error;
      // Refused for its size before it was parsed: a result's ids are read from its start.
      const lead = issue.code === 'message_too_large' ? resultIds(topLevelIds(text)) : undefined;
      const { type: _type, code: _code, message: _message, ...ids } = toErrorMessage(issue);
      void [_type, _code, _message];
      // A frame carrying a call id answers a call: a malformed command_result.
      const what = issue.call_id !== undefined || lead ? 'command_result' : 'message';
      this.o.replies.refused(conn, what, issue.code, issue.message, { ...ids, ...lead });
      if (lead) {
        const why = `it came as one frame over ${this.maxBytes} bytes (max_message_bytes) instead of chunks`;
        await this.oversized(conn, lead, why);
      }
      if (conn.state === 'awaiting_hello')
        conn.close(CLOSE_CODES.invalidHello, 'the first message must be a valid hello');
      return;
    }
    const msg = parsed.value;
    if (msg.type === 'chunk') {
      if (reassembled) {
        this.o.replies.error(conn, 'invalid_message', 'a reassembled message cannot itself be a chunk');
        return;
      }
      let heads = this.chunkHeads.get(conn);
      if (!heads) this.chunkHeads.set(conn, (heads = new ChunkHeads()));
      if (msg.index === 0) heads.first(msg.chunk_id, msg.data);
      const r = conn.assembler.feed(msg);
      if (!r.ok) {
        const head = heads.take(msg.chunk_id);
        const lead =
          r.error.code === 'message_too_large' && head !== undefined
            ? resultIds(topLevelIds(head))
            : undefined;
        this.o.replies.send(conn, { ...toErrorMessage(r.error), ...lead });
        if (lead) await this.oversized(conn, lead, `it is more than ${limits.maxToolOutputBytes} bytes`);
      } else if (r.value.done) {
        heads.take(msg.chunk_id);
        await this.onText(conn, r.value.text, true);
      }
      return;
    }
    // The same size rule as an HTTP body: a command's output has its own (it may be large), every other message
    // the request limit, whether it came in one frame or in chunks.
    const limit = msg.type === 'command_result' ? limits.maxToolOutputBytes : limits.maxRequestBytes;
    if (text.length > limit / 3 && Buffer.byteLength(text, 'utf8') > limit) {
      const setting = msg.type === 'command_result' ? 'maxToolOutputBytes' : 'maxRequestBytes';
      this.o.replies.refused(
        conn,
        msg.type === 'command_result' ? 'command_result' : 'message',
        'message_too_large',
        `${msg.type} exceeds ${limit} bytes (server.inputLimits.${setting})`,
        idsOf(msg),
      );
      if (conn.state === 'awaiting_hello')
        conn.close(CLOSE_CODES.invalidHello, 'the first message must be a valid hello');
      if (msg.type === 'command_result')
        await this.oversized(
          conn,
          { call_id: msg.call_id, task_id: msg.task_id },
          `it is more than ${limit} bytes`,
        );
      return;
    }
    this.o.metrics.messageIn(msg.type);
    if (conn.state === 'awaiting_hello') {
      if (msg.type !== 'hello') {
        this.o.replies.error(conn, 'unauthorized', `send hello first (got ${msg.type})`);
        conn.close(CLOSE_CODES.unauthorized, 'a message other than hello arrived before hello');
        return;
      }
    }
    try {
      // Before the handshake the only message is `hello` (checked above); `sender` is known after it.
      const handler = this.o.handlers[msg.type] as (c: Connection, m: ClientMessage, s: string) => unknown;
      await handler(conn, msg, conn.clientId as string);
    } catch (err) {
      this.requestFailed(conn, msg, err);
    }
  }

  /** A welcomed client's result was refused for its size: its call fails now (see `oversizedResult`). */
  private async oversized(
    conn: Connection,
    ids: { call_id: string; task_id?: string },
    why: string,
  ): Promise<void> {
    if (conn.state !== 'ready' || conn.clientId === undefined || !this.o.oversizedResult) return;
    await this.o.oversizedResult(conn, conn.clientId, ids, why);
  }

  /**
   * A request failed inside the server: the client gets an `error` carrying the request's own ids (so it knows which
   * one), `unavailable` with the reason when the database cannot be used right now (locked, disk full), else
   * `internal`. Nothing was acknowledged, so the client may send it again.
   */
  private requestFailed(conn: Connection, msg: ClientMessage, err: unknown): void {
    const ids = idsOf(msg);
    const storage = storageFailureOf(err);
    if (storage) {
      this.o.logger.warn({ err, client_id: conn.clientId, conn: conn.serial, ...ids }, `${msg.type} refused`);
      this.o.replies.error(conn, 'unavailable', `${msg.type} not done: ${storage.message}`, ids);
    } else {
      this.o.logger.error(
        { err, client_id: conn.clientId, conn: conn.serial, ...ids },
        'message handler failed',
      );
      this.o.replies.error(conn, 'internal', `the server failed to handle this ${msg.type}`, ids);
    }
    if (msg.type === 'hello' && conn.state === 'awaiting_hello') {
      conn.close(CLOSE_CODES.tryAgainLater, 'the server cannot record this client now; reconnect later');
    }
  }
}

/** The ids a client message carries (echoed in an `error` about it). */
function idsOf(msg: ClientMessage): { request_id?: string; call_id?: string; task_id?: string } {
  const m = msg as { request_id?: unknown; call_id?: unknown; task_id?: unknown };
  const out: { request_id?: string; call_id?: string; task_id?: string } = {};
  if (typeof m.request_id === 'string') out.request_id = m.request_id;
  if (typeof m.call_id === 'string') out.call_id = m.call_id;
  if (typeof m.task_id === 'string') out.task_id = m.task_id;
  return out;
}

/**
 * The ids of a refused message that may be a `command_result`: it names a call at its top level and no other type
 * (Lua's encoder sorts keys, so `type` may come after the cut).
 */
function resultIds(lead: LeadingIds): { call_id: string; task_id?: string } | undefined {
  if (lead.call_id === undefined || (lead.type !== undefined && lead.type !== 'command_result'))
    return undefined;
  return { call_id: lead.call_id, ...(lead.task_id !== undefined ? { task_id: lead.task_id } : {}) };
}

/** The remote address of an upgrade, as the per-address caps and the failure throttle count it. */
function addressOf(req: IncomingMessage): string {
  return sourceAddress(req.socket.remoteAddress ?? 'unknown');
}

function rawLength(data: RawData): number {
  if (Array.isArray(data)) return data.reduce((n, b) => n + b.length, 0);
  return data.byteLength;
}

function rawToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}
