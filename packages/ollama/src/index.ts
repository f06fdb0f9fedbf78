/**
 * `@ccagent/ollama`: the `ChatModel` port the agent loops depend on, and its provider adapters.
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
  ToolCall,
  ToolDefinition,
} from './chat-model.js';
