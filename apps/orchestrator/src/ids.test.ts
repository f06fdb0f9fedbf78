import { describe, expect, it } from 'vitest';
import { idFromKey, secretMatches } from './ids.js';

describe('idFromKey', () => {
  it('is stable per key, distinct across keys, and UUID-shaped', () => {
    const a = idFromKey('pc-1\u0000req-1');
    expect(idFromKey('pc-1\u0000req-1')).toBe(a);
    expect(idFromKey('pc-2\u0000req-1')).not.toBe(a);
    expect(a).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-8[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
  });
});

describe('secretMatches', () => {
  it('matches only the exact secret', () => {
    expect(secretMatches('s3cret-token', 's3cret-token')).toBe(true);
    expect(secretMatches('s3cret-tokeN', 's3cret-token')).toBe(false);
    expect(secretMatches('', 's3cret-token')).toBe(false);
    expect(secretMatches(undefined, 's3cret-token')).toBe(false);
  });
});
