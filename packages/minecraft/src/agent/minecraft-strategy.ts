/**
 * The `minecraft_agent` strategy: plan in the task's mode, send one action at a time, read each result and the
 * player's state, re-plan (bounded) when an action fails or the state contradicts the plan.
 *
 * The step's phases are modules of their own: recording the last action's outcome (mc-results.ts), preparing the
 * prompt in the task's layout (mc-prompt.ts), calling the model through the agent's shared model-call path and
 * validating the answer (mc-model-call.ts), deriving the plan or a goal's actions (mc-plan.ts); this module reads
 * the settings and state, orders the phases and returns the next action.
 */
import type { Decision, HistoryEntry, StepContext, Task, TaskStrategy } from '@ccagent/engine';
import { MC_ACTION_COMMAND } from '../endpoint/action-executor.js';
import type { InstanceInfo } from '../endpoint/mc-endpoint.js';
import type { Action, ActionSpec } from '../protocol/messages.js';
import { expand, plan } from './mc-plan.js';
import { actionAllowedBy, actionsText, type McActionLists } from './mc-prompt.js';
import { problemOf, readPendingResult } from './mc-results.js';
import {
  DEFAULT_CONVERSATION_CHARS,
  loadMcMemory,
  StepFailure,
  toJson,
  type McConfig,
  type McMemory,
  type McProblem,
  type McStep,
} from './mc-step.js';
import { MinecraftTaskSettingsSchema, type MinecraftTaskSettings, type ModelFactory } from './settings.js';
import { instanceForStep, keepModLogs, type InstanceReads } from './instance-wait.js';

/** Where the strategy reads an instance's latest state (the mod endpoint satisfies it). */
export interface InstanceStateSource extends InstanceReads {
  getInstance(instanceId: string): InstanceInfo | undefined;
}

/** Options of {@link createMinecraftStrategy}. */
export interface MinecraftStrategyOptions {
  states: InstanceStateSource;
  modelFor: ModelFactory;
  /** How far (blocks, horizontally) the player may end from a `goto` target before the state contradicts the plan. */
  arrivalTolerance?: number;
  /**
   * How model requests are laid out. `conversation` (default): one stable system message (role, actions, answer
   * shapes), then an append-only conversation — each plan, expansion or re-plan adds one user message with the state
   * and only the results since the message before, so a model server's prompt cache covers everything earlier.
   * `single`: every request one message rebuilt from the prompt files (the layout before; the bench's baseline).
   */
  layout?: 'conversation' | 'single';
  /**
   * An instance's action allow/deny lists, read at every step: the prompt offers only the actions they let through
   * and names the refused ones, so the model does not plan them (the executor still refuses them, whatever the
   * model answers). Absent or undefined: the whole catalogue.
   */
  actionListsOf?: (instanceId: string) => McActionLists | undefined;
  /**
   * Characters of conversation (after the system message) past which the next request restarts it from one fresh
   * message with the task, the state and the last results (default 8,000: with the system message, well inside a
   * 4,096-token context, Ollama's default when a request names none).
   */
  conversationChars?: number;
  /**
   * The context size to ask for a task's model (sent as `num_ctx` with every request), or undefined for none (the
   * server's default). A server reloads a model, emptying its prompt cache, when a request asks for another
   * `num_ctx` than the one it is loaded with: a composition root that also runs other roles on the same model gives
   * their `num_ctx` here, so switching between task kinds never reloads it.
   */
  numCtxFor?: (settings: MinecraftTaskSettings) => number | undefined;
}

/**
 * Create the `minecraft_agent` strategy. Each step reads the last action's result, logs the player's state, plans
 * (or re-plans, or expands a goal) when needed and returns the next action as a `minecraft_action` tool call whose
 * action id is derived from the durable memory (`<task>:p<plan>:g<goal>:a<action>`), so a step repeated after a
 * restart sends the same id and the mod does not run it twice.
 */
export function createMinecraftStrategy(opts: MinecraftStrategyOptions): TaskStrategy {
  const cfg: McConfig = {
    opts,
    tolerance: opts.arrivalTolerance ?? 2,
    layout: opts.layout ?? 'conversation',
    conversationChars: opts.conversationChars ?? DEFAULT_CONVERSATION_CHARS,
    actions: actionsText(),
  };
  return { decide: (task, history, ctx) => decide(cfg, task, history, ctx) };
}

/** One step: settings, the state in the step log, the last action's outcome, a (re-)plan when needed, the next action. */
async function decide(
  cfg: McConfig,
  task: Task,
  history: readonly HistoryEntry[],
  ctx: StepContext,
): Promise<Decision> {
  const parsed = MinecraftTaskSettingsSchema.safeParse(task.context ?? {});
  if (!parsed.success) {
    const i = parsed.error.issues[0];
    return {
      type: 'fail',
      error: { code: 'invalid_settings', message: `task settings: ${i?.path.join('.')}: ${i?.message}` },
    };
  }
  const settings = parsed.data;
  let mem: McMemory = loadMcMemory(task);
  const info = await instanceForStep(cfg.opts.states, settings.instanceId, settings.stateWaitMs, ctx);
  mem = { ...mem, logSeq: await keepModLogs(cfg.opts.states, settings.instanceId, mem.logSeq ?? 0, ctx) };
  await ctx.logStep({
    kind: 'mc_state',
    toolResult: toJson({
      instanceId: settings.instanceId,
      status: info?.status ?? 'unknown',
      state: info?.lastState ?? null,
    }),
  });
  const lists = cfg.opts.actionListsOf?.(settings.instanceId);
  const s: McStep = {
    cfg,
    task,
    settings,
    ctx,
    info,
    actions: lists === undefined ? cfg.actions : actionsText(lists, settings.instanceId),
    ...(lists === undefined ? {} : { actionAllowed: actionAllowedBy(lists) }),
  };
  try {
    const read = readPendingResult(mem, history, info, cfg.tolerance);
    // Sent but no result in the history (cannot happen while the engine drives us): send it again, same id.
    if ('resend' in read)
      return toolCall(settings, mem, read.resend.id, read.resend.action, 'resending the open action');
    mem = read.mem;
    const problem = read.problem;
    const retried = takeRetry(mem, history);
    if (retried !== null) {
      // A retry starts with the re-plan budget fresh; when the task had failed on an action, the plan starts over
      // from that failure as a new plan (not a re-plan), instead of sending the failed action's id again.
      mem = retried.mem;
      await ctx.logStep({
        kind: 'mc_retry',
        directive: toJson({ retry: mem.retries, after: retried.problem?.text ?? null }),
      });
      if (retried.problem !== null && problem === null) {
        mem = await plan(s, mem, retried.problem, { counted: false });
      }
    }
    if (problem !== null) {
      if (mem.replans >= settings.maxReplans) {
        return {
          type: 'fail',
          memory: toJson(mem),
          error: {
            code: 'action_failed',
            message: `${problem.text} (no re-plans left: ${settings.maxReplans} used)`,
          },
        };
      }
      await ctx.logStep({
        kind: 'mc_replan_reason',
        directive: toJson({ problem: problem.text, replan: mem.replans + 1 }),
      });
      mem = await plan(s, mem, problem);
    } else if (mem.planNo === 0) {
      mem = await plan(s, mem, null);
    }
    const next = await nextAction(s, mem);
    mem = next.mem;
    return next.decision;
  } catch (e) {
    if (e instanceof StepFailure) return { type: 'fail', memory: toJson(mem), error: e.info };
    throw e;
  }
}

/**
 * A retry the memory has not taken in yet (the engine's `resume` with reason `retry` in the history): the memory with
 * its re-plan counter at 0, and the problem the last plan ended on (its current action failed), if any.
 */
function takeRetry(
  mem: McMemory,
  history: readonly HistoryEntry[],
): { mem: McMemory; problem: McProblem | null } | null {
  const retries = history.filter((e) => e.type === 'resume' && e.reason === 'retry').length;
  if (retries <= (mem.retries ?? 0)) return null;
  const fresh: McMemory = { ...mem, replans: 0, retries };
  const last = mem.results.at(-1);
  const current = mem.goals[mem.goalIndex]?.actions?.[mem.actionIndex];
  if (mem.pending !== null || last === undefined || last.ok || current === undefined) {
    return { mem: fresh, problem: null };
  }
  return { mem: fresh, problem: problemOf(last) };
}

/**
 * Execute: the next action of the plan as a tool call (goals without actions expanded on the way), or `complete`
 * when every goal is done. The memory returned is the one a `StepFailure` leaves (expansions so far).
 */
async function nextAction(s: McStep, start: McMemory): Promise<{ mem: McMemory; decision: Decision }> {
  let mem = start;
  const { task, settings, ctx } = s;
  try {
    for (;;) {
      const goal = mem.goals[mem.goalIndex];
      if (goal === undefined) {
        const result = toJson({
          actionsCompleted: mem.completed,
          replans: mem.replans,
          results: mem.results,
        });
        return { mem, decision: { type: 'complete', memory: toJson(mem), result } };
      }
      if (goal.actions === null) {
        const expansion = await expand(s, mem, goal.goal ?? task.prompt);
        const expanded = expansion.actions;
        const goals = mem.goals.slice();
        goals[mem.goalIndex] = { goal: goal.goal, actions: expanded };
        mem = { ...expansion.mem, goals, actionIndex: 0 };
        await ctx.logStep({
          kind: 'mc_goal_expanded',
          directive: toJson({
            plan: mem.planNo,
            goal: mem.goalIndex,
            text: goal.goal,
            actions: expanded,
          }),
        });
        continue;
      }
      const action = goal.actions[mem.actionIndex];
      if (action === undefined) {
        mem = { ...mem, goalIndex: mem.goalIndex + 1, actionIndex: 0 };
        continue;
      }
      const id = `${task.id}:p${mem.planNo}:g${mem.goalIndex}:a${mem.actionIndex}`;
      mem = { ...mem, pending: { id, action } };
      const total = mem.goals.reduce((n, g) => n + (g.actions?.length ?? 1), 0);
      const message = goal.goal ?? `action ${mem.actionIndex + 1} of ${total}`;
      return { mem, decision: toolCall(settings, mem, id, action, message) };
    }
  } catch (e) {
    // A failed expansion fails the step with the memory as far as it got (as when the loop was inline).
    if (e instanceof StepFailure)
      return { mem, decision: { type: 'fail', memory: toJson(mem), error: e.info } };
    throw e;
  }
}

function toolCall(
  settings: MinecraftTaskSettings,
  mem: McMemory,
  id: string,
  spec: ActionSpec,
  message: string,
): Decision {
  const action = { ...spec, id } as Action;
  return {
    type: 'tool_call',
    command: MC_ACTION_COMMAND,
    args: toJson({ instanceId: settings.instanceId, action }),
    timeoutMs: settings.actionTimeoutMs,
    memory: toJson(mem),
    message: `${action.type}: ${message}`,
  };
}
