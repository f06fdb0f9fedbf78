/**
 * The planner/executor strategy: a planner model writes one loose directive, the parser or an executor model turns it
 * into one validated tool call (repaired once, then bounced), with the policies that stop small models from
 * spiralling (duplicates, bounces, done-rejections, questions).
 *
 * A step's phases are modules of planner-executor/: prepare (queued work, the planner's prompt), call-planner (the
 * model call and its retries), derive (parser or executor model, validated), execute (the policies and the dispatch
 * gate), with the step's state and decision helpers in step.ts and the resolved options in config.ts. This module
 * orders them; the parser, executor schema, derivation rules, memory rendering, policy and prompts are modules of
 * their own.
 */
import type { Decision, HistoryEntry, StepContext, Task, TaskStrategy } from '@ccagent/engine';
import { loadPlannerMemory } from './planner-memory.js';
import { askPlanner } from './planner-executor/call-planner.js';
import {
  resolvePlannerConfig,
  type PlannerConfig,
  type PlannerExecutorOptions,
} from './planner-executor/config.js';
import { plannerRequest, queuedWork } from './planner-executor/prepare.js';
import { Step } from './planner-executor/step.js';

export {
  resolvePolicy,
  type AgentPolicyInput,
  type ExecutorMode,
  type PlannerExecutorOptions,
} from './planner-executor/config.js';
export { filesNamedBy } from './planner-executor/prepare.js';

/**
 * The planner/executor strategy: each engine step either continues queued work (the runs after a write, reading the
 * files the task names) or asks the planner for one directive, turns it into one validated tool call (parser or
 * executor model, repaired once, else bounced), applies the policies (allowed commands, duplicates, questions,
 * completion criteria, budgets) and returns exactly one decision. Every model call is in the step log.
 */
export function createPlannerExecutorStrategy(opts: PlannerExecutorOptions): TaskStrategy {
  const cfg = resolvePlannerConfig(opts);
  return { decide: (task, history, ctx) => decide(cfg, task, history, ctx) };
}

async function decide(
  cfg: PlannerConfig,
  task: Task,
  history: readonly HistoryEntry[],
  ctx: StepContext,
): Promise<Decision> {
  const policy = cfg.policy;
  const maxSteps = Math.min(policy.maxSteps, task.budgets.maxSteps ?? Number.POSITIVE_INFINITY);
  const maxToolCalls = Math.min(policy.maxToolCalls, task.budgets.maxToolCalls ?? Number.POSITIVE_INFINITY);
  const s = new Step(cfg, task, history, ctx, policy, loadPlannerMemory(task.memory), {
    maxSteps,
    maxToolCalls,
    lastStep: ctx.step >= maxSteps,
  });
  if (ctx.step > maxSteps) return s.budgetFail('maxSteps', maxSteps, ctx.step - 1);
  // 1–2. Runs queued by a WRITE_FILE … THEN, one per step, while they succeed; the files the task names.
  const queued = await queuedWork(s);
  if (queued !== undefined) return queued;
  // 3. Ask the planner for one directive, derive its call and execute it.
  return askPlanner(s, plannerRequest(s));
}
