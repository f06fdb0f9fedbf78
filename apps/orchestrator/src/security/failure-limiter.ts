/**
 * Counts failed authentications per source (remote address) in a sliding window. Past the limit, guessable secrets
 * (the shared token, enrollment codes) are not even checked from that source until the window has passed.
 */

/** Limits of {@link FailureLimiter}. */
export interface FailureLimits {
  /** Failures allowed per source within `windowMs`. */
  maxFailures: number;
  windowMs: number;
  /** Sources remembered at most (oldest forgotten first), so a spray of addresses cannot grow memory. */
  maxSources?: number;
}

/** Per-source failure counter (in memory: a restart forgets, which only helps an attacker by one window). */
export class FailureLimiter {
  private readonly failures = new Map<string, number[]>();

  constructor(private readonly limits: FailureLimits) {}

  /** Milliseconds until `source` may try again (0: not throttled). */
  blockedFor(source: string, now: number): number {
    const list = this.prune(source, now);
    if (list.length < this.limits.maxFailures) return 0;
    return Math.max(1, (list[list.length - this.limits.maxFailures] ?? now) + this.limits.windowMs - now);
  }

  /** Record a failure; returns true when this one crossed the limit (log it once, not every attempt). */
  fail(source: string, now: number): boolean {
    const list = this.prune(source, now);
    list.push(now);
    this.failures.delete(source);
    this.failures.set(source, list);
    const max = this.limits.maxSources ?? 10_000;
    while (this.failures.size > max) {
      const oldest = this.failures.keys().next().value;
      if (oldest === undefined) break;
      this.failures.delete(oldest);
    }
    return list.length === this.limits.maxFailures;
  }

  private prune(source: string, now: number): number[] {
    const list = this.failures.get(source) ?? [];
    const from = now - this.limits.windowMs;
    let i = 0;
    while (i < list.length && (list[i] ?? 0) <= from) i++;
    return i === 0 ? list : list.slice(i);
  }
}
