/**
 * Token bucket for the mod endpoint's rate limit: `burst` tokens, refilled at `ratePerSecond` (the CC endpoint's
 * rule; time comes from the caller in milliseconds, so tests drive it with a manual clock).
 */
export class TokenBucket {
  private tokens: number;
  private last: number;

  constructor(
    private readonly ratePerSecond: number,
    private readonly burst: number,
    now: number,
  ) {
    this.tokens = burst;
    this.last = now;
  }

  /** Take one token; false when the bucket is empty (the frame is over the limit). */
  take(now: number): boolean {
    const elapsed = Math.max(0, now - this.last);
    this.last = now;
    this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.ratePerSecond) / 1000);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /** Tokens left after the last {@link take} (how many more frames it would admit at once then). */
  spare(): number {
    return this.tokens;
  }
}
