import type { JsonValue } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { MemoryValidationCache } from './memory-cache.js';

describe('MemoryValidationCache', () => {
  const make = () => {
    const seen: unknown[] = [];
    const cache = new MemoryValidationCache<{ n: number }>((value) => {
      seen.push(value);
      const n = (value as { n?: unknown } | null)?.n;
      return { n: typeof n === 'number' ? n : 0 };
    });
    return { cache, seen };
  };

  it('validates each object once and returns the same validated memory for it (guards against per-step re-validation)', () => {
    const { cache, seen } = make();
    const m = { n: 1 };
    const first = cache.get(m);
    expect(cache.get(m)).toBe(first);
    expect(first).toEqual({ n: 1 });
    expect(seen).toEqual([m]);
    expect(cache.validations).toBe(1);
  });

  it('validates a new object even with equal content, and scalars every time (guards against keying by content)', () => {
    const { cache } = make();
    cache.get({ n: 1 });
    cache.get({ n: 1 });
    cache.get(null);
    cache.get(null);
    cache.get(5 as JsonValue);
    expect(cache.validations).toBe(5);
  });

  it('trusts what remember() registered without validating it', () => {
    const { cache } = make();
    const built = { n: 9 };
    cache.remember(built, built);
    expect(cache.get(built)).toBe(built);
    expect(cache.validations).toBe(0);
  });
});
