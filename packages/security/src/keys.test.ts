import { describe, expect, it } from 'vitest';
import { secretMatches } from './keys.js';

describe('secretMatches', () => {
  it('matches only the exact secret', () => {
    expect(secretMatches('s3cret-token', 's3cret-token')).toBe(true);
    expect(secretMatches('s3cret-tokeN', 's3cret-token')).toBe(false);
    expect(secretMatches('', 's3cret-token')).toBe(false);
    expect(secretMatches(undefined, 's3cret-token')).toBe(false);
  });
});
