/**
 * A real `ws` client for tests: records every message (reassembling `chunk`s), waits for messages matching a
 * predicate, and remembers how the socket closed.
 */
import WebSocket from 'ws';

/** A received protocol message (loosely typed: tests assert on fields). */
export type Msg = Record<string, unknown> & { type: string };

/** How the socket ended. */
export interface Closed {
  code: number;
  reason: string;
}

/** Standard commands a CC agent host registers, with simple schemas. */
export const CC_COMMANDS = [
  {
    name: 'fs_write',
    description: 'Write a file',
    args_schema: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
  {
    name: 'run_program',
    description: 'Run a program',
    args_schema: {
      type: 'object',
      properties: { path: { type: 'string' }, args: { type: 'array', items: { type: 'string' } } },
      required: ['path'],
    },
  },
  { name: 'fs_list', args_schema: { type: 'object', properties: { path: { type: 'string' } } } },
];

export class TestClient {
  readonly messages: Msg[] = [];
  readonly ws: WebSocket;
  closed: Closed | undefined;
  private waiters: Array<{ pred: (m: Msg) => boolean; resolve: (m: Msg) => void }> = [];
  private closeWaiters: Array<(c: Closed) => void> = [];
  private chunks = new Map<string, string[]>();
  readonly opened: Promise<void>;

  constructor(url: string) {
    this.ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', { maxPayload: 64 * 1024 * 1024 });
    this.opened = new Promise((resolve, reject) => {
      this.ws.once('open', () => resolve());
      this.ws.once('error', reject);
    });
    this.ws.on('message', (data: Buffer) => this.onFrame(data.toString('utf8')));
    this.ws.on('error', () => {});
    this.ws.on('close', (code: number, reason: Buffer) => {
      this.closed = { code, reason: reason.toString('utf8') };
      for (const w of this.closeWaiters) w(this.closed);
      this.closeWaiters = [];
    });
  }

  /** Open a client and complete the handshake; resolves with the `welcome`. */
  static async connect(
    url: string,
    clientId: string,
    opts: { token?: string; commands?: unknown[]; tools?: unknown[] } = {},
  ): Promise<TestClient> {
    const c = new TestClient(url);
    await c.opened;
    c.send({
      type: 'hello',
      client_id: clientId,
      protocol_version: 1,
      commands: opts.commands ?? CC_COMMANDS,
      ...(opts.token !== undefined ? { token: opts.token } : {}),
      ...(opts.tools !== undefined ? { tools: opts.tools } : {}),
    });
    const first = await c.next((m) => m.type === 'welcome' || m.type === 'error');
    if (first.type !== 'welcome') throw new Error(`hello refused: ${JSON.stringify(first)}`);
    return c;
  }

  private onFrame(text: string): void {
    const msg = JSON.parse(text) as Msg;
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
    // Answer heartbeats like the Lua client does.
    if (msg.type === 'ping') this.send({ type: 'pong', ...(msg.id !== undefined ? { id: msg.id } : {}) });
    this.messages.push(msg);
    for (const w of [...this.waiters]) {
      if (w.pred(msg)) {
        this.waiters = this.waiters.filter((x) => x !== w);
        w.resolve(msg);
      }
    }
  }

  send(msg: unknown): void {
    this.ws.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  }

  /** The first message (already received or future) matching `pred`, after index `from`. */
  next(pred: (m: Msg) => boolean, timeoutMs = 10_000, from = 0): Promise<Msg> {
    const seen = this.messages.slice(from).find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        reject(
          new Error(
            `timed out waiting for a message; got: ${this.messages
              .map((m) => JSON.stringify(m).slice(0, 200))
              .join('\n')}`,
          ),
        );
      }, timeoutMs);
      const done = (m: Msg): void => {
        clearTimeout(timer);
        resolve(m);
      };
      this.waiters.push({ pred, resolve: done });
    });
  }

  /** Wait for a message of `type` (optionally with matching fields) received after the current point. */
  nextNew(type: string, fields: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<Msg> {
    return this.next(
      (m) => m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v),
      timeoutMs,
      this.messages.length,
    );
  }

  /** Wait for a message of `type` (optionally with matching fields), including ones already received. */
  waitFor(type: string, fields: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<Msg> {
    return this.next(
      (m) => m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v),
      timeoutMs,
    );
  }

  /** Resolves when the socket closes. */
  whenClosed(timeoutMs = 10_000): Promise<Closed> {
    if (this.closed) return Promise.resolve(this.closed);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error('socket did not close')), timeoutMs);
      this.closeWaiters.push((c) => {
        clearTimeout(timer);
        resolve(c);
      });
    });
  }

  close(): void {
    this.ws.close();
  }

  terminate(): void {
    this.ws.terminate();
  }
}
