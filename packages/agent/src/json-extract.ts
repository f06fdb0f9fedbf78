import type { Result } from './agent-error.js';

/** A JSON value pulled out of a model reply, with the list of repairs that were needed (for the step log). */
export interface ExtractedJson {
  value: unknown;
  /** Every deviation from "exactly one JSON object" that was tolerated, in words (empty for a clean reply). */
  repairs: string[];
}

/** Why no JSON object could be extracted; `message` is meant for the model (repair prompt) or the planner. */
export interface JsonExtractError {
  code: 'empty' | 'no_object' | 'truncated' | 'invalid_json' | 'multiple';
  message: string;
}

const OPEN_QUOTES: Record<string, string> = { '"': '"', "'": "'", '\u201c': '\u201d' };

/**
 * Index just past the `}` closing the object that opens at `start`, honouring strings (double, single and
 * typographic quotes) and `//` / `/* *\/` comments; -1 if the object is never closed.
 */
function blockEnd(text: string, start: number): number {
  let depth = 0;
  let close: string | null = null;
  for (let i = start; i < text.length; i++) {
    const ch = text[i] ?? '';
    if (close !== null) {
      if (ch === '\\') i++;
      else if (ch === close || (close === '\u201d' && ch === '\u201c')) close = null;
      continue;
    }
    if (ch === '/' && text[i + 1] === '/') {
      const nl = text.indexOf('\n', i);
      i = nl < 0 ? text.length : nl;
      continue;
    }
    if (ch === '/' && text[i + 1] === '*') {
      const endC = text.indexOf('*/', i + 2);
      if (endC < 0) return -1;
      i = endC + 1;
      continue;
    }
    const q = OPEN_QUOTES[ch];
    if (q !== undefined) close = q;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      depth--;
      if (depth === 0) return i + 1;
    }
  }
  return -1;
}

/**
 * Rewrite a JSON-like object into JSON: single-quoted and typographic-quoted strings, comments, trailing commas,
 * bare keys, Python literals. Each kind of rewrite is named in `repairs`.
 */
function loosen(text: string, repairs: Set<string>): string {
  let out = '';
  for (let i = 0; i < text.length; i++) {
    const ch = text[i] ?? '';
    if (ch === '"') {
      const startI = i;
      for (i++; i < text.length && text[i] !== '"'; i++) if (text[i] === '\\') i++;
      out += text.slice(startI, i + 1);
      continue;
    }
    if (ch === "'" || ch === '\u201c' || ch === '\u201d') {
      const closers = ch === "'" ? ["'"] : ['\u201d', '\u201c'];
      let s = '';
      for (i++; i < text.length && !closers.includes(text[i] ?? ''); i++) {
        if (text[i] === '\\' && i + 1 < text.length) {
          const next = text[i + 1] ?? '';
          s += next === "'" ? "'" : `\\${next}`;
          i++;
        } else s += text[i] === '"' ? '\\"' : (text[i] ?? '');
      }
      out += `"${s}"`;
      repairs.add(ch === "'" ? 'single-quoted strings' : 'typographic quotes as string delimiters');
      continue;
    }
    if (ch === '/' && (text[i + 1] === '/' || text[i + 1] === '*')) {
      const endC = text[i + 1] === '/' ? text.indexOf('\n', i) : text.indexOf('*/', i + 2) + 1;
      i = endC <= 0 ? text.length : endC;
      repairs.add('comments');
      continue;
    }
    if (ch === ',') {
      if (/^,(?:\s|\/\/[^\n]*\n|\/\*[\s\S]*?\*\/)*[}\]]/.test(text.slice(i))) {
        repairs.add('trailing commas');
        continue;
      }
    }
    const word = /^[A-Za-z_][A-Za-z0-9_]*/.exec(text.slice(i));
    if (word) {
      const w = word[0];
      const after = text.slice(i + w.length);
      const before = out.trimEnd().slice(-1);
      if ((before === '{' || before === ',') && /^\s*:/.test(after)) {
        out += `"${w}"`;
        repairs.add('unquoted keys');
      } else if (w === 'True' || w === 'False' || w === 'None') {
        out += w === 'True' ? 'true' : w === 'False' ? 'false' : 'null';
        repairs.add('Python literals');
      } else out += w;
      i += w.length - 1;
      continue;
    }
    out += ch;
  }
  return out;
}

/** Top-level `{…}` blocks of a text (outside any other block), and whether the last one is unclosed. */
function topLevelBlocks(text: string): { blocks: Array<[number, number]>; unclosed: boolean } {
  const blocks: Array<[number, number]> = [];
  let i = text.indexOf('{');
  while (i >= 0) {
    const end = blockEnd(text, i);
    if (end < 0) return { blocks, unclosed: true };
    blocks.push([i, end]);
    i = text.indexOf('{', end);
  }
  return { blocks, unclosed: false };
}

/**
 * Extract the one JSON object of a model reply. Tolerated, and each named in `repairs`: a reasoning block
 * (`<think>…</think>`), Qwen's `<tool_call>…</tool_call>` tags, code fences (with or without language), prose
 * around the object, the object wrapped in a one-element array, comments, trailing commas, single-quoted or
 * typographic-quoted strings, unquoted keys and Python literals. Refused: no object, an unclosed object (cut off),
 * text that is not JSON even after those repairs, and **more than one object** (`multiple`) — a reply is never read
 * as its first call. Never throws.
 */
export function extractJsonObject(reply: string): Result<ExtractedJson, JsonExtractError> {
  const repairs: string[] = [];
  let text = reply.replace(/^\uFEFF/, '').replace(/\r\n?/g, '\n');
  const withoutThinking = text.replace(/<think(?:ing)?>[\s\S]*?(?:<\/think(?:ing)?>|$)/gi, '');
  if (withoutThinking !== text) {
    repairs.push('reasoning block removed');
    text = withoutThinking;
  }
  text = text.trim();
  if (text === '') return { ok: false, error: { code: 'empty', message: 'The reply was empty.' } };
  const withoutTags = text.replace(/<\/?tool_call>/gi, '\n');
  if (withoutTags !== text) {
    repairs.push('<tool_call> tags removed');
    text = withoutTags.trim();
  }
  const withoutFences = text.replace(/^[ \t]*(?:`{3,}|~{3,})[\w-]*[ \t]*$/gm, '');
  if (withoutFences !== text) {
    repairs.push('code fence removed');
    text = withoutFences.trim();
  }
  const { blocks, unclosed } = topLevelBlocks(text);
  if (blocks.length > 1) {
    return {
      ok: false,
      error: {
        code: 'multiple',
        message:
          `The reply contains ${blocks.length} JSON objects; exactly one is allowed ` +
          '(one directive is one tool call, and none of them was run).',
      },
    };
  }
  const block = blocks[0];
  if (!block) {
    return unclosed
      ? {
          ok: false,
          error: {
            code: 'truncated',
            message: 'The JSON object is not closed: the reply was cut off or has unbalanced braces.',
          },
        }
      : {
          ok: false,
          error: { code: 'no_object', message: 'The reply contains no JSON object (no "{" found).' },
        };
  }
  if (unclosed) {
    return {
      ok: false,
      error: {
        code: 'multiple',
        message: 'The reply contains a second, unclosed JSON object; exactly one is allowed.',
      },
    };
  }
  const [start, end] = block;
  const before = text.slice(0, start).trim();
  const after = text.slice(end).trim();
  if (/^\[\s*$/.test(before) && /^\]$/.test(after)) repairs.push('object wrapped in an array');
  else if (before !== '' || after !== '') repairs.push('text around the object ignored');
  const candidate = text.slice(start, end);
  try {
    return { ok: true, value: { value: JSON.parse(candidate), repairs } };
  } catch {
    // try the tolerant rewrite below
  }
  const applied = new Set<string>();
  const loosened = loosen(candidate, applied);
  try {
    return { ok: true, value: { value: JSON.parse(loosened), repairs: [...repairs, ...applied] } };
  } catch (err) {
    return {
      ok: false,
      error: {
        code: 'invalid_json',
        message: `The reply is not valid JSON: ${err instanceof Error ? err.message : String(err)}`,
      },
    };
  }
}
