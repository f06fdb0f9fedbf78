/**
 * A simulated CC computer over a real `ws` socket, behaving like the Lua agent host where it matters for
 * resilience: it answers heartbeats, executes each `call_id` at most once (a repeated `call_id` is answered from the
 * stored result, as the Lua client does from its durable call state), keeps every result until its `command_ack`
 * and re-sends unacknowledged results and unanswered `create_task`s after a reconnect. Everything it saw is recorded
 * so a test can compare it with the server's database. The socket, message log and waiting come from the
 * orchestrator's `WsTestClient` (`cc-orchestrator/testing`), shared with the orchestrator's own tests.
 */
import { WsTestClient, type Msg } from 'cc-orchestrator/testing';

export type { Msg } from 'cc-orchestrator/testing';

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
export class SimClient extends WsTestClient {
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
  private readonly autoAnswer: boolean;

  constructor(
    readonly clientId: string,
    private readonly opts: SimClientOptions = {},
  ) {
    // Bounded memory in long runs: old heartbeats are not interesting.
    super({ label: clientId, maxMessages: 50_000 });
    this.autoAnswer = opts.autoAnswer ?? true;
  }

  /** Connect (or reconnect) and complete the handshake; resolves with the `welcome`, rejects on a refusal. */
  async connect(url: string, timeoutMs = 10_000): Promise<Msg> {
    await this.open(url, timeoutMs);
    const welcome = await this.hello(
      this.clientId,
      {
        commands: this.opts.commands ?? NOOP_COMMANDS,
        ...(this.opts.token !== undefined ? { token: this.opts.token } : {}),
      },
      timeoutMs,
    );
    // Like the Lua client: results not yet acknowledged, and creations not yet answered, are sent again.
    this.resendUnacked();
    for (const m of this.pendingCreates.values()) this.send(m);
    return welcome;
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
    this.terminate();
  }

  // ------------------------------------------------------------------------------------------------

  protected override onMessage(msg: Msg): void {
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
