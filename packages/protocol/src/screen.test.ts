import { describe, expect, it } from 'vitest';
import { parseClientMessage } from './parse.js';
import { ScreenFrameSchema, SCREEN_MAX_HEIGHT, SCREEN_MAX_WIDTH } from './screen.js';

const row = (y: number, text: string, fg = '0'.repeat(text.length), bg = 'f'.repeat(text.length)) => ({
  y,
  text,
  fg,
  bg,
});
const frame = (over: Record<string, unknown> = {}) => ({
  type: 'screen_frame',
  seq: 0,
  width: 3,
  height: 2,
  full: true,
  cursor: { x: 1, y: 1, blink: false },
  lines: [row(1, 'abc'), row(2, '   ')],
  ...over,
});

describe('screen_frame', () => {
  it('takes a full frame and a partial one of blit rows', () => {
    expect(ScreenFrameSchema.safeParse(frame()).success).toBe(true);
    expect(
      ScreenFrameSchema.safeParse(frame({ full: false, lines: [row(2, 'x y', '0e0', 'fbf')] })).success,
    ).toBe(true);
  });

  it('takes bytes 128-255 as one Latin-1 character per cell (CC drawing characters)', () => {
    expect(
      ScreenFrameSchema.safeParse(frame({ lines: [row(1, '\u008fa\u00ff'), row(2, '   ')] })).success,
    ).toBe(true);
  });

  it.each([
    ['a row shorter than the width', { lines: [row(1, 'ab'), row(2, '   ')] }, 'lines.0.text'],
    ['a colour row longer than the width', { lines: [row(1, 'abc', '0000'), row(2, '   ')] }, 'lines.0.fg'],
    ['a colour digit that is not 0-9a-f', { lines: [row(1, 'abc', '0g0'), row(2, '   ')] }, 'lines.0.fg'],
    ['an upper-case colour digit', { lines: [row(1, 'abc', 'fff', 'FFF'), row(2, '   ')] }, 'lines.0.bg'],
    ['a row below the screen', { full: false, lines: [row(3, 'abc')] }, 'lines.0.y'],
    ['the same row twice', { full: false, lines: [row(1, 'abc'), row(1, 'abc')] }, 'lines.1.y'],
    ['a full frame without every row', { lines: [row(1, 'abc')] }, 'lines'],
    ['a character above U+00FF', { lines: [row(1, 'a€c'), row(2, '   ')] }, 'lines.0.text'],
    ['a width over the bound', { width: SCREEN_MAX_WIDTH + 1 }, 'width'],
    ['a height over the bound', { height: SCREEN_MAX_HEIGHT + 1 }, 'height'],
    [
      'more rows than the bound',
      { full: false, lines: Array.from({ length: 129 }, (_, i) => row(i + 1, 'abc')) },
      'lines',
    ],
    ['a cursor far off screen', { cursor: { x: 100_000, y: 1, blink: true } }, 'cursor.x'],
    ['an unknown field in a row', { lines: [{ ...row(1, 'abc'), extra: 1 }, row(2, '   ')] }, 'lines.0'],
  ])('refuses %s, naming the field', (_what, over, path) => {
    const r = ScreenFrameSchema.safeParse(frame(over));
    expect(r.success).toBe(false);
    expect(r.error?.issues.map((i) => i.path.join('.'))).toContain(path);
  });

  it('parses through the client message parser (a computer sends it)', () => {
    const r = parseClientMessage(JSON.stringify(frame()));
    expect(r.ok).toBe(true);
  });
});
