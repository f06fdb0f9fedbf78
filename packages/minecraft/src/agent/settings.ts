import { OllamaChatModel, OpenAICompatibleChatModel, type ChatModel } from '@ccagent/models';
import { z } from 'zod';
import { DEFAULT_ACTION_TIMEOUT_MS } from '../protocol/constants.js';
import { InstanceIdSchema } from '../protocol/messages.js';
import { PLAN_MODES } from './plan-modes.js';

/** The kind of a Minecraft player task. */
export const MINECRAFT_TASK_KIND = 'minecraft_agent';

/** LM Studio's default OpenAI-compatible base URL. */
export const DEFAULT_LM_STUDIO_URL = 'http://localhost:1234/v1';

/**
 * The settings of one `minecraft_agent` task (stored as the task's `context`): which instance plays, the plan mode,
 * and the model — provider chosen per task (`ollama`, or `lmstudio` = any OpenAI-compatible server at `lmStudioUrl`).
 */
export const MinecraftTaskSettingsSchema = z.object({
  instanceId: InstanceIdSchema,
  mode: z.enum(PLAN_MODES).default('hybrid'),
  provider: z.enum(['ollama', 'lmstudio']).default('ollama'),
  model: z.string().min(1).max(200),
  temperature: z.number().min(0).max(2).optional(),
  lmStudioUrl: z.url().optional(),
  ollamaUrl: z.url().optional(),
  /** Re-plans allowed after a failed action or a contradicting state before the task fails (default 3). */
  maxReplans: z.number().int().min(0).max(20).default(3),
  /** Per-action timeout in ms (default 60,000). */
  actionTimeoutMs: z.number().int().min(1_000).max(3_600_000).default(DEFAULT_ACTION_TIMEOUT_MS),
  /**
   * Most tokens one model answer may have (the seed's `max_tokens`, default 2,000): sent as `max_tokens` to LM Studio
   * and other OpenAI-compatible servers, as `num_predict` to Ollama.
   */
  maxTokens: z.number().int().min(16).max(200_000).default(2_000),
  /**
   * How long a step waits for the instance to be connected with a state before it plans without one, ms (default
   * 30,000, the endpoint's keep period; 0 = do not wait). After a restart the mod reconnects within 5 s.
   */
  stateWaitMs: z.number().int().min(0).max(600_000).default(30_000),
  /** Send the plan's JSON Schema as `format` (constrained decoding); turn off for servers that reject it. */
  constrained: z.boolean().default(true),
});

/** Parsed task settings (defaults filled). */
export type MinecraftTaskSettings = z.infer<typeof MinecraftTaskSettingsSchema>;
/** Task settings as a caller gives them (defaults optional). */
export type MinecraftTaskSettingsInput = z.input<typeof MinecraftTaskSettingsSchema>;

/** Picks the chat model adapter for a task's settings. */
export type ModelFactory = (settings: MinecraftTaskSettings) => ChatModel;

/**
 * The default {@link ModelFactory}: an `OllamaChatModel` at `ollamaUrl` (or `defaults.ollamaUrl`, or `OLLAMA_HOST`)
 * or an `OpenAICompatibleChatModel` at `lmStudioUrl` (default `http://localhost:1234/v1`); one adapter per URL.
 */
export function defaultModelFactory(defaults: { ollamaUrl?: string } = {}): ModelFactory {
  const made = new Map<string, ChatModel>();
  return (s) => {
    const url =
      s.provider === 'lmstudio'
        ? (s.lmStudioUrl ?? DEFAULT_LM_STUDIO_URL)
        : (s.ollamaUrl ?? defaults.ollamaUrl ?? '');
    const key = `${s.provider} ${url}`;
    let m = made.get(key);
    if (m === undefined) {
      m =
        s.provider === 'lmstudio'
          ? new OpenAICompatibleChatModel({ baseUrl: url })
          : new OllamaChatModel(url === '' ? {} : { host: url });
      made.set(key, m);
    }
    return m;
  };
}
