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
}

/** The complete reply. Only resolved when the provider signalled completion (never a cut-off partial). */
export interface ChatResponse {
  model: string;
  message: { role: 'assistant'; content: string; thinking?: string; toolCalls: ToolCall[] };
  usage: ChatUsage;
}

/** A language model the agent can talk to. */
export interface ChatModel {
  /** Provider label for logs: `'ollama'`, `'openai-compatible'`, … */
  readonly provider: string;
  chat(request: ChatRequest): Promise<ChatResponse>;
}
