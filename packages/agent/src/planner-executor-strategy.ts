/**
 * The planner/executor strategy: a planner model writes one loose directive, the parser or an executor model turns it
 * into one validated tool call (repaired once, then bounced), with the policies that stop small models from
 * spiralling (duplicates, bounces, done-rejections, questions).
 *
 * Size (over 500 lines): the `Step` class holds one engine step's decision path (plan → derive → dispatch → record),
 * whose branches share its state; the parser, executor schema, derivation rules, memory rendering, policy and
 * prompts are each in their own module already.
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
import type { ChatMessage } from '@ccagent/models';
import { z } from 'zod';
import { AgentError } from './agent-error.js';
import { checkDerived, checkWrittenIn, derivedCommands } from './derivation.js';
import { formatDirective, parseDirective, type Directive, type ParsedDirective } from './directive-parser.js';
import {
  executorJsonSchema,
  validateExecutorOutput,
  type ExecutorOutput,
  type FinalDetails,
} from './executor-schema.js';
import { completedCalls, describeCall, lastFailure, normalizePath } from './history-view.js';
import { renderPlannerTurn, type MemoryLayout } from './memory.js';
import { loadPlannerMemory, memoryToJson, type PlannerMemory } from './planner-memory.js';
import { callModel, type ModelCallOutcome, type ModelRole } from './model-call.js';
import {
  checkCompletion,
  completionCriteriaSchema,
  DEFAULT_AGENT_POLICY,
  repeatCount,
  type AgentPolicy,
  type CompletionCriteria,
} from './policy.js';
import { fillTemplate, loadPrompt } from './prompts.js';
import {
  decideToolDirective,
  parseToolDirective,
  serverToolsOf,
  withServerToolSection,
} from './server-tool-directive.js';
import {
  checkCommands,
  describeTool,
  directiveToToolCall,
  planToolCall,
  runCall,
  toolsFor,
  toolsForDirective,
  type AgentToolCall,
  type AgentToolName,
  type CommandCall,
} from './tools.js';

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

const FILE_WORD =
  /(?:^|[\s"'`(])((?:[\w-]+\/)*[\w-]+\.(?:lua|txt|json|cfg|conf|md|csv|db))(?=$|[\s"'`),.:;!?])/g;
const MAX_GATHER = 5;

/** Files a task names: `context.files` (strings) and file-like words in the prompt, in order, deduplicated. */
export function filesNamedBy(task: Task): string[] {
  const out: string[] = [];
  const add = (p: string) => {
    const n = normalizePath(p);
    if (n !== '' && !out.includes(n)) out.push(n);
  };
  const ctx = task.context;
  if (ctx && typeof ctx === 'object' && !Array.isArray(ctx) && Array.isArray(ctx.files)) {
    for (const f of ctx.files) if (typeof f === 'string') add(f);
  }
  for (const m of task.prompt.matchAll(FILE_WORD)) if (m[1]) add(m[1]);
  return out.slice(0, MAX_GATHER);
}

function touchedPaths(history: readonly HistoryEntry[]): Set<string> {
  const paths = new Set<string>();
  for (const e of history) {
    if (e.type !== 'tool_call' || (e.command !== 'fs_read' && e.command !== 'fs_write')) continue;
    const a = e.args;
    if (a && typeof a === 'object' && !Array.isArray(a) && typeof a.path === 'string')
      paths.add(normalizePath(a.path));
  }
  return paths;
}

function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** Where a tool call comes from; {@link Step.toolCall} checks the call against it. */
type CallOrigin =
  | { from: 'directive'; directive: Directive; reply: string }
  | { from: 'queued'; run: { path: string; args: string[] } }
  | { from: 'gather'; path: string }
  | { from: 'tool'; call: CommandCall };

/** The dispatch gate of {@link Step.toolCall}. */
function checkOrigin(
  calls: readonly CommandCall[],
  origin: CallOrigin,
): { ok: true } | { ok: false; code: string; message: string } {
  if (origin.from === 'directive') {
    const r = checkDerived(origin.directive, calls);
    if (!r.ok) return { ok: false, code: r.error.code, message: r.error.message };
    // The directive's own values must be written where they belong in the planner's reply (read here, not by the
    // parser): a value the reply does not hold — prose merged into ARGS — never leaves.
    const w = checkWrittenIn(origin.directive, origin.reply);
    return w.ok ? { ok: true } : { ok: false, code: w.error.code, message: w.error.message };
  }
  const expected: CommandCall =
    origin.from === 'queued'
      ? runCall(origin.run)
      : origin.from === 'tool'
        ? origin.call
        : { command: 'fs_read', args: { path: origin.path } };
  const same = calls.length === 1 && JSON.stringify(calls[0]) === JSON.stringify(expected);
  return same
    ? { ok: true }
    : {
        ok: false,
        code: 'not_derived',
        message: `internal: a ${origin.from} call must be exactly ${expected.command}`,
      };
}

/** Appended to every bounce of a reply without a usable directive. */
const FORMAT_REMINDER =
  'Write exactly one directive: its keyword alone on a line (WRITE_FILE, RUN, SHELL, ASK_USER or DONE), then one ' +
  '"NAME: value" line per field, e.g.\nRUN\nPATH: hello.lua\nARGS: list\nEXPECT: the list';

/** The note a model gets after a reply that stopped at its output limit. */
const TRUNCATED_NOTE =
  'was cut off at the output limit (done_reason "length"), so none of it was used. Reply again, complete and shorter';

/** Per-step working state: the memory being built and the decision helpers that persist it. */
class Step {
  constructor(
    readonly task: Task,
    readonly history: readonly HistoryEntry[],
    readonly ctx: StepContext,
    readonly policy: AgentPolicy,
    public mem: PlannerMemory,
    readonly limits: { maxSteps: number; maxToolCalls: number; lastStep: boolean },
  ) {}

  log(record: StepRecord): Promise<unknown> {
    return this.ctx.logStep(record);
  }

  policyEvent(code: string, message: string, extra: Partial<StepRecord> = {}): Promise<unknown> {
    return this.log({ kind: 'policy', error: { code, message }, ...extra });
  }

  memory(): JsonValue {
    return memoryToJson(this.mem);
  }

  lastError(): string | null {
    const failure = lastFailure(this.history);
    return this.mem.lastError ?? (failure ? failure.error : null);
  }

  fail(code: string, message: string, details: Record<string, JsonValue> = {}): Decision {
    const error: TaskErrorInfo = {
      code,
      message,
      details: {
        ...details,
        lastPlan: this.mem.plan,
        lastDirective: this.mem.lastDirective,
        lastError: this.lastError(),
      },
    };
    return { type: 'fail', error, memory: this.memory() };
  }

  budgetFail(budget: 'maxSteps' | 'maxToolCalls', limit: number, used: number): Decision {
    return this.fail('budget_exhausted', `agent budget ${budget} exhausted (limit ${limit}, used ${used})`, {
      budget,
      limit,
      used,
    });
  }

  /** A non-terminal decision on the last allowed step becomes the step-budget failure. */
  finish(decision: Decision): Decision {
    if (!this.limits.lastStep || decision.type === 'complete' || decision.type === 'fail') return decision;
    return this.budgetFail('maxSteps', this.limits.maxSteps, this.ctx.step);
  }

  /**
   * A planner reply without a usable directive: bounced with a short format reminder, counted against the per-task
   * `maxFormatBounces` (and, like every bounce, `maxConsecutiveBounces`).
   */
  async formatBounce(code: string, reason: string): Promise<Decision> {
    this.mem.counters.formatBounces++;
    if (this.mem.counters.formatBounces >= this.policy.maxFormatBounces) {
      this.mem.lastError = reason;
      await this.policyEvent(code, reason);
      return this.fail(
        'planner_unusable',
        `${this.mem.counters.formatBounces} planner replies of this task had no usable directive; last problem: ${reason}`,
      );
    }
    return this.bounce(code, `${reason} ${FORMAT_REMINDER}`);
  }

  async bounce(code: string, reason: string): Promise<Decision> {
    this.mem.counters.bounces++;
    this.mem.lastError = reason;
    await this.policyEvent(code, reason);
    if (this.mem.counters.bounces >= this.policy.maxConsecutiveBounces) {
      return this.fail(
        'planner_unusable',
        `the planner's replies could not be used ${this.mem.counters.bounces} times in a row; last problem: ${reason}`,
      );
    }
    return this.finish({
      type: 'continue',
      note: `Your last reply was not carried out: ${reason}`,
      memory: this.memory(),
    });
  }

  async modelFailure(role: string, error: TaskErrorInfo): Promise<Decision> {
    this.mem.counters.modelFailures++;
    this.mem.lastError = `${role} model call failed (${error.code}): ${error.message}`;
    if (this.mem.counters.modelFailures >= this.policy.maxModelFailures) {
      return this.fail(
        'model_failed',
        `the ${role} model failed ${this.mem.counters.modelFailures} times in a row: ${error.message}`,
        { modelError: error as unknown as JsonValue },
      );
    }
    return this.finish({ type: 'continue', memory: this.memory() });
  }

  /**
   * The only way a tool_call decision is made, and the last check before it: the call must be what its origin asked
   * for — exactly the directive's commands (`checkDerived`; the first is dispatched, later runs are queued), each of
   * its values written on its own field line of the planner's reply (`checkWrittenIn`), the
   * queued run next in line, or a read of a file the task names — and every path must stay inside the computer's
   * root. Whatever path produced the call (parser, executor model, a future one), a call the directive did not ask
   * for is never returned: it is bounced to the planner.
   */
  async toolCall(calls: readonly CommandCall[], origin: CallOrigin, message: string): Promise<Decision> {
    const gate = checkOrigin(calls, origin);
    if (!gate.ok) return this.bounce(gate.code, gate.message);
    const [call, ...rest] = calls;
    if (!call) return this.bounce('not_derived', 'there was no command to run');
    if (this.task.counters.toolCalls >= this.limits.maxToolCalls) {
      return this.budgetFail('maxToolCalls', this.limits.maxToolCalls, this.task.counters.toolCalls);
    }
    this.mem.counters.bounces = 0;
    this.mem.counters.suppressions = 0;
    // From here on the freshest problem is this call's outcome (the history), not an older bounce reason.
    this.mem.lastError = null;
    if (origin.from === 'directive') {
      this.mem.pendingRuns = rest.map((c) => ({
        path: String(c.args.path),
        args: (c.args.args as string[] | undefined) ?? [],
      }));
    }
    return this.finish({
      type: 'tool_call',
      command: call.command,
      args: call.args as JsonValue,
      memory: this.memory(),
      message,
    });
  }
}

/**
 * The planner/executor strategy: each engine step either continues queued work (the runs after a write, reading the
 * files the task names) or asks the planner for one directive, turns it into one validated tool call (parser or
 * executor model, repaired once, else bounced), applies the policies (allowed commands, duplicates, questions,
 * completion criteria, budgets) and returns exactly one decision. Every model call is in the step log.
 */
export function createPlannerExecutorStrategy(opts: PlannerExecutorOptions): TaskStrategy {
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

  function criteriaFor(task: Task, s: Step): CompletionCriteria {
    const extra = task.metadata.completion;
    if (extra === undefined) return baseCriteria.data ?? {};
    const parsed = completionCriteriaSchema.safeParse(extra);
    if (!parsed.success) {
      s.ctx.logger.warn({ task_id: task.id }, 'agent: ignoring invalid metadata.completion');
      return baseCriteria.data ?? {};
    }
    return { ...baseCriteria.data, ...parsed.data };
  }

  /**
   * Executor model: one call, then up to `executorRepairRetries` repairs with the validation error appended. The
   * reply must be exactly one JSON object whose call is exactly what directive `d` asks for; a reply cut off at the
   * output limit is never parsed (its repair may get a larger limit, {@link ModelRole.lengthRetryNumPredict}).
   */
  async function runExecutor(
    s: Step,
    d: Directive,
    tools: readonly AgentToolName[],
    allowFinal: boolean,
  ): Promise<{ ok: true; output: ExecutorOutput } | { ok: false; decision: Decision }> {
    const shapes: string[] = [];
    if (tools.length > 0) {
      shapes.push(
        '- a tool call: {"kind":"tool","explanation":"<one line>","tool":"<tool name>","parameters":{...}}',
      );
    }
    if (allowFinal) {
      shapes.push(
        '- for a DONE directive: {"kind":"final","explanation":"<one line>","result":{"success":true,"message":"<summary>","details":"<notes>"}}',
      );
    }
    const system = fillTemplate(executorPrompt.text, {
      tools: tools.length > 0 ? tools.map(describeTool).join('\n') : '(none: this directive ends the task)',
      shapes: shapes.join('\n'),
    });
    const format = executorJsonSchema(tools, allowFinal);
    const messages: ChatMessage[] = [
      { role: 'system', content: system },
      { role: 'user', content: formatDirective(d) },
    ];
    let lastProblem = '';
    let truncated = false;
    for (let attempt = 0; attempt <= s.policy.executorRepairRetries; attempt++) {
      const call = await callModel(
        s.ctx,
        s.task.id,
        truncated ? withLargerLimit(executorRole) : executorRole,
        attempt === 0 ? 'executor' : 'executor_repair',
        { messages: [...messages], format },
        attempt === 0 ? executorPrompt : repairPrompt,
      );
      s.mem.counters.executorCalls++;
      if (!call.response) {
        await s.log(call.record);
        return { ok: false, decision: await s.modelFailure('executor', call.error ?? unknownError()) };
      }
      s.mem.counters.modelFailures = 0;
      const raw = call.response.message.content;
      truncated = call.response.usage.doneReason === 'length';
      const v = truncated
        ? ({ ok: false, error: { stage: 'truncated', message: `your reply ${TRUNCATED_NOTE}.` } } as const)
        : validateExecutorOutput(raw, tools, allowFinal, { directive: d, strict: opts.strict === true });
      if (v.ok) {
        await s.log({
          ...call.record,
          directive: v.value.output as unknown as JsonValue,
          ...(v.value.repairs.length > 0
            ? { validationErrors: v.value.repairs.map((r) => `tolerated: ${r}`) }
            : {}),
        });
        return { ok: true, output: v.value.output };
      }
      lastProblem = `${v.error.stage}: ${v.error.message}`;
      await s.log({ ...call.record, validationErrors: [lastProblem] });
      messages.push(
        { role: 'assistant', content: raw },
        { role: 'user', content: fillTemplate(repairPrompt.text, { error: lastProblem }) },
      );
    }
    return {
      ok: false,
      decision: await s.bounce(
        'executor_invalid',
        `the executor could not turn your directive into a valid tool call (${lastProblem}). ` +
          'Write the directive again, exactly in the directive format.',
      ),
    };
  }

  async function complete(
    s: Step,
    summary: string,
    notes: string,
    explanation?: string,
    details?: FinalDetails,
  ): Promise<Decision> {
    const verdict = checkCompletion(s.history, criteriaFor(s.task, s));
    if (!verdict.ok) return rejectDone(s, verdict.reason);
    s.mem.counters.bounces = 0;
    const result: Record<string, JsonValue> = {
      success: true,
      summary,
      notes,
      evidence: verdict.evidence as unknown as JsonValue,
    };
    if (explanation) result.explanation = explanation;
    if (details !== undefined && typeof details !== 'string') result.details = details as JsonValue;
    return { type: 'complete', result, memory: s.memory(), message: oneLine(summary, 200) };
  }

  async function rejectDone(s: Step, reason: string): Promise<Decision> {
    s.mem.counters.doneRejections++;
    s.mem.lastError = `DONE rejected: ${reason}`;
    await s.policyEvent('done_rejected', reason);
    if (s.mem.counters.doneRejections >= s.policy.maxDoneRejections) {
      return s.fail(
        'completion_unproven',
        `DONE was claimed ${s.mem.counters.doneRejections} times without proof; last reason: ${reason}`,
      );
    }
    return s.finish({ type: 'continue', note: `DONE rejected: ${reason}.`, memory: s.memory() });
  }

  async function ask(s: Step, question: string, why: string): Promise<Decision> {
    if (why.trim() === '') {
      return s.bounce(
        'ask_refused',
        'ASK_USER needs a WHY: saying why the task cannot go on without the answer. If it can, decide yourself and continue',
      );
    }
    if (s.task.counters.questions >= maxQuestions) {
      return s.bounce(
        'ask_refused',
        `ASK_USER refused: the ${maxQuestions} questions allowed for this task are used up. Decide yourself and continue`,
      );
    }
    s.mem.counters.bounces = 0;
    return s.finish({ type: 'ask_user', question, why, memory: s.memory(), message: oneLine(question, 200) });
  }

  /**
   * Turn a validated tool call for directive `d` into the step's decision (allowed commands, duplicates, budgets,
   * and the dispatch gate of {@link Step.toolCall}).
   */
  async function execute(
    s: Step,
    call: AgentToolCall,
    d: Directive,
    reply: string,
    label: string,
  ): Promise<Decision> {
    const plan = planToolCall(call);
    if (plan.kind === 'ask') return ask(s, plan.question, plan.why);
    const available = s.ctx.availableCommands().map((c) => c.name);
    const check = checkCommands(plan.calls, s.task.allowedCommands, available);
    if (!check.ok) return s.bounce(check.error.code, check.error.message);
    const [first, ...rest] = plan.calls;
    if (!first) return s.bounce('executor_invalid', 'the tool call contained no command');
    const repeats = repeatCount(s.history, first.command, first.args as JsonValue);
    if (repeats >= s.policy.duplicateThreshold - 1) {
      s.mem.counters.suppressions++;
      const previous = [...completedCalls(s.history)].reverse().find((c) => c.command === first.command);
      const evidence = previous
        ? previous.outcome.ok
          ? `it succeeded and printed: ${oneLine(previous.outcome.output, 300) || '(nothing)'}`
          : `it failed: ${oneLine(previous.outcome.error ?? '', 300)}`
        : 'see HISTORY';
      const reason =
        `${describeCall(first.command, first.args as JsonValue)} was not run again: it is the same call as the ` +
        `previous ${repeats === 1 ? 'one' : `${repeats} calls`}, and ${evidence}. Running it again gives the same ` +
        'result; change something (fix the file, other arguments) or write DONE if the task is finished';
      s.mem.lastError = reason;
      await s.policyEvent('duplicate_suppressed', reason);
      if (s.policy.duplicateHardStop > 0 && s.mem.counters.suppressions >= s.policy.duplicateHardStop) {
        return s.fail(
          'repetition',
          `the planner asked for the same call ${s.mem.counters.suppressions} more times after it was suppressed: ` +
            describeCall(first.command, first.args as JsonValue),
        );
      }
      return s.finish({ type: 'continue', note: reason, memory: s.memory() });
    }
    return s.toolCall([first, ...rest], { from: 'directive', directive: d, reply }, label);
  }

  /** Carry out the parsed directive of the planner's `reply` (the raw text, for the dispatch gate). */
  async function handleDirective(s: Step, parsed: ParsedDirective, reply: string): Promise<Decision> {
    const d: Directive = parsed.directive;
    const available = s.ctx.availableCommands().map((c) => c.name);
    if (d.kind === 'DONE' && mode !== 'model') return complete(s, d.summary, d.notes);
    if (d.kind === 'ASK_USER' && mode !== 'model') return ask(s, d.question, d.why);
    if (d.kind === 'DONE') {
      // Check before spending an executor call on a claim that will be refused anyway.
      const verdict = checkCompletion(s.history, criteriaFor(s.task, s));
      if (!verdict.ok) return rejectDone(s, verdict.reason);
    }
    if (d.kind === 'ASK_USER') {
      // The rules apply to the planner's directive; the executor only formats an allowed question.
      if (d.why.trim() === '' || s.task.counters.questions >= maxQuestions) return ask(s, d.question, d.why);
    }
    // A directive whose own path leaves the computer's root is the planner's to fix: no executor call for it.
    const own = checkDerived(d, derivedCommands(d));
    if (!own.ok) return s.bounce(own.error.code, own.error.message);
    const offered = toolsFor(available);
    const tools = toolsForDirective(d.kind).filter((t) => offered.includes(t));
    if (d.kind !== 'DONE' && tools.length === 0) {
      return s.bounce(
        'not_available',
        `no command available to this task can carry out ${d.kind} (available: ${available.join(', ') || 'none'})`,
      );
    }
    const useParser = mode === 'parser' || (mode === 'parser-then-model' && parsed.guesses.length === 0);
    if (useParser) {
      const call = directiveToToolCall(d);
      if (!call) return complete(s, (d as { summary?: string }).summary ?? '', '');
      await s.log({
        kind: 'translate',
        model: 'parser',
        directive: { kind: d.kind } as JsonValue,
        toolCall: call as unknown as JsonValue,
      });
      return execute(s, call, d, reply, oneLine(formatDirective(d, true), 200));
    }
    const r = await runExecutor(s, d, tools, d.kind === 'DONE');
    if (!r.ok) return r.decision;
    if (r.output.kind === 'final') {
      if (d.kind !== 'DONE')
        return s.bounce('executor_invalid', 'the executor ended the task without a DONE');
      if (!r.output.result.success) {
        return s.fail('agent_gave_up', r.output.result.message || d.summary, {
          details: r.output.result.details as JsonValue,
        });
      }
      const details = r.output.result.details;
      return complete(
        s,
        r.output.result.message || d.summary,
        typeof details === 'string' && details !== '' ? details : d.notes,
        r.output.explanation,
        details,
      );
    }
    if (d.kind === 'ASK_USER' && r.output.call.tool === 'ask_user') {
      // The planner's WHY is what the rule checked; keep it even if the executor dropped it.
      const q = r.output.call.parameters;
      return ask(s, q.question, q.why.trim() !== '' ? q.why : d.why);
    }
    return execute(s, r.output.call, d, reply, oneLine(formatDirective(d, true), 200));
  }

  async function decide(task: Task, history: readonly HistoryEntry[], ctx: StepContext): Promise<Decision> {
    const maxSteps = Math.min(policy.maxSteps, task.budgets.maxSteps ?? Number.POSITIVE_INFINITY);
    const maxToolCalls = Math.min(policy.maxToolCalls, task.budgets.maxToolCalls ?? Number.POSITIVE_INFINITY);
    const s = new Step(task, history, ctx, policy, loadPlannerMemory(task.memory), {
      maxSteps,
      maxToolCalls,
      lastStep: ctx.step >= maxSteps,
    });
    if (ctx.step > maxSteps) return s.budgetFail('maxSteps', maxSteps, ctx.step - 1);

    // 1. Runs queued by a WRITE_FILE … THEN, one per step, while they succeed.
    if (s.mem.pendingRuns.length > 0) {
      const calls = completedCalls(history);
      const last = calls[calls.length - 1];
      const [next, ...rest] = s.mem.pendingRuns;
      if (last && last.outcome.ok && next) {
        s.mem.pendingRuns = rest;
        const call: CommandCall = { command: 'run_program', args: { path: next.path, args: next.args } };
        await s.log({ kind: 'queued_run', toolCall: call as unknown as JsonValue });
        return s.toolCall(
          [call],
          { from: 'queued', run: next },
          `THEN ${describeCall(call.command, call.args as JsonValue)}`,
        );
      }
      const skipped = s.mem.pendingRuns.map((r) => [r.path, ...r.args].join(' ')).join('; ');
      const why = last
        ? `${describeCall(last.command, last.args)} failed`
        : 'the previous call did not complete';
      s.mem.pendingNotes.push(`The remaining THEN runs (${skipped}) were skipped because ${why}.`);
      s.mem.pendingRuns = [];
      await s.policyEvent('runs_skipped', `skipped ${skipped}: ${why}`);
    }

    // 2. Gather state: read the files the task names before the planner first sees it.
    const available = ctx.availableCommands().map((c) => c.name);
    const fsReadAllowed = task.allowedCommands.length === 0 || task.allowedCommands.includes('fs_read');
    if (policy.gatherFiles && available.includes('fs_read') && fsReadAllowed) {
      const touched = touchedPaths(history);
      const path = filesNamedBy(task).find((p) => !touched.has(p) && !s.mem.gathered.includes(p));
      if (path) {
        s.mem.gathered.push(path);
        const call: CommandCall = { command: 'fs_read', args: { path } };
        await s.log({ kind: 'gather', toolCall: call as unknown as JsonValue });
        return s.toolCall([call], { from: 'gather', path }, `reading ${path}`);
      }
    }

    // 3. Ask the planner for one directive.
    const rendered = renderPlannerTurn({
      task,
      history,
      memory: s.mem,
      step: ctx.step,
      limits: {
        ...(Number.isFinite(maxSteps) ? { maxSteps } : {}),
        ...(Number.isFinite(maxToolCalls) ? { maxToolCalls } : {}),
        maxQuestions,
      },
      layout: { ...policy.memory, numCtx: opts.planner.options?.numCtx ?? policy.memory.numCtx },
    });
    s.mem = rendered.memory;
    s.mem.pendingNotes = [];
    // Earlier turns go out exactly as they went before, the new message last: the server's cache covers the rest.
    // Server-side tools the task may call are listed with the TOOL directive (server-tool-directive.ts).
    const messages: ChatMessage[] = [
      {
        role: 'system',
        content: withServerToolSection(plannerSystem, serverToolsOf(ctx.availableCommands())),
      },
    ];
    for (const t of rendered.turns) {
      messages.push({ role: 'user', content: t.user }, { role: 'assistant', content: t.reply });
    }
    messages.push({ role: 'user', content: rendered.user });
    const conv = s.mem.conversation;
    const layoutInfo = {
      conversation: policy.memory.conversation,
      turn: rendered.turns.length + 1,
      compacted: rendered.compacted,
      compactions: conv.compactions,
    };
    let call = await callModel(
      ctx,
      task.id,
      opts.planner,
      'planner',
      { messages, layout: layoutInfo },
      plannerPrompt,
    );
    s.mem.counters.plannerCalls++;
    if (call.response?.usage.doneReason === 'length') {
      // Cut off at the output limit: a prefix can parse as a valid but wrong directive (ARGS cut mid-word), so none
      // of it is used. One retry with the note, and the larger limit if the role configures one.
      call = await retryTruncatedPlanner(s, call, messages);
      if (call.response?.usage.doneReason === 'length') {
        await s.log({ ...call.record, validationErrors: [`truncated: the reply ${TRUNCATED_NOTE}`] });
        return s.formatBounce(
          'output_truncated',
          'Your last two replies were cut off at the output limit and nothing of them was used.',
        );
      }
    }
    if (!call.response) {
      await s.log(call.record);
      return s.modelFailure('planner', call.error ?? unknownError());
    }
    s.mem.counters.modelFailures = 0;
    const raw = call.response.message.content;
    if (policy.memory.conversation) {
      const sent = messages.reduce((n, m) => n + m.content.length, 0);
      const counted = call.response.usage.promptEvalCount;
      s.mem.conversation = {
        ...conv,
        turns: [...conv.turns, { user: rendered.user, reply: raw }],
        // What the server counted for what was sent: the budget follows this task's real token density.
        ...(counted !== undefined && counted > 0 ? { charsPerToken: Math.max(1, sent / counted) } : {}),
      };
    }
    const toolDirective = parseToolDirective(raw);
    if (toolDirective) return decideToolDirective(s, toolDirective, call.record, ctx.availableCommands());
    const parsed = parseDirective(raw);
    if (!parsed.ok) {
      // No usable directive: the planner's to fix. The executor model never sees it (it would have to invent one).
      await s.log({ ...call.record, validationErrors: [`${parsed.error.code}: ${parsed.error.message}`] });
      return s.formatBounce(`directive_${parsed.error.code}`, parsed.error.message);
    }
    const v = parsed.value;
    await s.log({
      ...call.record,
      directive: {
        ...v.directive,
        ...(v.plan ? { plan: v.plan } : {}),
        ...(v.ignored.length > 0 ? { ignored: v.ignored } : {}),
        ...(v.guesses.length > 0 ? { guesses: v.guesses } : {}),
        ...(v.tolerated.length > 0 ? { tolerated: v.tolerated } : {}),
      } as unknown as JsonValue,
      // What the parser left out of the values (prose after the fields, a remark after a value) is logged, not merged.
      ...(v.notes.length + v.tolerated.length > 0
        ? { validationErrors: [...v.notes, ...v.tolerated.map((t) => `tolerated: ${t}`)] }
        : {}),
    });
    if (v.plan) s.mem.plan = v.plan;
    s.mem.lastDirective = formatDirective(v.directive, true);
    s.mem.pendingNotes.push(...v.notes);
    return handleDirective(s, v, raw);
  }

  /** The one retry of a planner reply cut off at the output limit; the cut reply is logged as not used. */
  async function retryTruncatedPlanner(
    s: Step,
    cut: ModelCallOutcome,
    messages: ChatMessage[],
  ): Promise<ModelCallOutcome> {
    await s.log({ ...cut.record, validationErrors: [`truncated: the reply ${TRUNCATED_NOTE}`] });
    const retry = await callModel(
      s.ctx,
      s.task.id,
      withLargerLimit(opts.planner),
      'planner',
      {
        messages: [
          ...messages,
          { role: 'assistant', content: cut.response?.message.content ?? '' },
          {
            role: 'user',
            content:
              `Your reply above ${TRUNCATED_NOTE}: exactly one directive, no explanations around it; ` +
              'a WRITE_FILE holds the whole file and nothing else.',
          },
        ],
      },
      plannerPrompt,
    );
    s.mem.counters.plannerCalls++;
    return retry;
  }

  return { decide };
}

/** The role with its `lengthRetryNumPredict` as the output limit (the retry after a reply was cut off). */
function withLargerLimit(role: ModelRole): ModelRole {
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

function unknownError(): TaskErrorInfo {
  return { code: 'model_error', message: 'the model call failed' };
}
