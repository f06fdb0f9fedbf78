import type { Result } from './agent-error.js';
import { NO_VALUE, parseArgsValue, splitArgs, splitRemark, undecorate } from './field-values.js';

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
   * Text the parser left out of every value — prose before, between or after the fields, a remark after a value on
   * its line — for the step log. Never merged into a value.
   */
  tolerated: string[];
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

/** A path: decoration and surrounding quotes removed (`` `TODO.lua` ``, `"TODO.lua"`, `**TODO.lua**`). */
function cleanPath(p: string): string {
  return undecorate(p)
    .replace(/^[`"'\u201c\u2018]+|[`"'\u201d\u2019]+$/g, '')
    .trim();
}

// A list item marker: `-`, `*`, `+`, `1.`, `1)`, `1:` or a bare number (`1 RUN /TODO.lua list`, as seed 001 writes).
const LIST_ITEM = /^\s*(?:[-*+]|\d+[.):]?)\s+/;

/** Every field name of every directive: a `NAME: value` line with one of these is a field, never a run or prose. */
const FIELD_NAMES = new Set(Object.values(FIELDS).flat());

function isFieldLine(line: string): boolean {
  const f = fieldOf(line);
  return f !== null && FIELD_NAMES.has(f.key);
}

function clip(text: string, max = 120): string {
  const t = text.trim();
  return t.length <= max ? t : `${t.slice(0, max - 1)}…`;
}

/** One run of a THEN item or line, the remark after it set apart; null for "none". */
function parseRunLine(line: string, tolerated: string[]): RunSpec | null {
  const item = line.trim().replace(LIST_ITEM, '');
  const { value, remark } = splitRemark(item);
  if (remark !== undefined) tolerated.push(`THEN: text after the run ignored: "${clip(remark)}"`);
  const text = undecorate(value, false).replace(/^run\s*:?\s+/i, '');
  if (NO_VALUE.test(text)) return null;
  const [path, ...args] = splitArgs(text);
  if (!path) return null;
  return { path: cleanPath(path), args };
}

/** A THEN line read as a run: its first word names a program (the written file, a `.lua` file or a path). */
function looksLikeRun(line: string, written: string): boolean {
  const text = undecorate(line.trim(), false).replace(/^run\s*:?\s+/i, '');
  const first = cleanPath(splitArgs(text)[0] ?? '').replace(/^\//, '');
  const file = written.replace(/^\//, '');
  return (
    first !== '' &&
    (first === file || `${first}.lua` === file || /\.lua$/i.test(first) || first.includes('/'))
  );
}

interface ThenLines {
  /** The THEN line's own text (runs separated by `;`), empty when the runs are below it. */
  line: string;
  /** List items under THEN. */
  items: string[];
  /** Unmarked lines directly under an empty THEN line, kept while they read as runs (decided in `build`). */
  unmarked: string[];
}

interface RawFields {
  values: Map<string, string>;
  then: ThenLines;
  unclosedContent: boolean;
  /** Filled by the field collection and {@link build} where they had to guess. */
  guesses: string[];
  /** Text left out of every value (prose after or between the fields), for the step log. */
  tolerated: string[];
  /** One-line fields whose line was empty while text followed on the very next line (a value put below its label). */
  valueBelow: Set<string>;
  /** The first field written twice with different values. */
  twice?: { key: string; first: string; second: string };
}

/**
 * Collect the fields of one directive. A one-line field's value is the rest of its own line; `CONTENT` is the code
 * block after it (or, unfenced, the lines up to the next field: a guess) and `THEN` its list (or its line). Every
 * other line — prose before, between or after the fields, a closing fence, a field of another directive — is left
 * out of every value and logged as tolerated.
 */
function collectFields(kind: DirectiveKind, lines: string[]): RawFields {
  const allowed = FIELDS[kind];
  const values = new Map<string, string>();
  const then: ThenLines = { line: '', items: [], unmarked: [] };
  let unclosedContent = false;
  const guesses: string[] = [];
  const tolerated: string[] = [];
  const valueBelow = new Set<string>();
  let twice: RawFields['twice'];
  const ignore = (line: string) => {
    if (line.trim() !== '' && !FENCE.test(line) && !/^\s*(?:-{3,}|\*{3,}|_{3,})\s*$/.test(line)) {
      tolerated.push(`text outside the fields ignored: "${clip(line)}"`);
    }
  };
  for (let i = 0; i < lines.length; i++) {
    const line = lines[i] ?? '';
    const f = fieldOf(line);
    const key = f ? f.key : '';
    if (!f || !allowed.includes(key)) {
      ignore(line);
      continue;
    }
    const rest = f.value;
    if (values.has(key)) {
      const first = values.get(key) ?? '';
      if (key === 'CONTENT' || key === 'THEN' || undecorate(first) !== undecorate(rest)) {
        twice ??= { key, first, second: rest };
      } else {
        tolerated.push(`${key} written twice with the same value`);
      }
      if (key !== 'CONTENT') continue;
    }
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
        if (!values.has('CONTENT')) values.set('CONTENT', body.join('\n') + '\n');
        if (!closed) unclosedContent = true;
        i = k;
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
      if (!values.has('CONTENT')) values.set('CONTENT', content === '' ? '' : `${content}\n`);
      if (content !== '') guesses.push('CONTENT had no code fence; took the lines up to the next field');
      i = k - 1;
      continue;
    }
    values.set(key, rest);
    if (key === 'THEN') {
      // THEN's value: the list under it (blank lines allowed before its first item, a blank line ends it), else its
      // own line and, when that is empty, the unmarked lines directly under it.
      let j = i + 1;
      while (j < lines.length && (lines[j] ?? '').trim() === '') j++;
      const isItem = (l: string) => LIST_ITEM.test(l) && !isFieldLine(l);
      if (isItem(lines[j] ?? '')) {
        while (j < lines.length && isItem(lines[j] ?? '')) then.items.push(lines[j++] ?? '');
        if (rest.trim() !== '' && !NO_VALUE.test(undecorate(rest))) {
          tolerated.push(`THEN: text before its list ignored: "${clip(rest)}"`);
        }
        i = j - 1;
        continue;
      }
      then.line = rest;
      if (rest.trim() === '') {
        j = i + 1;
        while (j < lines.length) {
          const l = lines[j] ?? '';
          if (l.trim() === '' || FENCE.test(l) || isFieldLine(l)) break;
          then.unmarked.push(l);
          j++;
        }
        i = j - 1;
      }
      continue;
    }
    const below = lines[i + 1] ?? '';
    if (rest.trim() === '' && below.trim() !== '' && !FENCE.test(below) && !isFieldLine(below)) {
      valueBelow.add(key);
    }
    if (FREE_TEXT.includes(key)) {
      // A sentence the model wrapped onto the next line ("… the run with 3" / "printed 3, 2, 1, Liftoff!."): the line
      // right below continues it when the text so far has no closing punctuation and the line starts in lower case.
      // A new sentence (a sign-off, a question to the user) starts with a capital and is left out like other prose.
      let value = rest;
      while (
        value.trim() !== '' &&
        !/[.!?:;)\]"'\u201d]\s*$/.test(value) &&
        /^\s*[a-z]/.test(lines[i + 1] ?? '') &&
        !isFieldLine(lines[i + 1] ?? '') &&
        !LIST_ITEM.test(lines[i + 1] ?? '')
      ) {
        value = `${value.trimEnd()} ${(lines[++i] ?? '').trim()}`;
      }
      values.set(key, value);
    }
  }
  return {
    values,
    then,
    unclosedContent,
    guesses,
    tolerated,
    valueBelow,
    ...(twice ? { twice } : {}),
  };
}

function missing(kind: DirectiveKind, field: string, raw: RawFields): Result<never, DirectiveParseError> {
  if (raw.valueBelow.has(field)) return valueBelow(kind, field);
  return {
    ok: false,
    error: {
      code: 'missing_field',
      message: `${kind} needs a ${field}: line. Write it as "${field}: <value>" under the ${kind} keyword.`,
    },
  };
}

function invalid(message: string): Result<never, DirectiveParseError> {
  return { ok: false, error: { code: 'invalid_field', message } };
}

function valueBelow(kind: DirectiveKind, field: string): Result<never, DirectiveParseError> {
  return invalid(
    `${kind}'s ${field}: line is empty and text follows on the next line; a field's value is the rest of its own ` +
      `line, so nothing was run. Write the value on the same line: "${field}: <value>".`,
  );
}

/** Fields of free text (never a path, argument or command): a sentence wrapped onto the next line continues them. */
const FREE_TEXT = ['QUESTION', 'WHY', 'NEXT', 'EXPECT', 'SUMMARY', 'NOTES'];

/** Fields whose value reaches the computer or the user: a value put on the line below them is refused, not dropped. */
const VALUE_ON_ITS_LINE = ['PATH', 'ARGS', 'COMMAND', 'QUESTION'];

/**
 * A one-line structured value: the remark after it set apart (logged), then its decoration removed. `spanIsValue`: a
 * value in inline code or bold followed by words is the code (a path, a shell command), see `splitRemark`.
 */
function structured(raw: RawFields, field: string, spanIsValue: boolean): string {
  const { value, remark } = splitRemark(raw.values.get(field) ?? '', spanIsValue);
  if (remark !== undefined) raw.tolerated.push(`${field}: text after the value ignored: "${clip(remark)}"`);
  return value;
}

/** The THEN runs: its list items, else its line (`;`-separated) and the unmarked lines under it that read as runs. */
function thenRuns(raw: RawFields, written: string): RunSpec[] {
  const { line, items, unmarked } = raw.then;
  let lines: string[];
  if (items.length > 0) lines = items;
  else {
    const runs = unmarked.findIndex((l) => !looksLikeRun(l, written));
    const kept = runs < 0 ? unmarked : unmarked.slice(0, runs);
    for (const l of unmarked.slice(kept.length)) {
      raw.tolerated.push(`text outside the fields ignored: "${clip(l)}"`);
    }
    lines = [...(line.trim() === '' ? [] : line.split(';')), ...kept];
  }
  return lines.map((l) => parseRunLine(l, raw.tolerated)).filter((r): r is RunSpec => r !== null);
}

function build(kind: DirectiveKind, raw: RawFields): Result<Directive, DirectiveParseError> {
  const v = raw.values;
  const text = (k: string): string => undecorate(v.get(k) ?? '');
  if (raw.twice) {
    const { key, first, second } = raw.twice;
    return invalid(
      `${kind} has ${key} twice with different values ("${clip(first, 60)}", "${clip(second, 60)}"), so nothing ` +
        `was run. Write each field once: "${key}: <value>".`,
    );
  }
  for (const field of VALUE_ON_ITS_LINE) {
    if (raw.valueBelow.has(field) && FIELDS[kind].includes(field)) return valueBelow(kind, field);
  }
  switch (kind) {
    case 'ASK_USER':
      if (!text('QUESTION')) return missing(kind, 'QUESTION', raw);
      return { ok: true, value: { kind, question: text('QUESTION'), why: text('WHY'), next: text('NEXT') } };
    case 'WRITE_FILE': {
      if (!text('PATH')) return missing(kind, 'PATH', raw);
      if (!v.has('CONTENT')) return missing(kind, 'CONTENT', raw);
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
      const written = structured(raw, 'PATH', true);
      const path = cleanPath(written);
      // A name with spaces must be quoted; unquoted, the words after the first are prose or a second path.
      if (/\s/.test(path) && !/^["'\u201c\u2018]/.test(undecorate(written, false))) {
        return invalid(
          `WRITE_FILE's PATH "${clip(path, 80)}" is not one path, so nothing was written. Write the path alone: ` +
            '"PATH: hello.lua" (in quotes if the name has spaces: PATH: "my file.lua").',
        );
      }
      const language = undecorate(structured(raw, 'LANGUAGE', true));
      const [word = '', ...more] = language.split(/\s+/);
      if (more.length > 0) raw.tolerated.push(`LANGUAGE: words after "${word}" ignored`);
      return {
        ok: true,
        value: { kind, path, language: word, content: v.get('CONTENT') ?? '', then: thenRuns(raw, path) },
      };
    }
    case 'RUN': {
      if (!text('PATH')) return missing(kind, 'PATH', raw);
      // Tolerate the whole command line in PATH ("PATH: TODO.lua add milk") when ARGS is absent.
      const line = structured(raw, 'PATH', false);
      const words = splitArgs(undecorate(line, false));
      const path = cleanPath(words[0] ?? '');
      let args = words.slice(1);
      let fromArgs = false;
      if (v.has('ARGS')) {
        const parsed = parseArgsValue(structured(raw, 'ARGS', false));
        if (!parsed.ok) return invalid(`RUN's ARGS: ${parsed.error}, so nothing was run.`);
        fromArgs = parsed.value.length > 0 || words.length === 1;
        if (fromArgs) args = parsed.value;
      }
      if (words.length > 1) {
        raw.guesses.push(
          fromArgs
            ? `RUN PATH "${line}" contains spaces; used "${path}" and ignored the rest`
            : `RUN PATH "${line}" read as program "${path}" with arguments ${JSON.stringify(args)}`,
        );
      }
      return { ok: true, value: { kind, path, args, expect: text('EXPECT') } };
    }
    case 'SHELL': {
      const command = undecorate(structured(raw, 'COMMAND', true));
      if (!command) return missing(kind, 'COMMAND', raw);
      return { ok: true, value: { kind, command, expect: text('EXPECT') } };
    }
    case 'DONE':
      return { ok: true, value: { kind, summary: text('SUMMARY'), notes: text('NOTES') } };
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
    value: {
      directive: built.value,
      ...(plan ? { plan } : {}),
      ignored,
      notes,
      tolerated: raw.tolerated,
      guesses: raw.guesses,
    },
  };
}

/** A word that reads back as itself: bare when safe, else in double quotes (null when it holds a double quote). */
function quoteWord(a: string): string | null {
  if (/^[\w./:+=,@%-]+$/.test(a) && !NO_VALUE.test(a) && !a.startsWith('-'.repeat(a.length))) return a;
  return a.includes('"') ? null : `"${a}"`;
}

/** Words as an ARGS or THEN text that reads back as the same words (a JSON array when one holds a `"`). */
function formatWords(words: readonly string[]): string {
  const quoted = words.map(quoteWord);
  return quoted.every((w) => w !== null) ? quoted.join(' ') : JSON.stringify(words);
}

/** A one-line value that reads back as itself: in inline code when a remark mark or decoration would change it. */
function protect(value: string, spanIsValue: boolean): string {
  if (splitRemark(value, spanIsValue).remark === undefined && undecorate(value) === value) return value;
  return value.includes('`') ? value : `\`${value}\``;
}

/**
 * Canonical text of a directive, in the planner's own format: what the executor model is given, and (with
 * `brief`, file content replaced by its size) what the step log and a failure report show as the last plan.
 */
export function formatDirective(d: Directive, brief = false): string {
  switch (d.kind) {
    case 'WRITE_FILE': {
      const runs = d.then.map((r) => `- ${formatWords([r.path, ...r.args])}`);
      const lines = [`WRITE_FILE`, `PATH: ${formatWords([d.path])}`, `LANGUAGE: ${d.language}`];
      if (brief) lines.push(`CONTENT: (${d.content.split('\n').length} lines)`);
      else lines.push('CONTENT:', '```' + d.language, d.content.replace(/\n$/, ''), '```');
      lines.push(`THEN:${runs.length > 0 ? `\n${runs.join('\n')}` : ' (none)'}`);
      return lines.join('\n');
    }
    case 'RUN':
      return `RUN\nPATH: ${formatWords([d.path])}\nARGS: ${formatWords(d.args)}\nEXPECT: ${d.expect}`;
    case 'SHELL':
      return `SHELL\nCOMMAND: ${protect(d.command, true)}\nEXPECT: ${d.expect}`;
    case 'ASK_USER':
      return `ASK_USER\nQUESTION: ${d.question}\nWHY: ${d.why}\nNEXT: ${d.next}`;
    case 'DONE':
      return `DONE\nSUMMARY: ${d.summary}\nNOTES: ${d.notes}`;
  }
}
