/**
 * Confirmation of destructive commands: a call the engine's `ConfirmationRule` flags is committed
 * `awaiting_confirmation` together with a question whose id is derived from the call id, and waits for a person's
 * answer like an `ask_user` question. Only an explicit yes lets it run; any other answer is a refusal, which the
 * model sees as the call's failed result. {@link confirmationCheck} is the host's own last check before such a call
 * leaves.
 */
import type { ConfirmationRule, TaskStore } from './ports.js';
import type { JsonValue } from './types.js';

const SUFFIX = ':confirm';

/** The id of the question that confirms the call `callId`. */
export function confirmationQuestionId(callId: string): string {
  return `${callId}${SUFFIX}`;
}

/** The call a confirmation question is about, or undefined for an ordinary question. */
export function confirmedCallId(questionId: string): string | undefined {
  return questionId.endsWith(SUFFIX) ? questionId.slice(0, -SUFFIX.length) : undefined;
}

const YES = new Set(['y', 'yes', 'ok', 'okay', 'allow', 'allowed', 'confirm', 'confirmed', 'go', 'run']);

/** Is this answer a yes? Only a short explicit yes counts ("yes", "y", "ok", "allow" …, any case, with a final "."/"!"). */
export function isConfirmingAnswer(text: string): boolean {
  return YES.has(
    text
      .trim()
      .toLowerCase()
      .replace(/[.!]+$/, ''),
  );
}

/** What {@link confirmationCheck} reads: the task (for the rule) and the confirmation question, from the store. */
export type ConfirmationReader = Pick<TaskStore, 'getTask' | 'getQuestion'>;

/**
 * The last check before a call leaves the host, independent of the engine's hold: resolves undefined when `rule` does
 * not flag the call or its confirmation question is on disk answered yes, otherwise the reason it must not be sent.
 * Reads the store each time (never a cache), so that no path that skips the engine's hold can send a destructive
 * call. Rejects when the store cannot be read (then the call must not be sent either).
 */
export function confirmationCheck(
  reader: ConfirmationReader,
  rule: ConfirmationRule,
): (call: {
  taskId: string;
  callId: string;
  command: string;
  args: JsonValue;
}) => Promise<string | undefined> {
  return async ({ taskId, callId, command, args }) => {
    const task = await reader.getTask(taskId);
    if (!task) return `task ${taskId} is unknown; not sending ${command}`;
    if (rule(task, command, args) === undefined) return undefined;
    const q = await reader.getQuestion(confirmationQuestionId(callId));
    if (q?.answer !== undefined && q.taskId === taskId && isConfirmingAnswer(q.answer)) return undefined;
    return `"${command}" needs a person's yes before it runs (task kind "${task.kind}"), and it has none; it was not sent`;
  };
}
