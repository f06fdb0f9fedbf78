/**
 * The dashboard's copy of a computer's mirrored screen: applies the `screen` records of
 * `GET /api/clients/:id/screen/stream` (every row, or the rows that changed) and cuts each row into runs of one
 * colour pair for drawing. Pure: no DOM, so it is tested on its own.
 */
import type { HttpScreen } from '@ccagent/protocol';

/** One run of cells of a row sharing text and background colour (CSS colours). */
export interface Run {
  text: string;
  fg: string;
  bg: string;
  /** The cursor is in this run at this index (only when it blinks, i.e. shows). */
  cursorAt?: number;
}

/** What a screen shows now. */
export interface ScreenState {
  width: number;
  height: number;
  text: string[];
  fg: string[];
  bg: string[];
  palette: number[];
  cursor: HttpScreen['cursor'];
  connected: boolean;
  updatedAt: number;
  frames: number;
}

/** Apply a record to `state` (undefined: none yet); a partial record for another size is ignored. */
export function applyScreen(state: ScreenState | undefined, r: HttpScreen): ScreenState | undefined {
  let s = state;
  if (r.full || !s || s.width !== r.width || s.height !== r.height) {
    if (!r.full) return s;
    s = {
      width: r.width,
      height: r.height,
      text: Array.from({ length: r.height }, () => ' '.repeat(r.width)),
      fg: Array.from({ length: r.height }, () => '0'.repeat(r.width)),
      bg: Array.from({ length: r.height }, () => 'f'.repeat(r.width)),
      palette: [],
      cursor: r.cursor,
      connected: r.connected,
      updatedAt: r.updated_at,
      frames: r.frames,
    };
  } else {
    s = { ...s, text: [...s.text], fg: [...s.fg], bg: [...s.bg] };
  }
  for (const l of r.lines) {
    if (l.y < 1 || l.y > s.height) continue;
    s.text[l.y - 1] = l.text;
    s.fg[l.y - 1] = l.fg;
    s.bg[l.y - 1] = l.bg;
  }
  if (r.palette && r.palette.length === 16) s.palette = r.palette;
  s.cursor = r.cursor;
  s.connected = r.connected;
  s.updatedAt = r.updated_at;
  s.frames = r.frames;
  return s;
}

/** CC's default palette (used until a record brings one). */
const DEFAULT = [
  0xf0f0f0, 0xf2b233, 0xe57fd8, 0x99b2f2, 0xdede6c, 0x7fcc19, 0xf2b2cc, 0x4c4c4c, 0x999999, 0x4c99b2,
  0xb266e5, 0x3366cc, 0x7f664c, 0x57a64e, 0xcc4c4c, 0x111111,
];

/** The CSS colour of a blit digit (`0` white … `f` black) in `palette`. */
export function cssColour(digit: string, palette: readonly number[]): string {
  const i = parseInt(digit, 16);
  const rgb = (palette.length === 16 ? palette : DEFAULT)[Number.isNaN(i) ? 0 : i] ?? 0;
  return `#${rgb.toString(16).padStart(6, '0')}`;
}

/**
 * A CC character as the page draws it: 128–159 are CC's 2×3 block characters (Unicode's sextants; the left half
 * block for the one pattern Unicode has elsewhere), control characters a middle dot; the rest (Latin-1) as they are.
 */
export function ccChar(ch: string): string {
  const c = ch.charCodeAt(0);
  if (c >= 128 && c <= 159) {
    const p = c - 128;
    if (p === 0) return ' ';
    if (p === 21) return '\u258c';
    return String.fromCodePoint(0x1fb00 + p - 1 - (p > 21 ? 1 : 0));
  }
  if (c < 32 || c === 127) return '\u00b7';
  return ch;
}

/** Row `y` (1-based) cut into runs of one colour pair, the blinking cursor marked. */
export function rowRuns(s: ScreenState, y: number): Run[] {
  const text = s.text[y - 1] ?? '';
  const fg = s.fg[y - 1] ?? '';
  const bg = s.bg[y - 1] ?? '';
  const runs: Run[] = [];
  let start = 0;
  for (let x = 1; x <= text.length; x++) {
    if (x === text.length || fg[x] !== fg[start] || bg[x] !== bg[start]) {
      let t = '';
      for (let i = start; i < x; i++) t += ccChar(text[i]!);
      const run: Run = {
        text: t,
        fg: cssColour(fg[start] ?? '0', s.palette),
        bg: cssColour(bg[start] ?? 'f', s.palette),
      };
      const cx = s.cursor.x - 1;
      if (s.cursor.blink && s.cursor.y === y && cx >= start && cx < x) run.cursorAt = cx - start;
      runs.push(run);
      start = x;
    }
  }
  return runs;
}
