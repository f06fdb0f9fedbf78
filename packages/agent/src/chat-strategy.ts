/**
 * The direct chat mode (seed 004): a task kind that answers without tools. It is the native loop with no tools
 * offered and a chat system prompt, so a reply without tool calls completes the task, a follow-up message to the
 * completed task continues the same conversation (the loop rebuilds it from the history and its memory), and the
 * model's text streams to `model.onDelta` as it is written.
 */
import type { TaskStrategy } from '@ccagent/engine';
import { createNativeToolStrategy } from './native-tool-strategy.js';
import type { ModelRole } from './model-call.js';

/** Options of {@link createChatStrategy}. */
export interface ChatStrategyOptions {
  /** The model; give it `onDelta` to stream replies. */
  model: ModelRole;
  /** Replaces the shipped chat system prompt (`prompts/chat-system.md`). */
  systemPrompt?: string;
  /** Model calls of one run (one reply, plus replies after empty ones). Default 3. */
  maxReplies?: number;
  /** Prompt budget in estimated tokens (see `NativeToolOptions.contextTokens`); older turns are left out. */
  contextTokens?: number;
}

/** Default model calls of one chat run: the reply, and up to two retries after an empty or cut-off one. */
export const DEFAULT_CHAT_REPLIES = 3;

/**
 * Create the chat strategy. Each run asks the model once (again after an empty reply, up to `maxReplies`) and
 * completes with `{message, iterations}`; the whole reply is in the step log's model record.
 */
export function createChatStrategy(opts: ChatStrategyOptions): TaskStrategy {
  return createNativeToolStrategy({
    model: opts.model,
    agentEnabled: false,
    promptName: 'chat-system',
    maxIterations: opts.maxReplies ?? DEFAULT_CHAT_REPLIES,
    ...(opts.systemPrompt !== undefined ? { systemPrompt: opts.systemPrompt } : {}),
    ...(opts.contextTokens !== undefined ? { contextTokens: opts.contextTokens } : {}),
  });
}
