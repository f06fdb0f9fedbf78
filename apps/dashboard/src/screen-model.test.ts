import { describe, expect, it } from 'vitest';
import type { HttpScreen } from '@ccagent/protocol';
import { applyScreen, ccChar, cssColour, rowRuns } from './screen-model.js';

const rec = (over: Partial<HttpScreen>): HttpScreen => ({
  client_id: 'pc',
  connected: true,
  updated_at: 1,
  frames: 1,
  width: 4,
  height: 2,
  full: true,
  cursor: { x: 1, y: 1, blink: false },
  lines: [
    { y: 1, text: 'ab  ', fg: '00ee', bg: 'ffbb' },
    { y: 2, text: '    ', fg: '0000', bg: 'ffff' },
  ],
  ...over,
});

describe('the screen copy', () => {
  it('takes a full record, then changes only the rows a partial one carries', () => {
    let s = applyScreen(undefined, rec({}));
    s = applyScreen(s, rec({ full: false, lines: [{ y: 2, text: 'zz  ', fg: '1111', bg: 'ffff' }] }));
    expect(s?.text).toEqual(['ab  ', 'zz  ']);
  });

  it('ignores a partial record before any full one, or of another size', () => {
    expect(applyScreen(undefined, rec({ full: false }))).toBeUndefined();
    const s = applyScreen(undefined, rec({}));
    expect(applyScreen(s, rec({ full: false, width: 5, lines: [] }))).toBe(s);
  });

  it('cuts a row into runs of one colour pair in the palette, marking a blinking cursor', () => {
    const s = applyScreen(undefined, rec({ cursor: { x: 4, y: 1, blink: true } }))!;
    const runs = rowRuns(s, 1);
    expect(runs.map((r) => [r.text, r.fg, r.bg, r.cursorAt])).toEqual([
      ['ab', '#f0f0f0', '#111111', undefined],
      ['  ', '#cc4c4c', '#3366cc', 1],
    ]);
  });

  it('uses the palette a record brings', () => {
    const palette = Array.from({ length: 16 }, (_, i) => i);
    expect(cssColour('f', palette)).toBe('#00000f');
  });

  it('draws CC block characters as sextants and control characters as a dot', () => {
    expect(ccChar('\u0080')).toBe(' ');
    expect(ccChar('\u0081')).toBe('\u{1fb00}');
    expect(ccChar('\u0095')).toBe('\u258c');
    expect(ccChar('\u009f')).toBe('\u{1fb1d}');
    expect(ccChar('\u001b')).toBe('\u00b7');
    expect(ccChar('é')).toBe('é');
  });
});
