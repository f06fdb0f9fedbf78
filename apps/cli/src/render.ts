/** Human renderings of the views: tables for lists, a header plus one block per step-log record for a task. */
import {
  asText,
  fitText,
  flat,
  formatClock,
  formatDuration,
  formatTime,
  indent,
  oneLine,
  paint,
  statusStyle,
  table,
  visibleLength,
  type Output,
  type Style,
} from './output.js';
import { MODEL_REQUEST_KIND } from '@ccagent/engine';
import type {
  ClientView,
  ErrorView,
  QuestionView,
  StepView,
  TaskDetail,
  TaskPageView,
  ToolView,
} from './source.js';

/** How much of each model text to print. */
export interface ShowOptions {
  /** Print model inputs and outputs untruncated. */
  full: boolean;
}

const TERMINAL = new Set(['completed', 'failed', 'cancelled']);
/** Whether a task status is final. */
export const isTerminal = (status: string): boolean => TERMINAL.has(status);

type Rec = Record<string, unknown>;
const isRec = (v: unknown): v is Rec => typeof v === 'object' && v !== null && !Array.isArray(v);

/** `tasks list` table, newest first, with a "shown of total" line when the page is not everything. */
export function renderTaskList(out: Output, page: TaskPageView, offset = 0): string {
  if (page.tasks.length === 0)
    return page.total > 0 ? `no tasks at offset ${offset} (${page.total} match)\n` : 'no tasks\n';
  const rows = page.tasks.map((t) => [
    t.id,
    paint(out, statusStyle(t.status), t.status),
    t.kind,
    t.clientId ?? '-',
    String(t.counters.steps),
    formatTime(t.updatedAt),
    t.prompt,
  ]);
  for (const r of rows) r[6] = oneLine(r[6] ?? '', lastColumnWidth(out, rows));
  let text = table(out, ['ID', 'STATUS', 'KIND', 'CLIENT', 'STEPS', 'UPDATED', 'PROMPT'], rows);
  if (page.total > offset + page.tasks.length || offset > 0) {
    text += paint(
      out,
      'dim',
      `${offset + 1}–${offset + page.tasks.length} of ${page.total} (--limit/--offset for more)`,
    );
    text += '\n';
  }
  return text;
}

/**
 * Room left for a table's last (free-text) column: the terminal's width minus the other columns on a TTY; when
 * piped, at least 60 characters so `grep` still finds words in it.
 */
function lastColumnWidth(out: Output, rows: string[][]): number {
  const n = (rows[0]?.length ?? 1) - 1;
  let used = 0;
  for (let i = 0; i < n; i++) used += Math.max(...rows.map((r) => visibleLength(r[i] ?? ''))) + 2;
  return Math.max(out.wrap ? 20 : 60, out.width - used);
}

function errorText(e: ErrorView): string {
  return `${e.code}: ${e.message}${e.details !== undefined ? `\n${asText(e.details)}` : ''}`;
}

/** The open question of a task, if it is waiting for one. */
export function openQuestion(d: TaskDetail): QuestionView | undefined {
  return [...d.questions].reverse().find((q) => q.answer === undefined);
}

/** Header block of `tasks show` / `tasks follow`. */
export function renderTaskHeader(out: Output, d: TaskDetail): string {
  const t = d.task;
  const field = (name: string, value: string, style: Style = 'dim'): string =>
    `  ${paint(out, style, name.padEnd(10))}${indent(value, 12).trimStart()}`.trimEnd();
  // Ids and names are one line each (a value holding a newline must not start a line of its own).
  const lines = [
    `${paint(out, 'bold', `Task ${flat(t.id)}`)}  ${paint(out, statusStyle(t.status), t.status)}`,
  ];
  lines.push(field('kind', flat(t.kind)));
  lines.push(field('client', t.clientId !== null ? flat(t.clientId) : '- (any client)'));
  const open = d.openCall;
  if (open) {
    const where =
      open.sentTo !== undefined
        ? `sent to ${flat(open.sentTo)}, waiting for its result (it goes to no other client)`
        : 'not sent yet: waiting for a client offering the command';
    lines.push(
      field('call', `${flat(open.command)}  ${paint(out, 'dim', `(call ${flat(open.callId)})`)}  ${where}`),
    );
  }
  lines.push(field('created', formatTime(t.createdAt)));
  lines.push(
    field(
      'updated',
      `${formatTime(t.updatedAt)}  (${formatDuration(Math.max(0, t.updatedAt - t.createdAt))} after creation)`,
    ),
  );
  if (t.allowedCommands.length) lines.push(field('commands', flat(t.allowedCommands.join(', '))));
  const c = t.counters;
  const budget = (used: number, max?: number): string =>
    max !== undefined ? `${used}/${max}` : String(used);
  lines.push(
    field(
      'counters',
      `steps ${budget(c.steps, t.budgets.maxSteps)} · tool calls ${budget(c.toolCalls, t.budgets.maxToolCalls)} · questions ${c.questions}`,
    ),
  );
  if (t.budgets.deadlineAt !== undefined) lines.push(field('deadline', formatTime(t.budgets.deadlineAt)));
  if (t.settings !== undefined) lines.push(field('settings', wrapField(out, settingsText(t.settings))));
  if (t.progress !== undefined || t.progressMessage !== undefined) {
    const pct = t.progress !== undefined ? `${Math.round(t.progress * 100)}%` : '';
    lines.push(field('progress', [pct, t.progressMessage ?? ''].filter(Boolean).join(' ')));
  }
  lines.push(field('prompt', wrapField(out, t.prompt)));
  if (t.result !== undefined) lines.push(field('result', wrapField(out, asText(t.result))));
  if (t.error !== undefined) lines.push(field('error', errorText(t.error), 'red'));
  const q = openQuestion(d);
  if (q && t.status === 'waiting_for_user') {
    lines.push(field('question', wrapField(out, q.question + (q.why ? `\n(why: ${q.why})` : '')), 'yellow'));
    lines.push(field('', paint(out, 'dim', `answer with: ccagent tasks answer ${t.id} "<text>"`)));
  }
  return lines.join('\n') + '\n';
}

function wrapField(out: Output, text: string): string {
  return fitText(out, text, out.width - 12, true);
}

/** The title line of one step-log record: seq, kind, model, time, duration, tokens. */
function recordHead(out: Output, s: StepView): string {
  const kindStyle: Style =
    s.kind === 'planner' || s.kind === 'native'
      ? 'magenta'
      : s.kind.startsWith('executor')
        ? 'blue'
        : s.kind === 'tool_result'
          ? 'cyan'
          : s.kind === 'decision'
            ? 'green'
            : 'yellow';
  const parts = [paint(out, 'bold', `#${s.seq}`), paint(out, kindStyle, flat(s.kind))];
  if (s.model) parts.push(flat(s.model));
  parts.push(paint(out, 'dim', formatClock(s.startedAt ?? s.at)));
  if (s.durationMs !== undefined) parts.push(`took ${formatDuration(s.durationMs)}`);
  const u = s.usage;
  if (u && (u.promptTokens !== undefined || u.completionTokens !== undefined)) {
    parts.push(`tokens ${u.promptTokens ?? '?'} in / ${u.completionTokens ?? '?'} out`);
  }
  return parts.join('  ');
}

/**
 * One step-log record: model input/output, directive, validation errors, tool call and result, error. A model request
 * record is one line (its finished call's record has the request); `later` says whether records followed it.
 */
export function renderRecord(out: Output, s: StepView, opts: ShowOptions, later = false): string {
  if (s.kind === MODEL_REQUEST_KIND) return renderOpenRequest(out, s, later, opts);
  const parts = [`  ${recordHead(out, s)}`];
  const textWidth = out.width - 8;
  const section = (title: string, body: string | undefined, style: Style = 'dim', depth = 4): void => {
    const head = ' '.repeat(depth) + paint(out, style, title);
    if (body === undefined || body === '') parts.push(head);
    else parts.push(`${head}\n${indent(fitText(out, body, textWidth - depth, opts.full), depth + 2)}`);
  };

  if (s.input !== undefined) renderInput(out, s.input, opts, section, parts, textWidth);
  if (s.output !== undefined) renderOutput(s.output, section);
  if (s.directive !== undefined) {
    const d = s.directive;
    if (s.kind === 'decision' && isRec(d) && typeof d.type === 'string') {
      const { type, command, memory, memoryBytes, memorySha256, memoryChanged, ...rest } = d;
      const title = `decision: ${type}${typeof command === 'string' ? ` ${command}` : ''}`;
      section(title, Object.keys(rest).length ? asText(rest) : undefined, 'green');
      const mem = memoryLine(memory, memoryBytes, memorySha256, memoryChanged);
      if (mem) parts.push(`      ${paint(out, 'dim', mem)}`);
    } else section('directive', asText(d));
  }
  if (s.validationErrors?.length) {
    section('validation errors', s.validationErrors.map((e) => `- ${e}`).join('\n'), 'red');
  }
  if (s.toolCall !== undefined) {
    const c = s.toolCall;
    if (isRec(c) && typeof c.command === 'string') {
      // sentTo is set only on records whose call id is known (the client of a call of a task bound to no client).
      const to = s.sentTo !== undefined ? ` · sent to ${s.sentTo}` : '';
      const id = typeof c.callId === 'string' ? paint(out, 'dim', `  (call ${c.callId}${to})`) : '';
      section(`tool call: ${c.command}${id}`, c.args !== undefined ? asText(c.args) : undefined);
    } else section('tool call', asText(c));
  }
  if (s.toolResult !== undefined) {
    const r = s.toolResult;
    if (s.kind === 'mc_state' && isRec(r) && isRec(r.state)) {
      // A Minecraft task's snapshot of the player (not a command's result): which instance, then its state.
      section(`player state: ${String(r.instanceId)} ${String(r.status)}`, asText(r.state), 'cyan');
    } else if (s.kind === 'mc_state' && isRec(r)) {
      section(`player state: ${String(r.instanceId)} ${String(r.status)}, no state yet`, undefined, 'cyan');
    } else if (isRec(r) && r.ok === true) {
      // The command ran; a program it ran may still have failed (run_program / shell_exec report `ok: false`).
      const failed = isRec(r.result) && r.result.ok === false;
      section(
        failed ? 'tool result: ok, but the program failed' : 'tool result: ok',
        r.result === undefined ? undefined : asText(r.result),
        failed ? 'yellow' : 'green',
      );
    } else if (isRec(r) && r.ok === false && isRec(r.error)) {
      const e = r.error;
      const head = `${typeof e.code === 'string' ? `${e.code}: ` : ''}${String(e.message ?? '')}`;
      section(
        'tool result: failed',
        typeof e.traceback === 'string' ? `${head}\n${e.traceback}` : head,
        'red',
      );
    } else section('tool result', asText(r));
  }
  if (s.error !== undefined) section('error', errorText(s.error), 'red');
  return parts.join('\n') + '\n';
}

/**
 * What a decision did to the task memory, in one line: the engine records the new memory's size, SHA-256 and whether
 * it changed (the memory itself is in the task row); records written before that carry the whole memory instead.
 * Undefined when the decision kept the memory as it was.
 */
function memoryLine(memory: unknown, bytes: unknown, sha256: unknown, changed: unknown): string | undefined {
  if (typeof bytes === 'number') {
    const what = changed === false ? 'unchanged' : changed === true ? 'changed' : 'set';
    const hash = typeof sha256 === 'string' ? ` · sha256 ${sha256.slice(0, 12)}` : '';
    return `memory ${what}: ${bytes.toLocaleString('en-US')} bytes${hash}`;
  }
  if (memory !== undefined) {
    const size = Buffer.byteLength(JSON.stringify(memory), 'utf8');
    return `memory set: ${size.toLocaleString('en-US')} bytes (an older record: the full memory is in it, --json shows it)`;
  }
  return undefined;
}

function renderInput(
  out: Output,
  input: unknown,
  opts: ShowOptions,
  section: (title: string, body: string | undefined, style?: Style, depth?: number) => void,
  parts: string[],
  textWidth: number,
): void {
  const messages = isRec(input) && Array.isArray(input.messages) ? input.messages : undefined;
  if (!isRec(input) || !messages || !messages.every((m) => isRec(m) && typeof m.role === 'string')) {
    section('input', asText(input));
    return;
  }
  const { messages: _m, options, format, tools, prompt, ...rest } = input;
  void _m;
  const facts = [`${messages.length} message${messages.length === 1 ? '' : 's'}`];
  if (isRec(prompt) && typeof prompt.name === 'string')
    facts.push(`prompt ${prompt.name} v${String(prompt.version ?? '?')}`);
  if (options !== undefined) facts.push(`options ${JSON.stringify(options)}`);
  if (format !== undefined) facts.push(format === 'json' ? 'format json' : 'format: JSON schema');
  if (Array.isArray(tools)) {
    const names = tools.map(toolName);
    facts.push(`tools ${names.join(', ')}`);
  }
  for (const [k, v] of Object.entries(rest)) facts.push(`${k} ${JSON.stringify(v)}`);
  section(`input · ${facts.join(' · ')}`, undefined);
  // Each message is cut on its own, so a long system prompt does not hide the user turn after it.
  for (const m of messages as Rec[]) {
    const content = typeof m.content === 'string' ? m.content : asText(m.content ?? '');
    const extra =
      m.toolCalls !== undefined ? `\n${paint(out, 'dim', 'tool calls:')} ${asText(m.toolCalls)}` : '';
    const who = typeof m.toolName === 'string' ? `${String(m.role)} ${m.toolName}` : String(m.role);
    const body =
      content === '' && extra === ''
        ? paint(out, 'dim', '(empty)')
        : fitText(out, content, textWidth - 8, opts.full) + extra;
    parts.push(`${indent(paint(out, 'bold', `[${who}]`), 6)}\n${indent(body, 8)}`);
  }
  if (format !== undefined && format !== 'json' && opts.full)
    section('format (JSON schema)', asText(format), 'dim', 6);
  if (Array.isArray(tools) && opts.full) section('tool definitions', asText(tools), 'dim', 6);
}

/**
 * A tool's name as a step record holds it: the agent stores `{name, description, parameters}` (the ChatModel shape);
 * a record written in Ollama's wire shape has it under `function.name`.
 */
function toolName(t: unknown): string {
  if (!isRec(t)) return '?';
  if (typeof t.name === 'string') return t.name;
  if (isRec(t.function) && typeof t.function.name === 'string') return t.function.name;
  return '?';
}

function renderOutput(
  output: unknown,
  section: (title: string, body: string | undefined, style?: Style) => void,
): void {
  if (isRec(output) && typeof output.content === 'string') {
    const { content, thinking, toolCalls, doneReason, ...rest } = output;
    if (typeof thinking === 'string' && thinking !== '') section('thinking', thinking);
    const done = typeof doneReason === 'string' ? ` (done: ${doneReason})` : '';
    section(`output${done}`, content === '' ? '(empty)' : content);
    if (toolCalls !== undefined) section('output tool calls', asText(toolCalls));
    if (Object.keys(rest).length) section('output (other fields)', asText(rest));
    return;
  }
  section('output', asText(output));
}

/** Divider before the records of one engine step. */
export function renderStepDivider(out: Output, step: number): string {
  const label = ` step ${step} `;
  return (
    paint(out, 'bold', `──${label}${'─'.repeat(Math.max(4, Math.min(out.width, 100) - label.length - 2))}`) +
    '\n'
  );
}

/** Role of a request record (`output.role`): the kind its finished call's record has. */
function requestRole(s: StepView): string | undefined {
  return isRec(s.output) && typeof s.output.role === 'string' ? s.output.role : undefined;
}

/**
 * A model request written ahead of the call (kind `model_request`) whose reply was never recorded: said in one line
 * with what was sent; `--full` shows the request. `later` tells whether anything was logged after it (then the call
 * was cut short, e.g. by a restart; otherwise it may still be running).
 */
function renderOpenRequest(out: Output, s: StepView, later: boolean, opts: ShowOptions): string {
  const role = requestRole(s) ?? 'model';
  const head = `  ${paint(out, 'bold', `#${s.seq}`)}  ${paint(out, 'yellow', `${role} request`)}  ${s.model ?? ''}  ${paint(out, 'dim', formatClock(s.startedAt ?? s.at))}`;
  const what = later
    ? paint(
        out,
        'red',
        'no reply recorded: the call was cut short (the orchestrator stopped before the model answered)',
      )
    : paint(out, 'dim', 'sent; waiting for the reply');
  const lines = [head, `    ${what}`];
  if (opts.full && s.input !== undefined) {
    const parts: string[] = [];
    const section = (title: string, body: string | undefined, style: Style = 'dim', depth = 4): void => {
      const h = ' '.repeat(depth) + paint(out, style, title);
      parts.push(
        body === undefined || body === ''
          ? h
          : `${h}\n${indent(fitText(out, body, out.width - 8 - depth, true), depth + 2)}`,
      );
    };
    renderInput(out, s.input, opts, section, parts, out.width - 8);
    lines.push(...parts);
  }
  return lines.join('\n') + '\n';
}

/** The `seq` of each model request record whose finished call's record (same step, kind and start) is in `steps`. */
export function answeredRequests(steps: readonly StepView[]): Set<number> {
  const finished = new Set<string>();
  for (const s of steps) {
    if (s.kind !== MODEL_REQUEST_KIND) finished.add(`${s.step}|${s.kind}|${s.startedAt}`);
  }
  const answered = new Set<number>();
  for (const s of steps) {
    if (s.kind === MODEL_REQUEST_KIND && finished.has(`${s.step}|${requestRole(s)}|${s.startedAt}`)) {
      answered.add(s.seq);
    }
  }
  return answered;
}

/**
 * Step-log records grouped by engine step, each group under a divider. A model request record (written before the
 * call leaves) is not shown when its finished call's record (same step, kind and start) is in the list: that record
 * has the request already.
 */
export function renderRecords(out: Output, steps: StepView[], opts: ShowOptions): string {
  const answered = answeredRequests(steps);
  let text = '';
  let current: number | undefined;
  steps.forEach((s, i) => {
    if (answered.has(s.seq)) return;
    if (s.step !== current) {
      text += (text ? '\n' : '') + renderStepDivider(out, s.step);
      current = s.step;
    }
    text += renderRecord(out, s, opts, i < steps.length - 1);
  });
  return text;
}

/** Whole `tasks show` output. */
export function renderTaskShow(out: Output, d: TaskDetail, opts: ShowOptions): string {
  const body = d.steps.length
    ? renderRecords(out, d.steps, opts)
    : paint(out, 'dim', isTerminal(d.task.status) ? '  (no steps logged)' : '  (no steps logged yet)') + '\n';
  return `${renderTaskHeader(out, d)}\n${body}`;
}

/** `tasks follow`: one line for a status change. */
export function renderStatusChange(out: Output, d: TaskDetail, from: string): string {
  const t = d.task;
  let line = `${paint(out, 'dim', formatClock(t.updatedAt))}  status ${from} → ${paint(out, statusStyle(t.status), t.status)}`;
  if (t.status === 'completed' && t.result !== undefined)
    line += `\n  ${paint(out, 'green', 'result:')} ${indent(asText(t.result), 10).trimStart()}`;
  if (t.error !== undefined && isTerminal(t.status))
    line += `\n  ${paint(out, 'red', 'error:')} ${indent(errorText(t.error), 9).trimStart()}`;
  return line + '\n';
}

/** `tasks follow`: a new open question and how to answer it. */
export function renderQuestion(out: Output, taskId: string, q: QuestionView): string {
  const why = q.why ? `\n  ${paint(out, 'dim', `why: ${q.why}`)}` : '';
  return `  ${paint(out, 'yellow', 'question:')} ${q.question}${why}\n  ${paint(out, 'dim', `answer with: ccagent tasks answer ${taskId} "<text>"`)}\n`;
}

/** `clients list` table. */
export function renderClients(out: Output, clients: ClientView[]): string {
  if (clients.length === 0) return 'no clients seen yet\n';
  const rows = clients.map((c) => [
    c.clientId,
    c.connected ? paint(out, 'green', 'connected') : paint(out, 'dim', 'offline'),
    c.clientVersion ?? '-',
    c.lastSeenAt !== undefined ? formatTime(c.lastSeenAt) : '-',
    c.commands.join(', ') || '-',
  ]);
  for (const r of rows) r[4] = oneLine(r[4] ?? '', lastColumnWidth(out, rows));
  return table(out, ['CLIENT', 'STATE', 'VERSION', 'LAST SEEN', 'COMMANDS'], rows);
}

const TOOL_STYLE: Record<string, Style> = { active: 'green', test: 'yellow', draft: 'blue', retired: 'dim' };

/** `tools list` table. */
export function renderTools(out: Output, tools: ToolView[]): string {
  if (tools.length === 0) return 'no model-written tools\n';
  const rows = tools.map((t) => [
    t.clientId,
    t.name,
    String(t.version),
    paint(out, TOOL_STYLE[t.status] ?? 'cyan', t.status),
    formatTime(t.updatedAt ?? t.recordedAt ?? 0),
    t.description ?? '',
  ]);
  for (const r of rows) r[5] = oneLine(r[5] ?? '', lastColumnWidth(out, rows));
  return table(out, ['CLIENT', 'TOOL', 'VERSION', 'STATUS', 'UPDATED', 'DESCRIPTION'], rows);
}

/** Per-task settings as `key=value` pairs, nested keys dotted: `models.native=qwen3:14b · temperature=0.1`. */
export function settingsText(settings: Record<string, unknown>): string {
  const pairs: string[] = [];
  const walk = (prefix: string, v: unknown): void => {
    if (v !== null && typeof v === 'object' && !Array.isArray(v)) {
      for (const [k, x] of Object.entries(v)) walk(prefix ? `${prefix}.${k}` : k, x);
    } else pairs.push(`${prefix}=${typeof v === 'string' ? v : JSON.stringify(v)}`);
  };
  walk('', settings);
  return pairs.join(' · ');
}
