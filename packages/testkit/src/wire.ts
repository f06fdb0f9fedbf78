/**
 * Builders for the wire payloads of the real APIs (Ollama `/api/*`, OpenAI `/v1/chat/completions`), with the
 * field names and types the real servers send. Kept apart from the HTTP plumbing so the conformance test pins
 * exactly what goes on the wire.
 */
import { createHash } from 'node:crypto';
import type { FakeToolCall } from './fake-types.js';

/** Figures a reply reports, in Ollama's units (durations in nanoseconds). */
export interface ReplyFigures {
  doneReason: string;
  /** Tokens of the whole prompt, cached or not. */
  promptEvalCount: number;
  evalCount: number;
  /** Model load time (a few ms when the model was already loaded). */
  loadNs?: number;
  /** Time spent on the prompt tokens that were not in the cache. */
  promptEvalNs?: number;
  evalNs?: number;
  /** `total_duration` when it is more than the parts (the per-call overhead); default: load + prompt eval + eval. */
  totalNs?: number;
  /** Prompt tokens served from the cache; only sent when the modelled server reports it. */
  cachedCount?: number;
}

/** Ollama's `/api/chat` metrics for the final chunk; deterministic so tests can assert them. */
export function ollamaMetrics(f: ReplyFigures): Record<string, number> {
  const load = f.loadNs ?? 1_000_000;
  const promptEval = f.promptEvalNs ?? Math.max(1, f.promptEvalCount) * 100_000;
  const evalDuration = f.evalNs ?? Math.max(1, f.evalCount) * 1_000_000;
  return {
    total_duration: Math.max(f.totalNs ?? 0, load + promptEval + evalDuration),
    load_duration: load,
    prompt_eval_count: f.promptEvalCount,
    ...(f.cachedCount !== undefined ? { prompt_eval_cached_count: f.cachedCount } : {}),
    prompt_eval_duration: promptEval,
    eval_count: f.evalCount,
    eval_duration: evalDuration,
  };
}

/** Ollama tool calls as `/api/chat` sends them (arguments as an object, `function.index`). */
export function ollamaToolCalls(calls: readonly FakeToolCall[]): Record<string, unknown>[] {
  return calls.map((c, index) => ({
    ...(c.id !== undefined ? { id: c.id } : {}),
    function: { index, name: c.name, arguments: c.rawArguments ?? c.arguments ?? {} },
  }));
}

/** One non-final `/api/chat` stream chunk. */
export function ollamaChunk(
  model: string,
  createdAt: string,
  message: { content?: string; thinking?: string; toolCalls?: readonly FakeToolCall[] },
): Record<string, unknown> {
  return {
    model,
    created_at: createdAt,
    message: {
      role: 'assistant',
      content: message.content ?? '',
      ...(message.thinking !== undefined ? { thinking: message.thinking } : {}),
      ...(message.toolCalls !== undefined ? { tool_calls: ollamaToolCalls(message.toolCalls) } : {}),
    },
    done: false,
  };
}

/** The final `/api/chat` chunk (stream) — empty message content, `done: true` and the metrics. */
export function ollamaFinalChunk(model: string, createdAt: string, f: ReplyFigures): Record<string, unknown> {
  return {
    model,
    created_at: createdAt,
    message: { role: 'assistant', content: '' },
    done_reason: f.doneReason,
    done: true,
    ...ollamaMetrics(f),
  };
}

/** The whole `/api/chat` reply when `stream: false`. */
export function ollamaNonStream(
  model: string,
  createdAt: string,
  message: { content: string; thinking?: string; toolCalls?: readonly FakeToolCall[] },
  f: ReplyFigures,
): Record<string, unknown> {
  return {
    model,
    created_at: createdAt,
    message: {
      role: 'assistant',
      content: message.content,
      ...(message.thinking ? { thinking: message.thinking } : {}),
      ...(message.toolCalls && message.toolCalls.length > 0
        ? { tool_calls: ollamaToolCalls(message.toolCalls) }
        : {}),
    },
    done_reason: f.doneReason,
    done: true,
    ...ollamaMetrics(f),
  };
}

/** Ollama's error body: `{"error": "..."}`. */
export function ollamaError(message: string): Record<string, unknown> {
  return { error: message };
}

/** Ollama's message for a model that is not installed (`/api/chat`, `/api/show`). */
export function modelNotFoundMessage(model: string): string {
  return `model '${model}' not found`;
}

function modelDetails(name: string): Record<string, unknown> {
  const family =
    name
      .split(':')[0]
      ?.split('/')
      .pop()
      ?.replace(/[^a-z]+.*$/i, '') || 'llama';
  return {
    parent_model: '',
    format: 'gguf',
    family,
    families: [family],
    parameter_size: '7.6B',
    quantization_level: 'Q4_K_M',
  };
}

/** One `/api/tags` entry. */
export function ollamaTagEntry(name: string, modifiedAt: string): Record<string, unknown> {
  return {
    name,
    model: name,
    modified_at: modifiedAt,
    size: 4_683_075_271,
    digest: createHash('sha256').update(name).digest('hex'),
    details: modelDetails(name),
  };
}

/** One model of the `/api/ps` list: loaded on the CPU (no VRAM), with the context size it was loaded with. */
export function ollamaPsEntry(name: string, expiresAt: Date, contextLength: number): Record<string, unknown> {
  return {
    name,
    model: name,
    size: 4_683_075_271,
    digest: createHash('sha256').update(name).digest('hex'),
    details: modelDetails(name),
    expires_at: expiresAt.toISOString(),
    size_vram: 0,
    context_length: contextLength,
  };
}

/** The `/api/show` reply for an installed model. */
export function ollamaShow(name: string): Record<string, unknown> {
  const details = modelDetails(name);
  const arch = String(details['family']);
  return {
    modelfile: `# Modelfile of a fake-ollama scripted test double\nFROM ${name}\n`,
    parameters: 'num_ctx                        8192',
    template: '{{ .Prompt }}',
    details,
    model_info: {
      'general.architecture': arch,
      'general.parameter_count': 7_615_616_512,
      [`${arch}.context_length`]: 32_768,
    },
    capabilities: ['completion', 'tools'],
  };
}

/** OpenAI tool calls with arguments as a JSON string. */
export function openaiToolCalls(calls: readonly FakeToolCall[], idBase: string): Record<string, unknown>[] {
  return calls.map((c, index) => ({
    id: c.id ?? `call_${idBase}_${index}`,
    index,
    type: 'function',
    function: { name: c.name, arguments: c.rawArguments ?? JSON.stringify(c.arguments ?? {}) },
  }));
}

/** OpenAI `usage` object. */
export function openaiUsage(f: ReplyFigures): Record<string, unknown> {
  return {
    prompt_tokens: f.promptEvalCount,
    completion_tokens: f.evalCount,
    total_tokens: f.promptEvalCount + f.evalCount,
    // llama.cpp's server (and OpenAI) report the cached part of prompt_tokens here.
    ...(f.cachedCount !== undefined ? { prompt_tokens_details: { cached_tokens: f.cachedCount } } : {}),
  };
}

/** OpenAI `finish_reason` for a reply. */
export function openaiFinishReason(f: ReplyFigures, hasToolCalls: boolean): string {
  if (hasToolCalls) return 'tool_calls';
  return f.doneReason === 'length' ? 'length' : 'stop';
}

/** Non-streaming `/v1/chat/completions` reply. */
export function openaiCompletion(
  id: string,
  created: number,
  model: string,
  message: { content: string; thinking?: string; toolCalls?: readonly FakeToolCall[] },
  f: ReplyFigures,
): Record<string, unknown> {
  const calls = message.toolCalls ?? [];
  return {
    id,
    object: 'chat.completion',
    created,
    model,
    system_fingerprint: 'fp_ollama',
    choices: [
      {
        index: 0,
        message: {
          role: 'assistant',
          // OpenAI sends null content next to tool calls (Ollama's /v1 sends ""); clients must take both.
          content: calls.length > 0 && message.content === '' ? null : message.content,
          ...(message.thinking ? { reasoning: message.thinking } : {}),
          ...(calls.length > 0
            ? { tool_calls: openaiToolCalls(calls, id).map(({ index: _index, ...call }) => call) }
            : {}),
        },
        finish_reason: openaiFinishReason(f, calls.length > 0),
      },
    ],
    usage: openaiUsage(f),
  };
}

/** One `chat.completion.chunk` SSE payload. */
export function openaiChunk(
  id: string,
  created: number,
  model: string,
  delta: Record<string, unknown>,
  finishReason: string | null,
  usage?: Record<string, unknown>,
): Record<string, unknown> {
  return {
    id,
    object: 'chat.completion.chunk',
    created,
    model,
    system_fingerprint: 'fp_ollama',
    choices: usage ? [] : [{ index: 0, delta, finish_reason: finishReason }],
    ...(usage ? { usage } : {}),
  };
}

/** OpenAI-style error body. */
export function openaiError(status: number, message: string): Record<string, unknown> {
  const type = status === 400 ? 'invalid_request_error' : status === 404 ? 'not_found_error' : 'api_error';
  return { error: { message, type, param: null, code: null } };
}

/** One `/v1/models` entry. */
export function openaiModel(name: string, created: number): Record<string, unknown> {
  return { id: name, object: 'model', created, owned_by: 'library' };
}
