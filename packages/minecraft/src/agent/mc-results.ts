/**
 * Record the last action's outcome: the result of the action sent on the step before (found by its action id), read
 * against the player's state (a `goto` that ended too far away contradicts the plan), kept in the memory's results,
 * and the problem a failure gives the re-plan.
 */
import type { HistoryEntry, JsonValue } from '@ccagent/engine';
import type { InstanceInfo } from '../endpoint/mc-endpoint.js';
import type { ActionSpec, PlayerState } from '../protocol/messages.js';
import { MAX_RESULTS_IN_MEMORY, type McMemory, type McProblem, type ResultNote } from './mc-step.js';
import { actionText } from './turn-text.js';

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

function contradiction(action: ActionSpec, info: InstanceInfo | undefined, tolerance: number): string | null {
  if (action.type !== 'goto' || action.x === undefined || action.z === undefined) return null;
  const s: PlayerState | null | undefined = info?.lastState;
  if (!s) return null;
  const dx = s.position.x - (action.x + 0.5);
  const dz = s.position.z - (action.z + 0.5);
  const d = Math.hypot(dx, dz);
  if (d <= tolerance) return null;
  return (
    `after goto ${action.x} ${action.y ?? ''} ${action.z} the player is at ${s.position.x.toFixed(1)} ` +
    `${s.position.y.toFixed(1)} ${s.position.z.toFixed(1)}, ${d.toFixed(1)} blocks away`
  );
}

/**
 * The pending action's result folded into the memory (the problem, when it failed or the state contradicts it), or
 * `resend` when the history holds no result for it (cannot happen while the engine drives the strategy).
 */
export function readPendingResult(
  mem: McMemory,
  history: readonly HistoryEntry[],
  info: InstanceInfo | undefined,
  tolerance: number,
): { mem: McMemory; problem: McProblem | null } | { resend: { id: string; action: ActionSpec } } {
  if (mem.pending === null) return { mem, problem: null };
  const { id, action } = mem.pending;
  const entry = outcomeOf(history, id);
  if (entry?.type !== 'tool_result') return { resend: mem.pending };
  const o = entry.outcome;
  const contra = o.ok ? contradiction(action, info, tolerance) : null;
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
  const note: ResultNote = { id, action, ok, detail };
  const next: McMemory = {
    ...mem,
    pending: null,
    results: [...mem.results, note].slice(-MAX_RESULTS_IN_MEMORY),
    completed: mem.completed + (ok ? 1 : 0),
    actionIndex: ok ? mem.actionIndex + 1 : mem.actionIndex,
  };
  return { mem: next, problem: ok ? null : problemOf(note) };
}

/** What went wrong in a failed result note: its error, or the state's contradiction of a completed action. */
export function problemOf(note: ResultNote): McProblem {
  const d = note.detail as { error?: unknown; contradiction?: unknown } | null;
  const contra = typeof d?.contradiction === 'string' ? d.contradiction : null;
  return {
    text:
      contra !== null
        ? `the state contradicts the plan: ${contra}`
        : `action ${JSON.stringify(note.action)} failed: ${String(d?.error ?? 'no result')}`,
    note: `the last action (${actionText(note.action)}) ${contra !== null ? 'did not end where planned' : 'failed'}, see its result above.`,
  };
}
