/**
 * `ModelError`: the one error class of `@ccagent/models`. Every failure of a model call is mapped to a stable
 * `code` so callers branch on it, never on provider messages.
 */

/**
 * Why a model call failed.
 * - `connection`: the server could not be reached or reset the connection before answering (retried).
 * - `server`: HTTP 5xx, or an error object the server sent instead of a reply (retried).
 * - `rate_limited`: HTTP 429 (retried).
 * - `model_not_found`: HTTP 404 for the model; the message names the model and how to install it (not retried).
 * - `context_overflow`: the prompt does not fit the context window and the server was told not to cut it (Ollama's
 *   `truncate: false`, or a server that always refuses such a prompt); not retried: the same prompt fails again.
 * - `bad_request`: another HTTP 4xx, e.g. a model that does not support tools (not retried).
 * - `unauthorized`: HTTP 401/403, e.g. a missing or wrong API key (not retried).
 * - `stream_interrupted`: the reply stream broke off before the provider signalled completion; no partial reply is
 *   returned as complete (retried only when no delta had reached the caller yet).
 * - `model_stalled`: a streamed reply went silent — no first chunk within `firstChunkTimeoutMs`, or no next chunk
 *   within `stallTimeoutMs` — so the attempt was cut (a hung model server); retried like `stream_interrupted`.
 * - `bad_response`: the provider answered with something that is not its documented wire format (not retried).
 * - `timeout`: the call's `timeoutMs` (which covers every retry) elapsed.
 * - `aborted`: the caller's `AbortSignal` fired.
 */
export type ModelErrorCode =
  | 'connection'
  | 'server'
  | 'rate_limited'
  | 'model_not_found'
  | 'context_overflow'
  | 'bad_request'
  | 'unauthorized'
  | 'stream_interrupted'
  | 'model_stalled'
  | 'bad_response'
  | 'timeout'
  | 'aborted';

/** Every `ModelErrorCode`, for exhaustive checks and docs. */
export const MODEL_ERROR_CODES: readonly ModelErrorCode[] = [
  'connection',
  'server',
  'rate_limited',
  'model_not_found',
  'context_overflow',
  'bad_request',
  'unauthorized',
  'stream_interrupted',
  'model_stalled',
  'bad_response',
  'timeout',
  'aborted',
];

const RETRYABLE: ReadonlySet<ModelErrorCode> = new Set([
  'connection',
  'server',
  'rate_limited',
  'stream_interrupted',
  'model_stalled',
]);

/** Whether an error of this code may succeed when the same request is sent again. */
export function isRetryableCode(code: ModelErrorCode): boolean {
  return RETRYABLE.has(code);
}

/** Fields of a `ModelError` besides its message. */
export interface ModelErrorDetails {
  /** `'ollama'` or `'openai-compatible'`. */
  provider: string;
  /** The model the call was for, when there is one. */
  model?: string;
  /** HTTP status of the failed response, when there was one. */
  status?: number;
  /** How many HTTP attempts were made before giving up (1 = no retry). */
  attempts?: number;
  cause?: unknown;
}

/** A failed model call, with a stable `code` and the original `cause`. */
export class ModelError extends Error {
  override readonly name = 'ModelError';
  readonly code: ModelErrorCode;
  readonly provider: string;
  readonly model: string | undefined;
  readonly status: number | undefined;
  /** How many HTTP attempts were made (1 = the first one failed and was not retried). */
  readonly attempts: number;

  constructor(code: ModelErrorCode, message: string, details: ModelErrorDetails) {
    super(message, details.cause === undefined ? undefined : { cause: details.cause });
    this.code = code;
    this.provider = details.provider;
    this.model = details.model;
    this.status = details.status;
    this.attempts = details.attempts ?? 1;
  }

  /**
   * Whether sending the same request again may succeed (`connection`, `server`, `rate_limited`,
   * `stream_interrupted`, `model_stalled`).
   */
  get retryable(): boolean {
    return isRetryableCode(this.code);
  }

  /** A copy that records how many attempts were made in total. */
  withAttempts(attempts: number): ModelError {
    return new ModelError(this.code, this.message, {
      provider: this.provider,
      ...(this.model !== undefined ? { model: this.model } : {}),
      ...(this.status !== undefined ? { status: this.status } : {}),
      attempts,
      cause: this.cause,
    });
  }
}

/** Type guard for `ModelError`, also across duplicated copies of this package (checks the shape, not the class). */
export function isModelError(error: unknown): error is ModelError {
  return (
    error instanceof ModelError ||
    (error instanceof Error &&
      error.name === 'ModelError' &&
      typeof (error as { code?: unknown }).code === 'string' &&
      typeof (error as { provider?: unknown }).provider === 'string')
  );
}
