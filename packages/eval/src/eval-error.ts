/** Stable codes of {@link EvalError}. */
export type EvalErrorCode =
  | 'invalid_job'
  | 'unknown_job'
  | 'no_craftos'
  | 'model_unavailable'
  | 'orchestrator_failed'
  | 'computer_failed'
  | 'checker_failed'
  | 'invalid_option';

/** The one error class of `@ccagent/eval`: a stable `code`, a message for people, the original `cause`. */
export class EvalError extends Error {
  override readonly name = 'EvalError';
  constructor(
    readonly code: EvalErrorCode,
    message: string,
    options?: { cause?: unknown },
  ) {
    super(message, options);
  }
}

/** True when `e` is an {@link EvalError}. */
export function isEvalError(e: unknown): e is EvalError {
  return e instanceof EvalError;
}
