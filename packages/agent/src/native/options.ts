/**
 * The native strategy's options, their environment overrides, and what they resolve to once per strategy (limits,
 * the context window's budget, the prompts).
 */
import { z } from 'zod';
import { AgentError } from '../agent-error.js';
import { CHARS_PER_TOKEN } from '../memory.js';
import type { ModelRole } from '../model-call.js';
import { loadPrompt, type Prompt, type PromptName } from '../prompts.js';
import type { WindowLimits } from './window.js';

/** Options of {@link createNativeToolStrategy}. */
export interface NativeToolOptions {
  model: ModelRole;
  /** Model calls per task before it fails with `max_iterations`. Default 10 (env AGENT_MAX_ITERATIONS). */
  maxIterations?: number;
  /** Replaces the shipped system prompt (env AGENT_SYSTEM_PROMPT). */
  systemPrompt?: string;
  /** The shipped system prompt to use when `systemPrompt` is unset (default `native-system`; chat: `chat-system`). */
  promptName?: PromptName;
  /** Timeout of each tool call in milliseconds (env TOOL_EXECUTION_TIMEOUT, in seconds); default: the engine's. */
  toolTimeoutMs?: number;
  /**
   * False: the model is offered no tools and answers directly, as a chat (env AGENT_ENABLED). Default true.
   */
  agentEnabled?: boolean;
  /**
   * Offer the `wait` tool: the model sleeps until an event arrives for the task or the given time passes (a
   * long-lived task: "every 10 minutes check the farm"). The task sleeps without a busy loop and across restarts.
   */
  waitTool?: boolean;
  /** Model calls failing in a row before the task fails with `model_failed`. Default 3. */
  maxModelFailures?: number;
  /** Longest tool result given back to the model, in characters. Default 8000. */
  maxToolResultChars?: number;
  /**
   * Budget of one prompt (system, task, tools and the turns shown) in estimated tokens (one per 4 characters, as
   * `estimateTokens`).
   * Default: the role's `options.numCtx` (else 16384) minus 2048 tokens left for the reply, at least 1024. The most
   * recent turns that fit are shown; older ones are left out (the task message says how many), and dropped from the
   * memory, so a task of any length sends prompts of bounded size and keeps a memory of bounded size.
   */
  contextTokens?: number;
  /**
   * The first turn shown moves forward by this many turns at a time (counted from the task's first turn), so the
   * prompt's prefix — which a model server reuses from its cache — stays the same for several model calls in a row
   * instead of changing on every call once the window is full. Default 8.
   */
  windowChunkTurns?: number;
  /**
   * When the window has to move, it moves far enough that the turns still shown fill at most this share of the
   * budget (0 < share ≤ 1), so the next turns append to an unchanged prompt for a long while: each move makes the
   * server evaluate the whole prompt again, so moves should be rare. 1 moves only as far as needed. Default 0.5.
   */
  windowFill?: number;
}

/** Context window assumed when the role sets no `numCtx` (the orchestrator's default for the native role). */
const DEFAULT_NUM_CTX = 16_384;
/** Tokens of the context window left for the model's reply. */
const REPLY_RESERVE_TOKENS = 2048;

/** Default number of model calls of the native loop. */
export const DEFAULT_MAX_ITERATIONS = 10;

const envSchema = z.object({
  AGENT_MAX_ITERATIONS: z.coerce.number().int().min(1).max(1000).optional(),
  AGENT_SYSTEM_PROMPT: z.string().trim().min(1).optional(),
  // Seconds, as seed 004 specifies (fractions allowed down to a millisecond; at most a day).
  TOOL_EXECUTION_TIMEOUT: z.coerce.number().min(0.001).max(86_400).optional(),
  AGENT_ENABLED: z
    .enum(['true', 'false', '1', '0', 'yes', 'no', 'on', 'off'], {
      message: 'expected true or false (also 1/0, yes/no, on/off)',
    })
    .optional(),
});

/** Options {@link nativeOptionsFromEnv} can set. */
export type NativeEnvOptions = Pick<
  NativeToolOptions,
  'maxIterations' | 'systemPrompt' | 'toolTimeoutMs' | 'agentEnabled'
>;

/**
 * Overrides of {@link NativeToolOptions} from the environment: `AGENT_MAX_ITERATIONS` (integer ≥ 1),
 * `AGENT_SYSTEM_PROMPT` (text), `TOOL_EXECUTION_TIMEOUT` (seconds, e.g. `30` or `2.5`), `AGENT_ENABLED` (`false`:
 * no tools, the model answers as a chat). Empty variables are ignored; an invalid value throws
 * `AgentError('invalid_config')` naming the variable.
 */
export function nativeOptionsFromEnv(env: Record<string, string | undefined>): NativeEnvOptions {
  const pick = (k: string) =>
    env[k] === undefined || env[k] === '' ? undefined : env[k]?.trim().toLowerCase();
  const parsed = envSchema.safeParse({
    AGENT_MAX_ITERATIONS: pick('AGENT_MAX_ITERATIONS'),
    AGENT_SYSTEM_PROMPT:
      env.AGENT_SYSTEM_PROMPT === undefined || env.AGENT_SYSTEM_PROMPT === ''
        ? undefined
        : env.AGENT_SYSTEM_PROMPT,
    TOOL_EXECUTION_TIMEOUT: pick('TOOL_EXECUTION_TIMEOUT'),
    AGENT_ENABLED: pick('AGENT_ENABLED'),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AgentError(
      'invalid_config',
      `invalid environment variable ${String(issue?.path[0] ?? '')}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const out: NativeEnvOptions = {};
  if (parsed.data.AGENT_MAX_ITERATIONS !== undefined) out.maxIterations = parsed.data.AGENT_MAX_ITERATIONS;
  if (parsed.data.AGENT_SYSTEM_PROMPT !== undefined) out.systemPrompt = parsed.data.AGENT_SYSTEM_PROMPT;
  if (parsed.data.TOOL_EXECUTION_TIMEOUT !== undefined)
    out.toolTimeoutMs = Math.max(1, Math.round(parsed.data.TOOL_EXECUTION_TIMEOUT * 1000));
  if (parsed.data.AGENT_ENABLED !== undefined)
    out.agentEnabled = ['true', '1', 'yes', 'on'].includes(parsed.data.AGENT_ENABLED);
  return out;
}

/** What a strategy resolves from its options once; every step reads it. */
export interface NativeConfig {
  opts: NativeToolOptions;
  maxIterations: number;
  maxFailures: number;
  contextTokens: number;
  limits: WindowLimits;
  agentEnabled: boolean;
  prompt: Prompt;
  summaryPrompt: Prompt;
  /** The system message: the options' `systemPrompt`, else the shipped prompt's text. */
  system: string;
}

/** Resolve and check the options; throws `AgentError('invalid_config')` naming what is wrong. */
export function resolveNativeConfig(opts: NativeToolOptions): NativeConfig {
  const maxIterations = opts.maxIterations ?? DEFAULT_MAX_ITERATIONS;
  if (!Number.isInteger(maxIterations) || maxIterations < 1) {
    throw new AgentError('invalid_config', 'maxIterations must be an integer ≥ 1');
  }
  if (opts.toolTimeoutMs !== undefined && (!Number.isInteger(opts.toolTimeoutMs) || opts.toolTimeoutMs < 1)) {
    throw new AgentError('invalid_config', 'toolTimeoutMs must be an integer ≥ 1');
  }
  const maxFailures = opts.maxModelFailures ?? 3;
  const maxChars = opts.maxToolResultChars ?? 8000;
  const contextTokens =
    opts.contextTokens ??
    Math.max(1024, (opts.model.options?.numCtx ?? DEFAULT_NUM_CTX) - REPLY_RESERVE_TOKENS);
  if (!Number.isInteger(contextTokens) || contextTokens < 256) {
    throw new AgentError('invalid_config', 'contextTokens must be an integer ≥ 256');
  }
  const chunkTurns = opts.windowChunkTurns ?? 8;
  if (!Number.isInteger(chunkTurns) || chunkTurns < 1) {
    throw new AgentError('invalid_config', 'windowChunkTurns must be an integer ≥ 1');
  }
  const fill = opts.windowFill ?? 0.5;
  if (!(fill > 0 && fill <= 1)) {
    throw new AgentError('invalid_config', 'windowFill must be a number in (0, 1]');
  }
  const limits: WindowLimits = {
    budgetChars: contextTokens * CHARS_PER_TOKEN,
    chunkTurns,
    fill,
    maxResultChars: maxChars,
  };
  const agentEnabled = opts.agentEnabled ?? true;
  const prompt = loadPrompt(opts.promptName ?? 'native-system');
  const summaryPrompt = loadPrompt('native-final-summary');
  const system = opts.systemPrompt?.trim() ? opts.systemPrompt.trim() : prompt.text;
  return {
    opts,
    maxIterations,
    maxFailures,
    contextTokens,
    limits,
    agentEnabled,
    prompt,
    summaryPrompt,
    system,
  };
}
