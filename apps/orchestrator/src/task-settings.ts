/**
 * Per-task settings (`create_task.settings`, the HTTP create body's `settings`): checked against the task kind and the
 * operator maximums of the config (`limits`), and turned into the budgets of one run. The settings are stored with the
 * task (`metadata.settings`, as the request gave them) and read by the strategy resolver at every step.
 */
import type { JsonValue, Task } from '@ccagent/engine';
import type { TaskSettings } from '@ccagent/protocol';
import type { ModelRoleName, OrchestratorConfig, TaskKindConfig } from './config.js';

/** Task metadata key of the stored settings. */
export const SETTINGS_KEY = 'settings';
/** Task metadata key of the budgets of one run (re-applied when the task is continued or retried). */
export const RUN_BUDGETS_KEY = 'run_budgets';

/** Budgets of one run of a task: counts from the run's start, the deadline from the run's start. */
export interface RunBudgets {
  maxSteps?: number;
  maxToolCalls?: number;
  deadlineMs?: number;
  /** Prompt tokens of the run, from the model server's counts (checked by the agent's `withTokenBudget`). */
  maxPromptTokens?: number;
  /** Output tokens of the run, from the model server's counts. */
  maxOutputTokens?: number;
}

/** Why settings were refused: `forbidden` for a value the operator does not allow, `invalid_field` otherwise. */
export interface SettingsError {
  code: 'invalid_field' | 'forbidden';
  message: string;
  /** JSON path of the field, e.g. `$.settings.budgets.max_steps`. */
  path: string;
}

/** Roles each strategy uses (a model for another role would never be called). */
const ROLES_OF: Record<TaskKindConfig['strategy'], readonly string[]> = {
  planner_executor: ['planner', 'executor'],
  native: ['native'],
  // served by the native role's configuration; a request names its model as `models.chat`
  chat: ['chat'],
};

/**
 * Check `settings` for a task of kind `kindName` and work out the run budgets (the request's, else the kind's).
 * Refuses a value above an operator maximum, a model the operator did not allow, a provider no role is configured
 * with, and a setting the kind's strategy does not use.
 */
export function resolveTaskSettings(
  config: OrchestratorConfig,
  kindName: string,
  spec: TaskKindConfig,
  settings: TaskSettings | undefined,
): { ok: true; value: RunBudgets } | { ok: false; error: SettingsError } {
  const refuse = (code: SettingsError['code'], path: string, message: string) => ({
    ok: false as const,
    error: { code, message, path: `$.settings.${path}` },
  });
  const limits = config.limits;
  const s = settings ?? {};
  const roles = ROLES_OF[spec.strategy];
  const allowedModels = new Set(
    limits.models ?? (['planner', 'executor', 'native'] as const).map((r) => config.models[r].name),
  );
  for (const [role, name] of Object.entries(s.models ?? {})) {
    if (name === undefined) continue;
    if (!roles.includes(role)) {
      return refuse(
        'invalid_field',
        `models.${role}`,
        `task kind "${kindName}" (${spec.strategy}) uses no ${role} model; it uses: ${roles.join(', ')}`,
      );
    }
    if (!allowedModels.has(name)) {
      return refuse(
        'forbidden',
        `models.${role}`,
        `model "${name}" is not allowed by the server (limits.models): ${[...allowedModels].join(', ')}`,
      );
    }
  }
  if (s.provider !== undefined && !providerRole(config, s.provider)) {
    return refuse('invalid_field', 'provider', `no model role is configured with provider "${s.provider}"`);
  }
  if (s.temperature !== undefined && s.temperature > limits.maxTemperature) {
    return refuse(
      'forbidden',
      'temperature',
      `temperature ${s.temperature} is above the server's maximum ${limits.maxTemperature} (limits.maxTemperature)`,
    );
  }
  if (s.num_ctx !== undefined && s.num_ctx > limits.maxNumCtx) {
    return refuse(
      'forbidden',
      'num_ctx',
      `num_ctx ${s.num_ctx} is above the server's maximum ${limits.maxNumCtx} (limits.maxNumCtx)`,
    );
  }
  if (spec.strategy !== 'planner_executor') {
    for (const key of ['executor_mode', 'interactive', 'completion'] as const) {
      if (s[key] !== undefined) {
        return refuse(
          'invalid_field',
          key,
          `${key} applies to planner_executor tasks; "${kindName}" is ${spec.strategy}`,
        );
      }
    }
  }
  const b = s.budgets ?? {};
  if (b.max_model_calls !== undefined && spec.strategy === 'planner_executor') {
    return refuse(
      'invalid_field',
      'budgets.max_model_calls',
      `max_model_calls applies to native and chat tasks; "${kindName}" is ${spec.strategy}`,
    );
  }
  const bounds: Array<[keyof typeof b, number, string]> = [
    ['max_steps', limits.maxSteps, 'limits.maxSteps'],
    ['max_tool_calls', limits.maxToolCalls, 'limits.maxToolCalls'],
    ['max_model_calls', limits.maxModelCalls, 'limits.maxModelCalls'],
    ['deadline_ms', limits.maxDeadlineMs, 'limits.maxDeadlineMs'],
    ['max_prompt_tokens', limits.maxPromptTokens, 'limits.maxPromptTokens'],
    ['max_output_tokens', limits.maxOutputTokens, 'limits.maxOutputTokens'],
  ];
  for (const [key, max, where] of bounds) {
    const v = b[key];
    if (v !== undefined && v > max) {
      return refuse(
        'forbidden',
        `budgets.${key}`,
        `${key} ${v} is above the server's maximum ${max} (${where})`,
      );
    }
  }
  const run: RunBudgets = {};
  const steps = b.max_steps ?? spec.budgets.maxSteps;
  const calls = b.max_tool_calls ?? spec.budgets.maxToolCalls;
  const deadline = b.deadline_ms ?? spec.budgets.deadlineMs;
  if (steps !== undefined) run.maxSteps = steps;
  if (calls !== undefined) run.maxToolCalls = calls;
  if (deadline !== undefined) run.deadlineMs = deadline;
  const promptTokens = b.max_prompt_tokens ?? spec.budgets.maxPromptTokens;
  const outputTokens = b.max_output_tokens ?? spec.budgets.maxOutputTokens;
  if (promptTokens !== undefined) run.maxPromptTokens = promptTokens;
  if (outputTokens !== undefined) run.maxOutputTokens = outputTokens;
  return { ok: true, value: run };
}

/** The first role configured with `provider` (its base URL and key serve a task that asks for that provider). */
export function providerRole(config: OrchestratorConfig, provider: string): ModelRoleName | undefined {
  return (['native', 'planner', 'executor'] as const).find((r) => config.models[r].provider === provider);
}

/** The settings stored with a task, if any (as the request gave them; validated at creation). */
export function taskSettings(task: Task): TaskSettings | undefined {
  const s = task.metadata[SETTINGS_KEY];
  return s !== undefined && s !== null && typeof s === 'object' && !Array.isArray(s)
    ? (s as TaskSettings)
    : undefined;
}

/** The run budgets stored with a task (what a continuation or retry gives it again). */
export function storedRunBudgets(task: Task): RunBudgets | undefined {
  const b = task.metadata[RUN_BUDGETS_KEY];
  if (b === undefined || b === null || typeof b !== 'object' || Array.isArray(b)) return undefined;
  return b as RunBudgets;
}

/** The engine budgets of a run starting now with `counters` already used. */
export function budgetsFrom(
  run: RunBudgets,
  counters: { steps: number; toolCalls: number },
  now: number,
): { maxSteps?: number; maxToolCalls?: number; deadlineAt?: number } {
  const out: { maxSteps?: number; maxToolCalls?: number; deadlineAt?: number } = {};
  if (run.maxSteps !== undefined) out.maxSteps = counters.steps + run.maxSteps;
  if (run.maxToolCalls !== undefined) out.maxToolCalls = counters.toolCalls + run.maxToolCalls;
  if (run.deadlineMs !== undefined) out.deadlineAt = now + run.deadlineMs;
  return out;
}

/** `RunBudgets` as JSON for the task's metadata. */
export function runBudgetsJson(run: RunBudgets): JsonValue {
  return { ...run };
}
