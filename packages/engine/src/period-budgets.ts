/**
 * Budgets per period, for resident agents (tasks that live for days): steps, tool calls and model tokens per hour
 * and per day instead of one total. The limits and the usage of the current windows live in the task's `metadata`
 * (`period_budgets`, `period_usage`), so they are written with every decision in the same commit and survive a
 * restart. Windows are fixed and aligned to UTC (an hour starts at :00, a day at 00:00 UTC). A task that has used a
 * period's budget is not failed: it sleeps until the window ends (no model call meanwhile) and then goes on, seeing
 * what was posted to it in between.
 *
 * Pure functions of a task and a time; the step runner (step-runner.ts) calls them before each step and at each
 * decision's commit.
 */
import type { JsonValue, Task } from './types.js';

/** The periods a budget can be given for. */
export const BUDGET_PERIODS = ['hour', 'day'] as const;
/** One of {@link BUDGET_PERIODS}. */
export type BudgetPeriod = (typeof BUDGET_PERIODS)[number];

/** Length of each period's window, ms. */
export const PERIOD_MS: Readonly<Record<BudgetPeriod, number>> = { hour: 3_600_000, day: 86_400_000 };

/** What a task may use in one window of a period; each field optional (absent: no limit of that kind). */
export interface PeriodLimit {
  maxSteps?: number;
  maxToolCalls?: number;
  /** Prompt plus output tokens of the model calls, from the model server's counts in the step log. */
  maxTokens?: number;
}

/** Limits per period (`{ hour: { maxSteps: 20 }, day: { maxTokens: 2e6 } }`). */
export type PeriodBudgets = Partial<Record<BudgetPeriod, PeriodLimit>>;

/** What a task used in the window starting at `start` (epoch ms). */
export interface PeriodUsage {
  start: number;
  steps: number;
  toolCalls: number;
  tokens: number;
}

/** Metadata keys of the period budgets (stable: they are on disk). */
export const PERIOD_METADATA_KEYS = { budgets: 'period_budgets', usage: 'period_usage' } as const;

/** Which limit of which period a task has used up, and when the window ends. */
export interface PeriodExhaustion {
  period: BudgetPeriod;
  budget: keyof PeriodLimit;
  limit: number;
  used: number;
  /** End of the window (epoch ms): the task may step again then. */
  until: number;
}

/** What one step used, added to every window by {@link withPeriodUsage}. */
export interface StepSpend {
  steps: number;
  toolCalls: number;
  tokens: number;
}

/** Start of the window of `period` that holds `now`. */
export function periodStart(period: BudgetPeriod, now: number): number {
  const ms = PERIOD_MS[period];
  return Math.floor(now / ms) * ms;
}

const isRecord = (v: unknown): v is Record<string, unknown> =>
  v !== null && typeof v === 'object' && !Array.isArray(v);

const count = (v: unknown): number | undefined =>
  typeof v === 'number' && Number.isFinite(v) && v >= 0 ? v : undefined;

/** The period budgets of `task`, or undefined for a task without any (every task that is not resident). */
export function periodBudgetsOf(task: Task): PeriodBudgets | undefined {
  const raw = task.metadata[PERIOD_METADATA_KEYS.budgets];
  if (!isRecord(raw)) return undefined;
  const out: PeriodBudgets = {};
  for (const period of BUDGET_PERIODS) {
    const p = raw[period];
    if (!isRecord(p)) continue;
    const limit: PeriodLimit = {};
    for (const key of ['maxSteps', 'maxToolCalls', 'maxTokens'] as const) {
      const v = count(p[key]);
      if (v !== undefined) limit[key] = v;
    }
    out[period] = limit;
  }
  return Object.keys(out).length > 0 ? out : undefined;
}

/** The usage of the windows holding `now` (a window that has ended counts as unused). */
export function periodUsageOf(task: Task, now: number): Record<BudgetPeriod, PeriodUsage> {
  const raw = task.metadata[PERIOD_METADATA_KEYS.usage];
  const stored = isRecord(raw) ? raw : {};
  const out = {} as Record<BudgetPeriod, PeriodUsage>;
  for (const period of BUDGET_PERIODS) {
    const start = periodStart(period, now);
    const u = stored[period];
    out[period] =
      isRecord(u) && u['start'] === start
        ? {
            start,
            steps: count(u['steps']) ?? 0,
            toolCalls: count(u['toolCalls']) ?? 0,
            tokens: count(u['tokens']) ?? 0,
          }
        : { start, steps: 0, toolCalls: 0, tokens: 0 };
  }
  return out;
}

/**
 * The first limit `task` has used up in the windows holding `now` (the one whose window ends last when several are,
 * so the task sleeps once), or undefined when it may step. A step is allowed while every count is below its limit:
 * steps and tool calls never exceed theirs (a step makes at most one call); tokens may exceed theirs by what the
 * last allowed step used, as a model call's tokens are known only after it.
 */
export function periodExhausted(task: Task, now: number): PeriodExhaustion | undefined {
  const budgets = periodBudgetsOf(task);
  if (!budgets) return undefined;
  const usage = periodUsageOf(task, now);
  let found: PeriodExhaustion | undefined;
  for (const period of BUDGET_PERIODS) {
    const limit = budgets[period];
    if (!limit) continue;
    const u = usage[period];
    const checks: Array<[keyof PeriodLimit, number]> = [
      ['maxSteps', u.steps],
      ['maxToolCalls', u.toolCalls],
      ['maxTokens', u.tokens],
    ];
    for (const [budget, used] of checks) {
      const max = limit[budget];
      if (max === undefined || used < max) continue;
      const until = u.start + PERIOD_MS[period];
      if (!found || until > found.until) found = { period, budget, limit: max, used, until };
    }
  }
  return found;
}

/** `task.metadata` with `spend` added to the usage of the windows holding `now` (unchanged without period budgets). */
export function withPeriodUsage(task: Task, now: number, spend: StepSpend): Record<string, JsonValue> {
  if (!periodBudgetsOf(task)) return task.metadata;
  const usage = periodUsageOf(task, now);
  const next: Record<string, JsonValue> = {};
  for (const period of BUDGET_PERIODS) {
    const u = usage[period];
    next[period] = {
      start: u.start,
      steps: u.steps + spend.steps,
      toolCalls: u.toolCalls + spend.toolCalls,
      tokens: u.tokens + spend.tokens,
    };
  }
  return { ...task.metadata, [PERIOD_METADATA_KEYS.usage]: next };
}

/** `PeriodBudgets` as JSON for a task's metadata. */
export function periodBudgetsJson(budgets: PeriodBudgets): JsonValue {
  const out: Record<string, JsonValue> = {};
  for (const period of BUDGET_PERIODS) {
    const p = budgets[period];
    if (p) out[period] = { ...p };
  }
  return out;
}
