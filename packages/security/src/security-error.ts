/** Stable codes of {@link SecurityError}. */
export type SecurityErrorCode =
  /** A record the rules refuse to store (a computer credential without a client id …); nothing was written. */
  'invalid_input';

/**
 * The one error class of `@ccagent/security`, thrown by {@link InMemoryCredentialStore} for what the rules refuse
 * (the durable stores throw their own `StoreError('invalid_input')` with the same message). Expected refusals of
 * callers (a used code, a pending pairing) are returned as `{ ok: false, code, message }`, never thrown.
 */
export class SecurityError extends Error {
  override readonly name = 'SecurityError';
  /** Stable machine-readable code. */
  readonly code: SecurityErrorCode;

  constructor(code: SecurityErrorCode, message: string, options: { cause?: unknown } = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.code = code;
  }
}
