/**
 * Derive the plan: ask the model for a plan (or a re-plan after a problem) in the task's mode and turn the valid
 * answer into the memory's goals, or expand one goal into its actions; each accepted plan is recorded in the step log.
 */
import { fillMcPrompt, loadMcPrompt } from '../prompts.js';
import type { ActionSpec } from '../protocol/messages.js';
import { ask, baseVars, MODE_RULES } from './mc-prompt.js';
import { toJson, type Goal, type McMemory, type McProblem, type McStep } from './mc-step.js';
import { planJsonSchema, planReplySchema } from './plan-modes.js';

/**
 * A new plan (`problem` null) or a re-plan after `problem`; the memory starts on its first goal. `counted: false`:
 * a plan after `problem` that does not use the re-plan budget (the first plan of a retry).
 */
export async function plan(
  s: McStep,
  mem: McMemory,
  problem: McProblem | null,
  opts: { counted?: boolean } = {},
): Promise<McMemory> {
  const settings = s.settings;
  const p = loadMcPrompt('plan');
  const mode = MODE_RULES[settings.mode];
  const replan = loadMcPrompt('replan');
  const replanText = problem === null ? undefined : fillMcPrompt(replan.text, { problem: problem.text });
  // The conversation's new message shows the failed result already, and its system message has the re-plan rules:
  // the request only points at the result.
  const replanNote =
    problem === null ? undefined : fillMcPrompt(loadMcPrompt('replan-turn').text, { problem: problem.note });
  const asked = await ask(s, mem, {
    kind: problem === null ? 'mc_plan' : 'mc_replan',
    single: {
      prompt: p,
      vars: { ...baseVars(s, mem), mode: settings.mode, modeRule: mode.rule, shape: mode.shape },
      ...(replanText !== undefined ? { extra: replanText, logged: replan } : {}),
    },
    request: replanNote ?? 'Plan the task.',
    schema: planReplySchema(settings.mode),
    format: planJsonSchema(settings.mode, s.actionAllowed),
  });
  const value = asked.value;
  mem = asked.mem;
  const goals: Goal[] =
    settings.mode === 'low-level'
      ? [{ goal: null, actions: (value as { actions: ActionSpec[] }).actions }]
      : (value as { goals: Array<{ goal: string; actions?: ActionSpec[] }> }).goals.map((g) => ({
          goal: g.goal,
          actions: g.actions ?? null,
        }));
  const next: McMemory = {
    ...mem,
    planNo: mem.planNo + 1,
    replans: mem.replans + (problem === null || opts.counted === false ? 0 : 1),
    goals,
    goalIndex: 0,
    actionIndex: 0,
    pending: null,
  };
  await s.ctx.logStep({
    kind: 'mc_plan_accepted',
    directive: toJson({
      plan: next.planNo,
      mode: settings.mode,
      goals,
      ...(problem ? { after: problem.text } : {}),
    }),
  });
  return next;
}

/** The actions of one goal (a high-level or hybrid goal given without them). */
export async function expand(
  s: McStep,
  mem: McMemory,
  goal: string,
): Promise<{ actions: ActionSpec[]; mem: McMemory }> {
  const p = loadMcPrompt('expand');
  const asked = await ask(s, mem, {
    kind: 'mc_expand',
    single: { prompt: p, vars: { ...baseVars(s, mem), goal } },
    request: `GOAL NOW: ${goal}\nTurn this goal into actions.`,
    schema: planReplySchema('expand'),
    format: planJsonSchema('expand', s.actionAllowed),
  });
  return { actions: (asked.value as { actions: ActionSpec[] }).actions, mem: asked.mem };
}
