/**
 * The machinery every model call shares, whatever the provider: the call's deadline and cancellation, bounded
 * retries with exponential backoff and jitter (p-retry), and the mapping of HTTP and network failures to
 * `ModelError` codes.
 */
import pRetry from 'p-retry';
import { isModelError, ModelError, type ModelErrorCode } from './model-error.js';

/**
 * Retry policy for retryable failures (`connection`, `server`, `rate_limited`, and `stream_interrupted` or
 * `model_stalled` before any delta reached the caller). Delays grow as `minDelayMs * factor^n`, capped at `maxDelayMs`, each multiplied by a
 * random factor in [1, 2) when `jitter` is on so that many clients do not retry in lockstep.
 */
export interface RetryOptions {
  /** Retries after the first attempt (default 3; 0 disables retrying). */
  retries?: number;
  /** Delay before the first retry, in ms (default 500). */
  minDelayMs?: number;
  /** Upper bound of one delay, in ms (default 8000). */
  maxDelayMs?: number;
  /** Growth factor between delays (default 2). */
  factor?: number;
  /** Randomise each delay by a factor in [1, 2) (default true). */
  jitter?: boolean;
}

/** The subset of a pino logger this package uses. Libraries never print; pass the app's logger to see retries. */
export interface ModelLogger {
  warn(obj: Record<string, unknown>, msg?: string): void;
  debug(obj: Record<string, unknown>, msg?: string): void;
}

/** Default per-call deadline (covers all retries): 10 minutes, long enough for a slow local model. */
export const DEFAULT_TIMEOUT_MS = 600_000;

/**
 * Default longest silence between two chunks of a streamed reply: 60 s. A model that produces tokens never pauses
 * this long; a hung model server (GPU wedged, runner deadlocked, a proxy holding a dead upstream) does.
 */
export const DEFAULT_STALL_TIMEOUT_MS = 60_000;

/**
 * Default longest wait for the first chunk of a streamed reply (response headers included): 5 min. Before its first
 * token a server may load the model and evaluate a long prompt, which on a CPU takes minutes; Ollama's own bound on
 * a stalled model load (`OLLAMA_LOAD_TIMEOUT`) is also 5 minutes.
 */
export const DEFAULT_FIRST_CHUNK_TIMEOUT_MS = 300_000;

/**
 * Stall detection of streamed replies: an attempt whose stream goes silent is aborted with a `model_stalled`
 * `ModelError` (retried like a cut stream). Non-streaming requests are bounded by the call deadline only: their body
 * arrives in one piece when the whole reply is generated.
 */
export interface StallOptions {
  /** Longest silence between two chunks once the first arrived, in ms (default 60 000; `0` disables). */
  stallTimeoutMs?: number;
  /** Longest wait for the first chunk (headers, model load, prompt evaluation), in ms (default 300 000; `0` disables). */
  firstChunkTimeoutMs?: number;
}

/** The stall bounds of an adapter's options, copied (absent fields stay absent, so the defaults apply). */
export function stallOptions(o: StallOptions): StallOptions {
  return {
    ...(o.stallTimeoutMs !== undefined ? { stallTimeoutMs: o.stallTimeoutMs } : {}),
    ...(o.firstChunkTimeoutMs !== undefined ? { firstChunkTimeoutMs: o.firstChunkTimeoutMs } : {}),
  };
}

/** Who is being called, for error messages. */
export interface CallTarget {
  provider: string;
  host: string;
  model?: string;
}

/** Settings of one call. */
export interface CallSettings {
  signal?: AbortSignal | undefined;
  /** Deadline of the whole call including retries; `0` or `Infinity` = none. */
  timeoutMs: number;
  retry: RetryOptions;
  logger?: ModelLogger | undefined;
  /** Stall detection for this call (streamed replies only); absent = off. */
  stall?: StallOptions | undefined;
}

/** What an attempt reports back to the retry loop. */
export interface CallProgress {
  /** Set once a delta was handed to the caller: from then on a failure is final (no silent replay). */
  emitted: boolean;
}

/**
 * Watches one attempt's stream for silence. Arm it before the request; call {@link StallWatch.chunk} for every
 * chunk of the body; its `signal` aborts the attempt when a bound passes. Always {@link StallWatch.stop} it.
 */
export class StallWatch {
  /** Aborts when the stream stalled (pass it to the request together with the call's signal). */
  readonly signal: AbortSignal;
  private readonly controller = new AbortController();
  private timer: ReturnType<typeof setTimeout> | undefined;
  private chunks = 0;
  private stopped = false;
  private failure: ModelError | undefined;

  constructor(
    private readonly target: CallTarget,
    private readonly stallMs: number,
    private readonly firstChunkMs: number,
  ) {
    this.signal = this.controller.signal;
    this.arm();
  }

  /** A watch with the given options and their defaults; `undefined` (watching nothing) when both bounds are off. */
  static start(target: CallTarget, options: StallOptions | undefined): StallWatch | undefined {
    if (options === undefined) return undefined;
    const stallMs = bound(options.stallTimeoutMs, DEFAULT_STALL_TIMEOUT_MS);
    const firstChunkMs = bound(options.firstChunkTimeoutMs, DEFAULT_FIRST_CHUNK_TIMEOUT_MS);
    if (stallMs === 0 && firstChunkMs === 0) return undefined;
    return new StallWatch(target, stallMs, firstChunkMs);
  }

  /** The `model_stalled` error once the stream stalled, else `undefined`. */
  get error(): ModelError | undefined {
    return this.failure;
  }

  /** A chunk of the reply arrived: the silence starts over. */
  chunk(): void {
    this.chunks += 1;
    this.arm();
  }

  /** The attempt is over (finished or failed): no more timers. */
  stop(): void {
    this.stopped = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
  }

  /** A body stream that passes `body` through unchanged and counts its chunks. */
  watchBody(body: ReadableStream<Uint8Array>): ReadableStream<Uint8Array> {
    return body.pipeThrough(
      new TransformStream<Uint8Array, Uint8Array>({
        transform: (chunk, controller) => {
          this.chunk();
          controller.enqueue(chunk);
        },
      }),
    );
  }

  private arm(): void {
    if (this.stopped || this.failure) return;
    if (this.timer !== undefined) clearTimeout(this.timer);
    this.timer = undefined;
    const first = this.chunks === 0;
    const ms = first ? this.firstChunkMs : this.stallMs;
    if (ms <= 0) return;
    this.timer = setTimeout(() => {
      this.timer = undefined;
      const t = this.target;
      const what = first
        ? `no reply within ${ms} ms (firstChunkTimeoutMs: model load and prompt evaluation included)`
        : `the reply stream went silent for ${ms} ms after ${this.chunks} chunk${this.chunks === 1 ? '' : 's'} (stallTimeoutMs)`;
      this.failure = new ModelError('model_stalled', `${describe(t)} stalled: ${what}`, {
        provider: t.provider,
        ...(t.model !== undefined ? { model: t.model } : {}),
      });
      this.controller.abort(this.failure);
    }, ms);
    // A pending stall timer must not keep a process alive on its own.
    (this.timer as { unref?: () => void }).unref?.();
  }
}

function bound(value: number | undefined, fallback: number): number {
  if (value === undefined) return fallback;
  return Number.isFinite(value) && value > 0 ? value : 0;
}

/** Wraps an exception thrown by the caller's own `onDelta` callback so it is rethrown untouched, never retried. */
export class CallbackFailure extends Error {
  constructor(readonly original: unknown) {
    super('onDelta callback threw');
  }
}

function stopReason(
  target: CallTarget,
  userSignal: AbortSignal | undefined,
  timeoutMs: number,
  attempts: number,
  cause: unknown,
  lastError: ModelError | undefined,
): ModelError {
  // When the deadline ends the retries (during a backoff, say), what pRetry hands us is the abort reason; the reason
  // the attempts failed is the last attempt's error: it stays in the message and is the `cause`.
  const details = {
    provider: target.provider,
    ...(target.model !== undefined ? { model: target.model } : {}),
    ...(lastError?.status !== undefined ? { status: lastError.status } : {}),
    attempts,
    cause: lastError ?? cause,
  };
  const last = lastError ? `; last error: ${lastError.message}` : '';
  if (userSignal?.aborted) {
    return new ModelError('aborted', `${describe(target)} was aborted by the caller${last}`, {
      ...details,
      cause: userSignal.reason ?? details.cause,
    });
  }
  return new ModelError(
    'timeout',
    `${describe(target)} did not complete within ${timeoutMs} ms (after ${attempts} attempt${attempts === 1 ? '' : 's'})${last}`,
    details,
  );
}

/** `model "x" on ollama at http://…` — the subject of error messages. */
export function describe(target: CallTarget): string {
  return `${target.model !== undefined ? `call to model "${target.model}"` : 'request'} on ${target.provider} at ${target.host}`;
}

/**
 * Runs `attempt` until it succeeds, a non-retryable error occurs, retries are used up, the deadline passes or the
 * caller aborts. Every failure leaves as a `ModelError` carrying the number of attempts made. `attempt` receives the
 * signal that ends the attempt (caller abort, deadline, or — with `settings.stall` — a stalled stream) and must pass
 * it to its HTTP request; with stall detection it also gets the attempt's {@link StallWatch}, to feed every body
 * chunk to. A stall fails the attempt with `model_stalled`, which is retried.
 */
export async function runCall<T>(
  target: CallTarget,
  settings: CallSettings,
  attempt: (signal: AbortSignal, progress: CallProgress, watch: StallWatch | undefined) => Promise<T>,
): Promise<T> {
  const { signal: userSignal, timeoutMs } = settings;
  const signals: AbortSignal[] = [];
  if (userSignal) signals.push(userSignal);
  if (timeoutMs > 0 && Number.isFinite(timeoutMs)) signals.push(AbortSignal.timeout(timeoutMs));
  const callSignal = signals.length > 0 ? AbortSignal.any(signals) : new AbortController().signal;
  const progress: CallProgress = { emitted: false };
  let attempts = 0;
  /** The error of the last attempt that failed on its own (not because the call's deadline or caller stopped it). */
  let lastError: ModelError | undefined;
  if (callSignal.aborted) throw stopReason(target, userSignal, timeoutMs, 0, undefined, undefined);

  const retry = settings.retry;
  try {
    return await pRetry(
      async () => {
        attempts += 1;
        const watch = StallWatch.start(target, settings.stall);
        try {
          return await attempt(
            watch ? AbortSignal.any([callSignal, watch.signal]) : callSignal,
            progress,
            watch,
          );
        } catch (error) {
          if (error instanceof CallbackFailure || callSignal.aborted) throw error;
          if (watch?.error) {
            lastError = watch.error;
            throw lastError;
          }
          if (isModelError(error)) {
            lastError = error;
            throw error;
          }
          lastError = new ModelError(
            'bad_response',
            `${describe(target)} failed unexpectedly: ${messageOf(error)}`,
            {
              provider: target.provider,
              ...(target.model !== undefined ? { model: target.model } : {}),
              cause: error,
            },
          );
          throw lastError;
        } finally {
          watch?.stop();
        }
      },
      {
        retries: Math.max(0, retry.retries ?? 3),
        minTimeout: Math.max(0, retry.minDelayMs ?? 500),
        maxTimeout: Math.max(0, retry.maxDelayMs ?? 8000),
        factor: retry.factor ?? 2,
        randomize: retry.jitter ?? true,
        signal: callSignal,
        shouldRetry: ({ error, attemptNumber, retriesLeft }) => {
          const again = isModelError(error) && error.retryable && !progress.emitted && !callSignal.aborted;
          if (again) {
            settings.logger?.warn(
              {
                provider: target.provider,
                model: target.model,
                host: target.host,
                code: error.code,
                status: error.status,
                attempt: attemptNumber,
                retries_left: retriesLeft,
                err: error.message,
              },
              'model call failed; retrying',
            );
          }
          return again;
        },
      },
    );
  } catch (error) {
    if (error instanceof CallbackFailure) throw error.original;
    if (callSignal.aborted) throw stopReason(target, userSignal, timeoutMs, attempts, error, lastError);
    if (isModelError(error)) throw error.withAttempts(attempts);
    throw new ModelError('bad_response', `${describe(target)} failed unexpectedly: ${messageOf(error)}`, {
      provider: target.provider,
      ...(target.model !== undefined ? { model: target.model } : {}),
      attempts,
      cause: error,
    });
  }
}

/** The message of any thrown value. */
export function messageOf(error: unknown): string {
  return error instanceof Error ? error.message : String(error);
}

/** The first `code` (ECONNREFUSED, UND_ERR_SOCKET, …) along an error's `cause` chain, or of an AggregateError's parts. */
export function networkCode(error: unknown): string | undefined {
  let current: unknown = error;
  for (let depth = 0; depth < 6 && current !== undefined && current !== null; depth += 1) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') return code;
    const parts = (current as { errors?: unknown }).errors;
    if (Array.isArray(parts)) {
      for (const part of parts) {
        const inner = networkCode(part);
        if (inner !== undefined) return inner;
      }
    }
    current = (current as { cause?: unknown }).cause;
  }
  return undefined;
}

/** A `connection` error for a request that failed before any response arrived (refused, reset, DNS, …). */
export function connectionError(target: CallTarget, error: unknown, hint: string): ModelError {
  const code = networkCode(error);
  return new ModelError(
    'connection',
    `cannot reach ${target.provider} at ${target.host}${code ? ` (${code})` : ''}: ${messageOf(error)}${hint ? `; ${hint}` : ''}`,
    {
      provider: target.provider,
      ...(target.model !== undefined ? { model: target.model } : {}),
      cause: error,
    },
  );
}

/** Extracts the error message of an error body in any of the shapes servers use (Ollama, OpenAI, vLLM, plain text). */
export function errorBodyMessage(text: string): string {
  const trimmed = text.trim();
  if (trimmed === '') return '';
  try {
    const body = JSON.parse(trimmed) as unknown;
    if (typeof body === 'object' && body !== null) {
      const b = body as Record<string, unknown>;
      const err = b['error'];
      if (typeof err === 'string') return err;
      if (
        typeof err === 'object' &&
        err !== null &&
        typeof (err as Record<string, unknown>)['message'] === 'string'
      ) {
        return (err as Record<string, string>)['message'] ?? '';
      }
      if (typeof b['message'] === 'string') return b['message'];
      if (typeof b['detail'] === 'string') return b['detail'];
    }
  } catch {
    // not JSON: fall through to the raw text
  }
  return trimmed.length > 300 ? `${trimmed.slice(0, 300)}…` : trimmed;
}

/**
 * Whether a 4xx answer says the prompt does not fit the context window, in the words servers use: Ollama ("the input
 * length exceeds the context length"), llama.cpp's server ("exceeds the available context size"), OpenAI and vLLM
 * ("maximum context length").
 */
export function isContextOverflow(status: number, serverMessage: string): boolean {
  return (
    status >= 400 &&
    status < 500 &&
    /exceeds the (?:available )?context (?:length|size)|maximum context length|context length exceeded/i.test(
      serverMessage,
    )
  );
}

/** The `ModelError` code for an HTTP status that is not 2xx. */
export function codeForStatus(status: number): ModelErrorCode {
  if (status === 404) return 'model_not_found';
  if (status === 401 || status === 403) return 'unauthorized';
  if (status === 429) return 'rate_limited';
  if (status >= 500 || status === 408) return 'server';
  if (status >= 400) return 'bad_request';
  return 'bad_response';
}

/**
 * Reads a failed HTTP response's body and maps it to a `ModelError`. `notFound` builds the message for 404, which
 * providers answer for an unknown model.
 */
export async function httpError(
  target: CallTarget,
  response: Response,
  notFound: (serverMessage: string) => string,
): Promise<ModelError> {
  let text = '';
  try {
    text = await response.text();
  } catch {
    // the body is only used for the message
  }
  const serverMessage = errorBodyMessage(text) || `${response.status} ${response.statusText}`.trim();
  const code = isContextOverflow(response.status, serverMessage)
    ? 'context_overflow'
    : codeForStatus(response.status);
  const message =
    code === 'model_not_found'
      ? notFound(serverMessage)
      : `${describe(target)} failed with HTTP ${response.status}: ${serverMessage}`;
  return new ModelError(code, message, {
    provider: target.provider,
    ...(target.model !== undefined ? { model: target.model } : {}),
    status: response.status,
  });
}

/** Calls `onDelta` so that an exception from the caller's callback is not mistaken for a model failure. */
export function emitDelta<D>(
  onDelta: ((delta: D) => void) | undefined,
  delta: D,
  progress: CallProgress,
): void {
  if (!onDelta) return;
  progress.emitted = true;
  try {
    onDelta(delta);
  } catch (error) {
    throw new CallbackFailure(error);
  }
}
