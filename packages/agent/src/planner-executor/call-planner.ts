/**
 * Call the planner model for one directive: the request written ahead in the step log by the shared model-call
 * path, one retry of a reply cut off at its output limit, the model failure policy, and the conversation of the
 * memory extended with the turn; then the reply is parsed and handed to the derivation.
 */
import type { Decision, JsonValue } from '@ccagent/engine';
import type { ChatMessage } from '@ccagent/models';
import { formatDirective, parseDirective } from '../directive-parser.js';
import { callModel, type ModelCallOutcome } from '../model-call.js';
import { unknownError, withLargerLimit } from './config.js';
import { handleDirective } from './derive.js';
import type { PlannerRequest } from './prepare.js';
import { TRUNCATED_NOTE, type Step } from './step.js';
import { decideToolDirective, parseToolDirective } from '../server-tool-directive.js';

/** Ask the planner (the request from `plannerRequest`) and carry out its directive. */
export async function askPlanner(s: Step, req: PlannerRequest): Promise<Decision> {
  const { task, ctx } = s;
  const { policy, opts, plannerPrompt } = s.cfg;
  const { messages, rendered, layoutInfo } = req;
  const conv = s.mem.conversation;
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
  return deriveDirective(s, call, raw);
}

/** Parse the planner's reply, log it with what the parser made of it, and hand the directive on. */
async function deriveDirective(s: Step, call: ModelCallOutcome, raw: string): Promise<Decision> {
  const toolDirective = parseToolDirective(raw);
  if (toolDirective) return decideToolDirective(s, toolDirective, call.record, s.ctx.availableCommands());
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
  const { opts, plannerPrompt } = s.cfg;
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
