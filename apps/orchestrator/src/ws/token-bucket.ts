/**
 * Token bucket for rate limiting: `burst` tokens, refilled at `ratePerSecond`. Time comes from the caller
 * (milliseconds), so tests drive it without sleeping.
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

  /** Take one token; false when the bucket is empty (the message is over the limit). */
  take(now: number): boolean {
    this.refill(now);
    if (this.tokens < 1) return false;
    this.tokens -= 1;
    return true;
  }

  /**
   * Charge `count` messages that were already let through elsewhere (e.g. under another bucket). The bucket may go
   * into debt: it then admits nothing until the refill has paid the debt back.
   */
  charge(count: number, now: number): void {
    this.refill(now);
    this.tokens -= count;
  }

  /** Tokens left now (after the refill): how many more messages would be admitted at once. */
  spare(now: number): number {
    this.refill(now);
    return this.tokens;
  }

  /** Milliseconds after which, left alone, the bucket is full again (0 when it is full now). */
  msUntilFull(now: number): number {
    return this.msUntil(this.burst, now);
  }

  /** Milliseconds after which, left alone, the bucket admits a message again (0 when it does now). */
  msUntilToken(now: number): number {
    return this.msUntil(1, now);
  }

  private msUntil(tokens: number, now: number): number {
    this.refill(now);
    return Math.max(0, Math.ceil(((tokens - this.tokens) * 1000) / this.ratePerSecond));
  }

  private refill(now: number): void {
    const elapsed = Math.max(0, now - this.last);
    this.last = now;
    this.tokens = Math.min(this.burst, this.tokens + (elapsed * this.ratePerSecond) / 1000);
  }
}
