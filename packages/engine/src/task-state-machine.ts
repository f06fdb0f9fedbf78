import { EngineError } from './engine-error.js';
import type { TaskStatus } from './types.js';

/**
 * The legal transition table: queued → running ⇄ waiting_for_command / waiting_for_user → completed | failed |
 * cancelled. Any non-terminal state may be cancelled or failed (budget, deadline); only `running` completes. A
 * confirmed destructive call goes from `waiting_for_user` straight to `waiting_for_command`. An ended
 * task leaves its end only by being reopened (`Engine.reopenTask`: a follow-up message or a retry), back to `queued`.
 */
export const TASK_TRANSITIONS: Readonly<Record<TaskStatus, readonly TaskStatus[]>> = {
  queued: ['running', 'failed', 'cancelled'],
  running: ['waiting_for_command', 'waiting_for_user', 'completed', 'failed', 'cancelled'],
  waiting_for_command: ['running', 'failed', 'cancelled'],
  waiting_for_user: ['running', 'waiting_for_command', 'failed', 'cancelled'],
  completed: ['queued'],
  failed: ['queued'],
  cancelled: ['queued'],
};

const TERMINAL: ReadonlySet<TaskStatus> = new Set(['completed', 'failed', 'cancelled']);

/** True for `completed`, `failed` and `cancelled`: the task has ended (only a reopen leaves them). */
export function isTerminalStatus(status: TaskStatus): boolean {
  return TERMINAL.has(status);
}

/** True when `from → to` is in {@link TASK_TRANSITIONS}. A self-transition is never legal. */
export function canTransition(from: TaskStatus, to: TaskStatus): boolean {
  return TASK_TRANSITIONS[from].includes(to);
}

/** Throws `EngineError('illegal_transition')` unless `from → to` is legal; returns `to`. */
export function assertTransition(from: TaskStatus, to: TaskStatus, taskId?: string): TaskStatus {
  if (!canTransition(from, to)) {
    throw new EngineError(
      'illegal_transition',
      `illegal task transition ${from} → ${to}${taskId ? ` (task ${taskId})` : ''}`,
      {
        details: { from, to, taskId },
      },
    );
  }
  return to;
}
