/**
 * Text from outside made safe to show, and the charset of identifiers that computers choose. This file imports
 * nothing and is also published on its own as `@ccagent/protocol/text`, so the dashboard bundles it without zod.
 *
 * A prompt, a model's reply, a tool's output or a client id may hold bytes that act on a terminal instead of being
 * shown: ESC and CSI sequences recolour, move the cursor, clear lines or set the window title; CR rewrites the line;
 * bidi overrides reorder what a person reads. {@link inertText} shows each such character as a visible symbol, so the
 * text is read, never obeyed.
 */

/** Options of {@link inertText}. */
export interface InertTextOptions {
  /**
   * Keep newline and tab as they are (default true: a block of text, such as a file or a model reply). False for one
   * line (a table cell, an id): they become `␊` and `␉` too, so a value cannot start a line of its own.
   */
  multiline?: boolean;
}

// Cc: C0 controls, DEL, C1 controls (CSI 0x9b among them). Cf: format characters (bidi embeddings, overrides and
// isolates, zero-width space, BOM, invisible operators, tags …). Zl/Zp: line and paragraph separators. The
// zero-width (non-)joiners U+200C/U+200D are left: they join emoji and letters and cannot reorder or hide text.
const UNSAFE = /(?![\u200c\u200d])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const UNSAFE_KEEP_LINES = /(?![\n\t\u200c\u200d])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/gu;
const UNSAFE_TEST = /(?![\u200c\u200d])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;
const UNSAFE_TEST_KEEP_LINES = /(?![\n\t\u200c\u200d])[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u;

/** The visible stand-in of one unsafe character: `␛` for ESC (C0 as control pictures), `␡`, else `\x9b` / `\u202e`. */
function symbolOf(c: string): string {
  const code = c.codePointAt(0) ?? 0;
  if (code < 0x20) return String.fromCharCode(0x2400 + code);
  if (code === 0x7f) return '\u2421';
  if (code < 0x100) return `\\x${code.toString(16).padStart(2, '0')}`;
  if (code < 0x10000) return `\\u${code.toString(16).padStart(4, '0')}`;
  return `\\u{${code.toString(16)}}`;
}

/**
 * `text` with every control character (C0, DEL, C1), format character (bidi overrides and isolates, zero-width and
 * invisible characters) and line/paragraph separator replaced by a visible symbol: ESC becomes `␛`, so an ANSI colour
 * sequence reads `␛[31m` instead of being obeyed; CR becomes `␍`, BEL `␇`, CSI `\x9b`, RIGHT-TO-LEFT OVERRIDE `\u202e`.
 * Newline and tab are kept unless `options.multiline` is false. Everything else (letters of any script, emoji) is
 * left as it is.
 */
export function inertText(text: string, options: InertTextOptions = {}): string {
  const multiline = options.multiline !== false;
  return text.replace(multiline ? UNSAFE_KEEP_LINES : UNSAFE, symbolOf);
}

/** True when {@link inertText} would change `text` (it holds a character that acts instead of showing). */
export function hasUnsafeText(text: string, options: InertTextOptions = {}): boolean {
  return (options.multiline !== false ? UNSAFE_TEST_KEEP_LINES : UNSAFE_TEST).test(text);
}

/**
 * A value with {@link inertText} applied to every string in it, object keys included (a tool's result is any JSON,
 * keys too); numbers, booleans and null as they are. Returns new arrays and objects; `value` is not changed.
 */
export function inertDeep<T>(value: T, options: InertTextOptions = {}): T {
  const walk = (v: unknown): unknown => {
    if (typeof v === 'string') return inertText(v, options);
    if (Array.isArray(v)) return v.map(walk);
    if (v !== null && typeof v === 'object') {
      const out: Record<string, unknown> = {};
      for (const [k, x] of Object.entries(v)) out[inertText(k, options)] = walk(x);
      return out;
    }
    return v;
  };
  return walk(value) as T;
}

// In JSON text these can only stand inside strings (the syntax itself is ASCII), where `\uXXXX` means the same.
const JSON_UNSAFE = /[\u007f-\u009f\p{Cf}\p{Zl}\p{Zp}]/gu;

/**
 * `JSON.stringify(value, null, space)` with the characters JSON leaves raw but a terminal obeys (DEL, C1 controls,
 * format characters, line separators) written as `\uXXXX` escapes: the same JSON value, inert on a terminal.
 * (`JSON.stringify` already escapes C0 controls.)
 */
export function inertJson(value: unknown, space?: number): string {
  const text = JSON.stringify(value, null, space);
  if (text === undefined) return 'null';
  return text.replace(JSON_UNSAFE, (c) => {
    let out = '';
    for (let i = 0; i < c.length; i++) out += `\\u${c.charCodeAt(i).toString(16).padStart(4, '0')}`;
    return out;
  });
}

/**
 * Characters of an identifier a computer or a model chooses (client id, command and tool name, request id, instance
 * id …): ASCII letters and digits and `. _ - : @ +`; no space, no control or format character, nothing that a
 * terminal, a table or a shell would read as more than a name.
 */
export const ID_CHARSET_PATTERN = /^[A-Za-z0-9._:@+-]+$/;

/** What {@link ID_CHARSET_PATTERN} allows, in words (the message of a refused id). */
export const ID_CHARSET_MESSAGE =
  'use only ASCII letters, digits and . _ - : @ + (no spaces, control or format characters)';

/** True when `id` is non-empty and made of {@link ID_CHARSET_PATTERN}'s characters only. */
export function isPrintableId(id: string): boolean {
  return ID_CHARSET_PATTERN.test(id);
}
