/**
 * Says which computer sends refused frames: a refused `command_result` (malformed, for an unknown or closed call, from
 * a client that does not own the call) is logged once per client and code per window, with its call id, and how many
 * more were refused since the last line. A misbehaving client cannot flood the log, and the operator still sees who it
 * is; the metric counts every refusal.
 */
import type { Logger } from '@ccagent/engine';

/** One refused frame. */
export interface Refusal {
  clientId: string;
  /** The error code the client was answered with (e.g. `unknown_call`, `forbidden`, `invalid_message`). */
  code: string;
  /** What was refused, e.g. `command_result`. */
  what: string;
  message: string;
  callId?: string;
  taskId?: string;
}

interface Seen {
  loggedAt: number;
  suppressed: number;
}

/** Logs refusals at most once per (client, code, what) every `windowMs`; remembers at most `maxKeys` such keys. */
export class RefusalLog {
  private readonly seen = new Map<string, Seen>();

  constructor(
    private readonly logger: Logger,
    private readonly now: () => number = Date.now,
    private readonly windowMs = 60_000,
    private readonly maxKeys = 10_000,
  ) {}

  /** Record one refusal; writes a warn line when this client has not been logged for this code within the window. */
  refused(r: Refusal): void {
    const key = `${r.clientId}\u0000${r.what}\u0000${r.code}`;
    const t = this.now();
    const s = this.seen.get(key);
    if (s && t - s.loggedAt < this.windowMs) {
      s.suppressed++;
      return;
    }
    const fields: Record<string, unknown> = { client_id: r.clientId, code: r.code };
    if (r.callId !== undefined) fields.call_id = r.callId;
    if (r.taskId !== undefined) fields.task_id = r.taskId;
    if (s && s.suppressed > 0) fields.refused_since_last_log = s.suppressed;
    this.logger.warn(fields, `${r.what} refused: ${r.message}`);
    this.seen.delete(key);
    this.seen.set(key, { loggedAt: t, suppressed: 0 });
    if (this.seen.size > this.maxKeys) {
      const oldest = this.seen.keys().next().value;
      if (oldest !== undefined) this.seen.delete(oldest);
    }
  }
}
