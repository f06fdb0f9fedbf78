/**
 * A task's step log read as a conversation: the prompt, each model reply (with the file it wrote and the previous
 * version of that file), each command call with its output, questions and answers, bounces and tolerated deviations
 * as notes, and the final result. The dashboard's conversation view and `ccagent tasks export --format md` both read
 * a task through this one module, so what a person reads in the browser and in the exported file is the same story.
 *
 * It imports nothing and is published on its own as `@ccagent/protocol/conversation` (no zod in the dashboard's
 * bundle). Its input is the engine's record shape in camelCase (the CLI's `StepView`); the dashboard maps its
 * snake_case wire records with {@link stepFromWire}.
 */
import { inertText } from './text.js';

/** Token use and model-side time of one model call. */
export interface ConversationUsage {
  promptTokens?: number;
  completionTokens?: number;
  totalDurationMs?: number;
}

/** One step-log record, as far as the conversation reads it. */
export interface ConversationStep {
  seq: number;
  step: number;
  kind: string;
  at: number;
  model?: string;
  output?: unknown;
  directive?: unknown;
  validationErrors?: string[];
  toolCall?: unknown;
  toolResult?: unknown;
  error?: { code: string; message: string };
  durationMs?: number;
  usage?: ConversationUsage;
  /** Short form only (the timeline's rows): a preview of the text out. */
  preview?: string;
}

/** A question the model asked, with its answer when there is one. */
export interface ConversationQuestion {
  question: string;
  why?: string;
  answer?: string;
  askedAt: number;
  answeredAt?: number;
}

/** A follow-up message sent to the task while it ran or after it ended. */
export interface ConversationMessage {
  text: string;
  from?: string;
  at: number;
}

/** The task itself (`result`: a planner's `{summary}`, a chat's `{message}`, or any value, shown as text). */
export interface ConversationTask {
  id: string;
  kind: string;
  status: string;
  prompt: string;
  clientId?: string | null;
  result?: unknown;
  error?: { code: string; message: string };
  createdAt?: number;
}

/** A file the model wrote (WRITE_FILE), with the version before it in this task when there was one. */
export interface WrittenFile {
  path: string;
  language?: string;
  content: string;
  /** The same path's content at its previous WRITE_FILE in this task (undefined: first write seen). */
  previous?: string;
}

/** One entry of the conversation. */
export type ConversationItem =
  | { type: 'prompt'; text: string }
  | {
      type: 'reply';
      seq: number;
      step: number;
      /** The model role (`planner`, `executor`, `native`, `chat` …). */
      role: string;
      model?: string;
      text: string;
      thinking?: string;
      /** The directive or decision the reply was read as (`WRITE_FILE`, `RUN`, `DONE` …). */
      directive?: string;
      /** Native tool calls the reply asked for: name and arguments as JSON text. */
      calls: { name: string; args: string }[];
      file?: WrittenFile;
      usage?: ConversationUsage;
      durationMs?: number;
      at: number;
    }
  | {
      type: 'call';
      seq: number;
      step: number;
      command: string;
      args: string;
      ok: boolean;
      output: string;
      error?: string;
      durationMs?: number;
      at: number;
    }
  | { type: 'question'; question: string; why?: string; answer?: string; at: number }
  | { type: 'message'; text: string; from?: string; at: number }
  | { type: 'note'; seq: number; tone: 'bounce' | 'tolerated' | 'error' | 'info'; text: string; at: number }
  | { type: 'pending'; seq: number; role: string; at: number }
  | { type: 'result'; status: string; text: string; error?: string };

/** Record kinds that are not a model's reply even when they carry `output`. */
const NOT_REPLIES = new Set([
  'decision',
  'tool_result',
  'queued_run',
  'gather',
  'translate',
  'policy',
  'resumed',
  'reopened',
  'note',
]);
const MODEL_REQUEST = 'model_request';

function obj(v: unknown): Record<string, unknown> | undefined {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
    ? (v as Record<string, unknown>)
    : undefined;
}

function str(v: unknown): string | undefined {
  return typeof v === 'string' ? v : undefined;
}

/** A value as text: strings as they are, anything else as indented JSON. */
export function valueText(v: unknown): string {
  if (typeof v === 'string') return v;
  if (v === undefined) return '';
  try {
    return JSON.stringify(v, null, 2) ?? String(v);
  } catch {
    return String(v);
  }
}

/** What a command printed or returned, and its error when it failed, from a recorded outcome. */
export function callOutcome(result: unknown): { ok: boolean; output: string; error?: string } {
  const r = obj(result);
  if (!r) return { ok: true, output: valueText(result) };
  const inner = obj(r.result);
  const errObj = obj(r.error) ?? obj(inner?.error);
  const errText =
    errObj !== undefined
      ? `${str(errObj.code) ?? 'error'}: ${str(errObj.message) ?? valueText(errObj)}`
      : (str(r.error) ?? str(inner?.error));
  const ok = r.ok !== false && inner?.ok !== false && errText === undefined;
  const out =
    str(inner?.output) ??
    str(r.output) ??
    str(inner?.stdout) ??
    str(r.stdout) ??
    (inner !== undefined
      ? Object.keys(inner).some((k) => k !== 'ok')
        ? valueText(inner)
        : ''
      : Object.keys(r).some((k) => k !== 'ok' && k !== 'error')
        ? valueText(r)
        : '');
  return { ok, output: out, ...(errText !== undefined ? { error: errText } : {}) };
}

/** The role a `model_request` record announces. */
function requestRole(s: ConversationStep): string | undefined {
  return str(obj(s.output)?.role);
}

/**
 * The conversation of a task: its records in `seq` order, questions placed by time. Model requests whose call's
 * record is there are left out; one still unanswered is a `pending` item (the model is writing).
 */
export function conversation(
  task: ConversationTask,
  steps: readonly ConversationStep[],
  questions: readonly ConversationQuestion[] = [],
  messages: readonly ConversationMessage[] = [],
): ConversationItem[] {
  const items: ConversationItem[] = [{ type: 'prompt', text: task.prompt }];
  const files = new Map<string, string>();
  const answered = new Set<string>();
  for (const s of steps) if (s.kind !== MODEL_REQUEST) answered.add(`${s.step}|${s.kind}`);
  const qs = [...questions].sort((a, b) => a.askedAt - b.askedAt);
  let qi = 0;
  const ms = [...messages].sort((a, b) => a.at - b.at);
  let mi = 0;
  // Questions and messages up to `at`, merged in time order.
  const questionsUpTo = (at: number): void => {
    for (;;) {
      const q = qs[qi];
      const m = ms[mi];
      const qAt = q !== undefined && q.askedAt <= at ? q.askedAt : Number.POSITIVE_INFINITY;
      const mAt = m !== undefined && m.at <= at ? m.at : Number.POSITIVE_INFINITY;
      if (qAt === Number.POSITIVE_INFINITY && mAt === Number.POSITIVE_INFINITY) return;
      if (mAt < qAt) {
        mi++;
        items.push({
          type: 'message',
          text: m!.text,
          at: m!.at,
          ...(m!.from !== undefined ? { from: m!.from } : {}),
        });
      } else {
        qi++;
        items.push({
          type: 'question',
          question: q!.question,
          at: q!.askedAt,
          ...(q!.why !== undefined ? { why: q!.why } : {}),
          ...(q!.answer !== undefined ? { answer: q!.answer } : {}),
        });
      }
    }
  };
  for (const s of steps) {
    questionsUpTo(s.at);
    if (s.kind === MODEL_REQUEST) {
      const role = requestRole(s) ?? 'model';
      if (!answered.has(`${s.step}|${role}`)) items.push({ type: 'pending', seq: s.seq, role, at: s.at });
      continue;
    }
    const out = obj(s.output);
    if (s.kind === 'tool_result') {
      const tc = obj(s.toolCall);
      const o = callOutcome(s.toolResult);
      items.push({
        type: 'call',
        seq: s.seq,
        step: s.step,
        command: str(tc?.command) ?? 'command',
        args: tc?.args === undefined ? '' : valueText(tc.args),
        ok: o.ok,
        output: o.output,
        ...(o.error !== undefined ? { error: o.error } : {}),
        ...(s.durationMs !== undefined ? { durationMs: s.durationMs } : {}),
        at: s.at,
      });
      continue;
    }
    const isReply = !NOT_REPLIES.has(s.kind) && (s.output !== undefined || s.preview !== undefined);
    if (isReply) {
      const d = obj(s.directive);
      const dk = str(d?.kind) ?? str(d?.type);
      let file: WrittenFile | undefined;
      if (dk === 'WRITE_FILE' && typeof d?.path === 'string' && typeof d.content === 'string') {
        const previous = files.get(d.path);
        file = {
          path: d.path,
          content: d.content,
          ...(typeof d.language === 'string' ? { language: d.language } : {}),
          ...(previous !== undefined ? { previous } : {}),
        };
        files.set(d.path, d.content);
      }
      const rawCalls = Array.isArray(out?.toolCalls) ? out.toolCalls : [];
      const calls = rawCalls.map((c) => {
        const co = obj(c);
        const fn = obj(co?.function);
        return {
          name: str(co?.name) ?? str(fn?.name) ?? 'tool',
          args: valueText(co?.arguments ?? fn?.arguments ?? {}),
        };
      });
      const text = str(out?.content) ?? (out === undefined ? (s.preview ?? '') : '');
      items.push({
        type: 'reply',
        seq: s.seq,
        step: s.step,
        role: s.kind,
        text,
        calls,
        at: s.at,
        ...(s.model !== undefined ? { model: s.model } : {}),
        ...(str(out?.thinking) !== undefined && str(out?.thinking) !== ''
          ? { thinking: str(out?.thinking)! }
          : {}),
        ...(dk !== undefined ? { directive: dk } : {}),
        ...(file !== undefined ? { file } : {}),
        ...(s.usage !== undefined ? { usage: s.usage } : {}),
        ...(s.durationMs !== undefined ? { durationMs: s.durationMs } : {}),
      });
    }
    for (const v of s.validationErrors ?? []) {
      const tolerated = v.startsWith('tolerated: ');
      items.push({
        type: 'note',
        seq: s.seq,
        tone: tolerated ? 'tolerated' : 'bounce',
        text: tolerated ? v.slice('tolerated: '.length) : v,
        at: s.at,
      });
    }
    if (s.error !== undefined)
      items.push({
        type: 'note',
        seq: s.seq,
        tone: 'error',
        text: `${s.error.code}: ${s.error.message}`,
        at: s.at,
      });
    else if (s.kind === 'resumed' || s.kind === 'reopened')
      items.push({ type: 'note', seq: s.seq, tone: 'info', text: `task ${s.kind}`, at: s.at });
  }
  questionsUpTo(Number.POSITIVE_INFINITY);
  if (task.result !== undefined || task.error !== undefined) {
    const r = obj(task.result);
    const text =
      str(task.result) ??
      str(r?.summary) ??
      str(r?.message) ??
      (task.result === undefined ? '' : valueText(task.result));
    items.push({
      type: 'result',
      status: task.status,
      text,
      ...(task.error !== undefined ? { error: `${task.error.code}: ${task.error.message}` } : {}),
    });
  }
  return items;
}

/** One line of a line diff: kept (` `), removed (`-`) or added (`+`). */
export interface DiffLine {
  op: ' ' | '-' | '+';
  text: string;
}

/** Past this many lines on either side a diff is not computed (the new file is shown whole instead). */
export const DIFF_MAX_LINES = 2000;

/**
 * The line diff from `before` to `after` (longest common subsequence, common head and tail trimmed first), or
 * undefined when either side is longer than {@link DIFF_MAX_LINES} lines after the trim.
 */
export function lineDiff(before: string, after: string): DiffLine[] | undefined {
  const a = before.split('\n');
  const b = after.split('\n');
  let head = 0;
  while (head < a.length && head < b.length && a[head] === b[head]) head++;
  let tail = 0;
  while (
    tail < a.length - head &&
    tail < b.length - head &&
    a[a.length - 1 - tail] === b[b.length - 1 - tail]
  )
    tail++;
  const am = a.slice(head, a.length - tail);
  const bm = b.slice(head, b.length - tail);
  if (am.length > DIFF_MAX_LINES || bm.length > DIFF_MAX_LINES) return undefined;
  const n = am.length;
  const m = bm.length;
  // lcs[i][j]: longest common subsequence of am[i..] and bm[j..].
  const lcs = Array.from({ length: n + 1 }, () => new Uint32Array(m + 1));
  for (let i = n - 1; i >= 0; i--)
    for (let j = m - 1; j >= 0; j--)
      lcs[i]![j] = am[i] === bm[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!);
  const out: DiffLine[] = a.slice(0, head).map((text) => ({ op: ' ', text }));
  let i = 0;
  let j = 0;
  // On a tie the removed line comes first, as `diff -u` prints it.
  while (i < n || j < m) {
    if (i < n && j < m && am[i] === bm[j]) {
      out.push({ op: ' ', text: am[i]! });
      i++;
      j++;
    } else if (j < m && (i >= n || lcs[i]![j + 1]! > lcs[i + 1]![j]!)) out.push({ op: '+', text: bm[j++]! });
    else out.push({ op: '-', text: am[i++]! });
  }
  for (const text of a.slice(a.length - tail)) out.push({ op: ' ', text });
  return out;
}

/** Per engine step: tokens (in + out) and model seconds, for the task's small chart. */
export interface StepFigures {
  step: number;
  tokens: number;
  modelMs: number;
}

/** Tokens and model time summed per engine step over the replies of `items`, in step order. */
export function stepFigures(items: readonly ConversationItem[]): StepFigures[] {
  const by = new Map<number, StepFigures>();
  for (const it of items) {
    if (it.type !== 'reply') continue;
    const f = by.get(it.step) ?? { step: it.step, tokens: 0, modelMs: 0 };
    f.tokens += (it.usage?.promptTokens ?? 0) + (it.usage?.completionTokens ?? 0);
    f.modelMs += it.usage?.totalDurationMs ?? it.durationMs ?? 0;
    by.set(it.step, f);
  }
  return [...by.values()].sort((a, b) => a.step - b.step);
}

/** A snake_case wire record (`GET /api/tasks/:id/steps`) in the shape {@link conversation} reads. */
export function stepFromWire(w: {
  seq: number;
  step: number;
  kind: string;
  at: number;
  model?: string;
  output?: unknown;
  directive?: unknown;
  validation_errors?: string[];
  tool_call?: unknown;
  tool_result?: unknown;
  error?: { code?: string; message?: string };
  duration_ms?: number;
  usage?: { prompt_tokens?: number; completion_tokens?: number; total_duration_ms?: number };
  preview?: string;
}): ConversationStep {
  const s: ConversationStep = { seq: w.seq, step: w.step, kind: w.kind, at: w.at };
  if (w.model !== undefined) s.model = w.model;
  if (w.output !== undefined) s.output = w.output;
  if (w.directive !== undefined) s.directive = w.directive;
  if (w.validation_errors !== undefined) s.validationErrors = w.validation_errors;
  if (w.tool_call !== undefined) s.toolCall = w.tool_call;
  if (w.tool_result !== undefined) s.toolResult = w.tool_result;
  if (w.error !== undefined) s.error = { code: w.error.code ?? 'error', message: w.error.message ?? '' };
  if (w.duration_ms !== undefined) s.durationMs = w.duration_ms;
  if (w.preview !== undefined) s.preview = w.preview;
  if (w.usage !== undefined) {
    const u: ConversationUsage = {};
    if (w.usage.prompt_tokens !== undefined) u.promptTokens = w.usage.prompt_tokens;
    if (w.usage.completion_tokens !== undefined) u.completionTokens = w.usage.completion_tokens;
    if (w.usage.total_duration_ms !== undefined) u.totalDurationMs = w.usage.total_duration_ms;
    s.usage = u;
  }
  return s;
}

// ------------------------------------------------------------------------------------------ Markdown export

/** A fence of backticks longer than any run of backticks in `text`. */
function fence(text: string): string {
  let longest = 0;
  for (const m of text.matchAll(/`+/g)) longest = Math.max(longest, m[0].length);
  return '`'.repeat(Math.max(3, longest + 1));
}

function block(text: string, lang = ''): string {
  const t = inertText(text);
  const f = fence(t);
  return `${f}${lang.replace(/[^\w+-]/g, '')}\n${t}\n${f}`;
}

/** Prose for a Markdown file: control characters visible, `<` and `&` escaped so no viewer reads HTML in it. */
function prose(text: string): string {
  return inertText(text).replace(/&/g, '&amp;').replace(/</g, '&lt;');
}

/** One line of prose (control characters visible first, then newlines and tabs folded to spaces). */
function inline(text: string): string {
  return prose(text)
    .replace(/[\n\t ]+/g, ' ')
    .trim();
}

function code(text: string): string {
  const t = inertText(text, { multiline: false }).replace(/`/g, 'ˋ');
  return `\`${t}\``;
}

function figures(usage: ConversationUsage | undefined, ms: number | undefined): string {
  const parts: string[] = [];
  if (usage?.promptTokens !== undefined || usage?.completionTokens !== undefined)
    parts.push(`${usage.promptTokens ?? 0} → ${usage.completionTokens ?? 0} tokens`);
  const t = usage?.totalDurationMs ?? ms;
  if (t !== undefined) parts.push(t >= 1000 ? `${(t / 1000).toFixed(1)} s` : `${Math.round(t)} ms`);
  return parts.join(', ');
}

/** The conversation as a Markdown document (what `tasks export --format md` writes and the dashboard downloads). */
export function conversationMarkdown(
  task: ConversationTask,
  steps: readonly ConversationStep[],
  questions: readonly ConversationQuestion[] = [],
  messages: readonly ConversationMessage[] = [],
): string {
  const out: string[] = [`# Task ${code(task.id)}`, ''];
  out.push(`- kind: ${code(task.kind)}`, `- status: ${code(task.status)}`);
  if (task.clientId) out.push(`- computer: ${code(task.clientId)}`);
  if (task.createdAt !== undefined) out.push(`- created: ${new Date(task.createdAt).toISOString()}`);
  out.push('');
  for (const it of conversation(task, steps, questions, messages)) {
    switch (it.type) {
      case 'prompt':
        out.push('## Prompt', '', block(it.text), '');
        break;
      case 'reply': {
        const f = figures(it.usage, it.durationMs);
        out.push(
          `### Step ${it.step} · ${inline(it.role)}${it.model ? ` (${code(it.model)})` : ''}${it.directive ? ` · ${code(it.directive)}` : ''}${f ? ` · ${f}` : ''}`,
          '',
        );
        if (it.thinking)
          out.push('<details><summary>thinking</summary>', '', block(it.thinking), '', '</details>', '');
        if (it.text.trim() !== '') out.push(prose(it.text), '');
        for (const c of it.calls) out.push(`Calls ${code(c.name)}:`, '', block(c.args, 'json'), '');
        if (it.file) {
          const diff =
            it.file.previous !== undefined ? lineDiff(it.file.previous, it.file.content) : undefined;
          if (diff) {
            out.push(`Changes ${code(it.file.path)}:`, '');
            out.push(block(diff.map((l) => `${l.op}${l.text}`).join('\n'), 'diff'), '');
          } else {
            out.push(`Writes ${code(it.file.path)}:`, '', block(it.file.content, it.file.language ?? ''), '');
          }
        }
        break;
      }
      case 'call': {
        const d = it.durationMs !== undefined ? ` · ${figures(undefined, it.durationMs)}` : '';
        out.push(`**Ran** ${code(it.command)} → ${it.ok ? 'ok' : '**failed**'}${d}`, '');
        if (it.args !== '' && it.args !== '{}') out.push(block(it.args, 'json'), '');
        if (it.error !== undefined) out.push(`> ${inline(it.error)}`, '');
        if (it.output !== '') out.push(block(it.output, 'text'), '');
        break;
      }
      case 'question':
        out.push(`> **Question:** ${inline(it.question)}`);
        if (it.why !== undefined) out.push(`> _why:_ ${inline(it.why)}`);
        out.push(
          '>',
          `> **Answer:** ${it.answer !== undefined ? inline(it.answer) : '_(not answered)_'}`,
          '',
        );
        break;
      case 'message':
        out.push(
          `**Message${it.from !== undefined ? ` from ${code(it.from)}` : ''}:**`,
          '',
          prose(it.text),
          '',
        );
        break;
      case 'note':
        out.push(`_${it.tone}: ${inline(it.text)}_`, '');
        break;
      case 'pending':
        out.push(`_waiting for the ${inline(it.role)} model…_`, '');
        break;
      case 'result':
        out.push(`## Result (${inline(it.status)})`, '');
        if (it.error !== undefined) out.push(`> ${inline(it.error)}`, '');
        if (it.text !== '') out.push(prose(it.text), '');
        break;
    }
  }
  return `${out.join('\n').trimEnd()}\n`;
}
