/** Stable codes of CLI failures; each maps to one process exit code. */
export type CliErrorCode = 'usage' | 'not_found' | 'error' | 'unavailable';

/** Exit codes: 0 ok, 1 error, 2 usage, 3 not found. */
export const EXIT_CODES: Record<CliErrorCode, number> = { error: 1, unavailable: 1, usage: 2, not_found: 3 };

/** The CLI's one error class: carries a stable `code` (→ exit code) and the original `cause`. */
export class CliError extends Error {
  readonly code: CliErrorCode;
  constructor(code: CliErrorCode, message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CliError';
    this.code = code;
  }
  /** Process exit code for this error. */
  get exitCode(): number {
    return EXIT_CODES[this.code];
  }
}
