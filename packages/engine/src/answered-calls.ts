/**
 * The engine's memory of how its calls were closed, for judging a result that arrives after (see
 * `Engine.submitResult`): the calls answered recently by a client, or whose client was told to drop them (a
 * `command_cancel`), by call id — so that a repeated result (its acknowledgement was lost, or the client answers the
 * cancel) is acknowledged again without changing anything. Bounded (oldest forgotten first); after a restart the
 * stored call row answers instead (see {@link closedByServer}).
 */
import type { CommandCallRecord } from './types.js';

/** Most calls remembered. */
const RECENT_LIMIT = 10_000;

/**
 * Outcome codes a host produces itself, never a client's result: the engine's (`timeout`, `executor_error`) and the
 * orchestrator's executor's (no client, a client gone, a command or arguments refused before sending, an abort).
 */
const SERVER_FAILURES = new Set([
  'client_disconnected',
  'no_client',
  'unknown_command',
  'invalid_args',
  'timeout',
  'executor_error',
  'aborted',
]);

/**
 * A closed call's row says the server closed it (cancelled, timed out, failed for a reason of the host's own), so no
 * client's result for it is acknowledged.
 */
export function closedByServer(call: CommandCallRecord): boolean {
  return (
    call.status === 'cancelled' ||
    call.status === 'timed_out' ||
    (call.outcome !== undefined && !call.outcome.ok && SERVER_FAILURES.has(call.outcome.error.code ?? ''))
  );
}

/** See the module comment. */
export class AnsweredCalls {
  private readonly recent = new Map<string, { clientId: string; taskId: string }>();

  /** Remember that `clientId` answered (or was told to drop) call `callId` of task `taskId`. */
  remember(callId: string, clientId: string, taskId: string): void {
    this.recent.set(callId, { clientId, taskId });
    if (this.recent.size > RECENT_LIMIT) {
      const oldest = this.recent.keys().next().value;
      if (oldest !== undefined) this.recent.delete(oldest);
    }
  }

  /** Who answered `callId`, if remembered. */
  get(callId: string): { clientId: string; taskId: string } | undefined {
    return this.recent.get(callId);
  }
}
