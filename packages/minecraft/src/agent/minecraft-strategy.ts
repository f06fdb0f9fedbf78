/**
 * The `minecraft_agent` strategy: plan in the task's mode, send one action at a time, read each result and the
 * player's state, re-plan (bounded) when an action fails or the state contradicts the plan.
 *
 * Size (over 500 lines): the plan → action → result → re-plan loop and its memory are one state machine; the plan
 * modes (plan-modes.ts), settings and prompts are in their own modules.
 */
import type {
  Decision,
  HistoryEntry,
  JsonValue,
  StepContext,
  StepRecord,
  Task,
  TaskErrorInfo,
  TaskStrategy,
} from '@ccagent/engine';
import { callModel, type ModelRole } from '@ccagent/agent';
import type { ChatMessage, ChatOptions } from '@ccagent/ollama';
import { z } from 'zod';
import { MC_ACTION_COMMAND } from '../endpoint/action-executor.js';
import type { InstanceInfo } from '../endpoint/mc-endpoint.js';
import { MC_ACTION_CATALOG } from '../protocol/catalog.js';
import type { Action, ActionSpec, PlayerState } from '../protocol/messages.js';
import { fillMcPrompt, loadMcPrompt, type McPrompt } from '../prompts.js';
import { LowLevelPlanSchema, planJsonSchema, planSchema, type PlanMode } from './plan-modes.js';
import { MinecraftTaskSettingsSchema, type MinecraftTaskSettings, type ModelFactory } from './settings.js';
import { actionText, resultLines, stateLine, vitalsText } from './turn-text.js';

/** Where the strategy reads an instance's latest state (the mod endpoint satisfies it). */
export interface InstanceStateSource {
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

interface Goal {
  goal: string | null;
  actions: ActionSpec[] | null;
}

interface ResultNote {
  id: string;
  action: ActionSpec;
  ok: boolean;
  detail: JsonValue;
}

/** The strategy's durable memory (the task row's `memory`). */
interface McMemory {
  v: 1;
  planNo: number;
  replans: number;
  goals: Goal[];
  goalIndex: number;
  actionIndex: number;
  /** The action sent and not yet read back. */
  pending: { id: string; action: ActionSpec } | null;
  results: ResultNote[];
  completed: number;
  /** The model conversation of the `conversation` layout (absent in memories written before it). */
  conversation?: McConversation;
}

/** The messages after the system message, as sent and answered; the next request sends them unchanged. */
interface McConversation {
  messages: ChatMessage[];
  /** Id of the last result the conversation has shown (later results go into the next message). */
  lastResultId: string | null;
  /** Times the conversation restarted because it outgrew `conversationChars`. */
  restarts: number;
  /** The vitals (health, hunger, dimension, game mode) the conversation last showed; a message repeats them only when they changed. */
  vitals?: string | null;
}

const MAX_RESULTS_IN_MEMORY = 40;
const DEFAULT_CONVERSATION_CHARS = 8_000;

const MODE_RULES: Record<PlanMode, { rule: string; shape: string }> = {
  'low-level': {
    rule: 'Give every action of the whole task, in order.',
    shape: '{"actions": [ {"type": "goto", "x": 10, "y": 64, "z": 5}, {"type": "chat", "message": "hi"} ]}',
  },
  'high-level': {
    rule: 'Give the goals in words, in order; each goal is turned into actions later, when it is reached.',
    shape: '{"goals": [ {"goal": "walk to the tree at 10 64 5"}, {"goal": "collect 3 oak logs"} ]}',
  },
  hybrid: {
    rule:
      'Give the goals in order. Give a goal its "actions" when you already know them; leave "actions" out when the ' +
      'goal depends on what the player finds, and it is turned into actions when it is reached.',
    shape:
      '{"goals": [ {"goal": "walk to the tree", "actions": [ {"type": "goto", "x": 10, "y": 64, "z": 5} ]}, ' +
      '{"goal": "collect 3 logs"} ]}',
  },
};

function actionsText(): string {
  return MC_ACTION_CATALOG.map((a) => {
    const params = Object.keys((z.toJSONSchema(a.schema) as { properties: object }).properties).filter(
      (k) => k !== 'type',
    );
    return `- {"type": "${a.type}"${params.map((p) => `, "${p}": …`).join('')}}: ${a.description}`;
  }).join('\n');
}

function toJson(v: unknown): JsonValue {
  return JSON.parse(JSON.stringify(v ?? null)) as JsonValue;
}

function stateText(info: InstanceInfo | undefined): string {
  if (info === undefined) return 'unknown (the instance has not connected yet)';
  if (info.lastState === null) return `no state reported yet (instance ${info.status})`;
  const s = info.lastState;
  const inv = s.inventory.map((i) => `${i.item} x${i.count}`).join(', ') || 'empty';
  const p = s.position;
  return (
    `position ${p.x.toFixed(1)} ${p.y.toFixed(1)} ${p.z.toFixed(1)} in ${s.dimension}; health ${s.health}, ` +
    `hunger ${s.hunger}, saturation ${s.saturation}; game mode ${s.gameMode}; inventory: ${inv}`
  );
}

function resultsText(results: ResultNote[], none = 'none yet'): string {
  if (results.length === 0) return none;
  return results
    .slice(-12)
    .map((r) => `- ${JSON.stringify(r.action)} → ${r.ok ? 'done' : 'FAILED'}: ${JSON.stringify(r.detail)}`)
    .join('\n');
}

/** Extract the first JSON object of a reply (models wrap JSON in fences or prose). */
function extractJson(text: string): unknown {
  const trimmed = text.trim();
  try {
    return JSON.parse(trimmed);
  } catch {
    const start = trimmed.indexOf('{');
    const end = trimmed.lastIndexOf('}');
    if (start < 0 || end <= start) throw new Error('no JSON object in the reply');
    return JSON.parse(trimmed.slice(start, end + 1));
  }
}

function validate(
  schema: z.ZodType,
  text: string,
): { ok: true; value: unknown } | { ok: false; errors: string[] } {
  let data: unknown;
  try {
    data = extractJson(text);
  } catch (e) {
    return { ok: false, errors: [`not JSON: ${(e as Error).message}`] };
  }
  const r = schema.safeParse(data);
  if (r.success) return { ok: true, value: r.data };
  return {
    ok: false,
    errors: r.error.issues.slice(0, 8).map((i) => `${i.path.join('.') || '(root)'}: ${i.message}`),
  };
}

class StepFailure extends Error {
  constructor(readonly info: TaskErrorInfo) {
    super(info.message);
  }
}

/**
 * Create the `minecraft_agent` strategy. Each step reads the last action's result, logs the player's state, plans
 * (or re-plans, or expands a goal) when needed and returns the next action as a `minecraft_action` tool call whose
 * action id is derived from the durable memory (`<task>:p<plan>:g<goal>:a<action>`), so a step repeated after a
 * restart sends the same id and the mod does not run it twice.
 */
export function createMinecraftStrategy(opts: MinecraftStrategyOptions): TaskStrategy {
  const tolerance = opts.arrivalTolerance ?? 2;
  const layout = opts.layout ?? 'conversation';
  const conversationChars = opts.conversationChars ?? DEFAULT_CONVERSATION_CHARS;
  const actions = actionsText();

  async function modelJson(
    ctx: StepContext,
    taskId: string,
    settings: MinecraftTaskSettings,
    kind: 'mc_plan' | 'mc_replan' | 'mc_expand',
    messages: ChatMessage[],
    schema: z.ZodType,
    format: Record<string, unknown>,
    prompt: McPrompt,
    layout: JsonValue = null,
  ): Promise<{ value: unknown; exchange: ChatMessage[] }> {
    const model = opts.modelFor(settings);
    const numCtx = opts.numCtxFor?.(settings);
    // The same options on every request of a task: a changed load option (num_ctx) would reload the model.
    const options: ChatOptions = {
      ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
      ...(numCtx !== undefined ? { numCtx } : {}),
    };
    // One model role for the task: the model, its name (the engine's limiter key) and the same options on every call.
    const role: ModelRole = {
      model,
      name: settings.model,
      ...(Object.keys(options).length > 0 ? { options } : {}),
    };
    const attempt = async (
      msgs: ChatMessage[],
      label: string,
    ): Promise<{ text: string; errors: string[]; value?: unknown }> => {
      // The shared model-call path: the write-ahead `model_request` record, usage, cancellation (as CC tasks).
      const call = await callModel(
        ctx,
        taskId,
        role,
        label,
        {
          messages: msgs,
          ...(settings.constrained ? { format } : {}),
          stream: false,
          inputExtra: { provider: settings.provider },
          ...(layout !== null ? { layout } : {}),
        },
        prompt,
      );
      if (!call.response) {
        const error: TaskErrorInfo = {
          code: 'model_failed',
          message: `${settings.provider} model ${settings.model}: ${call.error?.message ?? 'the model call failed'}`,
          details: { cause: call.error?.code ?? 'error' },
        };
        await ctx.logStep({ ...call.record, error });
        throw new StepFailure(error);
      }
      const text = call.response.message.content;
      const v = validate(schema, text);
      const record: StepRecord = { ...call.record };
      if (v.ok) record.directive = toJson(v.value);
      else record.validationErrors = v.errors;
      await ctx.logStep(record);
      return v.ok ? { text, errors: [], value: v.value } : { text, errors: v.errors };
    };
    // validate → repair once → re-ask (a fresh request) once. `exchange`: the messages sent and the accepted reply.
    const first = await attempt(messages, kind);
    const answered = (sent: ChatMessage[], text: string) => [
      ...sent,
      { role: 'assistant' as const, content: text },
    ];
    if (first.value !== undefined) return { value: first.value, exchange: answered(messages, first.text) };
    const repairPrompt = loadMcPrompt('repair');
    const repairMessages: ChatMessage[] = [
      ...messages,
      { role: 'assistant', content: first.text },
      { role: 'user', content: fillMcPrompt(repairPrompt.text, { errors: first.errors.join('; ') }) },
    ];
    const repaired = await attempt(repairMessages, `${kind}_repair`);
    if (repaired.value !== undefined)
      return { value: repaired.value, exchange: answered(repairMessages, repaired.text) };
    const again = await attempt(messages, `${kind}_reask`);
    if (again.value !== undefined) return { value: again.value, exchange: answered(messages, again.text) };
    throw new StepFailure({
      code: 'plan_invalid',
      message: `the model gave no valid plan after a repair and a re-ask: ${again.errors.join('; ')}`,
    });
  }

  function baseVars(task: Task, info: InstanceInfo | undefined, mem: McMemory): Record<string, string> {
    return { actions, task: task.prompt, state: stateText(info), results: resultsText(mem.results) };
  }

  /**
   * One model request in the task's layout. `single`: the prompt file rendered into one message (plus `extra`, the
   * re-plan note). `conversation`: the system message, the conversation so far unchanged and one new message with
   * the state, the results since the last message and `request`; it restarts from the task when it outgrew its
   * budget. Returns the parsed answer and the memory with the exchange appended.
   */
  async function ask(
    task: Task,
    settings: MinecraftTaskSettings,
    ctx: StepContext,
    info: InstanceInfo | undefined,
    mem: McMemory,
    call: {
      kind: 'mc_plan' | 'mc_replan' | 'mc_expand';
      single: { prompt: McPrompt; vars: Record<string, string>; extra?: string; logged?: McPrompt };
      request: string;
      schema: z.ZodType;
      format: Record<string, unknown>;
    },
  ): Promise<{ value: unknown; mem: McMemory }> {
    if (layout === 'single') {
      const messages: ChatMessage[] = [
        { role: 'user', content: fillMcPrompt(call.single.prompt.text, call.single.vars) },
      ];
      if (call.single.extra !== undefined) messages.push({ role: 'user', content: call.single.extra });
      const r = await modelJson(
        ctx,
        task.id,
        settings,
        call.kind,
        messages,
        call.schema,
        call.format,
        call.single.logged ?? call.single.prompt,
      );
      return { value: r.value, mem };
    }
    const mode = MODE_RULES[settings.mode];
    const systemPrompt = loadMcPrompt('system');
    const system: ChatMessage = {
      role: 'system',
      content: fillMcPrompt(systemPrompt.text, {
        actions,
        mode: settings.mode,
        modeRule: mode.rule,
        shape: mode.shape,
      }),
    };
    const conv: McConversation = mem.conversation ?? { messages: [], lastResultId: null, restarts: 0 };
    const since = conv.lastResultId === null ? -1 : mem.results.findIndex((r) => r.id === conv.lastResultId);
    const state = info?.lastState ?? null;
    const lines = (results: ResultNote[], none: string): string =>
      results.length === 0 ? none : resultLines(results.slice(-12));
    const turn = (fresh: boolean): string =>
      fillMcPrompt(loadMcPrompt('turn').text, {
        head: fresh ? `TASK: ${task.prompt}\n\n` : '',
        state: state === null ? stateText(info) : stateLine(state, fresh ? null : (conv.vitals ?? null)),
        resultsTitle: fresh ? 'RESULTS SO FAR' : 'RESULTS SINCE THE LAST MESSAGE',
        results: fresh ? lines(mem.results, 'none yet') : lines(mem.results.slice(since + 1), 'none'),
        request: call.request,
      });
    let earlier = conv.messages;
    let user = earlier.length === 0 ? turn(true) : turn(false);
    let restarted = false;
    const size = earlier.reduce((n, m) => n + m.content.length, 0) + user.length;
    if (earlier.length > 0 && size > conversationChars) {
      earlier = [];
      user = turn(true);
      restarted = true;
    }
    const restarts = conv.restarts + (restarted ? 1 : 0);
    const r = await modelJson(
      ctx,
      task.id,
      settings,
      call.kind,
      [system, ...earlier, { role: 'user', content: user }],
      call.schema,
      call.format,
      loadMcPrompt('turn'),
      {
        conversation: true,
        turn: earlier.filter((m) => m.role === 'user').length + 1,
        restarted,
        restarts,
      },
    );
    return {
      value: r.value,
      mem: {
        ...mem,
        conversation: {
          messages: r.exchange.slice(1),
          lastResultId: mem.results.at(-1)?.id ?? null,
          restarts,
          vitals: state === null ? null : vitalsText(state),
        },
      },
    };
  }

  async function plan(
    task: Task,
    settings: MinecraftTaskSettings,
    ctx: StepContext,
    info: InstanceInfo | undefined,
    mem: McMemory,
    problem: { text: string; note: string } | null,
  ): Promise<McMemory> {
    const p = loadMcPrompt('plan');
    const mode = MODE_RULES[settings.mode];
    const replan = loadMcPrompt('replan');
    const replanText = problem === null ? undefined : fillMcPrompt(replan.text, { problem: problem.text });
    // The conversation's new message shows the failed result already, and its system message has the re-plan rules:
    // the request only points at the result.
    const replanNote =
      problem === null
        ? undefined
        : fillMcPrompt(loadMcPrompt('replan-turn').text, { problem: problem.note });
    const asked = await ask(task, settings, ctx, info, mem, {
      kind: problem === null ? 'mc_plan' : 'mc_replan',
      single: {
        prompt: p,
        vars: { ...baseVars(task, info, mem), mode: settings.mode, modeRule: mode.rule, shape: mode.shape },
        ...(replanText !== undefined ? { extra: replanText, logged: replan } : {}),
      },
      request: replanNote ?? 'Plan the task.',
      schema: planSchema(settings.mode),
      format: planJsonSchema(settings.mode),
    });
    const value = asked.value;
    mem = asked.mem;
    const goals: Goal[] =
      settings.mode === 'low-level'
        ? [{ goal: null, actions: (value as { actions: ActionSpec[] }).actions }]
        : (value as { goals: Array<{ goal: string; actions?: ActionSpec[] }> }).goals.map((g) => ({
            goal: g.goal,
            actions: settings.mode === 'hybrid' ? (g.actions ?? null) : null,
          }));
    const next: McMemory = {
      ...mem,
      planNo: mem.planNo + 1,
      replans: mem.replans + (problem === null ? 0 : 1),
      goals,
      goalIndex: 0,
      actionIndex: 0,
      pending: null,
    };
    await ctx.logStep({
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

  async function expand(
    task: Task,
    settings: MinecraftTaskSettings,
    ctx: StepContext,
    info: InstanceInfo | undefined,
    mem: McMemory,
    goal: string,
  ): Promise<{ actions: ActionSpec[]; mem: McMemory }> {
    const p = loadMcPrompt('expand');
    const asked = await ask(task, settings, ctx, info, mem, {
      kind: 'mc_expand',
      single: { prompt: p, vars: { ...baseVars(task, info, mem), goal } },
      request: `GOAL NOW: ${goal}\nTurn this goal into actions.`,
      schema: LowLevelPlanSchema,
      format: planJsonSchema('expand'),
    });
    return { actions: (asked.value as { actions: ActionSpec[] }).actions, mem: asked.mem };
  }

  /** The last outcome recorded for the pending action (by its id in the tool call's args). */
  function outcomeOf(history: readonly HistoryEntry[], actionId: string): HistoryEntry | undefined {
    for (let i = history.length - 1; i >= 0; i--) {
      const h = history[i];
      if (h?.type !== 'tool_result') continue;
      const call = history.findLast((c) => c.type === 'tool_call' && c.callId === h.callId);
      const args = call?.type === 'tool_call' ? (call.args as { action?: { id?: unknown } } | null) : null;
      if (args?.action?.id === actionId) return h;
    }
    return undefined;
  }

  function contradiction(action: ActionSpec, info: InstanceInfo | undefined): string | null {
    if (action.type !== 'goto') return null;
    const s: PlayerState | null | undefined = info?.lastState;
    if (!s) return null;
    const dx = s.position.x - (action.x + 0.5);
    const dz = s.position.z - (action.z + 0.5);
    const d = Math.hypot(dx, dz);
    if (d <= tolerance) return null;
    return (
      `after goto ${action.x} ${action.y} ${action.z} the player is at ${s.position.x.toFixed(1)} ` +
      `${s.position.y.toFixed(1)} ${s.position.z.toFixed(1)}, ${d.toFixed(1)} blocks away`
    );
  }

  return {
    async decide(task: Task, history: readonly HistoryEntry[], ctx: StepContext): Promise<Decision> {
      const parsed = MinecraftTaskSettingsSchema.safeParse(task.context ?? {});
      if (!parsed.success) {
        const i = parsed.error.issues[0];
        return {
          type: 'fail',
          error: { code: 'invalid_settings', message: `task settings: ${i?.path.join('.')}: ${i?.message}` },
        };
      }
      const settings = parsed.data;
      let mem: McMemory =
        (task.memory as McMemory | null)?.v === 1
          ? (task.memory as unknown as McMemory)
          : {
              v: 1,
              planNo: 0,
              replans: 0,
              goals: [],
              goalIndex: 0,
              actionIndex: 0,
              pending: null,
              results: [],
              completed: 0,
            };
      const info = opts.states.getInstance(settings.instanceId);
      await ctx.logStep({
        kind: 'mc_state',
        toolResult: toJson({
          instanceId: settings.instanceId,
          status: info?.status ?? 'unknown',
          state: info?.lastState ?? null,
        }),
      });

      try {
        let problem: { text: string; note: string } | null = null;
        if (mem.pending !== null) {
          const { id, action } = mem.pending;
          const entry = outcomeOf(history, id);
          if (entry?.type === 'tool_result') {
            const o = entry.outcome;
            const contra = o.ok ? contradiction(action, info) : null;
            const ok = o.ok && contra === null;
            const detail: JsonValue = o.ok
              ? contra === null
                ? o.result
                : { result: o.result, contradiction: contra }
              : {
                  error: o.error.message,
                  ...(o.error.code ? { code: o.error.code } : {}),
                  ...(entry.timedOut ? { timedOut: true } : {}),
                };
            mem = {
              ...mem,
              pending: null,
              results: [...mem.results, { id, action, ok, detail }].slice(-MAX_RESULTS_IN_MEMORY),
              completed: mem.completed + (ok ? 1 : 0),
              actionIndex: ok ? mem.actionIndex + 1 : mem.actionIndex,
            };
            if (!ok) {
              problem = {
                text: o.ok
                  ? `the state contradicts the plan: ${contra}`
                  : `action ${JSON.stringify(action)} failed: ${o.error.message}`,
                note: `the last action (${actionText(action)}) ${o.ok ? 'did not end where planned' : 'failed'}, see its result above.`,
              };
            }
          } else {
            // Sent but no result in the history (cannot happen while the engine drives us): send it again, same id.
            return toolCall(settings, mem, mem.pending.id, action, 'resending the open action');
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
          mem = await plan(task, settings, ctx, info, mem, problem);
        } else if (mem.planNo === 0) {
          mem = await plan(task, settings, ctx, info, mem, null);
        }
        for (;;) {
          const goal = mem.goals[mem.goalIndex];
          if (goal === undefined) {
            return {
              type: 'complete',
              memory: toJson(mem),
              result: toJson({ actionsCompleted: mem.completed, replans: mem.replans, results: mem.results }),
            };
          }
          if (goal.actions === null) {
            const expansion = await expand(task, settings, ctx, info, mem, goal.goal ?? task.prompt);
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
          return toolCall(
            settings,
            mem,
            id,
            action,
            goal.goal ?? `action ${mem.actionIndex + 1} of ${total}`,
          );
        }
      } catch (e) {
        if (e instanceof StepFailure) return { type: 'fail', memory: toJson(mem), error: e.info };
        throw e;
      }
    },
  };
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
