/**
 * Renders the planner/executor strategy's memory and a task's history into the planner's prompt: the sections
 * (TASK, FILES, HISTORY, USER ANSWERS, PLAN, STATE) in a cache-friendly order, compaction of old history into facts,
 * and the conversation layout's per-turn update. The memory's schema and codec are planner-memory.ts.
 */
import type { HistoryEntry, JsonValue, Task } from '@ccagent/engine';
import {
  completedCalls,
  contentHash,
  currentFiles,
  describeCall,
  lastFailure,
  viewOutcome,
} from './history-view.js';
import type { PlannerMemory } from './planner-memory.js';

/**
 * Order of the rendered sections. `stable` (default: TASK, FILES, HISTORY, USER ANSWERS, PLAN, STATE) puts what
 * rarely changes or only grows first and the short, volatile sections last, so consecutive prompts share a long
 * prefix; `files-last` moves FILES after HISTORY; `design` is the order of the original design (TASK, STATE, FILES,
 * HISTORY, USER ANSWERS), kept as the baseline the bench compares against.
 */
export type SectionOrder = 'stable' | 'files-last' | 'design';

/** How the memory is laid out and bounded. Token figures use {@link estimateTokens}. */
export interface MemoryLayout {
  /** History entries always shown verbatim (the most recent ones). Default 16. */
  keepVerbatim: number;
  /** How many entries are compacted at once, so the prefix changes rarely. Default 16. */
  compactChunk: number;
  /** The planner model's context window (Ollama num_ctx); the role's `options.numCtx` wins. Default 8192. */
  numCtx: number;
  /** Tokens kept free for the system prompt and the reply. Default 2048. */
  reserveTokens: number;
  /** Longest output excerpt of a verbatim result, in characters. Default 1500. */
  maxOutputChars: number;
  /** Longest file content shown under FILES before the budget clips further. Default 6000. */
  maxFileChars: number;
  /** Section order of the rendered memory (the whole prompt, or the conversation's first message). Default `stable`. */
  order: SectionOrder;
  /**
   * `true` (default): the planner prompt is a conversation — the rendered memory once, then per request the planner's
   * previous reply and one new user message with only what is new (history entries, files read) and the STATE —
   * restarted from a fresh render (a compaction, counted) when it outgrows the budget. `false`: the whole memory is
   * rendered into one user message every request.
   */
  conversation: boolean;
}

/** Default {@link MemoryLayout}. */
export const DEFAULT_MEMORY_LAYOUT: MemoryLayout = {
  keepVerbatim: 16,
  compactChunk: 16,
  numCtx: 8192,
  reserveTokens: 2048,
  maxOutputChars: 1500,
  maxFileChars: 6000,
  order: 'stable',
  conversation: true,
};

/** Characters per token of {@link estimateTokens} (also how the native loop turns its token budget into characters). */
export const CHARS_PER_TOKEN = 4;

/**
 * Token estimate used for the budget: one token per {@link CHARS_PER_TOKEN} characters, rounded up. Crude but
 * monotonic and tokenizer-free; Llama/Qwen tokenizers average 3.5–4.5 characters per token on code and English.
 */
export function estimateTokens(text: string): number {
  return Math.ceil(text.length / CHARS_PER_TOKEN);
}

/**
 * Fraction (0..1) of `previous` that `next` repeats from its first character: the share of the prompt Ollama can
 * take from its cache when the rendered memory is sent again.
 */
export function sharedPrefixFraction(previous: string, next: string): number {
  if (previous.length === 0) return 1;
  const n = Math.min(previous.length, next.length);
  let i = 0;
  while (i < n && previous.charCodeAt(i) === next.charCodeAt(i)) i++;
  return i / previous.length;
}

function clip(text: string, max: number): string {
  if (text.length <= max) return text;
  const head = Math.floor(max * 0.6);
  const tail = max - head;
  return `${text.slice(0, head)}\n… [${text.length - max} chars cut] …\n${text.slice(text.length - tail)}`;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

function indent(text: string): string {
  return text
    .split('\n')
    .map((l) => `    ${l}`)
    .join('\n');
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * What a successful call printed, or a short label for file operations whose content lives under FILES. With
 * `inlineFileChars` (a conversation update, which has no FILES section) a file read shows its content, clipped.
 */
function okText(command: string, result: JsonValue, output: string, inlineFileChars = 0): string {
  if (command === 'fs_write') return '';
  if (command === 'fs_read' && isRecord(result) && typeof result.content === 'string') {
    const label = `(${result.content.split('\n').length} lines, sha ${contentHash(result.content)}`;
    if (inlineFileChars > 0)
      return `${label})\n\`\`\`\n${clip(result.content, inlineFileChars).replace(/\n$/, '')}\n\`\`\``;
    return `${label}; content under FILES)`;
  }
  return output;
}

function renderEntry(
  e: HistoryEntry,
  calls: Map<string, string>,
  answered: Set<string>,
  maxOutput: number,
  inlineFileChars = 0,
): string | null {
  const head = `#${e.seq} (step ${e.step})`;
  switch (e.type) {
    case 'tool_call':
      // Shown with its result; a call still waiting for one is shown alone.
      return answered.has(e.callId) ? null : `${head} CALL ${describeCall(e.command, e.args)}`;
    case 'tool_result': {
      const v = viewOutcome(e.outcome, e.timedOut === true);
      const what = calls.get(e.callId) ?? e.command;
      if (v.ok) {
        const text = okText(e.command, e.outcome.ok ? e.outcome.result : null, v.output, inlineFileChars);
        const shown = inlineFileChars > 0 && e.command === 'fs_read' ? text : clip(text, maxOutput);
        return `${head} OK ${what}${text ? `\n${indent(shown)}` : ''}`;
      }
      const parts = [`${head} FAILED ${what}: ${v.error ?? ''}`];
      if (v.output && v.output !== '{}') parts.push(indent(clip(v.output, maxOutput)));
      if (v.traceback) parts.push(indent(clip(v.traceback, maxOutput)));
      return parts.join('\n');
    }
    case 'question':
      return `${head} ASKED USER: ${e.question}${e.why ? ` (why: ${e.why})` : ''}`;
    case 'answer':
      return `${head} USER ANSWERED: ${e.answer}`;
    case 'note':
      return `${head} NOTE: ${e.text}`;
    case 'complete':
      return `${head} COMPLETED`;
    case 'fail':
      return `${head} FAILED TASK: ${e.error.message}`;
    case 'cancel':
      return `${head} CANCELLED`;
    case 'message':
      return `${head} USER SAID: ${e.text}`;
    case 'event':
      return `${head} EVENT ${e.name}${e.data !== undefined ? `: ${clip(JSON.stringify(e.data), maxOutput)}` : ''}`;
    case 'resume':
      return `${head} TASK RESUMED (${e.reason === 'retry' ? 'retry' : 'new message'} after it was ${e.from})`;
  }
}

function factOf(e: HistoryEntry, calls: Map<string, string>, answered: Set<string>): string | null {
  switch (e.type) {
    case 'tool_call':
      return answered.has(e.callId) ? null : `#${e.seq} called ${describeCall(e.command, e.args)}`;
    case 'tool_result': {
      const v = viewOutcome(e.outcome, e.timedOut === true);
      const what = calls.get(e.callId) ?? e.command;
      if (!v.ok) return `#${e.seq} ${what} → FAILED: ${oneLine(v.error ?? '', 120)}`;
      const text = okText(e.command, e.outcome.ok ? e.outcome.result : null, v.output);
      return `#${e.seq} ${what} → ok${text ? `: ${oneLine(text, 100)}` : ''}`;
    }
    case 'question':
      return `#${e.seq} asked the user: ${oneLine(e.question, 100)}`;
    case 'answer':
      return `#${e.seq} user answered: ${oneLine(e.answer, 100)}`;
    case 'note':
      return `#${e.seq} note: ${oneLine(e.text, 140)}`;
    case 'message':
      return `#${e.seq} user said: ${oneLine(e.text, 200)}`;
    case 'event':
      return `#${e.seq} event ${e.name}${e.data !== undefined ? `: ${oneLine(JSON.stringify(e.data), 100)}` : ''}`;
    case 'resume':
      return `#${e.seq} task resumed (${e.reason}) after it was ${e.from}`;
    default:
      return null;
  }
}

function callLabels(history: readonly HistoryEntry[]): {
  labels: Map<string, string>;
  answered: Set<string>;
} {
  const labels = new Map<string, string>();
  const answered = new Set<string>();
  for (const e of history) {
    if (e.type === 'tool_call') labels.set(e.callId, describeCall(e.command, e.args));
    if (e.type === 'tool_result') answered.add(e.callId);
  }
  return { labels, answered };
}

function compact(memory: PlannerMemory, history: readonly HistoryEntry[], throughSeq: number): PlannerMemory {
  const { labels, answered } = callLabels(history);
  const batch = history.filter((e) => e.seq > memory.compactedThroughSeq && e.seq <= throughSeq);
  const facts = batch.map((e) => factOf(e, labels, answered)).filter((f): f is string => f !== null);
  return { ...memory, facts: [...memory.facts, ...facts], compactedThroughSeq: throughSeq };
}

/** What {@link renderMemory} needs besides the memory: the task, its history and the limits to display. */
export interface RenderInput {
  task: Task;
  history: readonly HistoryEntry[];
  memory: PlannerMemory;
  /** Number of the step being decided. */
  step: number;
  limits: { maxSteps?: number; maxToolCalls?: number; maxQuestions: number };
  layout?: Partial<MemoryLayout>;
}

/** A rendered memory and the memory to store (compaction is recorded so the next render starts identically). */
export interface RenderedMemory {
  text: string;
  memory: PlannerMemory;
  tokens: number;
  budgetTokens: number;
}

type SectionName = 'TASK' | 'PLAN' | 'USER ANSWERS' | 'HISTORY' | 'FILES' | 'STATE';

const ORDERS: Record<SectionOrder, readonly SectionName[]> = {
  // TASK never changes; FILES changes when a file is written (the most recently changed file last); HISTORY grows
  // at its end and is compacted in whole chunks; USER ANSWERS, PLAN and STATE are short and sit last, where a change
  // costs little and where a small model pays most attention. A step without a write therefore re-evaluates only
  // the new history entries and the short tail. `files-last` trades that for never re-evaluating the history on a
  // write; it wins only for small files rewritten almost every step (the bench measures both).
  stable: ['TASK', 'FILES', 'HISTORY', 'USER ANSWERS', 'PLAN', 'STATE'],
  'files-last': ['TASK', 'HISTORY', 'FILES', 'USER ANSWERS', 'PLAN', 'STATE'],
  design: ['TASK', 'PLAN', 'STATE', 'FILES', 'HISTORY', 'USER ANSWERS'],
};

function renderSections(
  input: RenderInput,
  memory: PlannerMemory,
  layout: MemoryLayout,
  fileChars: number,
): string {
  const { task, history } = input;
  const { labels, answered } = callLabels(history);
  const sections: Record<SectionName, string[]> = {
    TASK: [],
    PLAN: [],
    'USER ANSWERS': [],
    HISTORY: [],
    FILES: [],
    STATE: [],
  };

  const t = sections.TASK;
  t.push('# TASK', task.prompt.trim(), '', `kind: ${task.kind}`);
  t.push(
    `allowed commands: ${task.allowedCommands.length > 0 ? task.allowedCommands.join(', ') : 'any offered'}`,
  );
  if (task.context !== undefined && task.context !== null) t.push(`context: ${JSON.stringify(task.context)}`);

  sections.PLAN.push(
    '# PLAN (pinned)',
    memory.plan ?? '(no plan yet: start your reply with PLAN: and a short numbered plan)',
  );

  const answers: string[] = [];
  const questions = new Map<string, string>();
  for (const e of history) {
    if (e.type === 'question') questions.set(e.questionId, e.question);
    if (e.type === 'answer') answers.push(`Q: ${questions.get(e.questionId) ?? '?'}\nA: ${e.answer}`);
    // Follow-up messages are instructions: kept here, where compaction never hides them (the latest last).
    if (e.type === 'message') answers.push(`Message from the user (#${e.seq}): ${e.text}`);
  }
  sections['USER ANSWERS'].push('# USER ANSWERS', answers.length > 0 ? answers.join('\n') : '(none)');

  const h = sections.HISTORY;
  h.push('# HISTORY');
  if (memory.facts.length > 0) h.push('Earlier (compacted):', ...memory.facts.map((f) => `- ${f}`), '');
  const recent = history.filter((e) => e.seq > memory.compactedThroughSeq);
  if (recent.length === 0 && memory.facts.length === 0) h.push('(nothing yet)');
  for (const e of recent) {
    const line = renderEntry(e, labels, answered, layout.maxOutputChars);
    if (line !== null) h.push(line);
  }

  const f = sections.FILES;
  f.push('# FILES');
  const files = [...currentFiles(history).values()].sort((a, b) => a.seq - b.seq);
  if (files.length === 0) f.push('(no file read or written yet)');
  for (const file of files) {
    f.push(
      `## ${file.path} (version ${file.version}, sha ${file.hash}, ${file.source} at #${file.seq})`,
      '```',
      clip(file.content, fileChars).replace(/\n$/, ''),
      '```',
    );
  }

  sections.STATE.push(...stateLines(input, memory));

  return ORDERS[layout.order].map((name) => sections[name].join('\n')).join('\n\n');
}

/** The STATE section: counters, the last call, the last error and stack trace, queued runs, notes. */
/**
 * The STATE section. In a conversation update (`sinceSeq` given) what the new HISTORY lines right above already say
 * is not repeated: no "last call" line, and the last error as one line (its stack trace is above, where it happened).
 */
function stateLines(input: RenderInput, memory: PlannerMemory, sinceSeq?: number): string[] {
  const { task, history } = input;
  const s: string[] = [];
  s.push('# STATE');
  const c = task.counters;
  const { maxSteps, maxToolCalls, maxQuestions } = input.limits;
  s.push(
    `step ${input.step}${maxSteps ? ` of ${maxSteps}` : ''} · tool calls ${c.toolCalls}` +
      `${maxToolCalls ? `/${maxToolCalls}` : ''} · questions ${c.questions}/${Number.isFinite(maxQuestions) ? maxQuestions : 'unlimited'}`,
  );
  const runs = completedCalls(history);
  const lastRun = runs[runs.length - 1];
  if (lastRun && sinceSeq === undefined) {
    s.push(
      `last call: ${describeCall(lastRun.command, lastRun.args)} → ${lastRun.outcome.ok ? 'ok' : 'failed'} (#${lastRun.seq})`,
    );
  }
  const failure = lastFailure(history);
  if (failure && sinceSeq !== undefined) {
    // A new failure is in the HISTORY lines just above; an older one still unresolved is recalled in one line. One
    // that the same call has since run without is resolved: recalling it would cost tokens and mislead.
    const failed = describeCall(failure.call.command, failure.call.args);
    const resolved = runs.some(
      (r) => r.seq > failure.call.seq && r.outcome.ok && describeCall(r.command, r.args) === failed,
    );
    if (failure.call.seq <= sinceSeq && !resolved)
      s.push(`last error (#${failure.call.seq}): ${oneLine(failure.error, 200)}`);
  } else if (failure) {
    s.push(`last error (#${failure.call.seq}): ${oneLine(failure.error, 400)}`);
    if (failure.traceback) s.push('last stack trace:', indent(clip(failure.traceback, 800)));
  }
  if (memory.pendingRuns.length > 0) s.push(`runs still queued: ${memory.pendingRuns.length}`);
  if (memory.pendingNotes.length > 0) s.push('notes for you:', ...memory.pendingNotes.map((n) => `- ${n}`));
  s.push('', 'Write exactly one directive.');
  return s;
}

/**
 * Render the task memory for the planner (sections TASK, FILES, HISTORY, USER ANSWERS, PLAN, STATE in the
 * prefix-stable order), keeping it under the token budget (`numCtx - reserveTokens`): older history is compacted
 * into facts in whole chunks (recorded in the returned memory so the next render starts with the same text), then
 * file contents are clipped, then the oldest facts are dropped.
 */
export function renderMemory(input: RenderInput): RenderedMemory {
  const layout: MemoryLayout = { ...DEFAULT_MEMORY_LAYOUT, ...input.layout };
  const budgetTokens = Math.max(256, layout.numCtx - layout.reserveTokens);
  let memory = input.memory;
  const history = input.history;
  const uncompacted = () => history.filter((e) => e.seq > memory.compactedThroughSeq);
  // Regular compaction: only in whole chunks, so most steps just append.
  while (uncompacted().length >= layout.keepVerbatim + layout.compactChunk) {
    const batch = uncompacted().slice(0, layout.compactChunk);
    memory = compact(memory, history, batch[batch.length - 1]?.seq ?? memory.compactedThroughSeq);
  }
  let fileChars = layout.maxFileChars;
  let text = renderSections(input, memory, layout, fileChars);
  // Over budget: compact more, then clip files, then drop the oldest facts.
  for (let guard = 0; estimateTokens(text) > budgetTokens && guard < 64; guard++) {
    const rest = uncompacted();
    if (rest.length > 2) {
      const batch = rest.slice(0, Math.min(layout.compactChunk, rest.length - 2));
      memory = compact(memory, history, batch[batch.length - 1]?.seq ?? memory.compactedThroughSeq);
    } else if (fileChars > 800) {
      fileChars = Math.floor(fileChars / 2);
    } else if (memory.facts.length > 0) {
      memory = { ...memory, facts: memory.facts.slice(Math.ceil(memory.facts.length / 2)) };
    } else break;
    text = renderSections(input, memory, layout, fileChars);
  }
  return { text, memory, tokens: estimateTokens(text), budgetTokens };
}

/** One planner request in the `conversation` layout: the turns to send unchanged, the new user message, the memory. */
export interface PlannerTurnRender {
  /** Earlier turns of the conversation, sent as they were (user message, then the planner's reply). */
  turns: readonly { user: string; reply: string }[];
  /** The new user message: the rendered memory when the conversation (re)starts, else only what is new + STATE. */
  user: string;
  /** The memory to store; append `{ user, reply }` to `conversation.turns` once the planner replied. */
  memory: PlannerMemory;
  /** The conversation was restarted from a fresh render because it outgrew the budget. */
  compacted: boolean;
  /** Tokens of the turns and the new message (without the system prompt), at the measured characters per token. */
  tokens: number;
  budgetTokens: number;
}

/** Compacted facts kept when the planner conversation restarts. */
const RESTART_FACTS = 24;

/** What is new since `sinceSeq`: the history entries (files read shown in full), then the STATE. */
function renderUpdate(input: RenderInput, sinceSeq: number, layout: MemoryLayout): string {
  const { labels, answered } = callLabels(input.history);
  const lines = ['# HISTORY (new since your last directive)'];
  for (const e of input.history) {
    if (e.seq <= sinceSeq) continue;
    const line = renderEntry(e, labels, answered, layout.maxOutputChars, layout.maxFileChars);
    if (line !== null) lines.push(line);
  }
  if (lines.length === 1) lines.push('(nothing new)');
  const parts = [lines.join('\n')];
  // New answers also get their own section, as in the rendered memory, so a question and its answer read together.
  const questions = new Map<string, string>();
  const answers: string[] = [];
  for (const e of input.history) {
    if (e.type === 'question') questions.set(e.questionId, e.question);
    if (e.type === 'answer' && e.seq > sinceSeq)
      answers.push(`Q: ${questions.get(e.questionId) ?? '?'}\nA: ${e.answer}`);
    if (e.type === 'message' && e.seq > sinceSeq)
      answers.push(`Message from the user (#${e.seq}): ${e.text}`);
  }
  if (answers.length > 0) parts.push(['# USER ANSWERS (new)', ...answers].join('\n'));
  parts.push(stateLines(input, input.memory, sinceSeq).join('\n'));
  return parts.join('\n\n');
}

/**
 * The planner's next prompt. In the `conversation` layout (default) the first request gets the rendered memory
 * (TASK, FILES, HISTORY, USER ANSWERS, PLAN, STATE, sized to half the budget so turns have room), every later one
 * the earlier turns unchanged plus one message with what is new and the STATE — an append-only prompt whose
 * volatile part is always last. When the turns outgrow the budget (`numCtx − reserveTokens`) the conversation
 * restarts from a fresh render (compacting older history into facts), counted in `conversation.compactions`.
 * With `conversation: false` the whole memory is rendered into the one user message, as {@link renderMemory} does.
 */
export function renderPlannerTurn(input: RenderInput): PlannerTurnRender {
  const layout: MemoryLayout = { ...DEFAULT_MEMORY_LAYOUT, ...input.layout };
  const budgetTokens = Math.max(256, layout.numCtx - layout.reserveTokens);
  const lastSeq = input.history[input.history.length - 1]?.seq ?? 0;
  const conv = input.memory.conversation;
  if (!layout.conversation) {
    const r = renderMemory(input);
    return { turns: [], user: r.text, memory: r.memory, compacted: false, tokens: r.tokens, budgetTokens };
  }
  // Tokens as the server counts them (measured chars per token), with a margin for the next reply's template.
  const serverTokens = (chars: number): number => Math.ceil(chars / conv.charsPerToken);
  const limit = Math.floor(budgetTokens * 0.9);
  if (conv.turns.length > 0) {
    const update = renderUpdate(input, conv.throughSeq, layout);
    let chars = update.length;
    for (const t of conv.turns) chars += t.user.length + t.reply.length;
    const tokens = serverTokens(chars);
    if (tokens <= limit) {
      return {
        turns: conv.turns,
        user: update,
        memory: { ...input.memory, conversation: { ...conv, throughSeq: lastSeq } },
        compacted: false,
        tokens,
        budgetTokens,
      };
    }
  }
  const restart = conv.turns.length > 0;
  // The fresh render is kept small so the turns that follow have room before the next restart: history is compacted
  // down to its last few entries (the conversation shows the rest of each step as it happens); files are clipped only
  // past the whole budget (in server tokens, turned into renderMemory's 4-character tokens).
  const restartLayout: Partial<MemoryLayout> = {
    ...layout,
    keepVerbatim: Math.min(layout.keepVerbatim, 4),
    compactChunk: Math.min(layout.compactChunk, 4),
    numCtx: layout.reserveTokens + Math.floor((budgetTokens * 0.8 * conv.charsPerToken) / CHARS_PER_TOKEN),
  };
  let r = renderMemory({ ...input, layout: restartLayout });
  // Only the most recent compacted facts come along: older ones would make every restart dearer than the last.
  if (r.memory.facts.length > RESTART_FACTS) {
    const memory = { ...r.memory, facts: r.memory.facts.slice(-RESTART_FACTS) };
    r = renderMemory({ ...input, memory, layout: restartLayout });
  }
  return {
    turns: [],
    user: r.text,
    memory: {
      ...r.memory,
      conversation: {
        ...conv,
        turns: [],
        throughSeq: lastSeq,
        compactions: conv.compactions + (restart ? 1 : 0),
      },
    },
    compacted: restart,
    tokens: serverTokens(r.text.length),
    budgetTokens,
  };
}
