import { describe, expect, it } from 'vitest';
import { TriggerLimits } from './trigger-limits.js';

describe('TriggerLimits', () => {
  it('admits a burst per computer and trigger, then one per refill period (guards against a flickering line flooding a task)', () => {
    const limits = new TriggerLimits({ perMinute: 6, burst: 2 });
    expect(limits.admit('farm', 'crop', 0)).toEqual({ ok: true });
    expect(limits.admit('farm', 'crop', 1)).toEqual({ ok: true });
    const refused = limits.admit('farm', 'crop', 2);
    expect(refused.ok).toBe(false);
    if (!refused.ok) expect(refused.retryAfterMs).toBeGreaterThan(9_000);
    // another trigger and another computer have their own buckets
    expect(limits.admit('farm', 'door', 3)).toEqual({ ok: true });
    expect(limits.admit('other', 'crop', 3)).toEqual({ ok: true });
    // 6 a minute: one token every 10 s
    expect(limits.admit('farm', 'crop', 10_002).ok).toBe(true);
    expect(limits.admit('farm', 'crop', 10_003).ok).toBe(false);
  });
});
