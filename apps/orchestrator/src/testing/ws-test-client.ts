import WebSocket from 'ws';

/** A received protocol message, loosely typed: tests assert on its fields. */
export type Msg = Record<string, unknown> & { type: string };

/** How a socket ended. */
export interface Closed {
  code: number;
  reason: string;
}

/** What a {@link WsTestClient} sends in its `hello`. */
export interface HelloOptions {
  token?: string;
  /** `hello.commands` (default none). */
  commands?: unknown[];
  /** `hello.tools`, sent only when given. */
  tools?: unknown[];
}

/** Options of {@link WsTestClient}. */
export interface WsTestClientOptions {
  /** Named in timeout messages (e.g. the client id). */
  label?: string;
  /** Keep at most this many messages (the oldest tenth goes first; default: all). For long runs. */
  maxMessages?: number;
}

/**
 * A real `ws` client of the orchestrator's WebSocket endpoint for tests and simulations: records every message it
 * receives (reassembling `chunk`s), answers `ping` like the Lua client, waits for messages matching a predicate, and
 * remembers how its socket closed. It can open a new socket after the previous one closed (a reconnect); messages of
 * every socket stay in one log. Subclasses react to messages in {@link WsTestClient.onMessage}.
 *
 * ```ts
 * const c = new WsTestClient();
 * await c.open('http://127.0.0.1:7420');
 * await c.hello('turtle-1', { commands: [{ name: 'fs_list' }] });
 * c.send({ type: 'ping', id: 'p1' });
 * await c.waitFor('pong', { id: 'p1' });
 * ```
 */
export class WsTestClient {
  /** The current socket (the last one opened). */
  ws: WebSocket | undefined;
  /** Every message received, in order (bounded by `maxMessages`). */
  readonly messages: Msg[] = [];
  /** How the current socket closed, once it has. */
  closed: Closed | undefined;
  private waiters: Array<{ pred: (m: Msg) => boolean; resolve: (m: Msg) => void }> = [];
  private closeWaiters: Array<(c: Closed) => void> = [];
  private readonly chunks = new Map<string, string[]>();

  constructor(private readonly options: WsTestClientOptions = {}) {}

  /** Open a socket to the server at `url` (`http://host:port`; `/ws` is appended) and wait until it is open. */
  async open(url: string, timeoutMs = 10_000): Promise<void> {
    this.closed = undefined;
    this.chunks.clear();
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', { maxPayload: 64 * 1024 * 1024 });
    this.ws = ws;
    ws.on('message', (data: Buffer) => this.onFrame(data.toString('utf8')));
    ws.on('error', () => {});
    ws.on('close', (code: number, reason: Buffer) => {
      if (this.ws !== ws) return;
      const closed = { code, reason: reason.toString('utf8') };
      this.closed = closed;
      for (const w of this.closeWaiters.splice(0)) w(closed);
    });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${this.who}connect timed out`)), timeoutMs);
      ws.once('open', () => {
        clearTimeout(t);
        resolve();
      });
      ws.once('error', (e) => {
        clearTimeout(t);
        reject(e);
      });
    });
  }

  /** Send `hello`; resolves with the `welcome`, rejects with the `error` when the server refuses it. */
  async hello(clientId: string, opts: HelloOptions = {}, timeoutMs = 10_000): Promise<Msg> {
    const from = this.messages.length;
    this.send({
      type: 'hello',
      client_id: clientId,
      protocol_version: 1,
      commands: opts.commands ?? [],
      ...(opts.token !== undefined ? { token: opts.token } : {}),
      ...(opts.tools !== undefined ? { tools: opts.tools } : {}),
    });
    const first = await this.next((m) => m.type === 'welcome' || m.type === 'error', timeoutMs, from);
    if (first.type !== 'welcome') throw new Error(`${this.who}hello refused: ${JSON.stringify(first)}`);
    return first;
  }

  /** Whether the current socket is open. */
  get isOpen(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Send a message (an object as JSON, a string as it is). Dropped when the socket is not open. */
  send(msg: unknown): void {
    if (!this.isOpen) return;
    this.ws?.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  }

  /** The first message matching `pred` from index `from` of {@link messages} on, already received or to come. */
  next(pred: (m: Msg) => boolean, timeoutMs = 10_000, from = 0): Promise<Msg> {
    const seen = this.messages.slice(from).find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        const tail = this.messages
          .slice(-20)
          .map((m) => JSON.stringify(m).slice(0, 240))
          .join('\n');
        reject(new Error(`${this.who}timed out waiting for a message; last received:\n${tail}`));
      }, timeoutMs);
      const done = (m: Msg): void => {
        clearTimeout(timer);
        resolve(m);
      };
      this.waiters.push({ pred, resolve: done });
    });
  }

  /** A message of `type` whose fields equal `fields`, including ones already received. */
  waitFor(type: string, fields: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<Msg> {
    return this.next(matching(type, fields), timeoutMs);
  }

  /** A message of `type` whose fields equal `fields`, received from now on. */
  nextNew(type: string, fields: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<Msg> {
    return this.next(matching(type, fields), timeoutMs, this.messages.length);
  }

  /** Resolves when the current socket has closed. */
  whenClosed(timeoutMs = 10_000): Promise<Closed> {
    if (this.closed) return Promise.resolve(this.closed);
    return new Promise((resolve, reject) => {
      const done = (c: Closed): void => {
        clearTimeout(timer);
        resolve(c);
      };
      const timer = setTimeout(() => {
        this.closeWaiters = this.closeWaiters.filter((w) => w !== done);
        reject(new Error(`${this.who}socket did not close`));
      }, timeoutMs);
      this.closeWaiters.push(done);
    });
  }

  /** Close politely. */
  close(): void {
    this.ws?.close();
  }

  /** Abort the socket without a closing handshake (a crashed computer). */
  terminate(): void {
    this.ws?.terminate();
  }

  /** Called for every message (chunks reassembled), before it is recorded and waiters see it. */
  protected onMessage(_msg: Msg): void {}

  private get who(): string {
    return this.options.label !== undefined ? `${this.options.label}: ` : '';
  }

  private onFrame(text: string): void {
    let msg: Msg;
    try {
      msg = JSON.parse(text) as Msg;
    } catch {
      msg = { type: '__invalid_json__', text };
    }
    if (msg.type === 'chunk') {
      const id = String(msg.chunk_id);
      const parts = this.chunks.get(id) ?? [];
      parts[Number(msg.index)] = String(msg.data);
      this.chunks.set(id, parts);
      if (parts.filter((p) => p !== undefined).length === Number(msg.count)) {
        this.chunks.delete(id);
        this.deliver(JSON.parse(parts.join('')) as Msg);
      }
      return;
    }
    this.deliver(msg);
  }

  private deliver(msg: Msg): void {
    if (msg.type === 'ping') this.send({ type: 'pong', ...(msg.id !== undefined ? { id: msg.id } : {}) });
    this.onMessage(msg);
    this.messages.push(msg);
    const max = this.options.maxMessages;
    if (max !== undefined && this.messages.length > max)
      this.messages.splice(0, Math.max(1, Math.floor(max / 10)));
    for (const w of [...this.waiters]) {
      if (w.pred(msg)) {
        this.waiters = this.waiters.filter((x) => x !== w);
        w.resolve(msg);
      }
    }
  }
}

function matching(type: string, fields: Record<string, unknown>): (m: Msg) => boolean {
  return (m) => m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v);
}
