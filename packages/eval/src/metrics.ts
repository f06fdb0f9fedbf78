/**
 * What one attempt cost and how it ended, read from the orchestrator's record of its tasks (`GET /api/tasks/:id`):
 * steps, model calls, tokens and seconds the model server reported, bounced directives — and why a failed attempt
 * failed. Success itself is never read from here: only the checker decides it.
 */

/** A task as `GET /api/tasks/:id` returns it (the fields the eval reads). */
export interface TaskDetail {
  task: {
    id: string;
    status: string;
    counters?: { steps?: number; tool_calls?: number; questions?: number };
    result?: { stopped?: string } & Record<string, unknown>;
    error?: { code: string; message?: string };
  };
  steps: Array<{
    kind: string;
    model?: string | null;
    duration_ms?: number;
    usage?: { prompt_tokens?: number; completion_tokens?: number };
    directive?: { type?: string } & Record<string, unknown>;
  }>;
  questions?: Array<{ question: string; answer?: string }>;
}

/** Figures of one attempt, summed over its tasks. */
export interface AttemptMetrics {
  /** Engine steps (decisions). */
  steps: number;
  /** Model calls that returned (planner, executor, repair, native). */
  modelCalls: number;
  /** Prompt tokens the model server reported (`prompt_eval_count` / `usage.prompt_tokens`). */
  promptTokens: number;
  /** Tokens the model generated (`eval_count` / `usage.completion_tokens`). */
  evalTokens: number;
  /** Seconds spent in model calls. */
  modelSeconds: number;
  /** Planner directives sent back to the planner instead of being run (`continue` decisions). */
  bounces: number;
  /** Questions the task asked (confirmations included). */
  questions: number;
}

/** Zero figures. */
export const NO_METRICS: AttemptMetrics = {
  steps: 0,
  modelCalls: 0,
  promptTokens: 0,
  evalTokens: 0,
  modelSeconds: 0,
  bounces: 0,
  questions: 0,
};

/** The figures of a set of task records. */
export function metricsOf(details: readonly TaskDetail[]): AttemptMetrics {
  const m = { ...NO_METRICS };
  for (const d of details) {
    m.steps += d.task.counters?.steps ?? 0;
    m.questions += d.questions?.length ?? 0;
    for (const s of d.steps) {
      if (s.kind === 'decision' && s.directive?.type === 'continue') m.bounces += 1;
      // A model call's record names its model; the record written before a request leaves has no reply yet, and a
      // directive translated by the parser names 'parser'.
      if (s.model === undefined || s.model === null || s.kind === 'model_request' || s.model === 'parser')
        continue;
      m.modelCalls += 1;
      m.promptTokens += s.usage?.prompt_tokens ?? 0;
      m.evalTokens += s.usage?.completion_tokens ?? 0;
      m.modelSeconds += (s.duration_ms ?? 0) / 1000;
    }
  }
  return m;
}

/** Why a failed attempt failed, one of a few classes a table can count. */
export type FailureReason =
  | 'wrong answer'
  | 'budget'
  | 'bounced directives'
  | 'gave up'
  | 'model error'
  | 'timeout'
  | 'computer'
  | 'eval error'
  | string;

const BUDGET_CODES = new Set(['budget_exhausted', 'max_iterations', 'repetition']);

/**
 * The reason of an attempt the checker rejected, from how its last task ended: it failed on a budget (steps, tool
 * calls, tokens, deadline, iterations, repetition), on bounced directives (`planner_unusable`), by giving up, on the
 * model server — or it ended believing it was done while the computer says otherwise (`wrong answer`).
 */
export function failureReason(details: readonly TaskDetail[]): FailureReason {
  const last = details[details.length - 1];
  if (!last) return 'computer';
  const { status, error, result } = last.task;
  if (status === 'failed') {
    const code = error?.code ?? 'failed';
    if (BUDGET_CODES.has(code)) return 'budget';
    if (code === 'planner_unusable') return 'bounced directives';
    if (code === 'agent_gave_up' || code === 'completion_unproven') return 'gave up';
    if (code.startsWith('model')) return 'model error';
    return code;
  }
  if (status === 'completed' && result?.stopped) return 'budget';
  if (status === 'cancelled') return 'timeout';
  return 'wrong answer';
}
