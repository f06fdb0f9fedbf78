/**
 * The progress message of a task that has ended: how it finished (its summary, error or cancel reason), so nobody
 * reads a finished task's last in-flight message ("calling count_lines") as what it is doing.
 */
import type { JsonValue, Task } from './types.js';

/** Longest finish message kept on the task row (one line). */
export const FINISH_MESSAGE_CHARS = 200;

/** One line of at most {@link FINISH_MESSAGE_CHARS} characters. */
function oneLine(text: string): string {
  const flat = text.replace(/\s+/g, ' ').trim();
  return flat.length > FINISH_MESSAGE_CHARS ? `${flat.slice(0, FINISH_MESSAGE_CHARS - 1)}…` : flat;
}

function resultText(result: JsonValue | undefined): string | undefined {
  if (typeof result === 'string') return result;
  if (typeof result !== 'object' || result === null || Array.isArray(result)) return undefined;
  for (const key of ['summary', 'message']) {
    const v = result[key];
    if (typeof v === 'string' && v.trim() !== '') return v;
  }
  return undefined;
}

/**
 * What a task in a terminal status says it finished with: a completed task its result's summary or message (else
 * "completed"), a failed one its error, a cancelled one the reason given.
 */
export function finishMessage(task: Task, cancelReason?: string): string {
  switch (task.status) {
    case 'completed': {
      const text = resultText(task.result);
      return oneLine(text !== undefined && text.trim() !== '' ? text : 'completed');
    }
    case 'failed':
      return oneLine(task.error ? `failed: ${task.error.message}` : 'failed');
    case 'cancelled':
      return oneLine(cancelReason ? `cancelled: ${cancelReason}` : 'cancelled');
    default:
      return task.progressMessage ?? '';
  }
}
