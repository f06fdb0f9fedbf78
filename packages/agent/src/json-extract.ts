import type { Result } from './agent-error.js';

/** A JSON value pulled out of a model reply, with the list of repairs that were needed (for the step log). */
export interface ExtractedJson {
  value: unknown;
  repairs: string[];
}

/** Why no JSON object could be extracted; `message` is meant for the model (repair prompt) or the planner. */
export interface JsonExtractError {
  code: 'empty' | 'no_object' | 'truncated' | 'invalid_json';
  message: string;
}

/** Index of the `}` closing the object that opens at `start`, honouring strings of both quote kinds; -1 if none. */
function matchBrace(text: string, start: number): number {
  let depth = 0;
  let quote: string | null = null;
  for (let i = start; i < text.length; i++) {
    const ch = text[i];
    if (quote) {
      if (ch === '\\') i++;
      else if (ch === quote) quote = null;
      continue;
    }
    if (ch === '"' || ch === "'") quote = ch;
    else if (ch === '{' || ch === '[') depth++;
    else if (ch === '}' || ch === ']') {
      depth--;
      if (depth === 0) return i;
    }
  }
  return -1;
}

/** Rewrite outside-of-string tokens: single-quoted strings → JSON strings, trailing commas, bare keys, Python literals. */
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
    if (ch === "'") {
      let s = '';
      for (i++; i < text.length && text[i] !== "'"; i++) {
        if (text[i] === '\\' && i + 1 < text.length) {
          const next = text[i + 1] ?? '';
          s += next === "'" ? "'" : `\\${next}`;
          i++;
        } else s += text[i] === '"' ? '\\"' : (text[i] ?? '');
      }
      out += `"${s}"`;
      repairs.add('single-quoted strings');
      continue;
    }
    if (ch === ',') {
      const rest = /^,\s*([}\]])/.exec(text.slice(i));
      if (rest) {
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

/**
 * Extract the first JSON object from a model reply, tolerating code fences (with or without language), prose
 * around it, trailing commas, single-quoted strings, unquoted keys and Python literals. Never throws.
 */
export function extractJsonObject(reply: string): Result<ExtractedJson, JsonExtractError> {
  const text = reply.replace(/^\uFEFF/, '').trim();
  if (text === '') return { ok: false, error: { code: 'empty', message: 'The reply was empty.' } };
  const repairs: string[] = [];
  let body = text;
  const fence = /```[\w-]*\s*\n?([\s\S]*?)```/.exec(text);
  if (fence && (fence[1] ?? '').includes('{')) {
    body = (fence[1] ?? '').trim();
    repairs.push('code fence removed');
  }
  const start = body.indexOf('{');
  if (start < 0) {
    return {
      ok: false,
      error: { code: 'no_object', message: 'The reply contains no JSON object (no "{" found).' },
    };
  }
  const end = matchBrace(body, start);
  if (end < 0) {
    return {
      ok: false,
      error: {
        code: 'truncated',
        message: 'The JSON object is not closed: the reply was cut off or has unbalanced braces.',
      },
    };
  }
  if (start > 0 || end < body.length - 1) repairs.push('text around the object ignored');
  const candidate = body.slice(start, end + 1);
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
