/**
 * Counts failed authentications per remote address in a sliding window, whatever channel they came on (HTTP, the
 * ComputerCraft WebSocket, the Minecraft mod endpoint): one budget per address, not one per channel. Past the limit,
 * guessable secrets (the shared token, enrollment codes) are not even checked from that address until the window has
 * passed.
 */

/**
 * The address a source names, the key of the failure budget: `http 10.0.0.5`, `ws 10.0.0.5` and `mc ::ffff:10.0.0.5`
 * are all `10.0.0.5` (a channel prefix is dropped, an IPv4-mapped IPv6 address is written as IPv4).
 */
export function sourceAddress(source: string): string {
  const space = source.lastIndexOf(' ');
  const address = (space >= 0 ? source.slice(space + 1) : source).toLowerCase();
  return address.startsWith('::ffff:') && address.includes('.') ? address.slice(7) : address;
}

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

  /** Milliseconds until `source`'s address may try again (0: not throttled). */
  blockedFor(source: string, now: number): number {
    const list = this.prune(sourceAddress(source), now);
    if (list.length < this.limits.maxFailures) return 0;
    return Math.max(1, (list[list.length - this.limits.maxFailures] ?? now) + this.limits.windowMs - now);
  }

  /** Record a failure of `source`'s address; true when this one crossed the limit (log it once, not every attempt). */
  fail(source: string, now: number): boolean {
    const address = sourceAddress(source);
    const list = this.prune(address, now);
    list.push(now);
    this.failures.delete(address);
    this.failures.set(address, list);
    const max = this.limits.maxSources ?? 10_000;
    while (this.failures.size > max) {
      const oldest = this.failures.keys().next().value;
      if (oldest === undefined) break;
      this.failures.delete(oldest);
    }
    return list.length === this.limits.maxFailures;
  }

  private prune(address: string, now: number): number[] {
    const list = this.failures.get(address) ?? [];
    const from = now - this.limits.windowMs;
    let i = 0;
    while (i < list.length && (list[i] ?? 0) <= from) i++;
    return i === 0 ? list : list.slice(i);
  }
}
