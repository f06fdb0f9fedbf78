/**
 * Events the engine emits, each after the state it reports is committed to the store.
 */
import type {
  CommandCallRecord,
  CommandOutcome,
  QuestionRecord,
  StoredStep,
  Task,
  TaskStatus,
} from './types.js';

/** Event name → payload. Listeners run synchronously after the commit; their exceptions are logged, not thrown. */
export interface EngineEvents {
  /** A task was created and persisted. */
  taskCreated: { task: Task };
  /** A task's status (or progress) changed. */
  taskUpdated: { task: Task; previousStatus: TaskStatus; progress?: number; message?: string };
  /** A step-log record was persisted. */
  stepLogged: { taskId: string; step: StoredStep };
  /** A command call was handed to the executor (again, after recovery, when `call.dispatchCount > 1`). */
  commandDispatched: { task: Task; call: CommandCallRecord };
  /** A command call's outcome was committed. */
  commandResolved: { task: Task; call: CommandCallRecord; outcome: CommandOutcome };
  /** A question to the user was committed. */
  questionAsked: { task: Task; question: QuestionRecord };
  /** An answer was committed. */
  questionAnswered: { task: Task; question: QuestionRecord };
  /** Terminal: completed with `task.result`. */
  taskCompleted: { task: Task };
  /** Terminal: failed with `task.error`. */
  taskFailed: { task: Task };
  /** Terminal: cancelled. */
  taskCancelled: { task: Task };
}

/** Name of an engine event. */
export type EngineEventName = keyof EngineEvents;

/** Listener of one engine event. */
export type EngineListener<E extends EngineEventName> = (payload: EngineEvents[E]) => void;
