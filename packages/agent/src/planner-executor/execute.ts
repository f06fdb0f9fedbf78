/**
 * Execute a validated tool call (allowed commands, duplicates suppressed, the dispatch gate), and the other ends of
 * a directive: a DONE checked against the completion criteria, an ASK_USER within its rules.
 */
import type { Decision, JsonValue } from '@ccagent/engine';
import type { Directive } from '../directive-parser.js';
import type { FinalDetails } from '../executor-schema.js';
import { completedCalls, describeCall } from '../history-view.js';
import { checkCompletion, repeatCount } from '../policy.js';
import { checkCommands, planToolCall, type AgentToolCall } from '../tools.js';
import { criteriaFor } from './config.js';
import { oneLine, type Step } from './step.js';

export async function complete(
  s: Step,
  summary: string,
  notes: string,
  explanation?: string,
  details?: FinalDetails,
): Promise<Decision> {
  const verdict = checkCompletion(s.history, criteriaFor(s.cfg, s.task, s.ctx));
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

export async function rejectDone(s: Step, reason: string): Promise<Decision> {
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

export async function ask(s: Step, question: string, why: string): Promise<Decision> {
  const maxQuestions = s.cfg.maxQuestions;
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
export async function execute(
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
