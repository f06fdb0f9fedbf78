/**
 * A simulated CC computer over a real `ws` socket, behaving like the Lua agent host where it matters for
 * resilience: it answers heartbeats, executes each `call_id` at most once (a repeated `call_id` is answered from the
 * stored result, as the Lua client does from its durable call state), keeps every result until its `command_ack`
 * and re-sends unacknowledged results and unanswered `create_task`s after a reconnect. Everything it saw is recorded
 * so a test can compare it with the server's database.
 */
import WebSocket from 'ws';

/** A received protocol message (loosely typed: tests assert on fields). */
export type Msg = Record<string, unknown> & { type: string };

/** One command execution on this simulated computer. */
export interface Execution {
  callId: string;
  taskId: string;
  command: string;
  args: unknown;
  result: unknown;
}

/** A command the simulated client registers. */
export const NOOP_COMMANDS = [
  { name: 'fs_write', args_schema: { type: 'object', required: ['path'] } },
  { name: 'noop', args_schema: { type: 'object' } },
];

/** Options of {@link SimClient}. */
export interface SimClientOptions {
  token?: string;
  commands?: unknown[];
  /** Answer command_calls automatically (default true). */
  autoAnswer?: boolean;
  /** Result of an execution (default `{ ok: true, echo: args }`). */
  resultFor?: (call: Msg) => unknown;
  /** Delay before answering a fresh call (ms; default 0 = at once). */
  answerDelayMs?: () => number;
}

/** See the module comment. */
export class SimClient {
  ws: WebSocket | undefined;
  readonly messages: Msg[] = [];
  /** Executions in order (each call_id at most once). */
  readonly executions: Execution[] = [];
  /** call_id → result sent (kept forever: the test compares them with the database). */
  readonly results = new Map<string, { taskId: string; result: unknown }>();
  /** call_ids whose result got a `command_ack`. */
  readonly acked = new Set<string>();
  /** call_ids received in a `command_call` (with how many times). */
  readonly callsSeen = new Map<string, number>();
  /** request_id → create_task message, until `task_created` arrives. */
  readonly pendingCreates = new Map<string, Msg>();
  /** request_id → task_id for acknowledged creations. */
  readonly created = new Map<string, string>();
  /** Close of the current socket, if closed. */
  closed: { code: number; reason: string } | undefined;
  private waiters: Array<{ pred: (m: Msg) => boolean; resolve: (m: Msg) => void }> = [];
  private chunks = new Map<string, string[]>();
  private readonly autoAnswer: boolean;

  constructor(
    readonly clientId: string,
    private readonly opts: SimClientOptions = {},
  ) {
    this.autoAnswer = opts.autoAnswer ?? true;
  }

  /** Connect (or reconnect) and complete the handshake; resolves with the `welcome`, rejects on a refusal. */
  async connect(url: string, timeoutMs = 10_000): Promise<Msg> {
    this.closed = undefined;
    const ws = new WebSocket(url.replace(/^http/, 'ws') + '/ws', { maxPayload: 64 * 1024 * 1024 });
    this.ws = ws;
    ws.on('message', (data: Buffer) => this.onFrame(data.toString('utf8')));
    ws.on('error', () => {});
    ws.on('close', (code: number, reason: Buffer) => {
      if (this.ws === ws) this.closed = { code, reason: reason.toString('utf8') };
    });
    await new Promise<void>((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`${this.clientId}: connect timed out`)), timeoutMs);
      ws.once('open', () => {
        clearTimeout(t);
        resolve();
      });
      ws.once('error', (e) => {
        clearTimeout(t);
        reject(e);
      });
    });
    const from = this.messages.length;
    this.send({
      type: 'hello',
      client_id: this.clientId,
      protocol_version: 1,
      commands: this.opts.commands ?? NOOP_COMMANDS,
      ...(this.opts.token !== undefined ? { token: this.opts.token } : {}),
    });
    const first = await this.next((m) => m.type === 'welcome' || m.type === 'error', timeoutMs, from);
    if (first.type !== 'welcome')
      throw new Error(`${this.clientId}: hello refused: ${JSON.stringify(first)}`);
    // Like the Lua client: results not yet acknowledged, and creations not yet answered, are sent again.
    for (const [callId, r] of this.results) {
      if (!this.acked.has(callId)) this.sendResult(callId, r.taskId, r.result);
    }
    for (const m of this.pendingCreates.values()) this.send(m);
    return first;
  }

  /** Whether the socket is open. */
  get open(): boolean {
    return this.ws?.readyState === WebSocket.OPEN;
  }

  /** Send a message (object → JSON; a string is sent as is). Silently dropped when the socket is not open. */
  send(msg: unknown): void {
    if (!this.open) return;
    this.ws?.send(typeof msg === 'string' ? msg : JSON.stringify(msg));
  }

  /** Ask for a task bound to this client; re-sent after a reconnect until `task_created` arrives. */
  createTask(requestId: string, prompt: string, kind = 'general_agent'): void {
    const m: Msg = {
      type: 'create_task',
      request_id: requestId,
      task_kind: kind,
      client_id: this.clientId,
      prompt,
      allowed_commands: [],
    };
    this.pendingCreates.set(requestId, m);
    this.send(m);
  }

  /** Answer a call by hand (manual mode), recording it as an execution. */
  answer(call: Msg, result: unknown = { ok: true }): void {
    this.execute(call, result);
  }

  /** Send every result not yet acknowledged again (what the Lua client does on a timer and after reconnecting). */
  resendUnacked(): void {
    for (const [callId, r] of this.results)
      if (!this.acked.has(callId)) this.sendResult(callId, r.taskId, r.result);
  }

  /** Abort the socket without a closing handshake (a crashed computer). */
  kill(): void {
    this.ws?.terminate();
  }

  /** Close politely. */
  close(): void {
    this.ws?.close();
  }

  /** Resolves when the current socket has closed. */
  async whenClosed(timeoutMs = 10_000): Promise<{ code: number; reason: string }> {
    const end = Date.now() + timeoutMs;
    while (!this.closed) {
      if (Date.now() > end) throw new Error(`${this.clientId}: socket did not close`);
      await new Promise((r) => setTimeout(r, 10));
    }
    return this.closed;
  }

  /** The first message matching `pred` from index `from` on (already received or future). */
  next(pred: (m: Msg) => boolean, timeoutMs = 10_000, from = 0): Promise<Msg> {
    const seen = this.messages.slice(from).find(pred);
    if (seen) return Promise.resolve(seen);
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w.resolve !== done);
        const tail = this.messages
          .slice(-15)
          .map((m) => JSON.stringify(m).slice(0, 240))
          .join('\n');
        reject(new Error(`${this.clientId}: timed out waiting for a message; last received:\n${tail}`));
      }, timeoutMs);
      const done = (m: Msg): void => {
        clearTimeout(timer);
        resolve(m);
      };
      this.waiters.push({ pred, resolve: done });
    });
  }

  /** A message of `type` with matching fields, including ones already received. */
  waitFor(type: string, fields: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<Msg> {
    return this.next(
      (m) => m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v),
      timeoutMs,
    );
  }

  /** A message of `type` with matching fields received after now. */
  nextNew(type: string, fields: Record<string, unknown> = {}, timeoutMs = 10_000): Promise<Msg> {
    return this.next(
      (m) => m.type === type && Object.entries(fields).every(([k, v]) => m[k] === v),
      timeoutMs,
      this.messages.length,
    );
  }

  // ------------------------------------------------------------------------------------------------

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
    if (msg.type === 'task_created') {
      const rid = String(msg.request_id);
      this.pendingCreates.delete(rid);
      this.created.set(rid, String(msg.task_id));
    }
    if (msg.type === 'command_ack') this.acked.add(String(msg.call_id));
    if (msg.type === 'command_call') {
      const callId = String(msg.call_id);
      this.callsSeen.set(callId, (this.callsSeen.get(callId) ?? 0) + 1);
      const stored = this.results.get(callId);
      // A repeated call_id is answered from the stored result: never executed twice.
      if (stored) this.sendResult(callId, stored.taskId, stored.result);
      else if (this.autoAnswer) {
        const run = (): void => this.execute(msg, this.opts.resultFor?.(msg) ?? { ok: true, echo: msg.args });
        const delay = this.opts.answerDelayMs?.() ?? 0;
        if (delay > 0) setTimeout(run, delay);
        else run();
      }
    }
    this.messages.push(msg);
    // Bounded memory in long runs: old heartbeats are not interesting.
    if (this.messages.length > 50_000) this.messages.splice(0, 10_000);
    for (const w of [...this.waiters]) {
      if (w.pred(msg)) {
        this.waiters = this.waiters.filter((x) => x !== w);
        w.resolve(msg);
      }
    }
  }

  private execute(call: Msg, result: unknown): void {
    const callId = String(call.call_id);
    const taskId = String(call.task_id);
    if (this.results.has(callId)) {
      const r = this.results.get(callId) as { taskId: string; result: unknown };
      this.sendResult(callId, r.taskId, r.result);
      return;
    }
    this.executions.push({ callId, taskId, command: String(call.command), args: call.args, result });
    this.results.set(callId, { taskId, result });
    this.sendResult(callId, taskId, result);
  }

  private sendResult(callId: string, taskId: string, result: unknown): void {
    this.send({ type: 'command_result', task_id: taskId, call_id: callId, ok: true, result });
  }
}
