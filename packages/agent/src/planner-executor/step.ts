/**
 * One engine step of the planner/executor strategy: the memory being built and the decision helpers that persist
 * it (fail, bounce, model failure, budgets), and the dispatch gate every tool call passes ({@link Step.toolCall}).
 */
import type {
  Decision,
  HistoryEntry,
  JsonValue,
  StepContext,
  StepRecord,
  Task,
  TaskErrorInfo,
} from '@ccagent/engine';
import { checkDerived, checkWrittenIn } from '../derivation.js';
import type { Directive } from '../directive-parser.js';
import { lastFailure } from '../history-view.js';
import { memoryToJson, type PlannerMemory } from '../planner-memory.js';
import type { AgentPolicy } from '../policy.js';
import { runCall, type CommandCall } from '../tools.js';
import type { PlannerConfig } from './config.js';

export function oneLine(text: string, max: number): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length <= max ? flat : `${flat.slice(0, max - 1)}…`;
}

/** Where a tool call comes from; {@link Step.toolCall} checks the call against it. */
export type CallOrigin =
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
export const TRUNCATED_NOTE =
  'was cut off at the output limit (done_reason "length"), so none of it was used. Reply again, complete and shorter';

/** Per-step working state: the memory being built and the decision helpers that persist it. */
export class Step {
  constructor(
    readonly cfg: PlannerConfig,
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
