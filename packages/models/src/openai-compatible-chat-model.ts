/**
 * `OpenAICompatibleChatModel`: the `ChatModel` port on `POST /v1/chat/completions`, as served by LM Studio,
 * llama.cpp's server, vLLM and Ollama's own `/v1`. Plain `fetch`; SSE parsed with `eventsource-parser`. Same
 * `ModelError` taxonomy, retries, deadline and abort as the Ollama adapter.
 *
 * Size (over 500 lines): the request mapping, the SSE stream reader and the error mapping of one wire
 * dialect; split, each part would only be read together with the others.
 */
import { createParser, type EventSourceMessage } from 'eventsource-parser';
import {
  connectionError,
  DEFAULT_TIMEOUT_MS,
  describe,
  emitDelta,
  httpError,
  messageOf,
  runCall,
  stallOptions,
  CallbackFailure,
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

/** Options of `OpenAICompatibleChatModel`. */
export interface OpenAICompatibleChatModelOptions {
  /** Base URL including the API version path, e.g. `http://127.0.0.1:1234/v1` (LM Studio), `http://host:8000/v1`. */
  baseUrl: string;
  /** Sent as `Authorization: Bearer <apiKey>` when given. */
  apiKey?: string;
  /** Extra HTTP headers on every request. */
  headers?: Record<string, string>;
  /** Default deadline of one call including retries, in ms (default 600 000; `0` = none). */
  timeoutMs?: number;
  /**
   * Streamed replies: longest silence between two chunks (SSE bytes, comments included) before the attempt is cut
   * with `model_stalled` and retried, in ms (default 60 000; `0` disables).
   */
  stallTimeoutMs?: number;
  /**
   * Streamed replies: longest wait for the first body chunk (headers, model load and prompt evaluation included)
   * before the attempt is cut with `model_stalled`, in ms (default 300 000; `0` disables).
   */
  firstChunkTimeoutMs?: number;
  retry?: RetryOptions;
  logger?: ModelLogger;
  /** `json_schema.name` sent with a JSON Schema `format` (default `'response'`). */
  schemaName?: string;
  /** `json_schema.strict` sent with a JSON Schema `format` (default `true`). */
  strictSchema?: boolean;
  /** Ask for usage in streams (`stream_options.include_usage`, default `true`); turn off for servers that reject it. */
  includeUsage?: boolean;
  /** `fetch` implementation (default: the global one). */
  fetch?: typeof fetch;
}

const PROVIDER = 'openai-compatible';

interface WireToolCall {
  id: string;
  type: 'function';
  function: { name: string; arguments: string };
}

interface WireMessage {
  role: string;
  content: string | null;
  tool_calls?: WireToolCall[];
  tool_call_id?: string;
}

/**
 * The `ChatModel` adapter for OpenAI-compatible servers. Stateless apart from its settings; safe to share.
 *
 * Not sent, because `/v1/chat/completions` has no field for them: `options.numCtx` (`num_ctx`), `keepAlive`
 * (`keep_alive`) and a boolean `think`. These servers fix the context size and how long a model stays loaded when
 * the model is loaded — llama.cpp's server with `--ctx-size` at launch, vLLM with `--max-model-len`, LM Studio in
 * its load settings, Ollama's `/v1` with `OLLAMA_CONTEXT_LENGTH` / `OLLAMA_KEEP_ALIVE` or a Modelfile
 * `PARAMETER num_ctx`. Size the server's context at least as large as the prompts the agent builds (its
 * `memory.numCtx` policy), or long histories are truncated by the server. The first request that sets one of them
 * logs a warning (once per adapter) naming what was not sent. A `think` level (`'low'` …) is sent as
 * `reasoning_effort`; `numPredict` as `max_tokens`.
 */
export class OpenAICompatibleChatModel implements ChatModel, ModelInventory {
  readonly provider = PROVIDER;
  /** Base URL without a trailing slash, e.g. `http://127.0.0.1:1234/v1`. */
  readonly baseUrl: string;
  private readonly options: OpenAICompatibleChatModelOptions;
  private readonly stall: StallOptions;
  private readonly timeoutMs: number;
  private readonly fetchImpl: typeof fetch;
  /** Request fields already reported as not sent (each is logged once). */
  private readonly reportedUnsent = new Set<string>();

  /** Throws a `TypeError` when `baseUrl` is not an http(s) URL. */
  constructor(options: OpenAICompatibleChatModelOptions) {
    let url: URL;
    try {
      url = new URL(options.baseUrl);
    } catch {
      throw new TypeError(
        `invalid baseUrl ${JSON.stringify(options.baseUrl)}: expected e.g. http://127.0.0.1:1234/v1`,
      );
    }
    if (url.protocol !== 'http:' && url.protocol !== 'https:') {
      throw new TypeError(
        `invalid baseUrl ${JSON.stringify(options.baseUrl)}: only http and https are supported`,
      );
    }
    this.baseUrl = options.baseUrl.replace(/\/+$/, '');
    this.options = options;
    this.stall = stallOptions(options);
    this.timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
    this.fetchImpl = options.fetch ?? fetch;
  }

  /** Sends one chat request; resolves only with a reply the server finished (`finish_reason` / `[DONE]`). */
  async chat(request: ChatRequest): Promise<ChatResponse> {
    const target: CallTarget = { provider: PROVIDER, host: this.baseUrl, model: request.model };
    const stream = request.stream !== false;
    const body = JSON.stringify(this.toWireRequest(request, stream));
    return runCall(
      target,
      {
        signal: request.signal,
        timeoutMs: request.timeoutMs ?? this.timeoutMs,
        retry: this.options.retry ?? {},
        logger: this.options.logger,
        stall: stream ? this.stall : undefined,
      },
      async (signal, progress, watch) => {
        const response = await this.send(target, 'POST', '/chat/completions', signal, body, stream);
        return stream
          ? await readStream(target, response, request, progress, signal, watch)
          : await readCompletion(target, response, request.model, signal);
      },
    );
  }

  /** Asks `GET /models` which of `names` the server offers (exact id, or the same Ollama-normalised name). */
  async checkModels(names: readonly string[], options: CheckModelsOptions = {}): Promise<ModelCheckResult> {
    const target: CallTarget = { provider: PROVIDER, host: this.baseUrl };
    try {
      const available = await runCall(
        target,
        {
          signal: options.signal,
          timeoutMs: options.timeoutMs ?? this.timeoutMs,
          retry: this.options.retry ?? {},
          logger: this.options.logger,
        },
        async (signal) => {
          const response = await this.send(target, 'GET', '/models', signal, undefined, false);
          const body = (await readJson(target, response, signal)) as { data?: unknown };
          if (!Array.isArray(body.data)) {
            throw new ModelError(
              'bad_response',
              `${describe(target)}: GET /models did not return a "data" array`,
              {
                provider: PROVIDER,
              },
            );
          }
          return body.data
            .map((m: unknown) =>
              typeof m === 'object' && m !== null && typeof (m as { id?: unknown }).id === 'string'
                ? (m as { id: string }).id
                : undefined,
            )
            .filter((id): id is string => id !== undefined);
        },
      );
      return {
        ok: true,
        value: { provider: PROVIDER, host: this.baseUrl, ...partitionModels(names, available), available },
      };
    } catch (error) {
      if (isModelError(error)) return { ok: false, error };
      throw error;
    }
  }

  private async send(
    target: CallTarget,
    method: 'GET' | 'POST',
    path: string,
    signal: AbortSignal,
    body: string | undefined,
    stream: boolean,
  ): Promise<Response> {
    const headers: Record<string, string> = {
      Accept: stream ? 'text/event-stream' : 'application/json',
      ...(body !== undefined ? { 'Content-Type': 'application/json' } : {}),
      ...(this.options.apiKey ? { Authorization: `Bearer ${this.options.apiKey}` } : {}),
      ...this.options.headers,
    };
    let response: Response;
    try {
      response = await this.fetchImpl(`${this.baseUrl}${path}`, {
        method,
        headers,
        signal,
        ...(body !== undefined ? { body } : {}),
      });
    } catch (error) {
      if (signal.aborted) throw error;
      throw connectionError(target, error, 'is the server running and baseUrl right?');
    }
    if (!response.ok) {
      throw await httpError(
        target,
        response,
        (serverMessage) =>
          `model "${target.model ?? '?'}" was not found on ${this.baseUrl} (server said: ${serverMessage}); ` +
          `check the model id against GET ${this.baseUrl}/models` +
          (target.model !== undefined ? ` (for an Ollama server: \`ollama pull ${target.model}\`)` : ''),
      );
    }
    return response;
  }

  /** Warns once per field that a request set something this API cannot carry (see the class comment). */
  private reportUnsent(request: ChatRequest): void {
    const logger = this.options.logger;
    if (!logger) return;
    const unsent: string[] = [];
    if (request.options?.numCtx !== undefined) unsent.push('numCtx');
    if (request.keepAlive !== undefined) unsent.push('keepAlive');
    if (typeof request.think === 'boolean') unsent.push('think');
    const fresh = unsent.filter((f) => !this.reportedUnsent.has(f));
    if (fresh.length === 0) return;
    for (const f of fresh) this.reportedUnsent.add(f);
    logger.warn(
      { provider: PROVIDER, host: this.baseUrl, model: request.model, not_sent: fresh },
      `${fresh.join(', ')} not sent: OpenAI-compatible servers set context size and model lifetime when the model ` +
        'is loaded (llama.cpp --ctx-size, vLLM --max-model-len, OLLAMA_CONTEXT_LENGTH / OLLAMA_KEEP_ALIVE)',
    );
  }

  private toWireRequest(request: ChatRequest, stream: boolean): Record<string, unknown> {
    const o = request.options ?? {};
    const wire: Record<string, unknown> = {
      model: request.model,
      messages: toWireMessages(request.messages),
      stream,
    };
    if (stream && this.options.includeUsage !== false) wire['stream_options'] = { include_usage: true };
    if (request.tools && request.tools.length > 0) {
      wire['tools'] = request.tools.map((t) => ({
        type: 'function',
        function: { name: t.name, description: t.description, parameters: t.parameters },
      }));
    }
    if (request.format === 'json') wire['response_format'] = { type: 'json_object' };
    else if (request.format !== undefined) {
      wire['response_format'] = {
        type: 'json_schema',
        json_schema: {
          name: this.options.schemaName ?? 'response',
          schema: request.format,
          strict: this.options.strictSchema ?? true,
        },
      };
    }
    if (o.temperature !== undefined) wire['temperature'] = o.temperature;
    if (o.topP !== undefined) wire['top_p'] = o.topP;
    if (o.seed !== undefined) wire['seed'] = o.seed;
    if (o.stop !== undefined) wire['stop'] = o.stop;
    // A negative numPredict is Ollama's "no limit"; OpenAI-compatible servers take only a positive max_tokens.
    if (o.numPredict !== undefined && o.numPredict > 0) wire['max_tokens'] = o.numPredict;
    // numCtx, keepAlive and a boolean think have no OpenAI equivalent; the server's load-time settings apply.
    if (typeof request.think === 'string') wire['reasoning_effort'] = request.think;
    this.reportUnsent(request);
    return wire;
  }
}

/**
 * Maps messages to the OpenAI shape. OpenAI requires an id linking each tool result to its call; histories from
 * Ollama have none, so missing ids are made up deterministically and tool results matched to calls by tool name.
 */
function toWireMessages(messages: readonly ChatMessage[]): WireMessage[] {
  const unanswered: { id: string; name: string }[] = [];
  return messages.map((m, mi) => {
    if (m.role === 'assistant' && m.toolCalls && m.toolCalls.length > 0) {
      const calls = m.toolCalls.map((c, ci) => ({
        id: c.id ?? `call_${mi}_${ci}`,
        type: 'function' as const,
        function: { name: c.name, arguments: JSON.stringify(c.arguments) },
      }));
      unanswered.push(...calls.map((c) => ({ id: c.id, name: c.function.name })));
      return { role: 'assistant', content: m.content === '' ? null : m.content, tool_calls: calls };
    }
    if (m.role === 'tool') {
      let id = m.toolCallId;
      const at = unanswered.findIndex((c) => (id !== undefined ? c.id === id : c.name === m.toolName));
      const matched =
        at >= 0 ? unanswered.splice(at, 1)[0] : id === undefined ? unanswered.shift() : undefined;
      id ??= matched?.id ?? `call_${mi}`;
      return { role: 'tool', content: m.content, tool_call_id: id };
    }
    return { role: m.role, content: m.content };
  });
}

function badResponse(target: CallTarget, what: string, cause?: unknown): ModelError {
  return new ModelError('bad_response', `${describe(target)}: ${what}`, {
    provider: target.provider,
    ...(target.model !== undefined ? { model: target.model } : {}),
    ...(cause !== undefined ? { cause } : {}),
  });
}

function interrupted(target: CallTarget, what: string, cause?: unknown): ModelError {
  return new ModelError('stream_interrupted', `${describe(target)}: ${what}; no partial reply is used`, {
    provider: target.provider,
    ...(target.model !== undefined ? { model: target.model } : {}),
    ...(cause !== undefined ? { cause } : {}),
  });
}

async function readJson(target: CallTarget, response: Response, signal: AbortSignal): Promise<unknown> {
  let text: string;
  try {
    text = await response.text();
  } catch (error) {
    if (signal.aborted) throw error;
    throw interrupted(target, `the reply was cut off (${messageOf(error)})`, error);
  }
  try {
    return JSON.parse(text) as unknown;
  } catch (error) {
    throw badResponse(target, `reply is not valid JSON: ${text.slice(0, 200)}`, error);
  }
}

/** Parses a tool call's `arguments` JSON string; bad JSON (common from small models) is a typed error. */
function parseArguments(target: CallTarget, name: string, raw: unknown): Record<string, unknown> {
  if (raw === undefined || raw === null || (typeof raw === 'string' && raw.trim() === '')) return {};
  let value: unknown = raw;
  if (typeof raw === 'string') {
    try {
      value = JSON.parse(raw) as unknown;
    } catch (error) {
      throw badResponse(
        target,
        `tool call "${name}" has arguments that are not valid JSON: ${raw.slice(0, 200)}`,
        error,
      );
    }
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value)) {
    throw badResponse(target, `tool call "${name}" has arguments that are not a JSON object`);
  }
  return value as Record<string, unknown>;
}

function usageOf(finishReason: unknown, usage: unknown): ChatUsage {
  const out: ChatUsage = {};
  if (typeof finishReason === 'string') out.doneReason = finishReason;
  if (typeof usage === 'object' && usage !== null) {
    const u = usage as Record<string, unknown>;
    if (typeof u['prompt_tokens'] === 'number') out.promptEvalCount = u['prompt_tokens'];
    if (typeof u['completion_tokens'] === 'number') out.evalCount = u['completion_tokens'];
  }
  return out;
}

function reasoningOf(m: Record<string, unknown>): string | undefined {
  const r = m['reasoning'] ?? m['reasoning_content'];
  return typeof r === 'string' && r !== '' ? r : undefined;
}

async function readCompletion(
  target: CallTarget,
  response: Response,
  requestedModel: string,
  signal: AbortSignal,
): Promise<ChatResponse> {
  const body = await readJson(target, response, signal);
  if (typeof body !== 'object' || body === null) throw badResponse(target, 'reply is not a JSON object');
  const b = body as Record<string, unknown>;
  if (b['error'] !== undefined) {
    throw new ModelError(
      'server',
      `${describe(target)} failed: ${JSON.stringify(b['error']).slice(0, 300)}`,
      {
        provider: target.provider,
        model: requestedModel,
      },
    );
  }
  const choice = Array.isArray(b['choices']) ? (b['choices'][0] as unknown) : undefined;
  if (typeof choice !== 'object' || choice === null) throw badResponse(target, 'reply has no choices[0]');
  const c = choice as Record<string, unknown>;
  const message = c['message'];
  if (typeof message !== 'object' || message === null) throw badResponse(target, 'choices[0] has no message');
  const m = message as Record<string, unknown>;
  if (m['content'] !== undefined && m['content'] !== null && typeof m['content'] !== 'string') {
    throw badResponse(target, 'choices[0].message.content is not a string');
  }
  const rawCalls = m['tool_calls'];
  if (rawCalls !== undefined && rawCalls !== null && !Array.isArray(rawCalls)) {
    throw badResponse(target, 'choices[0].message.tool_calls is not an array');
  }
  const toolCalls: ToolCall[] = (Array.isArray(rawCalls) ? rawCalls : []).map((raw: unknown, i) => {
    const call = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
    const fn = (
      typeof call['function'] === 'object' && call['function'] !== null ? call['function'] : {}
    ) as Record<string, unknown>;
    if (typeof fn['name'] !== 'string' || fn['name'] === '')
      throw badResponse(target, `tool_calls[${i}] has no name`);
    return {
      ...(typeof call['id'] === 'string' ? { id: call['id'] } : {}),
      name: fn['name'],
      arguments: parseArguments(target, fn['name'], fn['arguments']),
    };
  });
  const thinking = reasoningOf(m);
  return {
    model: typeof b['model'] === 'string' ? b['model'] : requestedModel,
    message: {
      role: 'assistant',
      content: typeof m['content'] === 'string' ? m['content'] : '',
      ...(thinking !== undefined ? { thinking } : {}),
      toolCalls,
    },
    usage: usageOf(c['finish_reason'], b['usage']),
  };
}

interface PartialCall {
  id?: string;
  name: string;
  args: string;
}

async function readStream(
  target: CallTarget,
  response: Response,
  request: ChatRequest,
  progress: CallProgress,
  signal: AbortSignal,
  watch: StallWatch | undefined,
): Promise<ChatResponse> {
  if (!response.body) throw badResponse(target, 'streamed reply has no body');
  const events: EventSourceMessage[] = [];
  const parser = createParser({ onEvent: (event) => events.push(event) });
  const calls = new Map<number, PartialCall>();
  let content = '';
  let thinking = '';
  let model = request.model;
  let finishReason: string | undefined;
  let usage: unknown;
  let sawDone = false;

  const handle = (event: EventSourceMessage): void => {
    if (event.data === '[DONE]') {
      sawDone = true;
      return;
    }
    let chunk: unknown;
    try {
      chunk = JSON.parse(event.data) as unknown;
    } catch (error) {
      throw badResponse(target, `malformed SSE data line: ${event.data.slice(0, 120)}`, error);
    }
    if (typeof chunk !== 'object' || chunk === null)
      throw badResponse(target, 'SSE data is not a JSON object');
    const k = chunk as Record<string, unknown>;
    if (k['error'] !== undefined || event.event === 'error') {
      const e = k['error'];
      const text =
        typeof e === 'string'
          ? e
          : typeof e === 'object' && e !== null && typeof (e as { message?: unknown }).message === 'string'
            ? (e as { message: string }).message
            : JSON.stringify(chunk);
      throw new ModelError('server', `${describe(target)} failed mid-stream: ${text}`, {
        provider: target.provider,
        model: request.model,
      });
    }
    if (typeof k['model'] === 'string') model = k['model'];
    if (k['usage'] !== undefined && k['usage'] !== null) usage = k['usage'];
    const choices = k['choices'];
    if (choices === undefined || choices === null) return;
    if (!Array.isArray(choices)) throw badResponse(target, '"choices" is not an array');
    const choice = choices[0] as unknown;
    if (typeof choice !== 'object' || choice === null) return;
    const c = choice as Record<string, unknown>;
    if (typeof c['finish_reason'] === 'string') finishReason = c['finish_reason'];
    const delta = c['delta'];
    if (typeof delta !== 'object' || delta === null) return;
    const d = delta as Record<string, unknown>;
    if (d['content'] !== undefined && d['content'] !== null && typeof d['content'] !== 'string') {
      throw badResponse(target, 'delta.content is not a string');
    }
    const text = typeof d['content'] === 'string' ? d['content'] : '';
    const reasoning = reasoningOf(d) ?? '';
    if (reasoning !== '') thinking += reasoning;
    if (text !== '') content += text;
    if (text !== '' || reasoning !== '') {
      emitDelta(
        request.onDelta,
        { ...(text !== '' ? { content: text } : {}), ...(reasoning !== '' ? { thinking: reasoning } : {}) },
        progress,
      );
    }
    const toolDeltas = d['tool_calls'];
    if (Array.isArray(toolDeltas)) {
      toolDeltas.forEach((raw: unknown, position) => {
        const t = (typeof raw === 'object' && raw !== null ? raw : {}) as Record<string, unknown>;
        const index = typeof t['index'] === 'number' ? t['index'] : position;
        const entry = calls.get(index) ?? { name: '', args: '' };
        if (typeof t['id'] === 'string' && t['id'] !== '') entry.id = t['id'];
        const fn = (
          typeof t['function'] === 'object' && t['function'] !== null ? t['function'] : {}
        ) as Record<string, unknown>;
        if (typeof fn['name'] === 'string' && fn['name'] !== '' && entry.name === '') entry.name = fn['name'];
        if (typeof fn['arguments'] === 'string') entry.args += fn['arguments'];
        else if (typeof fn['arguments'] === 'object' && fn['arguments'] !== null) {
          entry.args += JSON.stringify(fn['arguments']);
        }
        calls.set(index, entry);
      });
    }
  };

  const reader = (watch ? watch.watchBody(response.body) : response.body).getReader();
  const decoder = new TextDecoder('utf-8');
  try {
    while (!sawDone) {
      const { done, value } = await reader.read();
      if (done) {
        parser.feed(decoder.decode());
        parser.feed('\n\n');
      } else {
        parser.feed(decoder.decode(value, { stream: true }));
      }
      for (const event of events.splice(0)) {
        handle(event);
        if (sawDone) break;
      }
      if (done) break;
    }
  } catch (error) {
    if (signal.aborted || isModelError(error) || error instanceof CallbackFailure) throw error;
    throw interrupted(target, `the reply was cut off before completion (${messageOf(error)})`, error);
  } finally {
    // Closes the connection on every exit: after [DONE], and when a bad chunk ends the call early.
    void reader.cancel().catch(() => undefined);
  }
  if (!sawDone && finishReason === undefined) {
    throw interrupted(target, 'the stream ended before finish_reason or [DONE]');
  }
  const toolCalls: ToolCall[] = [...calls.entries()]
    .sort(([a], [b]) => a - b)
    .map(([index, c]) => {
      if (c.name === '') throw badResponse(target, `streamed tool call #${index} has no name`);
      return {
        ...(c.id !== undefined ? { id: c.id } : {}),
        name: c.name,
        arguments: parseArguments(target, c.name, c.args),
      };
    });
  if (toolCalls.length > 0) emitDelta(request.onDelta, { toolCalls }, progress);
  return {
    model,
    message: { role: 'assistant', content, ...(thinking !== '' ? { thinking } : {}), toolCalls },
    usage: usageOf(finishReason, usage),
  };
}
