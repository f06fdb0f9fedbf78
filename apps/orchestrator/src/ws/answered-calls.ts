/**
 * The calls recently answered by a client (or cancelled on it), by call id: the client and task, so that a repeated
 * `command_result` — its `command_ack` was lost, or the client answers a `command_cancel` — is acknowledged again
 * without changing anything. Bounded (oldest forgotten first). Written by the result intake and by the executor when
 * it cancels a call on the client; read by the result intake.
 */

/** Most calls remembered. */
const RECENT_LIMIT = 10_000;

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
