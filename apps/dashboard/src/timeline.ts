/**
 * Which step-log records the timeline shows. A strategy writes a `model_request` record just before a model call
 * leaves (so a call cut short by a restart is still on record), and the call's own record when the reply comes (same
 * step, its kind = the request's role, same start time) with the request inside it. Like `ccagent tasks show`, the
 * timeline hides a request whose finished record it holds; an unanswered one (still running, or cut short) stays.
 */
import type { WireStep } from './wire.js';

/** Kind of the record written ahead of a model call (the engine's `MODEL_REQUEST_KIND`). */
export const MODEL_REQUEST = 'model_request';

/** The role a request record announces: `role` in the summary form, `output.role` in the full record. */
export function requestRole(s: WireStep): string | undefined {
  if (s.role !== undefined) return s.role;
  const o = s.output as { role?: unknown } | undefined;
  return typeof o?.role === 'string' ? o.role : undefined;
}

/** The `seq` of each request record whose finished call's record is in `steps`. */
export function answeredRequests(steps: readonly WireStep[]): Set<number> {
  const finished = new Set<string>();
  for (const s of steps) if (s.kind !== MODEL_REQUEST) finished.add(`${s.step}|${s.kind}|${s.started_at}`);
  const answered = new Set<number>();
  for (const s of steps) {
    if (s.kind === MODEL_REQUEST && finished.has(`${s.step}|${requestRole(s)}|${s.started_at}`))
      answered.add(s.seq);
  }
  return answered;
}

/** `steps` without the answered requests (the same array when there are none). */
export function shownSteps(steps: readonly WireStep[]): readonly WireStep[] {
  const answered = answeredRequests(steps);
  return answered.size === 0 ? steps : steps.filter((s) => !answered.has(s.seq));
}
