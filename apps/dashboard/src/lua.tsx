/**
 * Lua syntax highlighting as elements: a small tokenizer (comments, strings, long brackets, numbers, keywords,
 * builtins) whose tokens become `<span class="tok-…">` with their text as a text node. Text only, never HTML.
 */
import type { ComponentChildren } from 'preact';
import { visible } from './text.js';

/** Past this many characters code is shown without colours (the tokenizer is linear, the DOM is not free). */
export const HIGHLIGHT_MAX_CHARS = 100_000;

const KEYWORDS = new Set(
  'and break do else elseif end false for function goto if in local nil not or repeat return then true until while'.split(
    ' ',
  ),
);
const BUILTINS = new Set(
  'print require pairs ipairs tostring tonumber type error pcall xpcall select next setmetatable getmetatable rawget rawset table string math os io fs term shell peripheral turtle rednet colors colours textutils http redstone parallel sleep read write'.split(
    ' ',
  ),
);

// One token per match: long comment, line comment, long string, quoted string, number, name, anything else.
const TOKEN =
  /--\[(=*)\[[\s\S]*?\]\1\]|--[^\n]*|\[(=*)\[[\s\S]*?\]\2\]|"(?:\\[\s\S]|[^"\\\n])*"?|'(?:\\[\s\S]|[^'\\\n])*'?|0[xX][\da-fA-F]+|\d+(?:\.\d*)?(?:[eE][+-]?\d+)?|[A-Za-z_]\w*|[^\sA-Za-z_\d"'[-]+|\s+|[\s\S]/g;

function classOf(t: string): string | undefined {
  if (t.startsWith('--')) return 'tok-comment';
  if (t.startsWith('"') || t.startsWith("'") || /^\[=*\[/.test(t)) return 'tok-string';
  if (/^\d|^0[xX]/.test(t)) return 'tok-number';
  if (KEYWORDS.has(t)) return 'tok-keyword';
  if (BUILTINS.has(t)) return 'tok-builtin';
  return undefined;
}

/** `code` as highlighted spans (plain text past {@link HIGHLIGHT_MAX_CHARS}). */
export function highlight(code: string): ComponentChildren {
  if (code.length > HIGHLIGHT_MAX_CHARS) return visible(code);
  const out: ComponentChildren[] = [];
  let plain = '';
  let k = 0;
  for (const m of code.matchAll(TOKEN)) {
    const t = m[0];
    const c = classOf(t);
    if (c === undefined) {
      plain += t;
      continue;
    }
    if (plain !== '') {
      out.push(visible(plain));
      plain = '';
    }
    out.push(
      <span key={k++} class={c}>
        {visible(t)}
      </span>,
    );
  }
  if (plain !== '') out.push(visible(plain));
  return out;
}
