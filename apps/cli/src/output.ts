/**
 * Terminal output helpers: colour only where wanted, aligned tables, wrapping and truncation of long texts, and the
 * last guard that keeps text from outside inert on the terminal.
 */
import { inertText } from '@ccagent/protocol';

/** Where and how to print. */
export interface Output {
  /** Emit ANSI colours. */
  color: boolean;
  /** Columns available; long texts are wrapped to it when {@link Output.wrap} is set. */
  width: number;
  /** Wrap long lines (on a terminal); when piped, lines are kept as they are (cut only without `--full`). */
  wrap: boolean;
  write(text: string): void;
}

/** What decides colour: a TTY, `NO_COLOR` (any non-empty value: off), `FORCE_COLOR` (`0`/`false`: off, else on). */
export function wantsColor(isTTY: boolean, env: NodeJS.ProcessEnv): boolean {
  const force = env.FORCE_COLOR;
  if (force !== undefined) return force !== '0' && force.toLowerCase() !== 'false';
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false;
  return isTTY && env.TERM !== 'dumb';
}

/** Output on process.stdout: colour and width from the TTY; plain, unwrapped, 100 columns when piped. */
export function stdoutOutput(opts: { color?: boolean } = {}): Output {
  const tty = process.stdout.isTTY === true;
  const columns = Number(process.env.COLUMNS);
  return {
    color: opts.color ?? wantsColor(tty, process.env),
    width: tty
      ? Math.max(60, process.stdout.columns || 100)
      : Number.isInteger(columns) && columns > 0
        ? columns
        : 100,
    wrap: tty,
    write: (text) => {
      process.stdout.write(text);
    },
  };
}

const CODES = {
  bold: [1, 22],
  dim: [2, 22],
  red: [31, 39],
  green: [32, 39],
  yellow: [33, 39],
  blue: [34, 39],
  magenta: [35, 39],
  cyan: [36, 39],
} as const;
/** Colour names understood by {@link paint}. */
export type Style = keyof typeof CODES;

/** Wraps `text` in ANSI codes when colour is on. */
export function paint(out: Output, style: Style, text: string): string {
  if (!out.color || text === '') return text;
  const [on, off] = CODES[style];
  return `\u001b[${on}m${text}\u001b[${off}m`;
}

/** Colour for a task status. */
export function statusStyle(status: string): Style {
  if (status === 'completed') return 'green';
  if (status === 'failed' || status === 'cancelled') return 'red';
  if (status.startsWith('waiting')) return 'yellow';
  if (status === 'running') return 'cyan';
  return 'blue';
}

// eslint-disable-next-line no-control-regex
const ANSI = /\u001b\[[0-9;]*m/g;
// The colour codes `paint` writes, and nothing else.
// eslint-disable-next-line no-control-regex
const OUR_SGR = /\u001b\[(?:1|2|22|3[1-6]|39)m/g;

/**
 * The last guard before the terminal: every control or format character in `text` is shown as a visible symbol
 * (`inertText`; newline and tab kept), except — when colour is on — the exact colour codes {@link paint} writes. Text
 * from outside is made inert before it is rendered (so a colour code in it is shown too); this catches whatever a
 * renderer printed without that.
 */
export function inertOutput(text: string, color: boolean): string {
  if (!color) return inertText(text);
  let out = '';
  let last = 0;
  for (const m of text.matchAll(OUR_SGR)) {
    out += inertText(text.slice(last, m.index)) + m[0];
    last = m.index + m[0].length;
  }
  return out + inertText(text.slice(last));
}

/** One line of a value (a table cell, an id in a header): newline and tab shown as `␊` and `␉`. */
export const flat = (s: string): string => s.replace(/\n/g, '\u240a').replace(/\t/g, '\u2409');
/** Printed width of a string (ANSI codes excluded). */
export const visibleLength = (s: string): number => s.replace(ANSI, '').length;

/** Renders rows as an aligned table with a header; the last column is never padded. */
export function table(out: Output, header: string[], rows: string[][]): string {
  // A cell is one line, whatever its value holds: a newline in it would start a row of its own.
  rows = rows.map((r) => r.map(flat));
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => visibleLength(r[i] ?? ''))));
  const line = (cells: string[]): string =>
    cells
      .map((c, i) => (i === cells.length - 1 ? c : c + ' '.repeat((widths[i] ?? 0) - visibleLength(c))))
      .join('  ')
      .trimEnd();
  return [line(header.map((h) => paint(out, 'bold', h))), ...rows.map(line)].join('\n') + '\n';
}

/** One line, at most `max` characters, with an ellipsis when cut. */
export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, Math.max(0, max - 1))}…`;
}

/** Wraps each line of `text` to `width` columns, at spaces where possible (long words are split). */
export function wrapText(text: string, width: number): string {
  const w = Math.max(20, width);
  const out: string[] = [];
  for (const line of text.split('\n')) {
    if (line.length <= w) {
      out.push(line);
      continue;
    }
    const lead = /^\s*/.exec(line)?.[0] ?? '';
    let rest = line;
    let first = true;
    while (rest.length > 0) {
      const room = first ? w : w - lead.length;
      if (rest.length <= room) {
        out.push(first ? rest : lead + rest);
        break;
      }
      let cut = rest.lastIndexOf(' ', room);
      if (cut <= room / 3) cut = room;
      out.push((first ? '' : lead) + rest.slice(0, cut).trimEnd());
      rest = rest.slice(cut).replace(/^ +/, '');
      first = false;
    }
  }
  return out.join('\n');
}

/** How a long text block is shortened when `--full` is not given. */
export interface CutOptions {
  maxLines: number;
  /** Longest line kept when not wrapping (piped output). */
  maxLineChars: number;
}

/** Default shortening: 12 lines, 400 characters a line. */
export const DEFAULT_CUT: CutOptions = { maxLines: 12, maxLineChars: 400 };

/**
 * Fits a model text for display: wrapped to `width` on a terminal; without `full`, cut to the first lines with a
 * note saying how much was left out and that `--full` shows all.
 */
export function fitText(out: Output, text: string, width: number, full: boolean, cut = DEFAULT_CUT): string {
  let body = out.wrap ? wrapText(text, width) : text;
  if (full) return body;
  if (!out.wrap) {
    body = body
      .split('\n')
      .map((l) =>
        l.length > cut.maxLineChars
          ? `${l.slice(0, cut.maxLineChars)}… (+${l.length - cut.maxLineChars} chars)`
          : l,
      )
      .join('\n');
  }
  const lines = body.split('\n');
  if (lines.length <= cut.maxLines) return body;
  const more = lines.length - cut.maxLines;
  return `${lines.slice(0, cut.maxLines).join('\n')}\n${paint(out, 'dim', `… ${more} more line${more === 1 ? '' : 's'} (--full shows all)`)}`;
}

/** Indents every non-empty line of `text` by `n` spaces. */
export function indent(text: string, n: number): string {
  const pad = ' '.repeat(n);
  return text
    .split('\n')
    .map((l) => (l.length ? pad + l : l))
    .join('\n');
}

const two = (n: number): string => String(n).padStart(2, '0');

/** Local date and time to the second (`2026-11-23 08:16:26`; the zone is the process's, `TZ` sets it). */
export function formatTime(ms: number): string {
  const d = new Date(ms);
  return `${d.getFullYear()}-${two(d.getMonth() + 1)}-${two(d.getDate())} ${formatClock(ms)}`;
}

/** Local time of day (`08:16:26`). */
export function formatClock(ms: number): string {
  const d = new Date(ms);
  return `${two(d.getHours())}:${two(d.getMinutes())}:${two(d.getSeconds())}`;
}

/** `850ms`, `12.3s`, `4m05s`, `2h03m`. */
export function formatDuration(ms: number): string {
  if (ms < 1000) return `${Math.round(ms)}ms`;
  const s = ms / 1000;
  if (s < 60) return `${s.toFixed(1)}s`;
  const m = Math.floor(s / 60);
  if (m < 60) return `${m}m${two(Math.floor(s % 60))}s`;
  return `${Math.floor(m / 60)}h${two(m % 60)}m`;
}

function hasMultilineString(value: unknown): boolean {
  if (typeof value === 'string') return value.includes('\n');
  if (value === null || typeof value !== 'object') return false;
  return Object.values(value).some(hasMultilineString);
}

/**
 * Text of any value for people: strings as they are; small values as one-line JSON; bigger objects and arrays one
 * field a line (YAML-like), with multi-line strings (file contents, program output, tracebacks) as raw text blocks
 * instead of `\n`-escaped JSON. `--json` prints the exact values.
 */
export function asText(value: unknown, width = 100): string {
  if (typeof value === 'string') return value;
  if (value === null || typeof value !== 'object') return JSON.stringify(value) ?? String(value);
  const compact = JSON.stringify(value);
  if (compact.length <= width && !hasMultilineString(value)) return compact;
  if (Array.isArray(value)) {
    if (value.length === 0) return '[]';
    return value.map((v) => `- ${indent(asText(v, width - 2), 2).trimStart()}`).join('\n');
  }
  const entries = Object.entries(value).filter(([, v]) => v !== undefined);
  if (entries.length === 0) return '{}';
  return entries
    .map(([k, v]) => {
      if (typeof v === 'string') {
        if (v.includes('\n')) return `${k}:\n${indent(v.replace(/\n+$/, ''), 2)}`;
        return `${k}: ${v === '' ? '""' : v}`;
      }
      const text = asText(v, width - 2);
      return !text.includes('\n') && text.length + k.length + 2 <= width
        ? `${k}: ${text}`
        : `${k}:\n${indent(text, 2)}`;
    })
    .join('\n');
}
