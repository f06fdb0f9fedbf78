import {
  MODEL_REQUEST_KIND,
  type JsonValue,
  type StepContext,
  type StepRecord,
  type StepUsage,
  type TaskErrorInfo,
} from '@ccagent/engine';
import type {
  ChatDelta,
  ChatMessage,
  ChatModel,
  ChatOptions,
  ChatResponse,
  JsonSchema,
  ModelFailover,
  ToolDefinition,
} from '@ccagent/models';
import type { Prompt } from './prompts.js';

/** Which part of a strategy a model call belongs to (also the step-log `kind`). */
export type ModelCallRole = 'planner' | 'executor' | 'native';

/**
 * The step-log `kind` of a model call: a role, the executor's repair, or a kind another strategy names for its own
 * calls (the Minecraft strategy's `mc_plan`, `mc_plan_repair`, …). Every kind gets the same write-ahead
 * `model_request` record (its `output.role` is the kind), usage and cancellation.
 */
export type ModelCallKind = ModelCallRole | 'executor_repair' | (string & {});

/** Passed to {@link ModelRole.onDelta} with every streamed piece, so a host can show a reply as it is written. */
export interface ModelCallMeta {
  taskId: string;
  step: number;
  role: ModelCallRole;
}

/**
 * A model in one role (planner, executor, native loop): the {@link ChatModel} adapter, the model name (also the
 * engine's per-model limiter key), and the request options used for every call in that role.
 */
export interface ModelRole {
  model: ChatModel;
  /** Model name as the provider knows it, e.g. `qwen2.5-coder:7b`. */
  name: string;
  options?: ChatOptions;
  keepAlive?: string | number;
  think?: boolean;
  /**
   * Output limit (`numPredict`) of the one retry after a reply of this role stopped at its limit
   * (`done_reason: "length"`); unset → the retry uses the same options.
   */
  lengthRetryNumPredict?: number;
  /** Streamed pieces of each reply (never needed for correctness; the whole reply is awaited). */
  onDelta?: (delta: ChatDelta, meta: ModelCallMeta) => void;
}

/**
 * The output bound (`numPredict`: Ollama `options.num_predict`, OpenAI `max_tokens`) of a model call whose role sets
 * none: a model that never stops is cut off here (`done_reason: "length"`, which the loops handle as a cut reply)
 * instead of generating until the call's timeout. Room for a reasoning block and a whole program. A role's own
 * `numPredict` wins; a negative one (Ollama's "no limit") sends no bound to an OpenAI-compatible server.
 */
export const DEFAULT_NUM_PREDICT = 4096;

/** The role's options with the output bound filled in when the role sets none. */
function boundedOptions(options: ChatOptions | undefined): ChatOptions {
  return options?.numPredict !== undefined ? options : { ...options, numPredict: DEFAULT_NUM_PREDICT };
}

/** One model request as the strategy builds it (what varies per call). */
export interface ModelRequest {
  messages: ChatMessage[];
  format?: 'json' | JsonSchema;
  tools?: ToolDefinition[];
  /** How the prompt was laid out (turn, compaction), recorded in the step log's input; not sent to the model. */
  layout?: JsonValue;
  /** False: ask the adapter for one whole reply instead of a stream (unset: the adapter's default). */
  stream?: boolean;
  /** More fields of the step log's input that are not sent to the model (e.g. the provider the task chose). */
  inputExtra?: Record<string, JsonValue>;
}

/** A finished model call: the reply or the error, and the step-log record describing it (not yet written). */
export interface ModelCallOutcome {
  response?: ChatResponse;
  error?: TaskErrorInfo;
  record: StepRecord;
}

function toJson(value: unknown): JsonValue {
  return JSON.parse(JSON.stringify(value ?? null)) as JsonValue;
}

function usageOf(response: ChatResponse): StepUsage {
  const u = response.usage;
  const usage: StepUsage = {};
  if (u.promptEvalCount !== undefined) usage.promptTokens = u.promptEvalCount;
  if (u.evalCount !== undefined) usage.completionTokens = u.evalCount;
  if (u.totalDurationNs !== undefined) usage.totalDurationMs = Math.round(u.totalDurationNs / 1e6);
  return usage;
}

/**
 * Step-log kind of a model call's first attempt that failed on one server of a pool, written before the call is sent
 * to another server: `error` is that attempt's, `output.server` the server, `output.role` the call's own kind. The
 * call's finished record follows with the server that answered (`output.server`) and `output.attempt: 2`.
 */
export const MODEL_FAILOVER_KIND = 'model_failover';

function failoverRecord(model: string, kind: string, f: ModelFailover): StepRecord {
  return {
    kind: MODEL_FAILOVER_KIND,
    model,
    output: toJson({ role: kind, server: f.server, attempt: 1, streamed: f.emitted }),
    error: { code: f.error.code, message: f.error.message },
    startedAt: f.startedAt,
    durationMs: f.durationMs,
  };
}

function errorInfo(err: unknown): TaskErrorInfo {
  const code =
    typeof err === 'object' && err !== null && typeof (err as { code?: unknown }).code === 'string'
      ? (err as { code: string }).code
      : 'model_error';
  return { code, message: err instanceof Error ? err.message : String(err) };
}

/**
 * Run one model call under the engine's per-model limiter and describe it for the step log: the exact request
 * (messages, options, format, tools, keep-alive, think, prompt version) and the raw reply with usage and timing.
 * A model failure is returned, not thrown; an abort of the step (cancel, deadline, shutdown) is rethrown so the
 * engine can stop the task.
 */
export async function callModel(
  ctx: StepContext,
  taskId: string,
  role: ModelRole,
  kind: ModelCallKind,
  request: ModelRequest,
  prompt?: Pick<Prompt, 'version'> & { name: string },
): Promise<ModelCallOutcome> {
  const input: Record<string, unknown> = { messages: request.messages };
  const options = boundedOptions(role.options);
  input.options = options;
  if (request.format !== undefined) input.format = request.format;
  if (request.tools !== undefined) input.tools = request.tools;
  if (role.keepAlive !== undefined) input.keepAlive = role.keepAlive;
  if (role.think !== undefined) input.think = role.think;
  if (request.inputExtra !== undefined) Object.assign(input, request.inputExtra);
  if (prompt) input.prompt = { name: prompt.name, version: prompt.version };
  if (request.layout !== undefined) input.layout = request.layout;
  const startedAt = ctx.clock.now();
  const started = performance.now();
  const onDelta = role.onDelta;
  const metaRole = (kind === 'executor_repair' ? 'executor' : kind) as ModelCallRole;
  let logFailure: unknown;
  try {
    const response = await ctx.callModel(role.name, async (signal) => {
      // Written ahead of the request: a call cut short by a restart (kill -9, power loss) still leaves the request the
      // model server received in the step log. The completed record (same kind and startedAt) follows it.
      try {
        await ctx.logStep({
          kind: MODEL_REQUEST_KIND,
          model: role.name,
          input: toJson(input),
          output: { role: kind },
          startedAt,
        });
      } catch (err) {
        logFailure = err; // a store failure, not the model's: the engine defers the step
        throw err;
      }
      return role.model.chat({
        model: role.name,
        messages: request.messages,
        ...(request.tools ? { tools: request.tools } : {}),
        ...(request.format !== undefined ? { format: request.format } : {}),
        options,
        ...(role.keepAlive !== undefined ? { keepAlive: role.keepAlive } : {}),
        ...(role.think !== undefined ? { think: role.think } : {}),
        ...(request.stream !== undefined ? { stream: request.stream } : {}),
        ...(onDelta
          ? { onDelta: (d: ChatDelta) => onDelta(d, { taskId, step: ctx.step, role: metaRole }) }
          : {}),
        // A pool of servers keeps the task on the server whose prompt cache holds its conversation.
        affinityKey: taskId,
        // The first attempt of a call a pool moves to another server is recorded before the second one leaves.
        onFailover: async (f: ModelFailover) => {
          try {
            await ctx.logStep(failoverRecord(role.name, kind, f));
          } catch (err) {
            logFailure = err;
            throw err;
          }
        },
        signal,
      });
    });
    const output: Record<string, unknown> = { content: response.message.content };
    if (response.message.thinking) output.thinking = response.message.thinking;
    if (response.message.toolCalls.length > 0) output.toolCalls = response.message.toolCalls;
    if (response.usage.doneReason !== undefined) output.doneReason = response.usage.doneReason;
    if (response.server !== undefined) output.server = response.server;
    if (response.attempt !== undefined) output.attempt = response.attempt;
    return {
      response,
      record: {
        kind,
        model: role.name,
        input: toJson(input),
        output: toJson(output),
        startedAt,
        durationMs: Math.round(performance.now() - started),
        usage: usageOf(response),
      },
    };
  } catch (err) {
    if (ctx.signal.aborted || (logFailure !== undefined && err === logFailure)) throw err;
    const error = errorInfo(err);
    return {
      error,
      record: {
        kind,
        model: role.name,
        input: toJson(input),
        error,
        startedAt,
        durationMs: Math.round(performance.now() - started),
      },
    };
  }
}
