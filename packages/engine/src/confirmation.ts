/**
 * Confirmation of destructive commands: a call the engine's `ConfirmationRule` flags is committed
 * `awaiting_confirmation` together with a question whose id is derived from the call id, and waits for a person's
 * answer like an `ask_user` question. Only an explicit yes lets it run; any other answer is a refusal, which the
 * model sees as the call's failed result.
 */

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
