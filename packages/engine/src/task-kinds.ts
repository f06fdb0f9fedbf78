/**
 * The catalogue of task kinds an application offers, as plain data (no configuration format): each kind's strategy
 * name, allowed commands, budgets of one run and the settings its strategy uses, the aliases, and the operator
 * maximums of per-task settings. The rules that read it: which kind a requested name means, which commands a task of
 * that kind may call, and whether a request's per-task settings are allowed (and the run budgets they give).
 */
import type { TaskSettings } from '@ccagent/protocol';
import type { PeriodBudgets } from './period-budgets.js';

/** Budgets of one run of a task: counts from the run's start, the deadline from the run's start (ms). */
export interface RunBudgets {
  maxSteps?: number;
  maxToolCalls?: number;
  deadlineMs?: number;
  /** Prompt tokens of the run, from the model server's counts (checked by the agent's `withTokenBudget`). */
  maxPromptTokens?: number;
  /** Output tokens of the run, from the model server's counts. */
  maxOutputTokens?: number;
}

/** Budget fields of `TaskSettings.budgets` (snake_case, as the request gives them). */
export type BudgetSettingName = keyof NonNullable<TaskSettings['budgets']>;

/** A per-task setting a kind's strategy may not use: a top-level setting or one of the budgets. */
export type KindSpecificSetting = Exclude<keyof TaskSettings, 'budgets'> | `budgets.${BudgetSettingName}`;

/** One kind of task as the task rules see it. */
export interface TaskKindRules {
  /** Name of the strategy that runs the kind (named in refusals). */
  strategy: string;
  /** Commands tasks of this kind may call; empty = any command the client offers. */
  allowedCommands: readonly string[];
  /** The kind's budgets of one run (a request's `settings.budgets` override them, within the limits). */
  budgets: RunBudgets;
  /** Roles a request may choose a model for (`settings.models` keys): the roles the kind's strategy calls. */
  modelRoles: readonly string[];
  /**
   * Settings the kind's strategy does not use, each with the tasks it applies to (`"planner_executor tasks"`): a
   * request setting one is refused, in this order.
   */
  unusedSettings?: ReadonlyArray<{ setting: KindSpecificSetting; appliesTo: string }>;
  /**
   * Budgets per hour / day of a resident kind (agents that live for days): stored with each task of the kind, which
   * sleeps until the window ends when it has used one, instead of failing (see period-budgets.ts).
   */
  periodBudgets?: PeriodBudgets;
}

/** Operator maximums of what a request may set per task; named `limits.<field>` in refusals. */
export interface TaskLimits {
  maxSteps: number;
  maxToolCalls: number;
  maxModelCalls: number;
  maxPromptTokens: number;
  maxOutputTokens: number;
  /** Longest wall-clock budget of one run (ms). */
  maxDeadlineMs: number;
  maxNumCtx: number;
  maxTemperature: number;
  /** Model names a request may choose. */
  models: readonly string[];
}

/** Everything the task rules know about the kinds an application offers. */
export interface TaskKindCatalogue {
  /** Kinds by canonical name. */
  kinds: Readonly<Record<string, TaskKindRules>>;
  /** Other names for kinds: alias → canonical name. */
  aliases: Readonly<Record<string, string>>;
  limits: TaskLimits;
  /** Model providers the application has configured (a request may only ask for one of these). */
  providers: readonly string[];
}

/** Why per-task settings were refused: `forbidden` for a value the operator does not allow, `invalid_field` otherwise. */
export interface SettingsRefusal {
  code: 'invalid_field' | 'forbidden';
  message: string;
  /** JSON path of the field in the request, e.g. `$.settings.budgets.max_steps`. */
  path: string;
}

/**
 * The canonical kind for a requested name (itself or an alias), or undefined when unknown. Only own keys count, so
 * `toString` names no kind.
 */
export function resolveTaskKind(
  catalogue: { kinds: Readonly<Record<string, unknown>>; aliases: Readonly<Record<string, string>> },
  requested: string,
): string | undefined {
  if (Object.hasOwn(catalogue.kinds, requested)) return requested;
  const target = Object.hasOwn(catalogue.aliases, requested) ? catalogue.aliases[requested] : undefined;
  return target !== undefined && Object.hasOwn(catalogue.kinds, target) ? target : undefined;
}

/** The rules of kind `name` (a canonical name), or undefined when the catalogue has none. */
export function kindRules(catalogue: TaskKindCatalogue, name: string): TaskKindRules | undefined {
  return Object.hasOwn(catalogue.kinds, name) ? catalogue.kinds[name] : undefined;
}

/** Every name a request may use for a kind: the kinds, then the aliases. */
export function taskKindNames(catalogue: TaskKindCatalogue): string[] {
  return [...Object.keys(catalogue.kinds), ...Object.keys(catalogue.aliases)];
}

/**
 * The commands a task of kind `spec` may call: the requested ones that the kind allows (all the kind's when none
 * are requested); the requested ones as they are when the kind allows any. Undefined when the kind allows none of
 * the requested commands.
 */
export function allowedCommandsFor(spec: TaskKindRules, requested: readonly string[]): string[] | undefined {
  if (spec.allowedCommands.length === 0) return [...requested];
  const allowed =
    requested.length === 0
      ? [...spec.allowedCommands]
      : requested.filter((c) => spec.allowedCommands.includes(c));
  return allowed.length === 0 ? undefined : allowed;
}

/**
 * Check `settings` for a task of kind `kindName` and work out the run budgets (the request's, else the kind's).
 * Refuses a model for a role the kind does not call, a model the operator did not allow, a provider the application
 * has not configured, a value above an operator maximum, and a setting the kind's strategy does not use.
 */
export function resolveRunBudgets(
  catalogue: TaskKindCatalogue,
  kindName: string,
  spec: TaskKindRules,
  settings: TaskSettings | undefined,
): { ok: true; value: RunBudgets } | { ok: false; error: SettingsRefusal } {
  const refuse = (code: SettingsRefusal['code'], path: string, message: string) => ({
    ok: false as const,
    error: { code, message, path: `$.settings.${path}` },
  });
  const limits = catalogue.limits;
  const s = settings ?? {};
  const roles = spec.modelRoles;
  const allowedModels = new Set(limits.models);
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
  if (s.provider !== undefined && !catalogue.providers.includes(s.provider)) {
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
  const b = s.budgets ?? {};
  for (const { setting, appliesTo } of spec.unusedSettings ?? []) {
    const [top, leaf] = setting.split('.') as [keyof TaskSettings, BudgetSettingName | undefined];
    const given = leaf === undefined ? s[top] : b[leaf];
    if (given !== undefined) {
      return refuse(
        'invalid_field',
        setting,
        `${leaf ?? top} applies to ${appliesTo}; "${kindName}" is ${spec.strategy}`,
      );
    }
  }
  const bounds: Array<[BudgetSettingName, number, string]> = [
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
