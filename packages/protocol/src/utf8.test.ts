import { describe, expect, it } from 'vitest';
import { fitsUtf8, utf8ByteLength } from './utf8.js';

describe('fitsUtf8', () => {
  it('agrees with the exact byte count at every limit around the length (guards against the length shortcut letting an oversize frame through or refusing one that fits)', () => {
    const texts = ['', 'a', 'abc', 'é', 'ü€', '𝄞', 'a𝄞b', '€€€€', '\ud800', 'x\udc00y', 'plain ascii text'];
    for (const t of texts) {
      const bytes = utf8ByteLength(t);
      for (let max = 0; max <= t.length * 3 + 2; max++) {
        expect([t, max, fitsUtf8(t, max)]).toEqual([t, max, bytes <= max]);
      }
    }
  });
});
