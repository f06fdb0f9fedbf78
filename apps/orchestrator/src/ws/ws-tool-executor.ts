import {
  isEngineError,
  type Clock,
  type CommandDescriptor,
  type CommandOutcome,
  type Logger,
  type TimerHandle,
  type ToolCallRequest,
  type ToolExecutor,
} from '@ccagent/engine';
import type { ClientEntry, ClientRegistry } from '../clients/client-registry.js';
import { toCommandCall } from '../wire.js';
import type { ArgsValidator } from './args-validator.js';
import type { Connection } from './connection.js';

/** A command call handed out by the engine and not closed yet: where it goes, and where it went. */
interface PendingCall {
  request: ToolCallRequest;
  /**
   * Client the call is bound to: the task's client, or the one chosen for (or, after a restart, recorded for) a task
   * bound to none. Set with `bound` false only while `storeOp` binds it.
   */
  target: string | undefined;
  /**
   * `target` is durable, so the call may be sent to it: the task's own client, or the client the engine bound this
   * call to (`ToolCallRequest.bind`, now or before a restart).
   */
  bound: boolean;
  /**
   * The engine is binding the call to the client chosen for it, or the confirmation check is reading the store: the
   * call is neither sent nor routed elsewhere until that ends. Never rejects.
   */
  storeOp: Promise<void> | undefined;
  /** Retry of a failed recording (backoff in `retryMs`). */
  retryTimer: TimerHandle | undefined;
  retryMs: number;
  /** Client the call was last sent to (a result is accepted only from it). */
  sentTo: string | undefined;
  sentAt: number | undefined;
  /** Serial of the connection it was sent on (a repeated `hello` on the same socket does not re-send it). */
  sentConn: number | undefined;
  settle: (o: CommandOutcome) => void;
}

/** Options of {@link WsToolExecutor}. */
export interface WsToolExecutorOptions {
  registry: ClientRegistry;
  validator: ArgsValidator;
  clock: Clock;
  logger: Logger;
  /** After the grace period: fail the call (`fail`) or keep it pending until the client returns (`wait`). */
  disconnectPolicy: 'fail' | 'wait';
  /** Reconnect grace period, for messages (ms). */
  graceMs: number;
  /**
   * The last check of a destructive call before it leaves (`confirmationCheck` of the engine package with the task
   * kinds' `confirm` rules): a call it refuses fails with `confirmation_required` and never reaches the computer,
   * whatever the engine did. Undefined when no kind has a rule.
   */
  confirmation?: (call: ToolCallRequest) => Promise<string | undefined>;
  /** Round trip of a call whose client's result was recorded (ms, from the last send), for metrics. */
  onRoundTrip?: (command: string, ms: number) => void;
}

/** Backoff of a failed recording of the client a call goes to, ms. */
const STORE_RETRY_MIN_MS = 50;
const STORE_RETRY_MAX_MS = 2000;

/**
 * The engine's {@link ToolExecutor} for CC clients: routing and sockets only. Sends `command_call` over the client's
 * WebSocket; the client's `command_result` goes from the gateway to `Engine.submitResult` (task-requests.ts), which
 * judges and commits it and says when to send `command_ack`; this executor settles the call when the engine has
 * recorded it (`ToolCallRequest.recorded`). Its own outcomes are the failures it decides: no client, a client gone
 * past its grace period, an unregistered command, arguments refused, an unconfirmed destructive call. Routes to the
 * task's client, or to a connected client that registered the command when the task names none; checks arguments
 * against the command's JSON Schema before sending; keeps calls of a disconnected client for the grace period and
 * re-sends them with the same `call_id`; tells the client to drop a call the engine aborted (`command_cancel`).
 *
 * The client chosen for a call of a task bound to no client is bound by the engine (`ToolCallRequest.bind`, durable)
 * before the call is first sent, so that after a restart the same `call_id` goes to that client only: another client that
 * registered the command and connects first never gets it (it could run a command the first had already run). From
 * then on the call is treated like a bound task's call (grace period, `disconnectPolicy`); if the recorded client
 * does not come back it fails with `client_disconnected`, it is never handed to another client.
 */
export class WsToolExecutor implements ToolExecutor {
  private readonly pending = new Map<string, PendingCall>();
  private startupTimer: TimerHandle | undefined;

  constructor(private readonly opts: WsToolExecutorOptions) {
    const left = opts.registry.startupGraceLeft();
    if (left > 0) this.startupTimer = opts.clock.setTimeout(() => this.startupGraceOver(), left);
    opts.registry.on('online', (entry) => this.clientOnline(entry));
    opts.registry.on('graceExpired', (entry) => this.clientGraceExpired(entry));
  }

  /** Number of calls waiting for a result. */
  get pendingCount(): number {
    return this.pending.size;
  }

  /** The task of an open call last sent to `clientId`, or undefined (not open, or not that client's). */
  taskOfCall(callId: string, clientId: string): string | undefined {
    const p = this.pending.get(callId);
    return p !== undefined && p.sentTo === clientId ? p.request.taskId : undefined;
  }

  /**
   * Commands of the task's client; for a task bound to none, of every client a call could be routed to: connected,
   * or within its grace period (after a disconnect, or since the server started for a client known from before the
   * restart). A call of such a command waits for one of them (see `route`), so a step taken just after a restart,
   * before the computers are back, still offers their tools. Connected clients' descriptors come first.
   */
  listCommands(clientId: string | null): CommandDescriptor[] {
    const reg = this.opts.registry;
    if (clientId !== null) return [...(reg.get(clientId)?.commands.values() ?? [])];
    const seen = new Map<string, CommandDescriptor>();
    for (const live of [true, false]) {
      for (const e of reg.all()) {
        if ((e.connection !== undefined) !== live || (!live && !e.inGrace)) continue;
        for (const c of e.commands.values()) if (!seen.has(c.name)) seen.set(c.name, c);
      }
    }
    return [...seen.values()];
  }

  execute(call: ToolCallRequest): Promise<CommandOutcome> {
    if (call.signal.aborted) return Promise.resolve(aborted());
    return new Promise<CommandOutcome>((resolve) => {
      const p: PendingCall = {
        request: call,
        // An unbound task's call re-dispatched after a restart carries the client it was recorded as sent to.
        target: call.clientId ?? call.sentTo,
        bound: call.clientId !== null || call.sentTo !== undefined,
        storeOp: undefined,
        retryTimer: undefined,
        retryMs: 0,
        sentTo: undefined,
        sentAt: undefined,
        sentConn: undefined,
        settle: () => {},
      };
      let done = false;
      const onAbort = (): void => {
        this.cancelOnClient(p, call.signal.reason);
        finish(aborted());
      };
      const finish = (o: CommandOutcome): void => {
        if (done) return;
        done = true;
        call.signal.removeEventListener('abort', onAbort);
        if (p.retryTimer !== undefined) this.opts.clock.clearTimeout(p.retryTimer);
        p.retryTimer = undefined;
        if (this.pending.get(call.callId) === p) this.pending.delete(call.callId);
        resolve(o);
      };
      p.settle = finish;
      call.signal.addEventListener('abort', onAbort, { once: true });
      // The client's result was judged and recorded by the engine (Engine.submitResult): the call is closed here.
      void call.recorded?.then((o) => {
        if (done) return;
        if (p.sentAt !== undefined) this.opts.onRoundTrip?.(call.command, this.opts.clock.now() - p.sentAt);
        finish(o);
      });
      this.pending.set(call.callId, p);
      if (this.opts.confirmation) this.checkConfirmed(p, this.opts.confirmation);
      else this.route(p);
    });
  }

  /**
   * The last check before a destructive call leaves: if its task kind's rule flags it, it must have been confirmed
   * (its question answered yes, read from the store). The call is neither sent nor routed while this runs (`storeOp`).
   */
  private checkConfirmed(
    p: PendingCall,
    check: (call: ToolCallRequest) => Promise<string | undefined>,
  ): void {
    const { taskId, callId, command } = p.request;
    p.storeOp = check(p.request).then(
      (refused) => {
        p.storeOp = undefined;
        if (!this.isOpen(p)) return;
        if (refused === undefined) {
          this.route(p);
          return;
        }
        this.opts.logger.warn({ task_id: taskId, call_id: callId, command }, 'unconfirmed call not sent');
        p.settle(failure('confirmation_required', refused));
      },
      (err: unknown) => {
        p.storeOp = undefined;
        if (!this.isOpen(p)) return;
        this.opts.logger.warn(
          { err, task_id: taskId, call_id: callId },
          'confirmation check failed; not sent',
        );
        p.settle(
          failure('confirmation_required', `could not check the confirmation of "${command}"; not sent`),
        );
      },
    );
  }

  /**
   * The engine stopped waiting for a call that was sent (its task was cancelled or failed, or the call timed out):
   * tell the client to stop running it (`command_cancel`). Not on engine stop: the call is re-sent after a restart.
   */
  private cancelOnClient(p: PendingCall, reason: unknown): void {
    if (p.sentTo === undefined) return;
    const why = cancelReason(reason);
    if (why === undefined) return;
    const conn = this.opts.registry.get(p.sentTo)?.connection;
    const { taskId, callId } = p.request;
    this.opts.logger.info(
      { task_id: taskId, call_id: callId, client_id: p.sentTo, reason: why },
      'call cancelled',
    );
    if (conn?.send({ type: 'command_cancel', task_id: taskId, call_id: callId, reason: why })) {
      // The client answers the cancel once (a `cancelled` error): the engine acknowledges it like a repeated result,
      // recorded nowhere (the call is already closed), so the client neither re-sends it nor reports a refusal.
      p.request.cancelledOn?.(p.sentTo);
    }
  }

  /** A client was welcomed (registry `online`): send it every call waiting for it (same `call_id`), and unbound calls it can run. */
  clientOnline(entry: ClientEntry): void {
    const serial = entry.connection?.serial;
    for (const p of [...this.pending.values()]) {
      if (p.storeOp || (p.sentTo === entry.clientId && p.sentConn === serial)) continue;
      if (p.target === entry.clientId) this.send(p, entry);
      else if (p.target === undefined && entry.commands.has(p.request.command)) {
        if (p.retryTimer !== undefined) this.opts.clock.clearTimeout(p.retryTimer);
        p.retryTimer = undefined;
        p.target = entry.clientId;
        this.recordClient(p);
      }
    }
  }

  /** A client stayed away past the grace period (registry `graceExpired`): under the `fail` policy its calls fail with a clear reason. */
  clientGraceExpired(entry: ClientEntry): void {
    if (this.opts.disconnectPolicy !== 'fail') return;
    const since = entry.offlineSince !== undefined ? new Date(entry.offlineSince).toISOString() : 'startup';
    for (const p of [...this.pending.values()]) {
      if (p.storeOp) continue;
      if (p.target === undefined) {
        const others = this.opts.registry.clientsOffering(p.request.command);
        if (this.opts.registry.startupGraceLeft() === 0 && !others.some((e) => e.connection || e.inGrace)) {
          p.settle(failure('no_client', `no connected client offers the command "${p.request.command}"`));
        }
        continue;
      }
      if (p.target !== entry.clientId) continue;
      this.log(p, 'client did not come back within the grace period');
      p.settle(
        failure(
          'client_disconnected',
          `client "${entry.clientId}" went away (${since}) and did not reconnect within ${this.opts.graceMs} ms` +
            notReRouted(p),
        ),
      );
    }
  }

  /** Stop the startup-grace timer and store retries (shutdown). */
  dispose(): void {
    if (this.startupTimer !== undefined) this.opts.clock.clearTimeout(this.startupTimer);
    for (const p of this.pending.values()) {
      if (p.retryTimer !== undefined) this.opts.clock.clearTimeout(p.retryTimer);
      p.retryTimer = undefined;
    }
  }

  // ------------------------------------------------------------------------------------------------

  /** Find the client for a fresh (or re-dispatched) call and send it, wait for the client, or fail now. */
  private route(p: PendingCall): void {
    if (p.storeOp) return; // routed when it ends
    const reg = this.opts.registry;
    const { command } = p.request;
    if (p.target === undefined) {
      const candidates = reg.clientsOffering(command);
      const live = candidates.find((e) => e.connection !== undefined);
      if (live) {
        p.target = live.clientId;
        this.recordClient(p);
        return;
      }
      if (reg.startupGraceLeft() > 0 || candidates.some((e) => e.inGrace)) return; // wait for one to connect
      p.settle(failure('no_client', `no connected client offers the command "${command}"`));
      return;
    }
    const entry = reg.get(p.target);
    if (entry?.connection) {
      this.send(p, entry);
      return;
    }
    if (reg.mayComeBack(p.target) || this.opts.disconnectPolicy === 'wait') return; // sent when it is back
    p.settle(failure('client_disconnected', `client "${p.target}" is not connected${notReRouted(p)}`));
  }

  /**
   * Bind the call of an unbound task to the client chosen for it (`p.target`) through the engine before anything is
   * sent to it, then route the call as a bound one. If the binding fails (disk full, locked), nothing is sent: the
   * call stays pending, free for any client, and the binding is retried with backoff (or sooner, when a client
   * offering the command connects).
   */
  private recordClient(p: PendingCall): void {
    const { taskId, callId, bind } = p.request;
    const chosen = p.target as string;
    if (!bind) {
      p.target = undefined;
      p.settle(
        failure('no_client', `call ${callId} cannot be bound to a client (handed over without the engine)`),
      );
      return;
    }
    p.storeOp = bind(chosen).then(
      (bound) => {
        p.storeOp = undefined;
        if (!this.isOpen(p)) return;
        p.target = bound; // the first binding holds
        p.bound = true;
        p.retryMs = 0;
        this.route(p);
      },
      (err: unknown) => {
        p.storeOp = undefined;
        if (!this.isOpen(p)) return;
        p.target = undefined;
        if (
          isEngineError(err, 'call_closed') ||
          isEngineError(err, 'unknown_call') ||
          isEngineError(err, 'stopped')
        ) {
          // Closed meanwhile (timed out, cancelled) or the engine stops: nothing to send; the engine owns its outcome.
          p.settle(failure('aborted', `call ${callId} closed before it was sent`));
          return;
        }
        this.opts.logger.warn(
          { err, task_id: taskId, call_id: callId, client_id: chosen },
          'command_call not sent: the client it goes to could not be recorded; retrying',
        );
        this.retryLater(p);
      },
    );
  }

  private retryLater(p: PendingCall): void {
    p.retryMs = Math.min(STORE_RETRY_MAX_MS, p.retryMs === 0 ? STORE_RETRY_MIN_MS : p.retryMs * 2);
    p.retryTimer = this.opts.clock.setTimeout(() => {
      p.retryTimer = undefined;
      if (this.isOpen(p) && !p.storeOp) this.route(p);
    }, p.retryMs);
  }

  /** The call is still waiting here (not closed). */
  private isOpen(p: PendingCall): boolean {
    return this.pending.get(p.request.callId) === p;
  }

  private send(p: PendingCall, entry: ClientEntry): void {
    const conn = entry.connection;
    if (!conn || !p.bound) return;
    const { request } = p;
    const descriptor = entry.commands.get(request.command);
    if (!descriptor) {
      const offered = [...entry.commands.keys()].join(', ') || 'none';
      p.settle(
        failure(
          'unknown_command',
          `client "${entry.clientId}" has not registered the command "${request.command}" (it offers: ${offered})`,
        ),
      );
      return;
    }
    if (descriptor.argsSchema !== undefined) {
      const check = this.opts.validator.validate(descriptor.argsSchema, request.args);
      if (!check.ok) {
        p.settle(
          failure(
            'invalid_args',
            `arguments of "${request.command}" do not match its schema: ${check.message}`,
          ),
        );
        return;
      }
    }
    const again = p.sentTo !== undefined;
    p.sentTo = entry.clientId;
    p.sentAt = this.opts.clock.now();
    p.sentConn = conn.serial;
    if (again) {
      // A re-send of the same call (the client reconnected): counted in the call's dispatch_count first, so the
      // count on disk never says fewer deliveries than the client saw. Sent even if counting fails: the call row
      // itself is durable; the count is for people.
      void (request.recordRedelivery?.() ?? Promise.resolve())
        .catch((err: unknown) =>
          this.opts.logger.warn({ err, call_id: request.callId }, 'redelivery not counted'),
        )
        .then(() => {
          if (!this.isOpen(p) || p.sentConn !== conn.serial) return;
          this.transmit(p, conn, entry.clientId);
        });
      return;
    }
    this.transmit(p, conn, entry.clientId);
  }

  private transmit(p: PendingCall, conn: Connection, clientId: string): void {
    const { request } = p;
    if (!conn.send(toCommandCall(request))) {
      // The socket is closing (slow consumer); the call is re-sent when the client reconnects.
      this.log(p, 'command_call not sent: socket closing');
      return;
    }
    // Hot path: build the log record only when debug logging is on (pino's isLevelEnabled).
    const logger = this.opts.logger as Logger & { isLevelEnabled?: (level: string) => boolean };
    if (logger.isLevelEnabled?.('debug') === false) return;
    logger.debug(
      {
        task_id: request.taskId,
        call_id: request.callId,
        client_id: clientId,
        attempt: request.attempt,
      },
      'command_call sent',
    );
  }

  private startupGraceOver(): void {
    this.startupTimer = undefined;
    if (this.opts.disconnectPolicy !== 'fail') return;
    for (const p of [...this.pending.values()]) {
      if (p.storeOp || p.sentTo !== undefined) continue;
      if (p.target === undefined) {
        p.settle(
          failure('no_client', `no client offering "${p.request.command}" connected after the restart`),
        );
      } else if (!this.opts.registry.get(p.target)) {
        p.settle(
          failure(
            'client_disconnected',
            `client "${p.target}" did not reconnect within ${this.opts.graceMs} ms of the server start` +
              notReRouted(p),
          ),
        );
      }
    }
  }

  private log(p: PendingCall, msg: string): void {
    this.opts.logger.warn({ task_id: p.request.taskId, call_id: p.request.callId, client_id: p.target }, msg);
  }
}

/** Why a call of an unbound task waits for one client only (appended to a `client_disconnected` message). */
function notReRouted(p: PendingCall): string {
  return p.request.clientId === null
    ? '; the task is bound to no client, and a call routed to a client is never re-sent to another one'
    : '';
}

function failure(code: string, message: string): CommandOutcome {
  return { ok: false, error: { code, message } };
}

/**
 * What to tell a client about an aborted call, from the engine's abort reason: a timeout, the task's end; undefined
 * when the engine itself stops (the call stays pending and is re-sent after the restart).
 */
function cancelReason(reason: unknown): string | undefined {
  if (isEngineError(reason, 'call_closed')) return 'timeout';
  if (isEngineError(reason, 'stopped')) {
    const details = reason.details as { status?: unknown } | undefined;
    return typeof details?.status === 'string' ? `task ${details.status}` : undefined;
  }
  return 'cancelled';
}

function aborted(): CommandOutcome {
  return failure('aborted', 'call aborted');
}
