/** Stable codes of {@link OrchestratorError}. */
export type OrchestratorErrorCode =
  /** The configuration (file, flags or env) is invalid; the message lists each problem with its path. */
  | 'config_invalid'
  /** The server refuses to start as configured (e.g. a non-loopback bind without a token). */
  | 'unsafe_bind'
  /** The SQLite database could not be opened (permissions, a newer schema, not a ccagent file …). */
  | 'store_failed'
  /** The HTTP server could not listen. */
  | 'listen_failed';

/** The one error class of the orchestrator app: a stable `code`, a message, optional details and the `cause`. */
export class OrchestratorError extends Error {
  override readonly name = 'OrchestratorError';
  /** Stable machine-readable code. */
  readonly code: OrchestratorErrorCode;
  /** Structured context for logs. */
  readonly details: Record<string, unknown> | undefined;

  constructor(
    code: OrchestratorErrorCode,
    message: string,
    options: { cause?: unknown; details?: Record<string, unknown> } = {},
  ) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
    this.details = options.details;
  }
}
