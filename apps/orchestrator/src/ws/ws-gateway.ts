import type { IncomingMessage } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock, Engine, Logger, Task, TaskStore, TimerHandle } from '@ccagent/engine';
import {
  MAX_REASSEMBLED_BYTES,
  PROTOCOL_VERSION,
  parseClientMessage,
  toErrorMessage,
  type ClientMessage,
  type CommandResultMessage,
  type CreateTaskMessage,
  type ErrorMessage,
  type HelloMessage,
  type ProtocolErrorCode,
  type ServerMessage,
} from '@ccagent/protocol';
import { findStorageFailure } from '@ccagent/store';
import { WebSocketServer, type RawData, type WebSocket } from 'ws';
import type { ClientPersistence, ToolInfo } from '../client-persistence.js';
import type { OrchestratorConfig } from '../config.js';
import { secretMatches } from '../ids.js';
import type { Metrics } from '../metrics.js';
import type { ServiceError, TaskService } from '../task-service.js';
import { ORCHESTRATOR_VERSION } from '../version.js';
import {
  CREATOR_KEY,
  commandSpecToDescriptor,
  toAskUser,
  toTaskCompleted,
  toTaskFailed,
  toTaskUpdate,
} from '../wire.js';
import type { ArgsValidator } from './args-validator.js';
import { CLOSE_CODES } from './close-codes.js';
import { ClientRateLimits } from './client-rate-limits.js';
import type { ClientEntry, ClientRegistry } from './client-registry.js';
import { Connection } from './connection.js';
import type { WsToolExecutor } from './ws-tool-executor.js';

/** Dependencies of {@link WsGateway}. */
export interface WsGatewayOptions {
  config: OrchestratorConfig;
  token: string | undefined;
  engine: Engine;
  store: TaskStore;
  tasks: TaskService;
  registry: ClientRegistry;
  executor: WsToolExecutor;
  validator: ArgsValidator;
  clients: ClientPersistence;
  metrics: Metrics;
  clock: Clock;
  logger: Logger;
}

/** Messages queued on one connection before it is closed as a flooder. */
const MAX_QUEUED = 512;
/** Longest wait for a flooder's admitted messages to be handled before its socket is closed anyway (ms). */
const DRAIN_CLOSE_MS = 5000;
/** Frames above this are refused by the `ws` library itself (close 1009); up to it, an `error` reply is sent. */
const HARD_FRAME_CAP_FACTOR = 8;

/**
 * The WebSocket side of the orchestrator: accepts connections on `/ws`, runs the hello/welcome handshake, routes
 * every client message, relays engine events to interested clients, and enforces the limits (frame size, rate,
 * backpressure, heartbeat). Messages of one connection are handled one at a time, in order.
 */
export class WsGateway {
  private readonly wss: WebSocketServer;
  private readonly conns = new Set<Connection>();
  private readonly queues = new WeakMap<Connection, { tail: Promise<void>; size: number }>();
  private readonly helloTimers = new WeakMap<Connection, TimerHandle>();
  /** task id → client ids subscribed to it. */
  private readonly subscribers = new Map<string, Set<string>>();
  /** Tasks whose events wait until the creator got `task_created`. */
  private readonly held = new Map<string, Array<{ task: Task; msg: ServerMessage }>>();
  /** Connections receiving a replay of missed events → task id → `updatedAt` of the newest live event sent. */
  private readonly replaying = new Map<Connection, Map<string, number>>();
  /** Rate limits of identified clients, by client id (kept across reconnects). */
  private readonly rateLimits: ClientRateLimits;
  private heartbeat: NodeJS.Timeout | undefined;
  private accepting = true;
  private readonly maxBytes: number;
  /** A connection with more rate-limit refusals in a row than this is closed as a flooder (4008). */
  private readonly maxRejected: number;

  constructor(private readonly o: WsGatewayOptions) {
    this.maxBytes = o.config.server.maxMessageBytes;
    this.rateLimits = new ClientRateLimits(o.config.server.rateLimit);
    this.maxRejected = 4 * o.config.server.rateLimit.burst;
    this.wss = new WebSocketServer({
      noServer: true,
      maxPayload: Math.max(this.maxBytes * HARD_FRAME_CAP_FACTOR, 1024 * 1024),
      perMessageDeflate: false,
    });
    o.registry.setEvents({
      online: (entry, missedSince) => this.clientOnline(entry, missedSince),
      graceExpired: (entry) => o.executor.clientGraceExpired(entry),
    });
    this.relayEngineEvents();
    const hb = o.config.server.heartbeatMs;
    this.heartbeat = setInterval(() => this.beat(), hb);
    this.heartbeat.unref();
  }

  /** Number of open sockets (welcomed or not). */
  get connectionCount(): number {
    return this.conns.size;
  }

  /** Handle an HTTP upgrade request (from the HTTP server's `upgrade` event). */
  handleUpgrade(req: IncomingMessage, socket: Duplex, head: Buffer): void {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/ws') {
      socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (!this.accepting) {
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    if (this.conns.size >= this.o.config.server.maxConnections) {
      this.o.logger.warn({ connections: this.conns.size }, 'connection refused: at maxConnections');
      socket.end('HTTP/1.1 503 Service Unavailable\r\nConnection: close\r\nContent-Length: 0\r\n\r\n');
      return;
    }
    this.wss.handleUpgrade(req, socket, head, (ws) => this.onConnection(ws, req));
  }

  /** Stop accepting connections (first step of shutdown). */
  stopAccepting(): void {
    this.accepting = false;
  }

  /** Close every socket with 1001 and release timers. */
  async close(): Promise<void> {
    this.accepting = false;
    if (this.heartbeat) clearInterval(this.heartbeat);
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
      {
        maxMessageBytes: this.maxBytes,
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
    this.helloTimers.set(
      conn,
      this.o.clock.setTimeout(() => {
        if (conn.state === 'awaiting_hello') {
          this.sendError(conn, 'unauthorized', `no hello within ${s.helloTimeoutMs} ms`);
          conn.close(CLOSE_CODES.helloTimeout, 'no hello received in time');
        }
      }, s.helloTimeoutMs),
    );
    ws.on('message', (data: RawData, isBinary: boolean) => this.onFrame(conn, data, isBinary));
    ws.on('error', (err) =>
      this.o.logger.warn({ err, client_id: conn.clientId, conn: conn.serial }, 'socket error'),
    );
    ws.on('close', (code: number, reason: Buffer) => this.onClose(conn, code, reason.toString('utf8')));
    this.o.logger.debug({ conn: conn.serial, remote: conn.remoteAddress }, 'socket opened');
  }

  private onClose(conn: Connection, code: number, reason: string): void {
    this.conns.delete(conn);
    const t = this.helloTimers.get(conn);
    if (t !== undefined) this.o.clock.clearTimeout(t);
    conn.disposed();
    const limit = conn.clientLimit;
    if (limit && conn.clientId !== undefined)
      this.rateLimits.release(conn.clientId, limit, this.o.clock.now());
    const entry = this.o.registry.detach(conn);
    this.o.logger.info({ client_id: conn.clientId, conn: conn.serial, code, reason }, 'socket closed');
    if (entry) {
      this.o.clients.clientDisconnected(entry.clientId, this.o.clock.now()).catch((err: unknown) => {
        this.o.logger.error({ err, client_id: entry.clientId }, 'could not record the disconnect');
      });
    }
  }

  private beat(): void {
    const now = this.o.clock.now();
    const hb = this.o.config.server.heartbeatMs;
    for (const c of this.conns) {
      if (c.state !== 'ready') continue;
      const silent = now - c.lastRxAt;
      if (silent > 2 * hb) {
        this.o.logger.warn(
          { client_id: c.clientId, conn: c.serial, silent_ms: silent },
          'dead socket: no pong',
        );
        c.terminate();
      } else {
        c.send({ type: 'ping', id: `hb-${now}` });
      }
    }
  }

  // ---------------------------------------------------------------- inbound

  private onFrame(conn: Connection, data: RawData, isBinary: boolean): void {
    if (conn.state === 'closing' || conn.draining) return;
    const now = this.o.clock.now();
    conn.lastRxAt = now;
    if (!conn.admit(now)) {
      if (conn.rejectedInARow > this.maxRejected) {
        this.o.logger.warn({ client_id: conn.clientId, conn: conn.serial }, 'closing flooding client');
        this.closeAfterQueue(conn, CLOSE_CODES.rateLimited, 'rate limit exceeded for too long');
      } else if (now - conn.lastRateErrorAt >= 1000) {
        conn.lastRateErrorAt = now;
        this.sendError(conn, 'rate_limited', 'too many messages; this one was dropped, slow down');
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
    } catch (err) {
      this.o.logger.error({ err, client_id: conn.clientId, conn: conn.serial }, 'message handler failed');
      this.sendError(conn, 'internal', 'the server failed to handle this message');
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
    this.sendError(conn, 'invalid_json', 'binary frames are not accepted; send JSON text');
    if (conn.state === 'awaiting_hello')
      conn.close(CLOSE_CODES.invalidHello, 'the first message must be hello');
  }

  private async onText(conn: Connection, text: string, reassembled: boolean): Promise<void> {
    if (conn.state === 'closing') return;
    const parsed = parseClientMessage(text, {
      maxBytes: reassembled ? MAX_REASSEMBLED_BYTES : this.maxBytes,
    });
    if (!parsed.ok) {
      this.send(conn, toErrorMessage(parsed.error));
      if (conn.state === 'awaiting_hello')
        conn.close(CLOSE_CODES.invalidHello, 'the first message must be a valid hello');
      return;
    }
    const msg = parsed.value;
    if (msg.type === 'chunk') {
      if (reassembled) {
        this.sendError(conn, 'invalid_message', 'a reassembled message cannot itself be a chunk');
        return;
      }
      const r = conn.assembler.feed(msg);
      if (!r.ok) this.send(conn, toErrorMessage(r.error));
      else if (r.value.done) await this.onText(conn, r.value.text, true);
      return;
    }
    this.o.metrics.messageIn(msg.type);
    if (conn.state === 'awaiting_hello') {
      if (msg.type !== 'hello') {
        this.sendError(conn, 'unauthorized', `send hello first (got ${msg.type})`);
        conn.close(CLOSE_CODES.unauthorized, 'a message other than hello arrived before hello');
        return;
      }
    }
    try {
      if (conn.state === 'awaiting_hello') await this.hello(conn, msg as HelloMessage);
      else await this.dispatch(conn, conn.clientId as string, msg);
    } catch (err) {
      this.requestFailed(conn, msg, err);
    }
  }

  /**
   * A request failed inside the server: the client gets an `error` carrying the request's own ids (so it knows which
   * one), `unavailable` with the reason when the database cannot be used right now (locked, disk full), else
   * `internal`. Nothing was acknowledged, so the client may send it again.
   */
  private requestFailed(conn: Connection, msg: ClientMessage, err: unknown): void {
    const ids = idsOf(msg);
    const storage = findStorageFailure(err);
    if (storage) {
      this.o.logger.warn({ err, client_id: conn.clientId, conn: conn.serial, ...ids }, `${msg.type} refused`);
      this.sendError(conn, 'unavailable', `${msg.type} not done: ${storage.message}`, ids);
    } else {
      this.o.logger.error(
        { err, client_id: conn.clientId, conn: conn.serial, ...ids },
        'message handler failed',
      );
      this.sendError(conn, 'internal', `the server failed to handle this ${msg.type}`, ids);
    }
    if (msg.type === 'hello' && conn.state === 'awaiting_hello') {
      conn.close(CLOSE_CODES.tryAgainLater, 'the server cannot record this client now; reconnect later');
    }
  }

  private async dispatch(conn: Connection, sender: string, msg: ClientMessage): Promise<void> {
    switch (msg.type) {
      case 'hello':
        return this.hello(conn, msg);
      case 'create_task':
        return this.createTask(conn, sender, msg);
      case 'command_result':
        return this.commandResult(conn, sender, msg);
      case 'cancel_task':
        return this.cancelTask(conn, sender, msg.task_id, msg.request_id);
      case 'subscribe':
        return this.subscribe(conn, sender, msg.task_id, msg.request_id);
      case 'unsubscribe':
        this.subscribers.get(msg.task_id)?.delete(sender);
        this.o.registry.get(sender)?.subscriptions.delete(msg.task_id);
        return;
      case 'user_answer':
        return this.userAnswer(conn, sender, msg.task_id, msg.question_id, msg.text);
      case 'tools_update':
        return this.toolsUpdate(conn, sender, msg.tools);
      case 'ping':
        conn.send(msg.id !== undefined ? { type: 'pong', id: msg.id } : { type: 'pong' });
        return;
      case 'pong':
        return;
      case 'chunk':
        return; // handled in onText
    }
  }

  // ---------------------------------------------------------------- handshake

  private async hello(conn: Connection, msg: HelloMessage): Promise<void> {
    const first = conn.state === 'awaiting_hello';
    const refuse = (code: ProtocolErrorCode, message: string, close: number, path?: string): void => {
      this.send(conn, { type: 'error', code, message, ...(path !== undefined ? { path } : {}) });
      if (first) conn.close(close, message);
    };
    if (msg.protocol_version !== PROTOCOL_VERSION) {
      refuse(
        'protocol_version',
        `protocol version ${msg.protocol_version} is not supported; this server speaks ${PROTOCOL_VERSION}`,
        CLOSE_CODES.protocolVersion,
        '$.protocol_version',
      );
      return;
    }
    if (this.o.token !== undefined && !secretMatches(msg.token, this.o.token)) {
      refuse(
        'unauthorized',
        msg.token === undefined ? 'this server requires a token' : 'wrong token',
        CLOSE_CODES.unauthorized,
        '$.token',
      );
      return;
    }
    if (first) {
      const wait = this.rateLimits.cutOffFor(msg.client_id, this.maxRejected, this.o.clock.now());
      if (wait > 0) {
        // Closed for flooding and back before its bucket refilled: a new connection must not buy a fresh limit.
        refuse(
          'rate_limited',
          `client "${msg.client_id}" was cut off for flooding; reconnect in ${Math.ceil(wait / 1000)} s`,
          CLOSE_CODES.rateLimited,
        );
        return;
      }
    }
    if (!first && msg.client_id !== conn.clientId) {
      refuse(
        'forbidden',
        `this connection is client "${conn.clientId}"; reconnect to change it`,
        0,
        '$.client_id',
      );
      return;
    }
    const dupTool = duplicateName(msg.tools ?? []);
    if (dupTool !== undefined) {
      refuse(
        'invalid_field',
        `tool "${dupTool.name}" is listed twice`,
        CLOSE_CODES.invalidHello,
        `$.tools[${dupTool.index}].name`,
      );
      return;
    }
    for (const [i, c] of msg.commands.entries()) {
      if (c.args_schema === undefined) continue;
      const check = this.o.validator.checkSchema(c.args_schema);
      if (!check.ok) {
        refuse(
          'invalid_field',
          `args_schema of command "${c.name}" is not a usable JSON Schema: ${check.message}`,
          CLOSE_CODES.invalidHello,
          `$.commands[${i}].args_schema`,
        );
        return;
      }
    }
    const t = this.helloTimers.get(conn);
    if (t !== undefined) this.o.clock.clearTimeout(t);
    const clientId = msg.client_id;
    const commands = msg.commands.map(commandSpecToDescriptor);
    const now = this.o.clock.now();
    // Durable before the welcome acknowledges it.
    await this.o.clients.clientSeen({
      clientId,
      commands,
      at: now,
      ...(msg.client_version !== undefined ? { clientVersion: msg.client_version } : {}),
    });
    if (msg.tools !== undefined) await this.o.clients.replaceTools(clientId, msg.tools.map(toToolInfo), now);
    if (conn.state === 'closing') return;
    conn.clientId = clientId;
    conn.state = 'ready';
    // From here on its frames count against the client's limit, which a reconnect does not reset.
    const at = this.o.clock.now();
    conn.useClientLimit(this.rateLimits.acquire(clientId, at), at);
    const s = this.o.config.server;
    conn.send({
      type: 'welcome',
      client_id: clientId,
      server_version: ORCHESTRATOR_VERSION,
      protocol_version: PROTOCOL_VERSION,
      heartbeat_ms: s.heartbeatMs,
      max_message_bytes: this.maxBytes,
    });
    const replaced = this.o.registry.attach(conn, commands, msg.client_version);
    if (replaced) {
      this.o.logger.info(
        { client_id: clientId, conn: replaced.serial, by: conn.serial },
        'connection replaced',
      );
      this.send(replaced, {
        type: 'error',
        code: 'duplicate',
        message: `replaced by a newer connection identifying as client "${clientId}"`,
      });
      // Detach happens on close; the registry already points at the new connection.
      replaced.close(CLOSE_CODES.replaced, `replaced by a newer connection for client ${clientId}`);
    }
    this.o.logger.info(
      { client_id: clientId, conn: conn.serial, commands: commands.length, first },
      first ? 'client connected' : 'client re-registered',
    );
  }

  /**
   * A client was (re)welcomed: re-send its calls, then questions of its tasks that wait for an answer, then the
   * current state of its tasks that changed while it was away (`missedSince`: events of that time were not
   * delivered to it).
   */
  private clientOnline(entry: ClientEntry, missedSince: number | undefined): void {
    this.o.executor.clientOnline(entry);
    for (const taskId of entry.subscriptions) this.index(taskId, entry.clientId);
    void this.resendQuestions(entry).catch((err: unknown) =>
      this.o.logger.error({ err, client_id: entry.clientId }, 'could not re-send open questions'),
    );
    if (missedSince !== undefined && entry.connection) {
      const conn = entry.connection;
      void this.replayMissed(entry.clientId, conn, missedSince).catch((err: unknown) =>
        this.o.logger.error({ err, client_id: entry.clientId }, 'could not replay missed task events'),
      );
    }
  }

  /**
   * Send `conn` the current state of each task of `clientId` (bound to it, created by it, or subscribed) updated at
   * or after `since`: `task_update`, plus `task_completed` / `task_failed` for one that ended. A live event that
   * reaches the connection meanwhile wins over an older replayed state.
   */
  private async replayMissed(clientId: string, conn: Connection, since: number): Promise<void> {
    const guard = new Map<string, number>();
    this.replaying.set(conn, guard);
    try {
      const found = new Map<string, Task>();
      for (const t of await this.o.engine.listTasks({ clientId, updatedSince: since })) found.set(t.id, t);
      if (this.o.config.server.crossClientAccess) {
        // Tasks it created for other clients (only possible with crossClientAccess): no index on the creator.
        for (const t of await this.o.engine.listTasks({ updatedSince: since })) {
          if (t.metadata[CREATOR_KEY] === clientId) found.set(t.id, t);
        }
      }
      for (const id of this.o.registry.get(clientId)?.subscriptions ?? []) {
        if (found.has(id)) continue;
        const t = await this.o.engine.getTask(id);
        if (t && t.updatedAt >= since) found.set(id, t);
      }
      let sent = 0;
      for (const task of found.values()) {
        if (!this.recipients(task).has(clientId)) continue;
        const live = guard.get(task.id);
        if (live !== undefined && live >= task.updatedAt) continue;
        if (!conn.send(toTaskUpdate(task))) return;
        if (task.status === 'completed') conn.send(toTaskCompleted(task));
        else if (task.status === 'failed') conn.send(toTaskFailed(task));
        sent++;
      }
      if (sent > 0)
        this.o.logger.info({ client_id: clientId, tasks: sent, since }, 'replayed missed task events');
    } finally {
      this.replaying.delete(conn);
    }
  }

  private async resendQuestions(entry: ClientEntry): Promise<void> {
    const waiting = await this.o.engine.listTasks({ clientId: entry.clientId, status: 'waiting_for_user' });
    for (const task of waiting) {
      const q = await this.o.tasks.openQuestion(task.id);
      const conn = entry.connection;
      if (q && conn) conn.send(toAskUser(q));
    }
  }

  // ---------------------------------------------------------------- requests

  private async createTask(conn: Connection, sender: string, msg: CreateTaskMessage): Promise<void> {
    const ids = { request_id: msg.request_id };
    if (msg.client_id !== sender && !this.o.config.server.crossClientAccess) {
      this.sendError(conn, 'forbidden', `a client may only create tasks for itself ("${sender}")`, {
        ...ids,
        path: '$.client_id',
      });
      return;
    }
    const req = {
      kind: msg.task_kind,
      prompt: msg.prompt,
      clientId: msg.client_id,
      context: msg.context,
      allowedCommands: msg.allowed_commands,
      creator: sender,
      requestId: msg.request_id,
      requestNamespace: sender,
    };
    const id = this.o.tasks.taskIdFor(req);
    this.held.set(id, []);
    try {
      const r = await this.o.tasks.create(req, id);
      if (!r.ok) {
        this.sendServiceError(conn, r.error, ids);
        return;
      }
      const { task } = r.value;
      if (task.metadata[CREATOR_KEY] !== sender) {
        this.sendError(conn, 'forbidden', 'that request id belongs to another client', ids);
        return;
      }
      conn.send({ type: 'task_created', request_id: msg.request_id, task_id: task.id, status: task.status });
    } finally {
      const queued = this.held.get(id) ?? [];
      this.held.delete(id);
      for (const m of queued) this.deliver(m.task, m.msg);
    }
  }

  private async commandResult(conn: Connection, sender: string, msg: CommandResultMessage): Promise<void> {
    const ack = (): void => {
      conn.send({ type: 'command_ack', task_id: msg.task_id, call_id: msg.call_id });
    };
    // The ack leaves the moment the result is on disk, ahead of the next step's messages.
    const verdict = await this.o.executor.acceptResult(sender, msg, ack);
    if (verdict.ok) {
      if (!verdict.acknowledged) ack();
    } else {
      this.sendError(conn, verdict.code, verdict.message, { call_id: msg.call_id, task_id: msg.task_id });
    }
  }

  private async authorized(
    conn: Connection,
    sender: string,
    taskId: string,
    requestId?: string,
  ): Promise<Task | undefined> {
    const ids = { task_id: taskId, ...(requestId !== undefined ? { request_id: requestId } : {}) };
    const task = await this.o.engine.getTask(taskId);
    if (!task) {
      this.sendError(conn, 'not_found', `no task ${taskId}`, ids);
      return undefined;
    }
    if (!this.o.tasks.canAccess(task, sender)) {
      // Same answer as for a missing task would leak less, but a clear reason helps the person at the computer.
      this.sendError(conn, 'forbidden', `task ${taskId} belongs to another client`, ids);
      return undefined;
    }
    return task;
  }

  private async cancelTask(
    conn: Connection,
    sender: string,
    taskId: string,
    requestId?: string,
  ): Promise<void> {
    const task = await this.authorized(conn, sender, taskId, requestId);
    if (!task) return;
    const r = await this.o.tasks.cancel(taskId, `cancelled by client ${sender}`);
    if (!r.ok) {
      this.sendServiceError(conn, r.error, {
        task_id: taskId,
        ...(requestId !== undefined ? { request_id: requestId } : {}),
      });
      return;
    }
    // The canceller always hears the outcome: a repeated cancel emits no event, and it may not be a recipient.
    if (task.status === 'cancelled' || !this.recipients(r.value).has(sender))
      conn.send(toTaskUpdate(r.value));
  }

  private async subscribe(
    conn: Connection,
    sender: string,
    taskId: string,
    requestId?: string,
  ): Promise<void> {
    const task = await this.authorized(conn, sender, taskId, requestId);
    if (!task) return;
    this.o.registry.get(sender)?.subscriptions.add(taskId);
    this.index(taskId, sender);
    conn.send(toTaskUpdate(task));
    if (task.status === 'completed') conn.send(toTaskCompleted(task));
    else if (task.status === 'failed') conn.send(toTaskFailed(task));
    else if (task.status === 'waiting_for_user') {
      const q = await this.o.tasks.openQuestion(taskId);
      if (q) conn.send(toAskUser(q));
    }
  }

  private async userAnswer(
    conn: Connection,
    sender: string,
    taskId: string,
    questionId: string,
    text: string,
  ): Promise<void> {
    const task = await this.authorized(conn, sender, taskId);
    if (!task) return;
    const r = await this.o.tasks.answer(taskId, questionId, text);
    if (!r.ok) this.sendServiceError(conn, r.error, { task_id: taskId });
  }

  private async toolsUpdate(
    conn: Connection,
    sender: string,
    tools: Array<Parameters<typeof toToolInfo>[0]>,
  ): Promise<void> {
    const dup = duplicateName(tools);
    if (dup !== undefined) {
      this.sendError(conn, 'invalid_field', `tool "${dup.name}" is listed twice`, {
        path: `$.tools[${dup.index}].name`,
      });
      return;
    }
    await this.o.clients.replaceTools(sender, tools.map(toToolInfo), this.o.clock.now());
    this.o.logger.info({ client_id: sender, tools: tools.length }, 'tools updated');
  }

  // ---------------------------------------------------------------- outbound

  private relayEngineEvents(): void {
    const e = this.o.engine;
    e.on('taskUpdated', ({ task, progress, message }) =>
      this.publish(task, toTaskUpdate(task, progress, message)),
    );
    e.on('taskCompleted', ({ task }) => this.publish(task, toTaskCompleted(task)));
    e.on('taskFailed', ({ task }) => this.publish(task, toTaskFailed(task)));
    e.on('questionAsked', ({ task, question }) => this.publish(task, toAskUser(question)));
  }

  private publish(task: Task, msg: ServerMessage): void {
    const held = this.held.get(task.id);
    if (held) {
      held.push({ task, msg });
      return;
    }
    this.deliver(task, msg);
  }

  private deliver(task: Task, msg: ServerMessage): void {
    for (const clientId of this.recipients(task)) {
      const conn = this.o.registry.connection(clientId);
      if (!conn) continue;
      conn.send(msg);
      const guard = this.replaying.get(conn);
      if (guard) guard.set(task.id, Math.max(guard.get(task.id) ?? 0, task.updatedAt));
    }
    if (
      msg.type === 'task_completed' ||
      msg.type === 'task_failed' ||
      (msg.type === 'task_update' && msg.status === 'cancelled')
    ) {
      this.subscribers.delete(task.id);
    }
  }

  /** The task's client, its creator, and its subscribers. */
  private recipients(task: Task): Set<string> {
    const out = new Set<string>(this.subscribers.get(task.id) ?? []);
    if (task.clientId !== null) out.add(task.clientId);
    const creator = task.metadata[CREATOR_KEY];
    if (typeof creator === 'string') out.add(creator);
    return out;
  }

  private index(taskId: string, clientId: string): void {
    let set = this.subscribers.get(taskId);
    if (!set) {
      set = new Set();
      this.subscribers.set(taskId, set);
    }
    set.add(clientId);
  }

  private send(conn: Connection, msg: ErrorMessage | ServerMessage): void {
    if (msg.type === 'error') this.o.metrics.errorOut(msg.code);
    conn.send(msg);
  }

  private sendError(
    conn: Connection,
    code: ProtocolErrorCode,
    message: string,
    extra: { request_id?: string; call_id?: string; task_id?: string; path?: string } = {},
  ): void {
    this.send(conn, { type: 'error', code, message, ...extra });
  }

  private sendServiceError(
    conn: Connection,
    error: ServiceError,
    ids: { request_id?: string; task_id?: string },
  ): void {
    const code: ProtocolErrorCode =
      error.code === 'conflict' ? 'forbidden' : error.code === 'internal' ? 'internal' : error.code;
    this.sendError(conn, code, error.message, {
      ...ids,
      ...(error.path !== undefined ? { path: error.path } : {}),
    });
  }
}

/** The first name that repeats in a tool list (the registry is keyed by name). */
function duplicateName(tools: ReadonlyArray<{ name: string }>): { name: string; index: number } | undefined {
  const seen = new Set<string>();
  for (const [index, t] of tools.entries()) {
    if (seen.has(t.name)) return { name: t.name, index };
    seen.add(t.name);
  }
  return undefined;
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

function rawToString(data: RawData): string {
  if (Buffer.isBuffer(data)) return data.toString('utf8');
  if (Array.isArray(data)) return Buffer.concat(data).toString('utf8');
  return Buffer.from(data).toString('utf8');
}

function toToolInfo(t: {
  name: string;
  status: ToolInfo['status'];
  version: number;
  description?: string | undefined;
  file?: string | undefined;
  updated_at?: number | undefined;
}): ToolInfo {
  const out: ToolInfo = { name: t.name, status: t.status, version: t.version };
  if (t.description !== undefined) out.description = t.description;
  if (t.file !== undefined) out.file = t.file;
  if (t.updated_at !== undefined) out.updatedAt = t.updated_at;
  return out;
}
