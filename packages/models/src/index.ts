/**
 * `@ccagent/models`: the `ChatModel` port the agent loops depend on, its Ollama (`/api/chat`) and
 * OpenAI-compatible (`/v1/chat/completions`) adapters, the `ModelError` taxonomy and model inventory checks.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export type {
  ChatDelta,
  ChatMessage,
  ChatModel,
  ChatOptions,
  ChatRequest,
  ChatResponse,
  ChatRole,
  ChatUsage,
  JsonSchema,
  ModelFailover,
  ToolCall,
  ToolDefinition,
} from './chat-model.js';
export { OllamaChatModel, type OllamaChatModelOptions } from './ollama-chat-model.js';
export {
  DEFAULT_FIRST_CHUNK_TIMEOUT_MS,
  DEFAULT_STALL_TIMEOUT_MS,
  DEFAULT_TIMEOUT_MS,
  type ModelLogger,
  type RetryOptions,
  type StallOptions,
} from './call.js';
export {
  ModelError,
  MODEL_ERROR_CODES,
  isModelError,
  isRetryableCode,
  type ModelErrorCode,
  type ModelErrorDetails,
} from './model-error.js';
export type {
  CheckModelsOptions,
  ModelCheckReport,
  ModelCheckResult,
  ModelInventory,
} from './model-check.js';
export { normalizeModelName, sameModel } from './model-names.js';
export { DEFAULT_OLLAMA_HOST, parseOllamaHost, resolveOllamaHost } from './ollama-host.js';
export {
  OpenAICompatibleChatModel,
  type OpenAICompatibleChatModelOptions,
} from './openai-compatible-chat-model.js';
export {
  ModelPool,
  type ModelPoolOptions,
  type PoolPlacement,
  type PoolServer,
  type PoolServerSnapshot,
  type PoolServerState,
  type PoolSnapshot,
} from './model-pool.js';
