import type { Result } from './agent-error.js';

/**
 * Reading one field value the way a small model writes it: the Markdown decoration around it removed (inline code,
 * emphasis, surrounding quotes), a remark after it on the same line set apart, and the value checked against its
 * type. One set of rules for every reader — the directive parser, the executor reply's parameters and the native
 * loop's calls — so a value means the same wherever it is written.
 */

/** Opening quote → its closing quote: ASCII quotes and the typographic ones editors and models write. */
export const QUOTE_PAIRS: Readonly<Record<string, string>> = {
  '"': '"',
  "'": "'",
  '\u201c': '\u201d',
  '\u2018': '\u2019',
  '`': '`',
};

// `**x**`, `__x__`, `*x*`, `_x_`, `~~x~~`: emphasis wrapping the whole value (no space just inside the marks, as in
// Markdown).
const EMPHASIS = /^(\*\*|__|\*|_|~~)(?=\S)([\s\S]*?\S)\1$/;
// Inline code wrapping the whole value: `x` or ``x`` (the same number of backticks on both sides).
const CODE = /^(`+)(?!`)([\s\S]*?[^`])\1$/;

/**
 * A value wholly wrapped in one pair of quotes without that quote inside (`"ls"`, `'ls'`, `“ls”`) → the text
 * inside; anything else unchanged.
 */
function unquote(v: string): string {
  const open = v[0] ?? '';
  const close = QUOTE_PAIRS[open];
  if (close === undefined || open === '`' || v.length < 2 || !v.endsWith(close)) return v;
  const inner = v.slice(1, -1);
  return inner.includes(close) || inner.includes(open) ? v : inner.trim();
}

/**
 * The value without the Markdown around it: inline code (`` `ls` ``), emphasis (`**ls**`, `*ls*`, `_ls_`) and, with
 * `quotes`, one pair of surrounding quotes (`"ls"`, `“ls”`), in any nesting (`` **`ls`** ``). Text inside is kept as
 * written. `quotes` is false for ARGS, where quotes group words (`"Buy milk"` is one argument).
 */
export function undecorate(value: string, quotes = true): string {
  let v = value.trim();
  for (;;) {
    const code = CODE.exec(v);
    const emphasis = code ? null : EMPHASIS.exec(v);
    const next = code
      ? (code[2] ?? '').trim()
      : emphasis
        ? (emphasis[2] ?? '').trim()
        : quotes
          ? unquote(v)
          : v;
    if (next === v) return v;
    v = next;
  }
}

/** A structured value and the remark written after it on the same line, if any. */
export interface ValueAndRemark {
  value: string;
  /** Text on the value's line that is not part of it (`(the greeting program)`, `— shows the list`). */
  remark?: string;
}

// Separators that start a remark when written between spaces outside quotes: dashes of prose, `#` and `//` comments.
const REMARK_SEPARATOR = /^\s(?:\u2014|\u2013|#|\/\/)\s/;

/**
 * Split a one-line structured value (a path, a command, arguments, a THEN item) into the value and a remark after it:
 * a leading inline-code or emphasis span followed by punctuation (`` `hello.lua` (the program) ``, `` `ls`: lists
 * files ``) — or by any words when `spanIsValue` (a single value such as a path or a shell command, where
 * `` `ls` to list the files `` is the command `ls`) —, a ` — `, ` – `, ` # ` or ` // ` outside quotes, or a
 * parenthesised remark of several words at the end (`list (shows the items)`). Without any of these the whole line
 * is the value: what the planner wrote on the field's line is its value.
 */
export function splitRemark(line: string, spanIsValue = false): ValueAndRemark {
  const text = line.trim();
  const span = /^(`+)(?!`)([\s\S]*?[^`])\1(?=[\s:,;])|^(\*\*|__|\*|_)(?=\S)([\s\S]*?\S)\3(?=[\s:,;])/.exec(
    text,
  );
  if (span) {
    const rest = text.slice(span[0].length).trim();
    if (rest !== '' && (spanIsValue || /^(?:[(\u2014\u2013:,;#]|-\s|\/\/)/.test(rest))) {
      return { value: span[0], remark: rest.replace(/^[:,;]\s*/, '') };
    }
  }
  let quote: string | null = null;
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] ?? '';
    if (quote !== null) {
      if (ch === quote) quote = null;
      continue;
    }
    const close = QUOTE_PAIRS[ch];
    // An apostrophe inside a word (`don't`) opens nothing.
    if (close !== undefined && !(ch === "'" && /\w/.test(text[i - 1] ?? ''))) {
      quote = close;
      continue;
    }
    if (REMARK_SEPARATOR.test(text.slice(i, i + 4))) {
      const value = text.slice(0, i).trim();
      if (value !== '') return { value, remark: text.slice(i).trim() };
    }
  }
  const paren = /\s\(([^()"]*\s[^()"]*)\)\.?$/.exec(text);
  if (paren && quote === null) {
    const value = text.slice(0, paren.index).trim();
    if (value !== '') return { value, remark: paren[0].trim() };
  }
  return { value: text };
}

/**
 * Split a command line into words, honouring "double", 'single', `backtick` and “typographic” quotes; inside quotes
 * a backslash before the closing quote or a backslash keeps that character (`"a \\"b\\""` is `a "b"`).
 */
export function splitArgs(text: string): string[] {
  const out: string[] = [];
  let cur = '';
  let quote: string | null = null;
  let has = false;
  const chars = [...text.trim()];
  for (let i = 0; i < chars.length; i++) {
    const ch = chars[i] ?? '';
    if (quote) {
      const next = chars[i + 1];
      if (ch === '\\' && (next === quote || next === '\\')) cur += chars[++i] ?? '';
      else if (ch === quote) quote = null;
      else cur += ch;
    } else if (Object.hasOwn(QUOTE_PAIRS, ch)) {
      quote = QUOTE_PAIRS[ch] ?? ch;
      has = true;
    } else if (/\s/.test(ch)) {
      if (has) out.push(cur);
      cur = '';
      has = false;
    } else {
      cur += ch;
      has = true;
    }
  }
  if (has) out.push(cur);
  return out;
}

/** An ARGS value that says "no arguments": `none`, `(none)`, `n/a`, `-`, `[]`, empty. */
export const NO_VALUE = /^\(?(?:none|nothing|n\/a|-|\[\])?\)?\.?$/i;

/** The forms an ARGS value may take, shown when one cannot be read. */
export const ARGS_FORMS =
  'words (ARGS: add "Buy milk") or a JSON array of strings (ARGS: ["add", "Buy milk"])';

/**
 * A JSON array of arguments, also with single-quoted strings (`['add', 'Buy milk']`, as Python prints a list):
 * strings, numbers and booleans, each one argument. Null when the text is not such an array.
 */
function argsArray(text: string): string[] | null {
  const attempts = [text, text.replace(/'((?:[^'\\]|\\.)*)'/g, (_, s: string) => JSON.stringify(s))];
  for (const t of attempts) {
    try {
      const parsed: unknown = JSON.parse(t);
      if (Array.isArray(parsed) && parsed.every((a) => ['string', 'number', 'boolean'].includes(typeof a))) {
        return parsed.map((a) => String(a));
      }
    } catch {
      // not this form
    }
  }
  return null;
}

/**
 * Read an ARGS value: its decoration removed (inline code, emphasis; a JSON array may also be wrapped in quotes), then
 * a JSON array (`["add", "Buy milk"]`) or words with quotes (`add "Buy milk"`); `none`, `[]` or nothing is no
 * arguments. A value that starts like an array but is not one (`[add, milk`) is an error whose message shows the
 * forms, never a list of fragments.
 */
export function parseArgsValue(value: string): Result<string[], string> {
  let v = undecorate(value, false);
  const quoted = unquote(v);
  if (quoted !== v && quoted.startsWith('[') && quoted.endsWith(']')) v = quoted;
  if (NO_VALUE.test(v)) return { ok: true, value: [] };
  if (v.startsWith('[')) {
    const array = argsArray(v);
    if (array) return { ok: true, value: array };
    return { ok: false, error: `"${v}" is not a list of arguments; write ${ARGS_FORMS}` };
  }
  return { ok: true, value: splitArgs(v) };
}
