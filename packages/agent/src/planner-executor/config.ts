/**
 * The planner/executor strategy's options and what they resolve to once per strategy: the policy (validated), the
 * executor mode, the completion criteria, the prompts and the model roles every step uses.
 */
import type { StepContext, Task, TaskErrorInfo } from '@ccagent/engine';
import { z } from 'zod';
import { AgentError } from '../agent-error.js';
import type { MemoryLayout } from '../memory.js';
import type { ModelRole } from '../model-call.js';
import {
  completionCriteriaSchema,
  DEFAULT_AGENT_POLICY,
  type AgentPolicy,
  type CompletionCriteria,
} from '../policy.js';
import { loadPrompt, type Prompt } from '../prompts.js';

/**
 * How a directive becomes a tool call: `model` (the executor model translates every directive), `parser`
 * (deterministic translation, no second model call), `parser-then-model` (the parser; the executor model only
 * when the parse needed a guess or found no directive).
 */
export type ExecutorMode = 'model' | 'parser' | 'parser-then-model';

/** {@link AgentPolicy} overrides; `memory` may itself be partial. */
export type AgentPolicyInput = Partial<Omit<AgentPolicy, 'memory'>> & { memory?: Partial<MemoryLayout> };

/** Options of {@link createPlannerExecutorStrategy}. */
export interface PlannerExecutorOptions {
  planner: ModelRole;
  executor: ModelRole;
  /** Default `parser-then-model`. */
  mode?: ExecutorMode;
  policy?: AgentPolicyInput;
  /** When a DONE is believed (defaults: a successful run after the last write, last run ok). */
  completion?: CompletionCriteria;
  /** Lift the question limit (a person is expected to be watching). Default false. */
  interactive?: boolean;
  /** Extra instructions for this kind of task, appended to the planner's system prompt. */
  systemPrompt?: string;
  /**
   * Strict executor replies for this kind of task: any deviation from exactly one JSON object of the schema (a code
   * fence, prose around it, a trailing comma, `args` as a string, …) is a validation error — one repair, then a
   * bounce to the planner — instead of a logged tolerance. Default false: the tolerated deviations are ones whose
   * meaning is unambiguous and the call must still be exactly what the directive asks for, so refusing them only
   * costs a model call (seconds on the small machines this runs on) without making anything safer. Turn it on for a
   * kind whose executor model is reliable, to see every slip as a repair.
   */
  strict?: boolean;
}

const positiveInt = z.number().int().min(1);
const policySchema = z.object({
  maxSteps: positiveInt,
  maxToolCalls: positiveInt,
  executorRepairRetries: z.number().int().min(0).max(5),
  duplicateThreshold: z.number().int().min(2),
  duplicateHardStop: z.number().int().min(0),
  maxQuestions: z.number().int().min(0),
  maxConsecutiveBounces: positiveInt,
  maxFormatBounces: positiveInt,
  maxDoneRejections: positiveInt,
  maxModelFailures: positiveInt,
  gatherFiles: z.boolean(),
  memory: z.object({
    keepVerbatim: positiveInt,
    compactChunk: positiveInt,
    numCtx: z.number().int().min(512),
    reserveTokens: z.number().int().min(0),
    maxOutputChars: z.number().int().min(80),
    maxFileChars: z.number().int().min(200),
    order: z.enum(['stable', 'files-last', 'design']),
    conversation: z.boolean(),
  }),
});

/** Merge and validate policy overrides; throws `AgentError('invalid_config')` naming the bad field. */
export function resolvePolicy(input: AgentPolicyInput = {}): AgentPolicy {
  const merged = {
    ...DEFAULT_AGENT_POLICY,
    ...input,
    memory: { ...DEFAULT_AGENT_POLICY.memory, ...input.memory },
  };
  const parsed = policySchema.safeParse(merged);
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AgentError(
      'invalid_config',
      `invalid agent policy: ${issue ? `${issue.path.join('.')}: ${issue.message}` : 'unknown problem'}`,
    );
  }
  return parsed.data;
}

/** What a strategy resolves from its options once; every step reads it. */
export interface PlannerConfig {
  opts: PlannerExecutorOptions;
  policy: AgentPolicy;
  mode: ExecutorMode;
  baseCriteria: CompletionCriteria;
  plannerPrompt: Prompt;
  executorPrompt: Prompt;
  repairPrompt: Prompt;
  /** The planner's system message (its prompt and the kind's extra instructions). */
  plannerSystem: string;
  maxQuestions: number;
  executorRole: ModelRole;
}

/** Resolve and check the options; throws `AgentError('invalid_config')` naming what is wrong. */
export function resolvePlannerConfig(opts: PlannerExecutorOptions): PlannerConfig {
  const policy = resolvePolicy(opts.policy);
  const mode: ExecutorMode = opts.mode ?? 'parser-then-model';
  if (!['model', 'parser', 'parser-then-model'].includes(mode)) {
    throw new AgentError('invalid_config', `unknown executor mode "${String(mode)}"`);
  }
  const baseCriteria = completionCriteriaSchema.safeParse(opts.completion ?? {});
  if (!baseCriteria.success) throw new AgentError('invalid_config', 'invalid completion criteria');
  const plannerPrompt = loadPrompt('planner');
  const executorPrompt = loadPrompt('executor');
  const repairPrompt = loadPrompt('executor-repair');
  const plannerSystem = opts.systemPrompt?.trim()
    ? `${plannerPrompt.text}\n\nInstructions for this kind of task:\n${opts.systemPrompt.trim()}`
    : plannerPrompt.text;
  const maxQuestions = opts.interactive ? Number.POSITIVE_INFINITY : policy.maxQuestions;
  const executorRole = executorOnPlannerModel(opts.planner, opts.executor);
  return {
    opts,
    policy,
    mode,
    baseCriteria: baseCriteria.data ?? {},
    plannerPrompt,
    executorPrompt,
    repairPrompt,
    plannerSystem,
    maxQuestions,
    executorRole,
  };
}

/** The completion criteria of `task`: the strategy's, with the task's `metadata.completion` over them. */
export function criteriaFor(cfg: PlannerConfig, task: Task, ctx: StepContext): CompletionCriteria {
  const extra = task.metadata.completion;
  if (extra === undefined) return cfg.baseCriteria;
  const parsed = completionCriteriaSchema.safeParse(extra);
  if (!parsed.success) {
    ctx.logger.warn({ task_id: task.id }, 'agent: ignoring invalid metadata.completion');
    return cfg.baseCriteria;
  }
  return { ...cfg.baseCriteria, ...parsed.data };
}

/** The role with its `lengthRetryNumPredict` as the output limit (the retry after a reply was cut off). */
export function withLargerLimit(role: ModelRole): ModelRole {
  if (role.lengthRetryNumPredict === undefined) return role;
  return { ...role, options: { ...role.options, numPredict: role.lengthRetryNumPredict } };
}

/**
 * The executor's role, with the planner's `numCtx` when both roles name the same model: a model server loads a model
 * with one context size and reloads it (dropping its prompt cache, seconds of load) whenever a request asks for
 * another, so two roles of one model asking for two sizes would reload it on every switch.
 */
function executorOnPlannerModel(planner: ModelRole, executor: ModelRole): ModelRole {
  if (planner.name !== executor.name) return executor;
  const numCtx = planner.options?.numCtx;
  if (numCtx === executor.options?.numCtx) return executor;
  const options = { ...executor.options };
  if (numCtx === undefined) delete options.numCtx;
  else options.numCtx = numCtx;
  return { ...executor, options };
}

export function unknownError(): TaskErrorInfo {
  return { code: 'model_error', message: 'the model call failed' };
}
