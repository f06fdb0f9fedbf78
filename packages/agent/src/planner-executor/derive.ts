/**
 * Derive and validate the tool call of a parsed directive: the deterministic parser, or the executor model (one call,
 * then repairs with the validation error, then a bounce to the planner); DONE and ASK_USER go to their rules.
 */
import type { Decision, JsonValue } from '@ccagent/engine';
import type { ChatMessage } from '@ccagent/models';
import { checkDerived, derivedCommands } from '../derivation.js';
import { formatDirective, type Directive, type ParsedDirective } from '../directive-parser.js';
import { executorJsonSchema, validateExecutorOutput, type ExecutorOutput } from '../executor-schema.js';
import { callModel } from '../model-call.js';
import { checkCompletion } from '../policy.js';
import { fillTemplate } from '../prompts.js';
import {
  describeTool,
  directiveToToolCall,
  toolsFor,
  toolsForDirective,
  type AgentToolName,
} from '../tools.js';
import { criteriaFor, unknownError, withLargerLimit } from './config.js';
import { ask, complete, execute, rejectDone } from './execute.js';
import { oneLine, TRUNCATED_NOTE, type Step } from './step.js';

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
  const { executorPrompt, repairPrompt, executorRole, opts } = s.cfg;
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

/** Carry out the parsed directive of the planner's `reply` (the raw text, for the dispatch gate). */
export async function handleDirective(s: Step, parsed: ParsedDirective, reply: string): Promise<Decision> {
  const { mode, maxQuestions } = s.cfg;
  const d: Directive = parsed.directive;
  const available = s.ctx.availableCommands().map((c) => c.name);
  if (d.kind === 'DONE' && mode !== 'model') return complete(s, d.summary, d.notes);
  if (d.kind === 'ASK_USER' && mode !== 'model') return ask(s, d.question, d.why);
  if (d.kind === 'DONE') {
    // Check before spending an executor call on a claim that will be refused anyway.
    const verdict = checkCompletion(s.history, criteriaFor(s.cfg, s.task, s.ctx));
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
    if (d.kind !== 'DONE') return s.bounce('executor_invalid', 'the executor ended the task without a DONE');
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
