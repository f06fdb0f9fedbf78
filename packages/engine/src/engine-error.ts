/** Stable codes of {@link EngineError}. */
export type EngineErrorCode =
  /** A status change not in the transition table (includes leaving a terminal state). */
  | 'illegal_transition'
  /** No task with that id. */
  | 'task_not_found'
  /** A task with that id already exists. */
  | 'task_exists'
  /** A call id the task never issued (`bindCall`, `recordRedelivery`). */
  | 'unknown_call'
  /** A call already resolved, timed out or cancelled (`bindCall`). */
  | 'call_closed'
  /** `answerQuestion` with a question id the task never asked. */
  | 'unknown_question'
  /** `answerQuestion` for a question already answered or no longer awaited. */
  | 'question_closed'
  /** Bad input to a public method (empty kind, negative budget …). */
  | 'invalid_input'
  /** A store commit found the task in another state than expected (a concurrent change won). */
  | 'conflict'
  /** No strategy registered for the task's kind. */
  | 'no_strategy'
  /** The engine was stopped. */
  | 'stopped'
  /** The storage port failed. */
  | 'store_failure'
  /** A server-side tool's name is already taken (by another server tool or a computer's command). */
  | 'tool_exists';

/** Every {@link EngineErrorCode}. */
export const ENGINE_ERROR_CODES: readonly EngineErrorCode[] = [
  'illegal_transition',
  'task_not_found',
  'task_exists',
  'unknown_call',
  'call_closed',
  'unknown_question',
  'question_closed',
  'invalid_input',
  'conflict',
  'no_strategy',
  'stopped',
  'store_failure',
  'tool_exists',
];

/** The one error class of `@ccagent/engine`: a stable `code`, a message, optional details and the `cause`. */
export class EngineError extends Error {
  override readonly name = 'EngineError';
  /** Stable machine-readable code. */
  readonly code: EngineErrorCode;
  /** Structured context (ids, statuses) for logs and callers. */
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: EngineErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
  }
}

/**
 * True when `err` is an {@link EngineError}, optionally with the given code. Also recognises an EngineError from
 * another copy of this package (ESM and CJS builds loaded side by side, or the `./testing` bundle) by its `name`.
 */
export function isEngineError(err: unknown, code?: EngineErrorCode): err is EngineError {
  const isOne =
    err instanceof EngineError ||
    (err instanceof Error &&
      err.name === 'EngineError' &&
      typeof (err as { code?: unknown }).code === 'string');
  return isOne && (code === undefined || (err as EngineError).code === code);
}
