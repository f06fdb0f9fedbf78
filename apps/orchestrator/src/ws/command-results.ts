/**
 * The `command_result` intake: judges a result from a client against the call it answers (open here, or closed in
 * this or an earlier process) and commits an accepted one through the engine, telling the caller when it is on disk
 * (the `command_ack`). A repeated result of a call answered recently (answered-calls.ts) is acknowledged again
 * without changing anything. Routing and sockets stay in {@link WsToolExecutor}.
 */
import { isEngineError, type Clock, type Engine, type Logger, type TaskStore } from '@ccagent/engine';
import type { CommandResultMessage, ProtocolErrorCode } from '@ccagent/protocol';
import { storageFailureOf } from '@ccagent/store';
import { resultToOutcome } from '../wire.js';
import type { AnsweredCalls } from './answered-calls.js';
import type { PendingCall, WsToolExecutor } from './ws-tool-executor.js';

/**
 * What to answer a `command_result`. `acknowledged`: the `onDurable` callback of {@link CommandResults.accept}
 * already ran (the caller must not acknowledge again).
 */
export type ResultVerdict =
  | { ok: true; taskId: string; callId: string; acknowledged?: boolean }
  | { ok: false; code: ProtocolErrorCode; message: string };

/** Options of {@link CommandResults}. */
export interface CommandResultsOptions {
  engine: Engine;
  executor: WsToolExecutor;
  store: TaskStore;
  clock: Clock;
  logger: Logger;
  /** Calls answered (or cancelled on a client) recently, shared with the executor. */
  answered: AnsweredCalls;
  /** Round-trip of an accepted result (ms), for metrics. */
  onRoundTrip?: (command: string, ms: number) => void;
}

/** Outcome codes the orchestrator itself produces (never a client's result). */
const SERVER_FAILURES = new Set([
  'client_disconnected',
  'no_client',
  'unknown_command',
  'invalid_args',
  'timeout',
  'executor_error',
  'aborted',
]);

/** See the module comment. */
export class CommandResults {
  constructor(private readonly opts: CommandResultsOptions) {}

  /**
   * Judge a `command_result` from `sender`: accepted only for an open call that was sent to that client. An
   * accepted result is committed through the engine before this resolves; a repeat of a result already committed is
   * accepted again (so the client gets its `command_ack`) without changing anything. When the result is committed
   * here, `onDurable` runs the moment it is on disk — before the next step's messages go out — and the verdict says
   * `acknowledged`.
   */
  async accept(sender: string, msg: CommandResultMessage, onDurable?: () => void): Promise<ResultVerdict> {
    const { call_id: callId, task_id: taskId } = msg;
    let p = this.opts.executor.pendingCall(callId);
    if (p?.storeOp) {
      // Where the call goes is being recorded: judge the result once it is known.
      await p.storeOp;
      p = this.opts.executor.pendingCall(callId);
    }
    if (p) {
      const owner = p.sentTo ?? p.target;
      if (owner !== sender) {
        return {
          ok: false,
          code: 'forbidden',
          message: `call ${callId} was not sent to client "${sender}"; its result is not accepted from it`,
        };
      }
      if (p.request.taskId !== taskId) {
        return {
          ok: false,
          code: 'unknown_call',
          message: `call ${callId} does not belong to task ${taskId}`,
        };
      }
      if (p.resolving) {
        await p.resolving;
        return { ok: true, taskId, callId };
      }
      return this.commit(p, sender, msg, onDurable);
    }
    const recent = this.opts.answered.get(callId);
    if (recent) {
      if (recent.clientId !== sender) {
        return { ok: false, code: 'forbidden', message: `call ${callId} was answered by another client` };
      }
      if (recent.taskId !== taskId) {
        return {
          ok: false,
          code: 'unknown_call',
          message: `call ${callId} does not belong to task ${taskId}`,
        };
      }
      return { ok: true, taskId, callId };
    }
    // Not in memory: a call resolved before a restart (the client is repeating an unacknowledged result), or junk.
    const stored = await this.opts.store.getCommandCall(callId);
    if (!stored || stored.taskId !== taskId) {
      return { ok: false, code: 'unknown_call', message: `no open call ${callId} for task ${taskId}` };
    }
    const task = await this.opts.store.getTask(taskId);
    if (task && task.clientId !== null && task.clientId !== sender) {
      return { ok: false, code: 'forbidden', message: `call ${callId} belongs to another client's task` };
    }
    if (stored.sentTo !== undefined && stored.sentTo !== sender) {
      return {
        ok: false,
        code: 'forbidden',
        message: `call ${callId} was sent to another client; its result is not accepted from "${sender}"`,
      };
    }
    if (stored.status === 'pending') {
      return {
        ok: false,
        code: 'unknown_call',
        message: `call ${callId} is not currently sent to "${sender}"`,
      };
    }
    // Only a call closed by a client's own result may be acknowledged again (its ack was lost); one the server
    // closed (cancelled, timed out, failed for a disconnect) is not open for results.
    const serverClosed =
      stored.status === 'cancelled' ||
      stored.status === 'timed_out' ||
      (stored.outcome !== undefined &&
        !stored.outcome.ok &&
        SERVER_FAILURES.has(stored.outcome.error.code ?? ''));
    if (serverClosed) {
      return {
        ok: false,
        code: 'unknown_call',
        message: `call ${callId} is already closed (${stored.status})`,
      };
    }
    return { ok: true, taskId, callId };
  }

  private async commit(
    p: PendingCall,
    sender: string,
    msg: CommandResultMessage,
    onDurable: (() => void) | undefined,
  ): Promise<ResultVerdict> {
    const { engine } = this.opts;
    const { call_id: callId, task_id: taskId } = msg;
    const sentAt = p.sentAt;
    let release!: () => void;
    p.resolving = new Promise<void>((r) => (release = r));
    let acknowledged = false;
    try {
      const outcome = resultToOutcome(msg);
      await engine.resolveCommand(taskId, callId, outcome, {
        onDurable: () => {
          this.opts.answered.remember(callId, sender, taskId);
          if (onDurable) {
            acknowledged = true;
            onDurable();
          }
        },
      });
      // Recorded: the engine no longer waits for this call (and does not abort its signal for it), so the pending
      // entry goes now.
      p.settle(outcome);
      if (sentAt !== undefined) this.opts.onRoundTrip?.(p.request.command, this.opts.clock.now() - sentAt);
      return { ok: true, taskId, callId, acknowledged };
    } catch (err) {
      if (isEngineError(err, 'call_closed') || isEngineError(err, 'unknown_call')) {
        return { ok: false, code: 'unknown_call', message: err.message };
      }
      if (isEngineError(err, 'task_not_found')) return { ok: false, code: 'not_found', message: err.message };
      const storage = storageFailureOf(err);
      if (storage) {
        this.opts.logger.warn(
          { err, task_id: taskId, call_id: callId, client_id: sender },
          'command result not stored: storage failure',
        );
        return {
          ok: false,
          code: 'unavailable',
          message: `the result is not stored (${storage.message}); send it again`,
        };
      }
      this.opts.logger.error(
        { err, task_id: taskId, call_id: callId, client_id: sender },
        'command result not stored',
      );
      return { ok: false, code: 'internal', message: 'the result could not be stored; send it again' };
    } finally {
      p.resolving = undefined;
      release();
    }
  }
}
