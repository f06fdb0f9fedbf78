/**
 * The configuration's task kinds as the engine's plain catalogue (`TaskKindCatalogue`): for each kind its strategy,
 * allowed commands and budgets, the model roles its strategy calls and the per-task settings it does not use; the
 * aliases; the operator maximums (`limits`, with the models a request may choose); the configured providers. The
 * rules that read it live in `@ccagent/engine` (`TaskOperations`, `resolveRunBudgets`).
 */
import {
  resolveTaskKind,
  taskKindNames,
  type RunBudgets,
  type TaskKindCatalogue,
  type TaskKindRules,
} from '@ccagent/engine';
import type { ModelRoleName, OrchestratorConfig, TaskKindConfig } from './config.js';

/** Roles each strategy uses (a model for another role would never be called). */
const ROLES_OF: Record<TaskKindConfig['strategy'], readonly string[]> = {
  planner_executor: ['planner', 'executor'],
  native: ['native'],
  // served by the native role's configuration; a request names its model as `models.chat`
  chat: ['chat'],
};

/** Settings each strategy does not use, with the tasks they apply to. */
const UNUSED_SETTINGS: Record<TaskKindConfig['strategy'], TaskKindRules['unusedSettings']> = {
  planner_executor: [{ setting: 'budgets.max_model_calls', appliesTo: 'native and chat tasks' }],
  native: [
    { setting: 'executor_mode', appliesTo: 'planner_executor tasks' },
    { setting: 'interactive', appliesTo: 'planner_executor tasks' },
    { setting: 'completion', appliesTo: 'planner_executor tasks' },
  ],
  chat: [
    { setting: 'executor_mode', appliesTo: 'planner_executor tasks' },
    { setting: 'interactive', appliesTo: 'planner_executor tasks' },
    { setting: 'completion', appliesTo: 'planner_executor tasks' },
  ],
};

/** The model roles of the configuration, in the order a provider is looked up. */
const ROLES = ['native', 'planner', 'executor'] as const;

/** The engine's catalogue of the configured kinds (see the module comment). */
export function kindCatalogue(config: OrchestratorConfig): TaskKindCatalogue {
  const kinds: Record<string, TaskKindRules> = {};
  for (const [name, spec] of Object.entries(config.taskKinds)) {
    kinds[name] = {
      strategy: spec.strategy,
      allowedCommands: spec.allowedCommands,
      budgets: kindBudgets(spec),
      modelRoles: ROLES_OF[spec.strategy],
      unusedSettings: UNUSED_SETTINGS[spec.strategy],
      ...(spec.periodBudgets !== undefined ? { periodBudgets: spec.periodBudgets } : {}),
    };
  }
  const { models, ...limits } = config.limits;
  return {
    kinds,
    aliases: config.kindAliases,
    limits: {
      ...limits,
      models: models ?? (['planner', 'executor', 'native'] as const).map((r) => config.models[r].name),
    },
    providers: ROLES.map((r) => config.models[r].provider),
  };
}

/** A kind's budgets of one run. */
function kindBudgets(spec: TaskKindConfig): RunBudgets {
  const b: RunBudgets = {};
  if (spec.budgets.maxSteps !== undefined) b.maxSteps = spec.budgets.maxSteps;
  if (spec.budgets.maxToolCalls !== undefined) b.maxToolCalls = spec.budgets.maxToolCalls;
  if (spec.budgets.deadlineMs !== undefined) b.deadlineMs = spec.budgets.deadlineMs;
  if (spec.budgets.maxPromptTokens !== undefined) b.maxPromptTokens = spec.budgets.maxPromptTokens;
  if (spec.budgets.maxOutputTokens !== undefined) b.maxOutputTokens = spec.budgets.maxOutputTokens;
  return b;
}

/** The first role configured with `provider` (its base URL and key serve a task that asks for that provider). */
export function providerRole(config: OrchestratorConfig, provider: string): ModelRoleName | undefined {
  return ROLES.find((r) => config.models[r].provider === provider);
}

/**
 * What a computer's menus may offer (the `welcome`'s `task_kinds`, `models`, `model_roles`): every kind and alias,
 * the models a task may choose, and the model roles each kind calls.
 */
export function menuOffer(catalogue: TaskKindCatalogue): {
  taskKinds: string[];
  models: string[];
  modelRoles: Record<string, string[]>;
} {
  const taskKinds = taskKindNames(catalogue);
  const modelRoles: Record<string, string[]> = {};
  for (const name of taskKinds) {
    const kind = resolveTaskKind(catalogue, name);
    const rules = kind === undefined ? undefined : catalogue.kinds[kind];
    if (rules) modelRoles[name] = [...rules.modelRoles];
  }
  return { taskKinds, models: [...new Set(catalogue.limits.models)], modelRoles };
}
