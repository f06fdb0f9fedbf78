import type {
  CommandDescriptor,
  Decision,
  HistoryEntry,
  JsonValue,
  StepContext,
  Task,
  TaskStrategy,
} from '@ccagent/engine';
import type { ChatMessage, ToolDefinition } from '@ccagent/ollama';
import { z } from 'zod';
import { AgentError } from './agent-error.js';
import { MemoryValidationCache } from './memory-cache.js';
import { callModel, type ModelRole } from './model-call.js';
import { loadPrompt } from './prompts.js';

/** Options of {@link createNativeToolStrategy}. */
export interface NativeToolOptions {
  model: ModelRole;
  /** Model calls per task before it fails with `max_iterations`. Default 10 (env AGENT_MAX_ITERATIONS). */
  maxIterations?: number;
  /** Replaces the shipped system prompt (env AGENT_SYSTEM_PROMPT). */
  systemPrompt?: string;
  /** Timeout of each tool call in milliseconds (env TOOL_EXECUTION_TIMEOUT); default: the engine's. */
  toolTimeoutMs?: number;
  /** Model calls failing in a row before the task fails with `model_failed`. Default 3. */
  maxModelFailures?: number;
  /** Longest tool result given back to the model, in characters. Default 8000. */
  maxToolResultChars?: number;
}

/** Default number of model calls of the native loop. */
export const DEFAULT_MAX_ITERATIONS = 10;

const envSchema = z.object({
  AGENT_MAX_ITERATIONS: z.coerce.number().int().min(1).max(1000).optional(),
  AGENT_SYSTEM_PROMPT: z.string().trim().min(1).optional(),
  TOOL_EXECUTION_TIMEOUT: z.coerce.number().int().min(1).optional(),
});

/**
 * Overrides of {@link NativeToolOptions} from the environment: `AGENT_MAX_ITERATIONS` (integer ≥ 1),
 * `AGENT_SYSTEM_PROMPT` (text), `TOOL_EXECUTION_TIMEOUT` (milliseconds, integer ≥ 1). Empty variables are ignored;
 * an invalid value throws `AgentError('invalid_config')` naming the variable.
 */
export function nativeOptionsFromEnv(
  env: Record<string, string | undefined>,
): Pick<NativeToolOptions, 'maxIterations' | 'systemPrompt' | 'toolTimeoutMs'> {
  const pick = (k: string) => (env[k] === undefined || env[k] === '' ? undefined : env[k]);
  const parsed = envSchema.safeParse({
    AGENT_MAX_ITERATIONS: pick('AGENT_MAX_ITERATIONS'),
    AGENT_SYSTEM_PROMPT: pick('AGENT_SYSTEM_PROMPT'),
    TOOL_EXECUTION_TIMEOUT: pick('TOOL_EXECUTION_TIMEOUT'),
  });
  if (!parsed.success) {
    const issue = parsed.error.issues[0];
    throw new AgentError(
      'invalid_config',
      `invalid environment variable ${String(issue?.path[0] ?? '')}: ${issue?.message ?? 'invalid'}`,
    );
  }
  const out: Pick<NativeToolOptions, 'maxIterations' | 'systemPrompt' | 'toolTimeoutMs'> = {};
  if (parsed.data.AGENT_MAX_ITERATIONS !== undefined) out.maxIterations = parsed.data.AGENT_MAX_ITERATIONS;
  if (parsed.data.AGENT_SYSTEM_PROMPT !== undefined) out.systemPrompt = parsed.data.AGENT_SYSTEM_PROMPT;
  if (parsed.data.TOOL_EXECUTION_TIMEOUT !== undefined)
    out.toolTimeoutMs = parsed.data.TOOL_EXECUTION_TIMEOUT;
  return out;
}

const callSchema = z.object({
  name: z.string(),
  arguments: z.record(z.string(), z.unknown()),
  /** queued: not yet handed to the engine; dispatched: a tool_call decision was made; rejected: never run. */
  status: z.enum(['queued', 'dispatched', 'rejected']),
  error: z.string().optional(),
});

const turnSchema = z.object({
  content: z.string(),
  calls: z.array(callSchema),
  /** A user message sent after this turn (e.g. after an empty reply). */
  nudge: z.string().optional(),
});

const nativeMemorySchema = z.object({
  v: z.literal(1).default(1),
  strategy: z.literal('native').default('native'),
  turns: z.array(turnSchema).default([]),
  modelFailures: z.number().int().default(0),
});

type NativeMemory = z.infer<typeof nativeMemorySchema>;
type NativeTurn = z.infer<typeof turnSchema>;
type NativeCall = z.infer<typeof callSchema>;

/**
 * Validated native memories by object. The strategy never changes a memory in place: each decision builds a new
 * memory object sharing the unchanged turns (frozen, so an accidental in-place change throws instead of leaving a
 * stale validation behind) and registers it as valid, so the next step — handed that same object by the engine —
 * validates nothing.
 */
const nativeMemories = new MemoryValidationCache<NativeMemory>((value) => {
  const parsed = nativeMemorySchema.safeParse(value ?? {});
  return parsed.success ? parsed.data : nativeMemorySchema.parse({});
});

/** How many native memories have been validated with zod in this process (for tests). */
export function nativeMemoryValidations(): number {
  return nativeMemories.validations;
}

/** A new memory object built from validated data: frozen at the top and registered as valid. */
function nextMemory(memory: NativeMemory): NativeMemory {
  Object.freeze(memory.turns);
  Object.freeze(memory);
  nativeMemories.remember(memory, memory);
  return memory;
}

/** `turn` with `calls` replaced (a new frozen turn object; the old one is left as it was). */
function withCalls(turn: NativeTurn, calls: NativeCall[]): NativeTurn {
  for (const c of calls) Object.freeze(c);
  return Object.freeze({ ...turn, calls: Object.freeze(calls) as NativeCall[] });
}

function clip(text: string, max: number): string {
  return text.length <= max ? text : `${text.slice(0, max)}… [${text.length - max} chars cut]`;
}

/** Ollama tool definitions from the commands the task may call (their JSON Schemas as parameters). */
export function toolDefinitions(commands: readonly CommandDescriptor[]): ToolDefinition[] {
  return commands.map((c) => {
    const schema = c.argsSchema;
    const parameters =
      schema && typeof schema === 'object' && !Array.isArray(schema)
        ? (schema as Record<string, unknown>)
        : { type: 'object', properties: {} };
    return { name: c.name, description: c.description ?? c.name, parameters };
  });
}

/**
 * Rebuild the conversation from the task's history and the strategy memory: system, the task, then per model turn
 * the assistant message with its tool calls followed by one `tool` message per call (the command's outcome, or
 * the reason it was not run). Deterministic, so the prompt prefix is stable from one iteration to the next.
 */
function conversation(
  task: Task,
  history: readonly HistoryEntry[],
  mem: NativeMemory,
  system: string,
  maxChars: number,
): ChatMessage[] {
  const messages: ChatMessage[] = [{ role: 'system', content: system }];
  let user = task.prompt;
  if (task.context !== undefined && task.context !== null)
    user += `\n\nContext: ${JSON.stringify(task.context)}`;
  messages.push({ role: 'user', content: user });
  // The k-th dispatched call is the k-th tool_call in the history (this strategy is the task's only caller).
  const calls = history.filter((e) => e.type === 'tool_call');
  const results = new Map<string, HistoryEntry>();
  for (const e of history) if (e.type === 'tool_result') results.set(e.callId, e);
  let next = 0;
  for (const turn of mem.turns) {
    messages.push({
      role: 'assistant',
      content: turn.content,
      ...(turn.calls.length > 0
        ? { toolCalls: turn.calls.map((c) => ({ name: c.name, arguments: c.arguments })) }
        : {}),
    });
    for (const c of turn.calls) {
      if (c.status === 'rejected') {
        messages.push({
          role: 'tool',
          toolName: c.name,
          content: JSON.stringify({ error: c.error ?? 'not run' }),
        });
      } else if (c.status === 'dispatched') {
        const issued = calls[next++];
        const r = issued?.type === 'tool_call' ? results.get(issued.callId) : undefined;
        if (!r || r.type !== 'tool_result') continue;
        const body = r.outcome.ok
          ? r.outcome.result
          : {
              error: r.outcome.error.message,
              ...(r.outcome.error.code ? { code: r.outcome.error.code } : {}),
              ...(r.outcome.error.traceback ? { traceback: r.outcome.error.traceback } : {}),
            };
        messages.push({ role: 'tool', toolName: c.name, content: clip(JSON.stringify(body), maxChars) });
      }
    }
    if (turn.nudge) messages.push({ role: 'user', content: turn.nudge });
  }
  return messages;
}

/**
 * The native tool-calling strategy: the model gets the task and Ollama `tools` built from the commands' JSON
 * Schemas, and each engine step either dispatches one requested tool call or asks the model again with every result
 * so far; it ends when the model answers without tool calls, or fails after `maxIterations` model calls. An unknown
 * tool is answered with an error message and the loop continues; a failing tool's error is its result.
 */
export function createNativeToolStrategy(opts: NativeToolOptions): TaskStrategy {
  const maxIterations = opts.maxIterations ?? DEFAULT_MAX_ITERATIONS;
  if (!Number.isInteger(maxIterations) || maxIterations < 1) {
    throw new AgentError('invalid_config', 'maxIterations must be an integer ≥ 1');
  }
  if (opts.toolTimeoutMs !== undefined && (!Number.isInteger(opts.toolTimeoutMs) || opts.toolTimeoutMs < 1)) {
    throw new AgentError('invalid_config', 'toolTimeoutMs must be an integer ≥ 1');
  }
  const maxFailures = opts.maxModelFailures ?? 3;
  const maxChars = opts.maxToolResultChars ?? 8000;
  const prompt = loadPrompt('native-system');
  const system = opts.systemPrompt?.trim() ? opts.systemPrompt.trim() : prompt.text;

  /**
   * Hand out the last turn's next queued call: the memory after it (that call dispatched, unknown tools before it
   * rejected) and the tool_call decision, or — when no queued call is left — the memory with any rejections and no
   * decision. `mem` is not changed.
   */
  function nextQueuedCall(
    mem: NativeMemory,
    available: Set<string>,
  ): { mem: NativeMemory; decision?: Decision } {
    const last = mem.turns.length - 1;
    const turn = mem.turns[last];
    if (!turn || !turn.calls.some((c) => c.status === 'queued')) return { mem };
    const calls = turn.calls.slice();
    let dispatched: NativeCall | undefined;
    for (let i = 0; i < calls.length && !dispatched; i++) {
      const c = calls[i] as NativeCall;
      if (c.status !== 'queued') continue;
      if (!available.has(c.name)) {
        calls[i] = {
          ...c,
          status: 'rejected',
          error: `unknown tool "${c.name}"; the available tools are: ${[...available].join(', ') || 'none'}`,
        };
        continue;
      }
      dispatched = calls[i] = { ...c, status: 'dispatched' };
    }
    const turns = mem.turns.slice();
    turns[last] = withCalls(turn, calls);
    const next = nextMemory({ ...mem, turns });
    if (!dispatched) return { mem: next };
    return {
      mem: next,
      decision: {
        type: 'tool_call',
        command: dispatched.name,
        args: dispatched.arguments as JsonValue,
        ...(opts.toolTimeoutMs !== undefined ? { timeoutMs: opts.toolTimeoutMs } : {}),
        memory: next as unknown as JsonValue,
        message: `calling ${dispatched.name}`,
      },
    };
  }

  async function decide(task: Task, history: HistoryEntry[], ctx: StepContext): Promise<Decision> {
    const commands = ctx.availableCommands();
    const available = new Set(commands.map((c) => c.name));
    const queued = nextQueuedCall(nativeMemories.get(task.memory), available);
    if (queued.decision) return queued.decision;
    const mem = queued.mem;
    const lastTurn = mem.turns[mem.turns.length - 1];
    const failDecision = (
      code: string,
      message: string,
      details: Record<string, JsonValue> = {},
    ): Decision => ({
      type: 'fail',
      error: {
        code,
        message,
        details: { ...details, iterations: mem.turns.length, lastMessage: lastTurn?.content ?? null },
      },
      memory: mem as unknown as JsonValue,
    });
    if (mem.turns.length >= maxIterations) {
      return failDecision('max_iterations', `no final answer after ${maxIterations} model calls`);
    }
    const messages = conversation(task, history, mem, system, maxChars);
    const tools = toolDefinitions(commands);
    const call = await callModel(
      ctx,
      task.id,
      opts.model,
      'native',
      { messages, tools },
      opts.systemPrompt ? undefined : prompt,
    );
    await ctx.logStep(call.record);
    if (!call.response) {
      const failed = nextMemory({ ...mem, modelFailures: mem.modelFailures + 1 });
      if (failed.modelFailures >= maxFailures) {
        return {
          ...failDecision(
            'model_failed',
            `the model failed ${failed.modelFailures} times in a row: ${call.error?.message ?? ''}`,
          ),
          memory: failed as unknown as JsonValue,
        };
      }
      return { type: 'continue', memory: failed as unknown as JsonValue };
    }
    const reply = call.response.message;
    const empty = reply.toolCalls.length === 0 && reply.content.trim() === '';
    const turn = withCalls(
      {
        content: reply.content,
        calls: [],
        ...(empty
          ? { nudge: 'Your reply was empty. Call a tool, or answer with the result if the task is done.' }
          : {}),
      },
      reply.toolCalls.map((c) => ({ name: c.name, arguments: c.arguments, status: 'queued' as const })),
    );
    const withTurn = nextMemory({ ...mem, modelFailures: 0, turns: [...mem.turns, turn] });
    if (turn.calls.length === 0) {
      if (empty) return { type: 'continue', memory: withTurn as unknown as JsonValue };
      return {
        type: 'complete',
        result: { message: reply.content, iterations: withTurn.turns.length },
        memory: withTurn as unknown as JsonValue,
      };
    }
    const next = nextQueuedCall(withTurn, available);
    if (next.decision) return next.decision;
    // Every call named an unknown tool: the errors go back to the model on the next step.
    return {
      type: 'continue',
      note: 'the model called only unknown tools',
      memory: next.mem as unknown as JsonValue,
    };
  }

  return { decide };
}
