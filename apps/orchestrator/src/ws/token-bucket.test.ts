import { describe, expect, it } from 'vitest';
import { TokenBucket } from './token-bucket.js';

describe('TokenBucket', () => {
  it('allows a burst, then refills at the configured rate', () => {
    const b = new TokenBucket(10, 3, 0);
    expect([b.take(0), b.take(0), b.take(0), b.take(0)]).toEqual([true, true, true, false]);
    expect(b.take(50)).toBe(false);
    expect(b.take(100)).toBe(true);
    expect(b.take(10_000)).toBe(true);
    expect(b.take(10_000)).toBe(true);
    expect(b.take(10_000)).toBe(true);
    expect(b.take(10_000)).toBe(false);
  });
});
