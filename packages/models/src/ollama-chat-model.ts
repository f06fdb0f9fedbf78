/**
 * `OllamaChatModel`: the `ChatModel` port on Ollama's `/api/chat`, through the official `ollama` npm client.
 *
 * The client builds the requests and parses the NDJSON stream; this adapter gives it a `fetch` that carries the
 * call's AbortSignal and deadline (the client passes none for non-streaming calls), maps HTTP and network failures
 * to `ModelError`, and guards the byte stream so malformed lines and mid-stream errors fail the call.
 */
import {
  Ollama,
  type ChatRequest as OllamaWireRequest,
  type ChatResponse as OllamaWireResponse,
} from 'ollama';
import {
  CallbackFailure,
  connectionError,
  DEFAULT_TIMEOUT_MS,
  describe,
  emitDelta,
  httpError,
  messageOf,
  runCall,
  stallOptions,
  type StallWatch,
  type CallProgress,
  type CallTarget,
  type ModelLogger,
  type RetryOptions,
  type StallOptions,
} from './call.js';
import type { ChatMessage, ChatModel, ChatRequest, ChatResponse, ChatUsage, ToolCall } from './chat-model.js';
import {
  partitionModels,
  type CheckModelsOptions,
  type ModelCheckResult,
  type ModelInventory,
} from './model-check.js';
import { isModelError, ModelError } from './model-error.js';
import { ndjsonGuard } from './ndjson-guard.js';
import { resolveOllamaHost } from './ollama-host.js';

/** Options of `OllamaChatModel`. */
export interface OllamaChatModelOptions {
  /** Ollama base URL or `OLLAMA_HOST`-style value; default: `OLLAMA_HOST` from `env`, else `http://127.0.0.1:11434`. */
  host?: string;
  /** Where to read `OLLAMA_HOST` from when `host` is not given (default `process.env`). */
  env?: Record<string, string | undefined>;
  /** Extra HTTP headers on every request (e.g. for a reverse proxy). */
  headers?: Record<string, string>;
  /** Default deadline of one call including retries, in ms (default 600 000; `0` = none). */
  timeoutMs?: number;
  /**
   * Streamed replies: longest silence between two chunks before the attempt is cut with `model_stalled` and
   * retried, in ms (default 60 000; `0` disables).
   */
  stallTimeoutMs?: number;
  /**
   * Streamed replies: longest wait for the first chunk — Ollama sends its headers with it, after loading the model
   * and evaluating the prompt — before the attempt is cut with `model_stalled`, in ms (default 300 000; `0` disables).
   */
  firstChunkTimeoutMs?: number;
  retry?: RetryOptions;
  logger?: ModelLogger;
  /** `fetch` implementation (default: the global one). */
  fetch?: typeof fetch;
}

const PROVIDER = 'ollama';

interface WireToolCall {
  id?: string;
  function: { index?: number; name: string; arguments: Record<string, unknown> };
}

interface WireMessage {
  role: string;
  content: string;
  thinking?: string;
  tool_calls?: WireToolCall[];
  tool_name?: string;
  tool_call_id?: string;
}

/** The `ChatModel` adapter for Ollama's native API. Stateless apart from its settings; safe to share. */
export class OllamaChatModel implements ChatModel, ModelInventory {
  readonly provider = PROVIDER;
  /** The base URL every request goes to, e.g. `http://127.0.0.1:11434`. */
  readonly host: string;
  private readonly headers: Record<string, string> | undefined;
  private readonly timeoutMs: number;
  private readonly stall: StallOptions;
  private readonly retry: RetryOptions;
  private readonly logger: ModelLogger | undefined;
  private readonly fetchImpl: typeof fetch;

  /** Throws a `TypeError` when `host` (or `OLLAMA_HOST`) is not a usable address. */
  constructor(options: OllamaChatModelOptions = {}) {
    this.host = resolveOllamaHost(options.host, options.env);
    this.headers = options.headers;
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.stall = stallOptions(options);
    this.retry = options.retry ?? {};
    this.logger = options.logger;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** Sends one chat request to `/api/chat`; resolves only with a reply the server marked `done`. */
  async chat(request: ChatRequest): Promise<ChatResponse> {
    const target: CallTarget = { provider: PROVIDER, host: this.host, model: request.model };
    const wire = toWireRequest(request);
    return runCall(
      target,
      {
        signal: request.signal,
        timeoutMs: request.timeoutMs ?? this.timeoutMs,
        retry: this.retry,
        logger: this.logger,
        stall: request.stream !== false ? this.stall : undefined,
      },
      (signal, progress, watch) => this.attempt(target, wire, request, signal, progress, watch),
    );
  }

  /**
   * Asks `/api/tags` (and `/api/version`) which of `names` are installed, comparing normalised names
   * (`qwen2.5` = `qwen2.5:latest`). Never throws for server trouble: an unreachable server is `{ ok: false }`.
   */
  async checkModels(names: readonly string[], options: CheckModelsOptions = {}): Promise<ModelCheckResult> {
    const target: CallTarget = { provider: PROVIDER, host: this.host };
    try {
      const { available, version } = await runCall(
        target,
        {
          signal: options.signal,
          timeoutMs: options.timeoutMs ?? this.timeoutMs,
          retry: this.retry,
          logger: this.logger,
        },
        async (signal) => {
          const client = this.client(target, signal, false);
          const [list, ver] = await Promise.allSettled([client.list(), client.version()]);
          if (list.status === 'rejected') throw list.reason;
          const models: unknown = (list.value as { models?: unknown }).models;
          if (!Array.isArray(models)) {
            throw new ModelError(
              'bad_response',
              `${describe(target)}: /api/tags did not return a "models" array`,
              {
                provider: PROVIDER,
              },
            );
          }
          const available = models
            .map((m: unknown) => {
              const r = (typeof m === 'object' && m !== null ? m : {}) as Record<string, unknown>;
              return typeof r['name'] === 'string'
                ? r['name']
                : typeof r['model'] === 'string'
                  ? r['model']
                  : undefined;
            })
            .filter((n): n is string => n !== undefined);
          const version =
            ver.status === 'fulfilled' && typeof ver.value?.version === 'string'
              ? ver.value.version
              : undefined;
          return { available, version };
        },
      );
      return {
        ok: true,
        value: {
          provider: PROVIDER,
          host: this.host,
          ...(version !== undefined ? { version } : {}),
          ...partitionModels(names, available),
          available,
        },
      };
    } catch (error) {
      if (isModelError(error)) return { ok: false, error };
      throw error;
    }
  }

  /**
   * An `ollama` client whose every request carries `signal` and whose failures are `ModelError`s; `watch` sees every
   * chunk of a streamed body.
   */
  private client(target: CallTarget, signal: AbortSignal, guardStream: boolean, watch?: StallWatch): Ollama {
    const fetchImpl = this.fetchImpl;
    const guardedFetch = async (input: string | URL | Request, init?: RequestInit): Promise<Response> => {
      const signals = [signal];
      if (init?.signal) signals.push(init.signal);
      let response: Response;
      try {
        response = await fetchImpl(input, { ...init, signal: AbortSignal.any(signals) });
      } catch (error) {
        if (signal.aborted) throw error;
        throw connectionError(target, error, 'is Ollama running (`ollama serve`) and OLLAMA_HOST right?');
      }
      if (!response.ok) {
        throw await httpError(
          target,
          response,
          (serverMessage) =>
            `model "${target.model ?? '?'}" is not available on Ollama at ${target.host} (server said: ${serverMessage}); ` +
            `install it with \`ollama pull ${target.model ?? '<model>'}\``,
        );
      }
      if (guardStream && response.body) {
        const body = watch ? watch.watchBody(response.body) : response.body;
        return new Response(body.pipeThrough(ndjsonGuard(target)), {
          status: response.status,
          statusText: response.statusText,
          headers: response.headers,
        });
      }
      return response;
    };
    return new Ollama({
      host: this.host,
      fetch: guardedFetch as typeof fetch,
      ...(this.headers ? { headers: this.headers } : {}),
    });
  }

  private async attempt(
    target: CallTarget,
    wire: OllamaWireRequest,
    request: ChatRequest,
    signal: AbortSignal,
    progress: CallProgress,
    watch: StallWatch | undefined,
  ): Promise<ChatResponse> {
    const stream = request.stream !== false;
    const client = this.client(target, signal, stream, watch);
    const acc = new ReplyAccumulator(target, request.model);
    if (!stream) {
      let reply: OllamaWireResponse;
      try {
        reply = await client.chat({ ...wire, stream: false });
      } catch (error) {
        throw bodyFailure(target, error, signal);
      }
      acc.add(reply);
      if (reply.done !== true) {
        throw new ModelError(
          'bad_response',
          `${describe(target)}: non-streaming reply without "done": true`,
          {
            provider: PROVIDER,
            model: request.model,
          },
        );
      }
      return acc.finish();
    }
    const parts = await client.chat({ ...wire, stream: true });
    try {
      for await (const part of parts) {
        const delta = acc.add(part);
        if (delta) emitDelta(request.onDelta, delta, progress);
      }
    } catch (error) {
      throw bodyFailure(target, error, signal);
    }
    if (!acc.done) {
      throw new ModelError(
        'stream_interrupted',
        `${describe(target)}: the stream ended before the final chunk`,
        {
          provider: PROVIDER,
          model: request.model,
        },
      );
    }
    return acc.finish();
  }
}

/** Maps a failure while reading a reply body: a cut connection or an early end is `stream_interrupted`. */
function bodyFailure(target: CallTarget, error: unknown, signal: AbortSignal): unknown {
  if (signal.aborted || isModelError(error) || error instanceof CallbackFailure) return error;
  if (error instanceof SyntaxError) {
    return new ModelError('bad_response', `${describe(target)}: reply is not valid JSON: ${error.message}`, {
      provider: target.provider,
      ...(target.model !== undefined ? { model: target.model } : {}),
      cause: error,
    });
  }
  return new ModelError(
    'stream_interrupted',
    `${describe(target)}: the reply was cut off before completion (${messageOf(error)}); no partial reply is used`,
    {
      provider: target.provider,
      ...(target.model !== undefined ? { model: target.model } : {}),
      cause: error,
    },
  );
}

/** Collects streamed parts into the complete reply and validates each part's shape (the edge to trust). */
class ReplyAccumulator {
  done = false;
  private content = '';
  private thinking = '';
  private readonly toolCalls: ToolCall[] = [];
  private usage: ChatUsage = {};
  private model: string;

  constructor(
    private readonly target: CallTarget,
    requestedModel: string,
  ) {
    this.model = requestedModel;
  }

  private bad(what: string): ModelError {
    return new ModelError('bad_response', `${describe(this.target)}: ${what}`, {
      provider: this.target.provider,
      ...(this.target.model !== undefined ? { model: this.target.model } : {}),
    });
  }

  /** Adds one wire part; returns the delta it carried (if any). */
  add(part: unknown): { content?: string; thinking?: string; toolCalls?: ToolCall[] } | undefined {
    if (typeof part !== 'object' || part === null) throw this.bad('reply part is not an object');
    const p = part as Record<string, unknown>;
    if (typeof p['model'] === 'string') this.model = p['model'];
    const message = p['message'];
    let delta: { content?: string; thinking?: string; toolCalls?: ToolCall[] } | undefined;
    if (message !== undefined && message !== null) {
      if (typeof message !== 'object') throw this.bad('"message" is not an object');
      const m = message as Record<string, unknown>;
      const content = m['content'];
      if (content !== undefined && content !== null && typeof content !== 'string')
        throw this.bad('"message.content" is not a string');
      const thinking = m['thinking'];
      if (thinking !== undefined && thinking !== null && typeof thinking !== 'string')
        throw this.bad('"message.thinking" is not a string');
      const calls = parseToolCalls(m['tool_calls'], (w) => this.bad(w));
      if (typeof content === 'string' && content !== '') {
        this.content += content;
        delta = { ...delta, content };
      }
      if (typeof thinking === 'string' && thinking !== '') {
        this.thinking += thinking;
        delta = { ...delta, thinking };
      }
      if (calls.length > 0) {
        this.toolCalls.push(...calls);
        delta = { ...delta, toolCalls: calls };
      }
    }
    if (p['done'] === true) {
      this.done = true;
      this.usage = usageOf(p);
    }
    return delta;
  }

  finish(): ChatResponse {
    return {
      model: this.model,
      message: {
        role: 'assistant',
        content: this.content,
        ...(this.thinking !== '' ? { thinking: this.thinking } : {}),
        toolCalls: this.toolCalls,
      },
      usage: this.usage,
    };
  }
}

function parseToolCalls(raw: unknown, bad: (what: string) => ModelError): ToolCall[] {
  if (raw === undefined || raw === null) return [];
  if (!Array.isArray(raw)) throw bad('"message.tool_calls" is not an array');
  return raw.map((c: unknown, i) => {
    const call = (typeof c === 'object' && c !== null ? c : {}) as Record<string, unknown>;
    const fn = call['function'];
    if (typeof fn !== 'object' || fn === null) throw bad(`tool_calls[${i}] has no "function" object`);
    const f = fn as Record<string, unknown>;
    if (typeof f['name'] !== 'string' || f['name'] === '')
      throw bad(`tool_calls[${i}].function.name is missing`);
    let args: unknown = f['arguments'] ?? {};
    if (typeof args === 'string') {
      // Some servers send arguments as a JSON string, like OpenAI; accept it if it parses to an object.
      const text = args;
      try {
        args = text.trim() === '' ? {} : (JSON.parse(text) as unknown);
      } catch {
        throw bad(`tool call "${f['name']}" has arguments that are not valid JSON: ${text.slice(0, 200)}`);
      }
    }
    if (typeof args !== 'object' || args === null || Array.isArray(args)) {
      throw bad(`tool call "${f['name']}" has arguments that are not a JSON object`);
    }
    return {
      ...(typeof call['id'] === 'string' && call['id'] !== '' ? { id: call['id'] } : {}),
      name: f['name'],
      arguments: args as Record<string, unknown>,
    };
  });
}

function usageOf(p: Record<string, unknown>): ChatUsage {
  const usage: ChatUsage = {};
  const num = (key: string): number | undefined =>
    typeof p[key] === 'number' ? (p[key] as number) : undefined;
  if (typeof p['done_reason'] === 'string') usage.doneReason = p['done_reason'];
  const fields: [keyof ChatUsage, string][] = [
    ['promptEvalCount', 'prompt_eval_count'],
    ['evalCount', 'eval_count'],
    ['totalDurationNs', 'total_duration'],
    ['loadDurationNs', 'load_duration'],
    ['promptEvalDurationNs', 'prompt_eval_duration'],
    ['evalDurationNs', 'eval_duration'],
  ];
  for (const [ours, theirs] of fields) {
    const v = num(theirs);
    if (v !== undefined) (usage as Record<string, number>)[ours] = v;
  }
  return usage;
}

function toWireMessage(m: ChatMessage): WireMessage {
  return {
    role: m.role,
    content: m.content,
    ...(m.thinking !== undefined ? { thinking: m.thinking } : {}),
    ...(m.toolCalls && m.toolCalls.length > 0
      ? {
          tool_calls: m.toolCalls.map((c) => ({
            ...(c.id !== undefined ? { id: c.id } : {}),
            function: { name: c.name, arguments: c.arguments },
          })),
        }
      : {}),
    ...(m.toolName !== undefined ? { tool_name: m.toolName } : {}),
    ...(m.toolCallId !== undefined ? { tool_call_id: m.toolCallId } : {}),
  };
}

/** The `/api/chat` body for a request (without `stream`, which each attempt sets). */
export function toWireRequest(request: ChatRequest): OllamaWireRequest {
  const o = request.options ?? {};
  const options: Record<string, unknown> = {};
  if (o.temperature !== undefined) options['temperature'] = o.temperature;
  if (o.numCtx !== undefined) options['num_ctx'] = o.numCtx;
  if (o.numPredict !== undefined) options['num_predict'] = o.numPredict;
  if (o.seed !== undefined) options['seed'] = o.seed;
  if (o.topP !== undefined) options['top_p'] = o.topP;
  if (o.stop !== undefined) options['stop'] = o.stop;
  const wire = {
    model: request.model,
    messages: request.messages.map(toWireMessage),
    ...(request.tools && request.tools.length > 0
      ? {
          tools: request.tools.map((t) => ({
            type: 'function',
            function: { name: t.name, description: t.description, parameters: t.parameters },
          })),
        }
      : {}),
    ...(request.format !== undefined ? { format: request.format } : {}),
    ...(Object.keys(options).length > 0 ? { options } : {}),
    ...(request.keepAlive !== undefined ? { keep_alive: request.keepAlive } : {}),
    ...(request.truncate !== undefined ? { truncate: request.truncate } : {}),
    ...(request.think !== undefined ? { think: request.think } : {}),
  };
  // The client's types lag the API (no tool_call_id, id on tool calls); the extra fields go out as JSON unchanged.
  return wire as unknown as OllamaWireRequest;
}
