/**
 * Server-side limits on in-game triggers (issue 35): a `task_event` or `create_task` that names the `trigger` that
 * sent it is charged to a token bucket per computer and trigger, so a flickering redstone line on a computer whose
 * debouncing is off (or a modified client) cannot flood a task or the task list. The computer's own debouncing comes
 * first; this is the limit it cannot lift. Time comes from the caller (ms).
 */
import { TokenBucket } from './token-bucket.js';

/** `server.triggerRateLimit`. */
export interface TriggerRateLimit {
  perMinute: number;
  burst: number;
}

/** Buckets kept at most (least recently used go first); an idle bucket refills, so dropping it admits the same. */
const MAX_BUCKETS = 10_000;

/** See the module comment. */
export class TriggerLimits {
  private readonly buckets = new Map<string, TokenBucket>();

  constructor(private readonly o: TriggerRateLimit) {}

  /** Admit one request of `trigger` on `clientId` now, or say how long (ms) until the next one is admitted. */
  admit(clientId: string, trigger: string, now: number): { ok: true } | { ok: false; retryAfterMs: number } {
    const key = `${clientId}\u0000${trigger}`;
    let b = this.buckets.get(key);
    if (b) this.buckets.delete(key);
    else b = new TokenBucket(this.o.perMinute / 60, this.o.burst, now);
    this.buckets.set(key, b);
    if (this.buckets.size > MAX_BUCKETS) {
      const oldest = this.buckets.keys().next().value;
      if (oldest !== undefined) this.buckets.delete(oldest);
    }
    if (b.take(now)) return { ok: true };
    return { ok: false, retryAfterMs: b.msUntilToken(now) };
  }
}
