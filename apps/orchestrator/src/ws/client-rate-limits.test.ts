import { describe, expect, it } from 'vitest';
import { ClientRateLimits } from './client-rate-limits.js';

describe('ClientRateLimits', () => {
  it('gives a returning client its bucket as it left it, not a fresh one (guards against a flooder resetting its limit by reconnecting)', () => {
    const limits = new ClientRateLimits({ messagesPerSecond: 1, burst: 3 });
    const first = limits.acquire('pc-1', 0);
    expect([first.bucket.take(0), first.bucket.take(0), first.bucket.take(0), first.bucket.take(0)]).toEqual([
      true,
      true,
      true,
      false,
    ]);
    limits.release('pc-1', first, 0);
    const again = limits.acquire('pc-1', 10);
    expect(again).toBe(first);
    expect(again.bucket.take(10)).toBe(false);
    // Another client id has its own, full bucket.
    const other = limits.acquire('pc-2', 10);
    expect([other.bucket.take(10), other.bucket.take(10), other.bucket.take(10)]).toEqual([true, true, true]);
  });

  it('cuts off a client closed for flooding until its bucket admits a message again (guards against a flooder reconnecting at once)', () => {
    const limits = new ClientRateLimits({ messagesPerSecond: 2, burst: 4 });
    const s = limits.acquire('pc-1', 0);
    for (let i = 0; i < 4; i++) s.bucket.take(0);
    s.rejectedInARow = 17;
    limits.release('pc-1', s, 0);
    expect(limits.cutOffFor('pc-1', 16, 100)).toBe(400);
    expect(limits.cutOffFor('pc-1', 17, 100)).toBe(0); // not over the threshold: not cut off
    expect(limits.cutOffFor('pc-2', 16, 100)).toBe(0);
    expect(limits.cutOffFor('pc-1', 16, 500)).toBe(0);
    const back = limits.acquire('pc-1', 500);
    expect(back).toBe(s);
    expect(back.rejectedInARow).toBe(0);
    expect([back.bucket.take(500), back.bucket.take(500)]).toEqual([true, false]);
  });

  it('shares one state between two live connections of a client (guards against a replacing connection getting a fresh bucket)', () => {
    const limits = new ClientRateLimits({ messagesPerSecond: 1, burst: 2 });
    const a = limits.acquire('pc-1', 0);
    const b = limits.acquire('pc-1', 0);
    expect(b).toBe(a);
    limits.release('pc-1', a, 0);
    expect(limits.acquire('pc-1', 0)).toBe(a);
  });

  it('forgets an idle state once its bucket is full again, and keeps at most maxIdle idle states (guards against unbounded memory from many client ids)', () => {
    const limits = new ClientRateLimits({ messagesPerSecond: 10, burst: 5, maxIdle: 2 });
    const s = limits.acquire('pc-1', 0);
    for (let i = 0; i < 5; i++) s.bucket.take(0);
    limits.release('pc-1', s, 0);
    expect(limits.size).toBe(1);
    // 5 tokens at 10/s: full after 500 ms, then equivalent to a fresh state and dropped.
    const two = limits.acquire('pc-2', 499);
    expect(limits.size).toBe(2);
    limits.release('pc-2', two, 499);
    const three = limits.acquire('pc-3', 500);
    expect(limits.size).toBe(1);
    expect(limits.acquire('pc-1', 500)).not.toBe(s);
    limits.release('pc-3', three, 500);

    for (const id of ['a', 'b', 'c', 'd']) {
      const st = limits.acquire(id, 1000);
      st.bucket.charge(5, 1000);
      limits.release(id, st, 1000);
    }
    // pc-1 is in use; of the idle a..d only the two most recently released stay.
    expect(limits.size).toBe(3);
  });

  it('never drops a state a connection still uses', () => {
    const limits = new ClientRateLimits({ messagesPerSecond: 1000, burst: 1, maxIdle: 0 });
    const s = limits.acquire('pc-1', 0);
    for (let i = 0; i < 5; i++) limits.release(`x${i}`, limits.acquire(`x${i}`, 1), 1);
    expect(limits.acquire('pc-1', 10_000)).toBe(s);
  });
});
