import { describe, expect, it } from 'vitest';
import { isStoreError } from './store-error.js';
import { pageOf, validateClientUpsert, validateTools } from './validators.js';

const refusal = (run: () => unknown): unknown => {
  try {
    run();
  } catch (err) {
    return err;
  }
  return undefined;
};

describe('store input validators', () => {
  it('refuse a bad client sighting with invalid_input (guards against a client row without commands or time)', () => {
    const ok = { clientId: 'pc', commands: [{ name: 'ls' }], connected: true, seenAt: 1 };
    expect(() => validateClientUpsert(ok)).not.toThrow();
    expect(
      isStoreError(
        refusal(() => validateClientUpsert({ ...ok, clientId: '' })),
        'invalid_input',
      ),
    ).toBe(true);
    const noName = refusal(() =>
      validateClientUpsert({ ...ok, commands: [{ name: '' }] as typeof ok.commands }),
    );
    expect((noName as Error).message).toBe('commands must be an array of { name, … } descriptors');
    expect((refusal(() => validateClientUpsert({ ...ok, seenAt: Number.NaN })) as Error).message).toBe(
      'seenAt must be a finite number (epoch ms)',
    );
  });

  it('refuse tools listed twice, with an unknown status or a bad version (guards against a registry that cannot be read back)', () => {
    const t = { name: 'dig', status: 'active' as const, version: 1 };
    expect(() => validateTools('pc', [t], 5)).not.toThrow();
    expect((refusal(() => validateTools('pc', [t, t], 5)) as Error).message).toBe(
      'tool "dig" is listed twice',
    );
    expect(
      (refusal(() => validateTools('pc', [{ ...t, status: 'gone' as 'active' }], 5)) as Error).message,
    ).toBe('tool "dig" has status "gone"; expected one of draft, test, active, retired');
    expect((refusal(() => validateTools('pc', [{ ...t, version: 1.5 }], 5)) as Error).message).toBe(
      'tool "dig" needs an integer version >= 0',
    );
  });

  it('fill a page query’s defaults and refuse a bad size, offset or order (guards against an unbounded page)', () => {
    expect(pageOf({})).toEqual({ limit: 50, offset: 0 });
    expect(pageOf({ limit: 1000, offset: 3 })).toEqual({ limit: 1000, offset: 3 });
    for (const q of [{ limit: 0 }, { limit: 1001 }, { offset: -1 }, { order: 'sideways' as 'newest' }]) {
      expect(
        isStoreError(
          refusal(() => pageOf(q)),
          'invalid_input',
        ),
      ).toBe(true);
    }
  });
});
