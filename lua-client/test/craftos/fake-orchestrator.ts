// A scripted orchestrator for the CraftOS tier: one HTTP server on 127.0.0.1 with the WebSocket endpoint at /ws
// and the installer routes under /lua/, like the real one. Every frame the Lua client sends is checked with
// @ccagent/protocol's parser (schema violations are collected in `invalid`, answered with an `error` like the real
// server, and fail the tests), every message it sends is checked against the server schema, and messages over the
// frame limit go out as the protocol's own `chunk` frames. Tests drive the task side step by step.
import {
  ChunkAssembler,
  DEFAULT_MAX_MESSAGE_BYTES,
  MAX_REASSEMBLED_BYTES,
  PROTOCOL_VERSION,
  ServerMessageSchema,
  encodeFrames,
  parseClientMessage,
  toErrorMessage,
  type ClientMessage,
  type ProtocolIssue,
  type ServerMessage,
} from '@ccagent/protocol';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { WebSocketServer, type WebSocket } from 'ws';
import { SRC_DIR } from './craftos.js';
import { luaRoutes, type ManifestFile } from './lua-files.js';

/** Options for the scripted server. */
export interface FakeOptions {
  /** Sent in `welcome` and used to chunk outgoing messages (default 131072, CC:Tweaked's limit). */
  maxMessageBytes?: number;
  /** Sent in `welcome` (default 60000, so heartbeats stay out of short tests). */
  heartbeatMs?: number;
  /** Acknowledge every command_result at once (default true). */
  autoAck?: boolean;
  /** Answer `create_task` with `task_created` (ids task-1, task-2, …) at once (default true). */
  autoCreate?: boolean;
  /** Require this token in `hello` (wrong/missing: `error` unauthorized, then close). */
  token?: string;
  /** Change the installer manifest before it is served. */
  editManifest?: (m: { files: ManifestFile[] }) => { files: ManifestFile[] };
  /** What the `welcome` offers the computer's menus (kinds, models, model roles), as a real server does. */
  offer?: { task_kinds: string[]; models: string[]; model_roles: Record<string, string[]> };
}

/** A client frame the protocol parser rejected. */
export interface InvalidFrame {
  frame: string;
  issue: ProtocolIssue;
}

interface Waiter {
  pred: (m: ClientMessage) => boolean;
  resolve: (m: ClientMessage) => void;
  reject: (e: Error) => void;
  timer: NodeJS.Timeout;
}

/** The scripted server; one client at a time (the newest connection wins, as in the real server). */
export class FakeOrchestrator {
  /** Every valid message received (chunked ones reassembled), in order. */
  readonly received: ClientMessage[] = [];
  /** Raw frames received (to check their sizes). */
  readonly frames: string[] = [];
  /** Frames that violated the protocol. A correct client leaves this empty. */
  readonly invalid: InvalidFrame[] = [];
  /** Number of WebSocket connections accepted so far. */
  connections = 0;
  /** task ids given to create_task requests, by request_id. */
  readonly tasks = new Map<string, string>();
  private readonly http: Server;
  private readonly wss: WebSocketServer;
  private socket: WebSocket | undefined;
  private assembler = new ChunkAssembler();
  private waiters: Waiter[] = [];
  private nextId = 0;

  private constructor(private readonly opts: FakeOptions) {
    const routes = luaRoutes({ dir: SRC_DIR, baseUrl: () => this.httpUrl, editManifest: opts.editManifest });
    this.http = createServer((req, res) => {
      if (!routes(req, res)) {
        res.writeHead(404).end('not found');
      }
    });
    this.wss = new WebSocketServer({ server: this.http, path: '/ws', maxPayload: MAX_REASSEMBLED_BYTES });
    this.wss.on('connection', (ws) => {
      this.connections += 1;
      this.socket?.close(4000, 'replaced by a new connection');
      this.socket = ws;
      this.assembler = new ChunkAssembler();
      ws.on('message', (data: Buffer) => this.onFrame(ws, data.toString('utf8')));
    });
  }

  /** Start listening on an ephemeral port of 127.0.0.1. */
  static async start(opts: FakeOptions = {}): Promise<FakeOrchestrator> {
    const f = new FakeOrchestrator(opts);
    await new Promise<void>((resolve) => f.http.listen(0, '127.0.0.1', resolve));
    return f;
  }

  /** http://127.0.0.1:<port> */
  get httpUrl(): string {
    const addr = this.http.address() as AddressInfo | null;
    if (!addr) throw new Error('not listening');
    return `http://127.0.0.1:${addr.port}`;
  }

  /** ws://127.0.0.1:<port>/ws */
  get url(): string {
    return `${this.httpUrl.replace(/^http/, 'ws')}/ws`;
  }

  private get maxBytes(): number {
    return this.opts.maxMessageBytes ?? DEFAULT_MAX_MESSAGE_BYTES;
  }

  private reject(ws: WebSocket, frame: string, issue: ProtocolIssue): void {
    this.invalid.push({ frame: frame.slice(0, 500), issue });
    this.sendOn(ws, toErrorMessage(issue));
  }

  private onFrame(ws: WebSocket, text: string): void {
    this.frames.push(text);
    const parsed = parseClientMessage(text, { maxBytes: this.maxBytes });
    if (!parsed.ok) return this.reject(ws, text, parsed.error);
    const msg = parsed.value;
    if (msg.type !== 'chunk') return this.onMessage(ws, msg);
    const fed = this.assembler.feed(msg);
    if (!fed.ok) return this.reject(ws, text, fed.error);
    if (!fed.value.done) return;
    const whole = parseClientMessage(fed.value.text, { maxBytes: MAX_REASSEMBLED_BYTES });
    if (!whole.ok) return this.reject(ws, fed.value.text, whole.error);
    this.onMessage(ws, whole.value);
  }

  private onMessage(ws: WebSocket, msg: ClientMessage): void {
    this.received.push(msg);
    if (msg.type === 'hello') {
      if (this.opts.token !== undefined && msg.token !== this.opts.token) {
        this.sendOn(ws, { type: 'error', code: 'unauthorized', message: 'wrong or missing token' });
        ws.close(4001, 'unauthorized');
      } else {
        this.sendOn(ws, {
          type: 'welcome',
          client_id: msg.client_id,
          server_version: 'fake-1',
          protocol_version: PROTOCOL_VERSION,
          heartbeat_ms: this.opts.heartbeatMs ?? 60_000,
          max_message_bytes: this.maxBytes,
          ...this.opts.offer,
        });
      }
    } else if (msg.type === 'ping') {
      this.sendOn(ws, { type: 'pong', ...(msg.id === undefined ? {} : { id: msg.id }) });
    } else if (msg.type === 'command_result' && this.opts.autoAck !== false) {
      this.sendOn(ws, { type: 'command_ack', task_id: msg.task_id, call_id: msg.call_id });
    } else if (msg.type === 'create_task' && this.opts.autoCreate !== false) {
      const taskId = `task-${++this.nextId}`;
      this.tasks.set(msg.request_id, taskId);
      this.sendOn(ws, {
        type: 'task_created',
        request_id: msg.request_id,
        task_id: taskId,
        status: 'queued',
      });
    }
    for (const w of [...this.waiters]) {
      if (w.pred(msg)) {
        clearTimeout(w.timer);
        this.waiters = this.waiters.filter((x) => x !== w);
        w.resolve(msg);
      }
    }
  }

  private sendOn(ws: WebSocket, msg: ServerMessage): void {
    // Only schema-valid messages leave the fake, so a test cannot pass on a message the real server never sends.
    const valid = ServerMessageSchema.parse(msg);
    for (const frame of encodeFrames(valid, `srv-${++this.nextId}`, this.maxBytes)) ws.send(frame);
  }

  /** Send a message (chunked when over the limit) to the connected client. */
  send(msg: ServerMessage): void {
    if (!this.socket) throw new Error('no client connected');
    this.sendOn(this.socket, msg);
  }

  /** Send raw text, bypassing validation (for hostile-input tests). */
  sendRaw(text: string): void {
    if (!this.socket) throw new Error('no client connected');
    this.socket.send(text);
  }

  /** The first message matching `pred` at or after index `from` of {@link received}, waiting for it if needed. */
  waitFor<T extends ClientMessage = ClientMessage>(
    pred: (m: ClientMessage) => boolean,
    timeoutMs = 15_000,
    from = 0,
  ): Promise<T> {
    const seen = this.received.slice(from).find(pred);
    if (seen) return Promise.resolve(seen as T);
    return new Promise<T>((resolve, reject) => {
      const w: Waiter = {
        pred,
        resolve: (m) => resolve(m as T),
        reject,
        timer: setTimeout(() => {
          this.waiters = this.waiters.filter((x) => x !== w);
          const got = this.received.map((m) => m.type).join(',');
          reject(new Error(`timed out waiting for a message; got: ${got}`));
        }, timeoutMs),
      };
      this.waiters.push(w);
    });
  }

  /** Wait for the n-th (1-based) hello. */
  hello(n = 1, timeoutMs = 15_000): Promise<Extract<ClientMessage, { type: 'hello' }>> {
    return this.waitFor(
      (m) => m.type === 'hello' && this.received.filter((x) => x.type === 'hello').indexOf(m) === n - 1,
      timeoutMs,
    );
  }

  /** Call a command and wait for its command_result (received after this call was sent). */
  call(
    command: string,
    args: Record<string, unknown> = {},
    callId = `call-${++this.nextId}`,
    taskId = 'task-0',
  ): Promise<Extract<ClientMessage, { type: 'command_result' }>> {
    const from = this.received.length;
    this.send({ type: 'command_call', task_id: taskId, call_id: callId, command, args });
    return this.waitFor((m) => m.type === 'command_result' && m.call_id === callId, 15_000, from);
  }

  /** Drop the connection abruptly (like a crashed orchestrator). */
  drop(): void {
    this.socket?.terminate();
    this.socket = undefined;
  }

  /** Close the server and every connection. */
  async close(): Promise<void> {
    for (const w of this.waiters) {
      clearTimeout(w.timer);
      w.reject(new Error('server closed'));
    }
    this.waiters = [];
    for (const c of this.wss.clients) c.terminate();
    await new Promise<void>((resolve) => this.wss.close(() => resolve()));
    await new Promise<void>((resolve) => this.http.close(() => resolve()));
  }
}
