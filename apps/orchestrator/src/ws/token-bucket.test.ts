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

  it('goes into debt when charged for messages let through elsewhere, and admits nothing until it is paid (guards against frames sent before hello escaping the client limit)', () => {
    const b = new TokenBucket(10, 3, 0);
    b.charge(5, 0); // 3 - 5 = -2
    expect(b.take(0)).toBe(false);
    expect(b.take(200)).toBe(false); // -2 + 2 = 0
    expect(b.take(300)).toBe(true); // 1 → 0
    expect(b.msUntilFull(300)).toBe(300);
    expect(b.msUntilFull(600)).toBe(0);
  });
});
