import type { Result } from './agent-error.js';

/** Directive keywords the planner may write. */
export type DirectiveKind = 'ASK_USER' | 'WRITE_FILE' | 'RUN' | 'SHELL' | 'DONE';

/** One program run: a path and its arguments (CC's `run_program`). */
export interface RunSpec {
  path: string;
  args: string[];
}

/** A parsed planner directive (camelCase fields; free-text fields trimmed). */
export type Directive =
  | { kind: 'ASK_USER'; question: string; why: string; next: string }
  | { kind: 'WRITE_FILE'; path: string; language: string; content: string; then: RunSpec[] }
  | { kind: 'RUN'; path: string; args: string[]; expect: string }
  | { kind: 'SHELL'; command: string; expect: string }
  | { kind: 'DONE'; summary: string; notes: string };

/** A successful parse: the first directive, an optional `PLAN:` block, and notes meant for the planner. */
export interface ParsedDirective {
  directive: Directive;
  /** Text of a `PLAN:` block written before the directive, if any. */
  plan?: string;
  /** Kinds of further directives found after the first (ignored; the planner is told). */
  ignored: DirectiveKind[];
  /** Messages for the planner about what the parser tolerated or ignored. */
  notes: string[];
  /**
   * Places where the parser had to guess (e.g. a whole command line in RUN's PATH, file content without a code
   * fence). Empty for a clean parse; `parser-then-model` asks the executor model when it is not.
   */
  guesses: string[];
}

/** Why a reply could not be parsed; `message` is written for the planner to read and act on. */
export interface DirectiveParseError {
  code: 'empty' | 'no_directive' | 'missing_field' | 'unclosed_content' | 'invalid_field';
  message: string;
}

const KINDS: readonly DirectiveKind[] = ['ASK_USER', 'WRITE_FILE', 'RUN', 'SHELL', 'DONE'];
const FIELDS: Record<DirectiveKind, readonly string[]> = {
  ASK_USER: ['QUESTION', 'WHY', 'NEXT'],
  WRITE_FILE: ['PATH', 'LANGUAGE', 'CONTENT', 'THEN'],
  RUN: ['PATH', 'ARGS', 'EXPECT'],
  SHELL: ['COMMAND', 'EXPECT'],
  DONE: ['SUMMARY', 'NOTES'],
};

const FENCE = /^\s*(`{3,}|~{3,})\s*([\w+-]*)\s*$/;
// A directive header: the keyword alone on its line, optionally decorated (`## RUN`, `**RUN**`, `RUN:`, `_run_`,
// `Directive: RUN`, `**DIRECTIVE:** RUN`, `ACTION: RUN`). Space or dash instead of underscore is tolerated
// (`WRITE FILE`). Decoration is removed first (see {@link undecorateHeader}), so every combination reads the same.
const HEADER =
  /^(?:(?:directive|action|next action|next step)\s*:\s*)?(ask[ _-]?user|write[ _-]?file|run|shell|done)\s*:?$/i;
// A field line: `NAME: value`, the name in any case, optionally a heading (`### PATH: x`), a list item
// (`- PATH: x`, `1. PATH: x`) or emphasised (`**PATH:** x`, `**PATH**: x`, `*path*: x`, `_PATH_: x`, `` `PATH`: x ``).
const FIELD_LINE =
  /^\s*(?:#{1,6}\s+)?(?:(?:[-+]|\*(?=\s)|\d+[.)])\s+)?([*_`]{0,2})([A-Za-z][A-Za-z _]*?)([*_`]{0,2})\s*:([*_`]{0,2})(.*)$/;

interface FieldLine {
  /** Upper-case name, spaces as underscores (`PATH`, `ASK_USER`). */
  key: string;
  /** Text after the colon (one leading space removed). */
  value: string;
}

/** Read a `NAME: value` line; decoration must be balanced around the name (`**PATH:**` or `**PATH**:`). */
function fieldOf(line: string): FieldLine | null {
  const m = FIELD_LINE.exec(line);
  if (!m) return null;
  const [, open = '', name = '', before = '', after = '', rest = ''] = m;
  let value = rest;
  if (open === '') {
    if (before !== '') return null;
    value = after + rest;
  } else if (!((before === open && after === '') || (before === '' && after === open))) {
    return null;
  }
  return { key: name.trim().toUpperCase().replace(/ /g, '_'), value: value.replace(/^ /, '') };
}

/** A header line without its Markdown: heading marks, emphasis (`*`, `_` around words), backticks. */
function undecorateHeader(line: string): string {
  return line
    .trim()
    .replace(/^#{1,6}\s*/, '')
    .replace(/[*`]+/g, '')
    .replace(/(^|[\s:])_+|_+(?=$|[\s:])/g, '$1')
    .trim();
}

/** The directive kind a line announces, or null. */
function headerKind(line: string): DirectiveKind | null {
  if (line.length > 80) return null;
  const h = HEADER.exec(undecorateHeader(line));
  return h ? normalizeKind(h[1] ?? '') : null;
}

function normalizeKind(word: string): DirectiveKind {
  const w = word.toUpperCase().replace(/[ _-]/g, '');
  return (w === 'ASKUSER' ? 'ASK_USER' : w === 'WRITEFILE' ? 'WRITE_FILE' : w) as DirectiveKind;
}

interface Header {
  line: number;
  kind: DirectiveKind;
}

/**
 * Find directive headers, skipping lines inside a CONTENT code block (a file may contain a line `run`).
 * Other fences (a whole reply wrapped in ``` … ```) are transparent.
 */
function findHeaders(lines: string[]): Header[] {
  const headers: Header[] = [];
  let awaitingContent = false;
  let contentFence: string | null = null;
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    if (contentFence !== null) {
      const f = FENCE.exec(line);
      if (f && f[2] === '' && (f[1] ?? '').startsWith(contentFence)) contentFence = null;
      continue;
    }
    const fence = FENCE.exec(line);
    if (awaitingContent) {
      if (line.trim() === '') continue;
      awaitingContent = false;
      if (fence) {
        contentFence = fence[1] ?? '```';
        continue;
      }
    }
    const kind = headerKind(line);
    if (kind) {
      headers.push({ line: i, kind });
      continue;
    }
    const field = fieldOf(line);
    if (field && field.key === 'CONTENT' && field.value.trim() === '') {
      awaitingContent = true;
    }
  }
  return headers;
}

/** Opening quote → its closing quote: ASCII quotes and the typographic ones editors and models write. */
const QUOTE_PAIRS: Record<string, string> = {
  '"': '"',
  "'": "'",
  '\u201c': '\u201d',
  '\u2018': '\u2019',
  '`': '`',
};

/**
 * A value wholly wrapped in one pair of quotes or backticks (`"ls"`, `'ls'`, `` `ls` ``, `“ls”`) without that quote
 * inside → the text inside; anything else unchanged. So `COMMAND: "ls"` and `COMMAND: ls` send the same command.
 */
export function unwrapQuotes(value: string): string {
  let v = value.trim();
  const fence = /^(`+)([^`][\s\S]*?)\1$/.exec(v);
  if (fence) return (fence[2] ?? '').trim();
  const open = v[0] ?? '';
  const close = QUOTE_PAIRS[open];
  if (close !== undefined && v.length >= 2 && v.endsWith(close)) {
    const inner = v.slice(1, -1);
    if (!inner.includes(close) && !inner.includes(open)) v = inner.trim();
  }
  return v;
}

/** Split a command line into words, honouring "double", 'single' and “typographic” quotes. */
export function splitArgs(text: string): string[] {
  const trimmed = text.trim();
  if (trimmed.startsWith('[')) {
    try {
      const parsed: unknown = JSON.parse(trimmed);
      if (Array.isArray(parsed)) return parsed.map((a) => (typeof a === 'string' ? a : JSON.stringify(a)));
    } catch {
      // not JSON: fall through to word splitting
    }
  }
  const out: string[] = [];
  let cur = '';
  let quote: string | null = null;
  let has = false;
  for (const ch of trimmed) {
    if (quote) {
      if (ch === quote) quote = null;
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

function cleanPath(p: string): string {
  return unwrapQuotes(p)
    .replace(/^[`"'\u201c\u2018]+|[`"'\u201d\u2019]+$/g, '')
    .trim();
}

// A list item marker: `-`, `*`, `+`, `1.`, `1)`, `1:` or a bare number (`1 RUN /TODO.lua list`, as seed 001 writes).
const LIST_ITEM = /^\s*(?:[-*+]|\d+[.):]?)\s+/;

const NONE = /^\(?(?:none|nothing|n\/a|-|\[\])?\)?\.?$/i;

function parseRunLine(line: string): RunSpec | null {
  let text = line
    .trim()
    .replace(LIST_ITEM, '')
    .replace(/^`+|`+$/g, '')
    .trim();
  text = text.replace(/^run\s*:?\s+/i, '');
  if (NONE.test(text)) return null;
  const words = splitArgs(text);
  const [path, ...args] = words;
  if (!path) return null;
  return { path: cleanPath(path), args };
}

/**
 * The run lines of a THEN field. When the planner wrote a list, only its items count (a sign-off such as "I hope
 * this helps!" after the list is not a program); otherwise the lines up to the first blank line, `;`-separated runs
 * allowed.
 */
function thenLines(value: string): string[] {
  const lines = value.split('\n');
  if (lines.some((l) => LIST_ITEM.test(l))) return lines.filter((l) => LIST_ITEM.test(l));
  const blank = lines.findIndex((l) => l.trim() === '');
  return (blank < 0 ? lines : lines.slice(0, blank)).flatMap((l) => l.split(';'));
}

interface RawFields {
  values: Map<string, string>;
  unclosedContent: boolean;
  /** Filled by the field collection and {@link build} where they had to guess. */
  guesses: string[];
}

function collectFields(kind: DirectiveKind, lines: string[]): RawFields {
  const allowed = FIELDS[kind];
  const values = new Map<string, string>();
  let current: string | null = null;
  let unclosedContent = false;
  const guesses: string[] = [];
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const f = fieldOf(line);
    const key = f ? f.key : '';
    if (f && allowed.includes(key) && !values.has(key)) {
      current = key;
      const rest = f.value;
      if (key === 'CONTENT') {
        // The value is the next fenced block (or, without a fence, everything up to the next known field).
        let j = i + 1;
        if (rest.trim() !== '') {
          values.set('CONTENT', rest.trim());
          guesses.push('CONTENT was written on the CONTENT: line instead of in a code block');
          continue;
        }
        while (j < lines.length && (lines[j] ?? '').trim() === '') j++;
        const open = FENCE.exec(lines[j] ?? '');
        if (open) {
          const fence = open[1] ?? '```';
          const body: string[] = [];
          let k = j + 1;
          let closed = false;
          for (; k < lines.length; k++) {
            const c = FENCE.exec(lines[k] ?? '');
            if (c && c[2] === '' && (c[1] ?? '').startsWith(fence)) {
              closed = true;
              break;
            }
            body.push(lines[k] ?? '');
          }
          values.set('CONTENT', body.join('\n') + '\n');
          if (!closed) unclosedContent = true;
          i = k;
          current = null;
          continue;
        }
        // No fence: the following lines up to the next known field are the content.
        const body: string[] = [];
        let k = j;
        for (; k < lines.length; k++) {
          const next = fieldOf(lines[k] ?? '');
          if (next && allowed.includes(next.key)) break;
          body.push(lines[k] ?? '');
        }
        const content = body.join('\n').replace(/\s+$/, '');
        values.set('CONTENT', content === '' ? '' : `${content}\n`);
        if (content !== '') guesses.push('CONTENT had no code fence; took the lines up to the next field');
        i = k - 1;
        current = null;
        continue;
      }
      values.set(key, rest);
      continue;
    }
    if (current !== null && !FENCE.test(line)) {
      values.set(current, `${values.get(current) ?? ''}\n${line}`);
    }
  }
  for (const [k, v] of values) if (k !== 'CONTENT') values.set(k, v.trim());
  return { values, unclosedContent, guesses };
}

function missing(kind: DirectiveKind, field: string): Result<never, DirectiveParseError> {
  return {
    ok: false,
    error: {
      code: 'missing_field',
      message: `${kind} needs a ${field}: line. Write it as "${field}: <value>" under the ${kind} keyword.`,
    },
  };
}

function build(kind: DirectiveKind, raw: RawFields): Result<Directive, DirectiveParseError> {
  const v = raw.values;
  const get = (k: string): string => v.get(k) ?? '';
  switch (kind) {
    case 'ASK_USER':
      if (!get('QUESTION')) return missing(kind, 'QUESTION');
      return { ok: true, value: { kind, question: get('QUESTION'), why: get('WHY'), next: get('NEXT') } };
    case 'WRITE_FILE': {
      if (!get('PATH')) return missing(kind, 'PATH');
      if (!v.has('CONTENT')) return missing(kind, 'CONTENT');
      if (raw.unclosedContent) {
        return {
          ok: false,
          error: {
            code: 'unclosed_content',
            message:
              'The CONTENT code block of WRITE_FILE is not closed with ``` (your reply was probably cut off). ' +
              'Nothing was written. Send the complete file again; keep it shorter if you can.',
          },
        };
      }
      const then = thenLines(get('THEN'))
        .map(parseRunLine)
        .filter((r): r is RunSpec => r !== null);
      return {
        ok: true,
        value: {
          kind,
          path: cleanPath(get('PATH')),
          language: unwrapQuotes(get('LANGUAGE')),
          content: get('CONTENT'),
          then,
        },
      };
    }
    case 'RUN': {
      if (!get('PATH')) return missing(kind, 'PATH');
      // Tolerate the whole command line in PATH ("PATH: TODO.lua add milk") when ARGS is absent.
      const words = splitArgs(get('PATH'));
      const path = cleanPath(words[0] ?? '');
      const hasArgs = v.has('ARGS') && !NONE.test(get('ARGS'));
      const args = hasArgs ? splitArgs(get('ARGS')) : words.slice(1);
      if (words.length > 1) {
        raw.guesses.push(
          hasArgs
            ? `RUN PATH "${get('PATH')}" contains spaces; used "${path}" and ignored the rest`
            : `RUN PATH "${get('PATH')}" read as program "${path}" with arguments ${JSON.stringify(args)}`,
        );
      }
      return { ok: true, value: { kind, path, args, expect: get('EXPECT') } };
    }
    case 'SHELL':
      if (!get('COMMAND')) return missing(kind, 'COMMAND');
      return {
        ok: true,
        value: { kind, command: unwrapQuotes(get('COMMAND')), expect: get('EXPECT') },
      };
    case 'DONE':
      return { ok: true, value: { kind, summary: get('SUMMARY'), notes: get('NOTES') } };
  }
}

function extractPlan(lines: string[]): string | undefined {
  const idx = lines.findIndex((l) => /^\s*(?:#{1,6}\s*)?(?:\*\*)?plan(?:\*\*)?\s*:/i.test(l));
  if (idx < 0) return undefined;
  const first = (lines[idx] ?? '').replace(/^\s*(?:#{1,6}\s*)?(?:\*\*)?plan(?:\*\*)?\s*:\s*/i, '');
  const text = [first, ...lines.slice(idx + 1)]
    .filter((l) => !FENCE.test(l))
    .join('\n')
    .trim();
  return text === '' ? undefined : text;
}

/**
 * Remove reasoning blocks (`<think>…</think>`, as Qwen3/DeepSeek-R1 write them into the content when thinking is
 * not split out). An unclosed `<think>` (reply cut off while reasoning) removes everything after it.
 */
export function stripThinking(text: string): string {
  return text.replace(/<think(?:ing)?>[\s\S]*?(?:<\/think(?:ing)?>|$)/gi, '');
}

/**
 * Parse a planner reply into its first directive, tolerantly: any case, extra whitespace, CRLF, prose before and
 * after, code fences with or without a language, Markdown decoration of keywords. Several directives → the first
 * is taken and `notes` tells the planner the rest were ignored. Errors carry a message the planner can act on.
 */
export function parseDirective(reply: string): Result<ParsedDirective, DirectiveParseError> {
  const text = stripThinking(reply.replace(/\r\n?/g, '\n').replace(/^\uFEFF/, ''));
  if (text.trim() === '') {
    return {
      ok: false,
      error: { code: 'empty', message: 'Your reply was empty. Write exactly one directive.' },
    };
  }
  const lines = text.split('\n');
  const headers = findHeaders(lines);
  const first = headers[0];
  if (!first) {
    // An invented keyword (`EDIT_FILE`, `READ_FILE`) alone on a line: name it, so the planner sees what was wrong.
    const invented = lines
      .map((l) => /^[A-Z][A-Z_]{2,}[A-Z]$/.exec(undecorateHeader(l).replace(/:$/, ''))?.[0])
      .find((w) => w !== undefined && !['PLAN', 'NOTE', 'NOTES'].includes(w));
    return {
      ok: false,
      error: {
        code: 'no_directive',
        message:
          (invented ? `${invented} is not a directive. ` : 'No directive found. ') +
          `Put one of ${KINDS.join(', ')} alone on a line, followed by its fields ` +
          '(e.g. "RUN" then "PATH: hello.lua").',
      },
    };
  }
  const end = headers[1]?.line ?? lines.length;
  const raw = collectFields(first.kind, lines.slice(first.line + 1, end));
  const built = build(first.kind, raw);
  if (!built.ok) return built;
  const ignored = headers.slice(1).map((h) => h.kind);
  const notes: string[] = [];
  if (ignored.length > 0) {
    notes.push(
      `Your reply contained ${headers.length} directives (${headers.map((h) => h.kind).join(', ')}); ` +
        `only the first (${first.kind}) was used. Write one directive per reply.`,
    );
  }
  const plan = extractPlan(lines.slice(0, first.line));
  return {
    ok: true,
    value: { directive: built.value, ...(plan ? { plan } : {}), ignored, notes, guesses: raw.guesses },
  };
}

function quoteWord(a: string): string {
  return /^[^\s"']+$/.test(a) ? a : JSON.stringify(a);
}

/**
 * Canonical text of a directive, in the planner's own format: what the executor model is given, and (with
 * `brief`, file content replaced by its size) what the step log and a failure report show as the last plan.
 */
export function formatDirective(d: Directive, brief = false): string {
  switch (d.kind) {
    case 'WRITE_FILE': {
      const runs = d.then.map((r) => `- ${[r.path, ...r.args].map(quoteWord).join(' ')}`);
      const lines = [`WRITE_FILE`, `PATH: ${d.path}`, `LANGUAGE: ${d.language}`];
      if (brief) lines.push(`CONTENT: (${d.content.split('\n').length} lines)`);
      else lines.push('CONTENT:', '```' + d.language, d.content.replace(/\n$/, ''), '```');
      lines.push(`THEN:${runs.length > 0 ? `\n${runs.join('\n')}` : ' (none)'}`);
      return lines.join('\n');
    }
    case 'RUN':
      return `RUN\nPATH: ${d.path}\nARGS: ${d.args.map(quoteWord).join(' ')}\nEXPECT: ${d.expect}`;
    case 'SHELL':
      return `SHELL\nCOMMAND: ${d.command}\nEXPECT: ${d.expect}`;
    case 'ASK_USER':
      return `ASK_USER\nQUESTION: ${d.question}\nWHY: ${d.why}\nNEXT: ${d.next}`;
    case 'DONE':
      return `DONE\nSUMMARY: ${d.summary}\nNOTES: ${d.notes}`;
  }
}
