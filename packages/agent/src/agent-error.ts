/** Stable codes of {@link AgentError}. */
export type AgentErrorCode = 'prompt_not_found' | 'invalid_config' | 'invalid_memory';

/**
 * The one error class of `@ccagent/agent`: a stable string `code` plus the original `cause`. Thrown only for
 * programming and configuration errors (a missing prompt file, a bad env value); what a model does wrong is never
 * thrown — it becomes a repair, a bounce or a structured task failure.
 */
export class AgentError extends Error {
  /** Stable machine-readable code. */
  readonly code: AgentErrorCode;

  constructor(code: AgentErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'AgentError';
    this.code = code;
  }
}

/** An expected outcome callers branch on (STYLE.md): a value or a structured error, never thrown. */
export type Result<T, E> = { ok: true; value: T } | { ok: false; error: E };

/** True when `err` is an {@link AgentError}, optionally with the given code. */
export function isAgentError(err: unknown, code?: AgentErrorCode): err is AgentError {
  return err instanceof AgentError && (code === undefined || err.code === code);
}
