/**
 * Budgets of one run of a task that the engine does not count, and its progress: a strategy decorator.
 *
 * - **Tokens.** Prompt and output tokens of the run, summed from what the model server reported for each call (the
 *   `usage` of every step-log record the strategy writes: Ollama's `prompt_eval_count` / `eval_count`, OpenAI's
 *   `prompt_tokens` / `completion_tokens`). Checked before each step: once either count has reached its maximum the
 *   task completes with a final message to the user (what was done this run, the model's last words, what to do next)
 *   and `stopped: "token_budget"`, as a native run that used its model calls does. A run starts at creation and again
 *   at every `resume` (a follow-up message to an ended task, a retry), which gives fresh counts. The counts are kept in
 *   memory and rebuilt from the step log once per task and process (after a restart), so they are as durable as the
 *   step log.
 * - **Progress.** A step that calls a command or continues gets `progress` (0..1) and a message saying what of the
 *   run's budgets is used (`step 3/40 · 2/60 tool calls · 1.2k/50k prompt tokens`), unless the strategy set its own.
 */
import type { Decision, HistoryEntry, StepContext, StoredStep, Task, TaskStrategy } from '@ccagent/engine';

/** The budgets of one run of a task (counts from the run's start). */
export interface RunBudget {
  maxSteps?: number;
  maxToolCalls?: number;
  maxPromptTokens?: number;
  maxOutputTokens?: number;
}

/** Options of {@link withRunBudget}. */
export interface RunBudgetOptions {
  /** The run budgets of a task (its request's, else its kind's); undefined: none. */
  budgetOf(task: Task): RunBudget | undefined;
  /** The task's whole step log (read once per task and process, to rebuild the token counts of the current run). */
  readSteps(taskId: string): Promise<StoredStep[]>;
}

/** Token counts of a task's current run. */
interface RunCounts {
  /** The step of the run's `resume` entry (0 for the first run): the run's steps come after it. */
  startStep: number;
  prompt: number;
  output: number;
  /** The model's last reply text this run (for the final message). */
  lastText: string | undefined;
  /** History entries already looked at for a `resume`. */
  seen: number;
}

function lastResumeStep(history: readonly HistoryEntry[], from: number): number | undefined {
  for (let i = history.length - 1; i >= from; i--) {
    const e = history[i] as HistoryEntry;
    if (e.type === 'resume') return e.step;
  }
  return undefined;
}

function replyText(output: unknown): string | undefined {
  if (output === null || typeof output !== 'object' || Array.isArray(output)) return undefined;
  const c = (output as { content?: unknown }).content;
  return typeof c === 'string' && c.trim() !== '' ? c : undefined;
}

/** `1234` → `1234`, `123456` → `123k`, `12345678` → `12.3M`. */
function short(n: number): string {
  if (n < 10_000) return String(n);
  if (n < 1_000_000) return `${Math.round(n / 1000)}k`;
  return `${(n / 1_000_000).toFixed(1)}M`;
}

function clip(text: string, max: number): string {
  const t = text.replace(/<think(?:ing)?>[\s\S]*?(?:<\/think(?:ing)?>|$)/gi, '').trim();
  return t.length <= max ? t : `${t.slice(0, max)}…`;
}

/** The final message of a run whose tokens are used up: what was done, the model's last words, what next. */
function exhausted(task: Task, history: readonly HistoryEntry[], c: RunCounts, b: RunBudget): Decision {
  const used: string[] = [];
  if (b.maxPromptTokens !== undefined && c.prompt >= b.maxPromptTokens)
    used.push(`${c.prompt} of its ${b.maxPromptTokens} prompt tokens`);
  if (b.maxOutputTokens !== undefined && c.output >= b.maxOutputTokens)
    used.push(`${c.output} of its ${b.maxOutputTokens} output tokens`);
  const calls = new Map<string, number>();
  let last: { command: string; ok: boolean; error?: string } | undefined;
  for (let i = history.length - 1; i >= 0; i--) {
    const e = history[i] as HistoryEntry;
    if (e.step <= c.startStep) break;
    if (e.type === 'tool_call') calls.set(e.command, (calls.get(e.command) ?? 0) + 1);
    if (e.type === 'tool_result' && last === undefined) {
      last = e.outcome.ok
        ? { command: e.command, ok: true }
        : { command: e.command, ok: false, error: e.outcome.error.message };
    }
  }
  const n = [...calls.values()].reduce((a, v) => a + v, 0);
  const lines = [
    `I stopped because this run used ${used.join(' and ')} (as the model server counted them), so I cannot ` +
      'ask the model for more now.',
    n === 0
      ? 'No command was run in this run.'
      : `Done in this run: ${n} command call${n === 1 ? '' : 's'} (${[...calls]
          .map(([k, v]) => `${k} ×${v}`)
          .join(', ')}); the last, ${last?.command ?? '?'}, ${
          last === undefined
            ? 'has no result yet'
            : last.ok
              ? 'succeeded'
              : `failed: ${clip(last.error ?? '', 200)}`
        }.`,
  ];
  if (c.lastText !== undefined) lines.push(`The model's last words: "${clip(c.lastText, 400)}"`);
  lines.push(
    'The task may not be finished. Send it a message to continue with a fresh budget, or raise the budget ' +
      '(settings.budgets.max_prompt_tokens / max_output_tokens).',
  );
  return {
    type: 'complete',
    result: {
      message: lines.join('\n'),
      stopped: 'token_budget',
      tokens: { prompt: c.prompt, output: c.output },
    },
  };
}

/** Progress of the run after this step: the largest share of a budget used, and what is used of each. */
function progressOf(
  task: Task,
  decision: Decision,
  c: RunCounts | undefined,
  b: RunBudget,
): { progress: number; text: string } | undefined {
  const parts: string[] = [];
  let share = 0;
  const add = (used: number, max: number | undefined, label: (u: string, m: string) => string): void => {
    if (max === undefined || max <= 0) return;
    share = Math.max(share, used / max);
    parts.push(label(short(used), short(max)));
  };
  const startStep = c?.startStep ?? 0;
  add(task.counters.steps + 1 - startStep, b.maxSteps, (u, m) => `step ${u}/${m}`);
  if (b.maxToolCalls !== undefined && task.budgets.maxToolCalls !== undefined) {
    // the engine's limit is the calls made before the run plus the run's own
    const before = task.budgets.maxToolCalls - b.maxToolCalls;
    const used = task.counters.toolCalls - before + (decision.type === 'tool_call' ? 1 : 0);
    add(Math.max(0, used), b.maxToolCalls, (u, m) => `${u}/${m} tool calls`);
  }
  if (c) {
    add(c.prompt, b.maxPromptTokens, (u, m) => `${u}/${m} prompt tokens`);
    add(c.output, b.maxOutputTokens, (u, m) => `${u}/${m} output tokens`);
  }
  if (parts.length === 0) return undefined;
  return { progress: Math.min(1, share), text: parts.join(' · ') };
}

/**
 * Wrap `inner` so each run of a task is bounded by its token budgets and each step reports progress (see the module
 * comment). Tasks without run budgets are passed through unchanged.
 */
export function withRunBudget(inner: TaskStrategy, opts: RunBudgetOptions): TaskStrategy {
  const counts = new Map<string, RunCounts>();

  async function countsOf(task: Task, history: readonly HistoryEntry[]): Promise<RunCounts> {
    let c = counts.get(task.id);
    if (c && c.seen <= history.length) {
      const resumed = lastResumeStep(history, c.seen);
      c.seen = history.length;
      if (resumed !== undefined) {
        c.startStep = resumed;
        c.prompt = 0;
        c.output = 0;
        c.lastText = undefined;
      }
      return c;
    }
    const startStep = lastResumeStep(history, 0) ?? 0;
    c = { startStep, prompt: 0, output: 0, lastText: undefined, seen: history.length };
    for (const s of await opts.readSteps(task.id)) {
      if (s.step <= startStep) continue;
      c.prompt += s.usage?.promptTokens ?? 0;
      c.output += s.usage?.completionTokens ?? 0;
      if (s.usage !== undefined) c.lastText = replyText(s.output) ?? c.lastText;
    }
    if (counts.size >= 10_000) counts.delete(counts.keys().next().value as string);
    counts.set(task.id, c);
    return c;
  }

  return {
    async decide(task, history, ctx) {
      const b = opts.budgetOf(task);
      if (b === undefined) return inner.decide(task, history, ctx);
      const tokens = b.maxPromptTokens !== undefined || b.maxOutputTokens !== undefined;
      const c = tokens ? await countsOf(task, history) : undefined;
      if (
        c &&
        ((b.maxPromptTokens !== undefined && c.prompt >= b.maxPromptTokens) ||
          (b.maxOutputTokens !== undefined && c.output >= b.maxOutputTokens))
      ) {
        return exhausted(task, history, c, b);
      }
      let inCtx = ctx;
      if (c) {
        // Count what each model call of this step reports, as its record is written.
        inCtx = {
          get signal() {
            return ctx.signal;
          },
          clock: ctx.clock,
          logger: ctx.logger,
          step: ctx.step,
          callModel: (model, fn) => ctx.callModel(model, fn),
          availableCommands: () => ctx.availableCommands(),
          logStep: async (record) => {
            const stored = await ctx.logStep(record);
            if (record.usage !== undefined) {
              c.prompt += record.usage.promptTokens ?? 0;
              c.output += record.usage.completionTokens ?? 0;
              c.lastText = replyText(record.output) ?? c.lastText;
            }
            return stored;
          },
        } satisfies StepContext;
      }
      const decision = await inner.decide(task, history, inCtx);
      // A question keeps its own message (what the person is asked); an end says how the task finished.
      if (decision.type !== 'tool_call' && decision.type !== 'continue') return decision;
      if (decision.progress !== undefined) return decision;
      const p = progressOf(task, decision, c, b);
      if (p === undefined) return decision;
      return {
        ...decision,
        progress: p.progress,
        message: decision.message !== undefined ? `${decision.message} · ${p.text}` : p.text,
      };
    },
  };
}
