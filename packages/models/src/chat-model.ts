/**
 * The `ChatModel` port: what the agent loops need from a language model, independent of the provider.
 * Implementations: `OllamaChatModel` (Ollama `/api/chat` through the `ollama` npm client) and
 * `OpenAICompatibleChatModel` (`POST /v1/chat/completions` through `fetch`).
 */

/** A JSON Schema object (draft 2020-12 subset as accepted by Ollama's `format` and OpenAI's `response_format`). */
export type JsonSchema = { [key: string]: unknown };

/** Role of a chat message. */
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/** One tool call requested by the model. `id` is present when the provider assigns one (OpenAI-compatible). */
export interface ToolCall {
  id?: string;
  name: string;
  arguments: Record<string, unknown>;
}

/** One message of a conversation. `toolName`/`toolCallId` identify which call a `tool` message answers. */
export interface ChatMessage {
  role: ChatRole;
  content: string;
  thinking?: string;
  toolCalls?: ToolCall[];
  toolName?: string;
  toolCallId?: string;
}

/** A tool offered to the model (function calling). */
export interface ToolDefinition {
  name: string;
  description: string;
  parameters: JsonSchema;
}

/** Sampling options (Ollama names in camelCase; mapped to each provider's wire names by the adapter). */
export interface ChatOptions {
  temperature?: number;
  numCtx?: number;
  numPredict?: number;
  seed?: number;
  topP?: number;
  stop?: string[];
}

/** A streamed piece of the reply, delivered to `onDelta` as it arrives. */
export interface ChatDelta {
  content?: string;
  thinking?: string;
  toolCalls?: ToolCall[];
}

/** Figures from the provider's final chunk. Durations are nanoseconds (Ollama's unit); absent when not reported. */
export interface ChatUsage {
  doneReason?: string;
  promptEvalCount?: number;
  evalCount?: number;
  totalDurationNs?: number;
  loadDurationNs?: number;
  promptEvalDurationNs?: number;
  evalDurationNs?: number;
}

/** One chat call. `signal` aborts the HTTP request; `timeoutMs` bounds the whole call including retries. */
export interface ChatRequest {
  model: string;
  messages: ChatMessage[];
  tools?: ToolDefinition[];
  /** `'json'` or a JSON Schema that constrains decoding (structured output). */
  format?: 'json' | JsonSchema;
  options?: ChatOptions;
  keepAlive?: string | number;
  /**
   * Ollama only: what the server does with a prompt longer than `numCtx`. Ollama's default (`true`, also when absent)
   * silently drops the oldest messages, or the start of the prompt; `false` refuses it, which the adapter reports as
   * `ModelError` `context_overflow`. OpenAI-compatible servers have no such switch (most refuse).
   */
  truncate?: boolean;
  think?: boolean | 'low' | 'medium' | 'high';
  /** Stream the reply (default true); deltas go to `onDelta`. The promise still resolves with the whole reply. */
  stream?: boolean;
  onDelta?: (delta: ChatDelta) => void;
  signal?: AbortSignal;
  timeoutMs?: number;
  /**
   * Which conversation this call continues (the task id). A `ModelPool` sends calls with the same key to the server
   * that served the previous one, whose prompt cache holds the conversation, and queues fairly across keys. Adapters
   * of a single server ignore it.
   */
  affinityKey?: string;
  /**
   * Called by a `ModelPool` when an attempt failed on one server and the call is sent once more to another, before
   * that second attempt leaves (so a caller can record the first one). A rejection fails the call with that error.
   */
  onFailover?: (event: ModelFailover) => void | Promise<void>;
}

/** A pool's first attempt at a call failed on `server` and the call goes on to another server. */
export interface ModelFailover {
  /** Name of the server that failed (its URL). */
  server: string;
  /** The `ModelError` code and message of the failed attempt. */
  error: { code: string; message: string };
  /** When the failed attempt started (epoch ms) and how long it ran. */
  startedAt: number;
  durationMs: number;
  /** Whether streamed pieces of the failed attempt already reached `onDelta` (the next attempt streams anew). */
  emitted: boolean;
}

/** The complete reply. Only resolved when the provider signalled completion (never a cut-off partial). */
export interface ChatResponse {
  model: string;
  message: { role: 'assistant'; content: string; thinking?: string; toolCalls: ToolCall[] };
  usage: ChatUsage;
  /** The server that answered, when the model is a `ModelPool` (its name, usually its URL). */
  server?: string;
  /** Pools: 2 when the answer came from a second server after the first failed (`onFailover` was called). */
  attempt?: number;
}

/** A language model the agent can talk to. */
export interface ChatModel {
  /** Provider label for logs: `'ollama'`, `'openai-compatible'`, … */
  readonly provider: string;
  chat(request: ChatRequest): Promise<ChatResponse>;
}
