/**
 * Record the model's reply: a failed call counted against the failure limit; a reply cut off or with a call written
 * as text nudged once; an empty reply nudged, and refused at {@link MAX_EMPTY_REPLIES} in a row; a first answer in
 * prose before any tool was called nudged once and then refused; otherwise the turn appended to the memory (the
 * window's dropped turns left out, the measured token density kept) and its first call handed out, or the reply
 * completes the task.
 */
import type { Decision, JsonValue } from '@ccagent/engine';
import { stripThinking } from '../directive-parser.js';
import type { ModelCallOutcome } from '../model-call.js';
import { nextQueuedCall } from './dispatch.js';
import {
  nextMemory,
  withCalls,
  type NativeCall,
  type NativeMemory,
  type NativeTurn,
} from './native-memory.js';
import type { NativeStep, PreparedTurn } from './turn.js';

const EMPTY_NUDGE = 'Your reply was empty. Call a tool, or answer with the result if the task is done.';
/**
 * Empty replies in a row (in one run) that end the task with `empty_replies`: the ones before are nudged, each a model
 * call of the iteration budget, so a model that only returns empty replies does not burn every iteration.
 */
export const MAX_EMPTY_REPLIES = 3;
export const CUT_NUDGE =
  'Your reply was cut off at the output limit (done_reason "length"), so none of it was used: no call was made. ' +
  'Reply again, shorter.';
/**
 * The nudge after an answer in prose while the task has called no tool yet: a small model saying "Sure, I will now
 * write the file" must not end the task with nothing done. Exported for the docs' test.
 */
export const PROSE_NUDGE =
  'You answered without calling a tool, and no tool has been called in this task yet, so nothing has been done. ' +
  'If the task needs an action, call the tool now through the tool-calling interface. If it needs no tool at all, ' +
  'reply with your final answer starting with FINAL:';
/** The explicit final-answer marker: `FINAL:` (or `Final answer:`, Markdown bold tolerated) opening the reply. */
const FINAL_MARKER = /^\s*(?:\*\*|__)?final(?:\s+answer)?\s*(?::\s*(?:\*\*|__)?|(?:\*\*|__)\s*:)\s*/i;

/** The reply's answer with the final marker removed, or undefined when it does not open with the marker. */
export function finalMarked(text: string): string | undefined {
  const m = FINAL_MARKER.exec(text);
  return m ? text.slice(m[0].length).trim() : undefined;
}

const TEXT_CALL_NUDGE =
  'Your reply wrote a tool call as text (<tool_call>…); text is not run. Call the tool through the tool-calling ' +
  'interface, or answer without tags if the task is done.';

/** The step's decision from the model call of prepared turn `p` (its calls read as `readCalls`). */
export function recordReply(
  s: NativeStep,
  p: PreparedTurn,
  call: ModelCallOutcome,
  readCalls: NativeCall[],
  afterCut: boolean,
): Decision {
  const { ctx, available, callsMade } = s;
  const { maxFailures, opts } = s.cfg;
  const { mem, messages, toolsJson, firstShown, failDecision } = p;
  if (!call.response) {
    const failed = nextMemory({ ...mem, modelFailures: mem.modelFailures + 1 });
    if (failed.modelFailures >= maxFailures) {
      return {
        ...failDecision(
          'model_failed',
          `the model failed ${failed.modelFailures} times in a row: ${call.error?.message ?? ''}`,
        ),
        memory: failed as unknown as JsonValue,
      };
    }
    return { type: 'continue', memory: failed as unknown as JsonValue };
  }
  const reply = call.response.message;
  // A reply stopped at the output limit is never used, neither as an answer nor for its calls (the rest of them
  // may be missing): one retry with a note; cut off again, the task fails with output_truncated.
  const cut = call.response.usage.doneReason === 'length';
  // A reply that is only a reasoning block (`<think>…</think>`) says nothing either.
  const empty = !cut && reply.toolCalls.length === 0 && stripThinking(reply.content).trim() === '';
  // A call written as text (Qwen's `<tool_call>` tags the server did not turn into a call) is not an answer.
  const textCall = !cut && reply.toolCalls.length === 0 && /<tool_call>/i.test(reply.content);
  const answer = stripThinking(reply.content).trim();
  const marked = finalMarked(answer);
  // An answer in prose while the task is offered a computer's commands and has called no tool yet is not taken as
  // the result: nothing was done. One nudge (a model call of the iteration budget); the same again after it fails
  // below. An answer marked FINAL:, a task offered no command of a computer (chat; only the server's own tools such
  // as get_time), or one that has called a tool ends as before.
  const prose =
    !cut &&
    !empty &&
    !textCall &&
    reply.toolCalls.length === 0 &&
    marked === undefined &&
    callsMade === 0 &&
    // A `wait` (run here, not counted as the task's tool call) is an action too.
    mem.dropped === 0 &&
    !mem.turns.some((t) => t.calls.length > 0) &&
    s.commands.some((c) => c.origin !== 'server');
  const proseAgain = prose && mem.turns.slice(Math.max(0, mem.runStart - mem.dropped)).some(isProseNudged);
  const nudge = cut
    ? CUT_NUDGE
    : empty
      ? EMPTY_NUDGE
      : textCall
        ? TEXT_CALL_NUDGE
        : prose && !proseAgain
          ? PROSE_NUDGE
          : undefined;
  // Empty replies in a row in this run, this one included (a turn of the run's memory nudged as empty is one).
  const emptyInRow = empty ? 1 + trailingEmpty(mem.turns.slice(Math.max(0, mem.runStart - mem.dropped))) : 0;
  const turn = withCalls(
    {
      content: reply.content,
      calls: [],
      callsBefore: callsMade,
      step: ctx.step,
      ...(nudge ? { nudge } : {}),
    },
    cut ? [] : readCalls,
  );
  // Turns left out of this prompt are never shown again (the window only moves forward): the memory drops them, so
  // it stays as small as the window however long the task runs.
  const counted = call.response.usage.promptEvalCount;
  // What the server counted: the messages, their tool calls and the tool schemas (the template adds a little).
  const sent = messages.reduce(
    (n, m) => n + m.content.length + (m.toolCalls ? JSON.stringify(m.toolCalls).length : 0),
    toolsJson.length,
  );
  const withTurn = nextMemory({
    ...mem,
    modelFailures: 0,
    dropped: mem.dropped + firstShown,
    turns: [...mem.turns.slice(firstShown), turn],
    ...(counted !== undefined && counted > 0 ? { charsPerToken: Math.max(1, sent / counted) } : {}),
  });
  if (cut && afterCut) {
    return {
      ...failDecision(
        'output_truncated',
        'the model was cut off at its output limit twice in a row; raise numPredict (or lengthRetryNumPredict)',
      ),
      memory: withTurn as unknown as JsonValue,
    };
  }
  if (turn.calls.length === 0) {
    if (nudge === PROSE_NUDGE) {
      return {
        type: 'continue',
        note: 'tolerated: the model answered in prose with no tool call before any tool was called; nudged once',
        memory: withTurn as unknown as JsonValue,
      };
    }
    if (empty) return emptyReplyDecision(emptyInRow, reply.content, withTurn);
    if (nudge) return { type: 'continue', memory: withTurn as unknown as JsonValue };
    if (proseAgain) {
      return {
        type: 'fail',
        error: {
          code: 'no_tool_call',
          message:
            'the model answered in prose again after the nudge, without calling a tool or marking its answer ' +
            'FINAL:, so nothing was done',
          details: { iterations: withTurn.dropped + withTurn.turns.length, lastMessage: answer },
        },
        memory: withTurn as unknown as JsonValue,
      };
    }
    return {
      type: 'complete',
      result: {
        message: marked ?? answer,
        iterations: withTurn.dropped + withTurn.turns.length,
      },
      memory: withTurn as unknown as JsonValue,
    };
  }
  const next = nextQueuedCall(opts, withTurn, callsMade, available, undefined);
  if (next.decision) return { ...next.decision, memory: next.mem as unknown as JsonValue };
  // Every call named an unknown tool or had arguments that could not be read: the errors go back to the model on
  // the next step.
  return {
    type: 'continue',
    note: 'every call of the model was rejected (an unknown tool or unreadable arguments)',
    memory: next.mem as unknown as JsonValue,
  };
}

/**
 * The decision after an empty reply, the `inRow`-th in a row of this run: nudged (recorded as tolerated), or at
 * {@link MAX_EMPTY_REPLIES} the task fails with `empty_replies`.
 */
function emptyReplyDecision(inRow: number, content: string, withTurn: NativeMemory): Decision {
  const iterations = withTurn.dropped + withTurn.turns.length;
  if (inRow < MAX_EMPTY_REPLIES) {
    return {
      type: 'continue',
      note: `tolerated: the model's reply was empty; nudged (${inRow} of ${MAX_EMPTY_REPLIES - 1} before the task fails)`,
      memory: withTurn as unknown as JsonValue,
    };
  }
  return {
    type: 'fail',
    error: {
      code: 'empty_replies',
      message: `the model returned ${inRow} empty replies in a row (no text and no tool call), nudged after each but the last`,
      details: { iterations, emptyReplies: inRow, lastMessage: content },
    },
    memory: withTurn as unknown as JsonValue,
  };
}

/** How many turns at the end of `turns` were empty replies (nudged as such). */
function trailingEmpty(turns: readonly NativeTurn[]): number {
  let n = 0;
  for (let i = turns.length - 1; i >= 0 && turns[i]?.nudge === EMPTY_NUDGE; i--) n++;
  return n;
}

/** Whether a turn got the prose nudge (a turn with the nudge has no calls). */
function isProseNudged(t: NativeTurn): boolean {
  return t.nudge === PROSE_NUDGE;
}
