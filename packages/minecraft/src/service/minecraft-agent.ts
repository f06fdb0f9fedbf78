/**
 * Everything a host process (the orchestrator) composes to offer Minecraft tasks: the mod endpoint, the action
 * executor routed beside its own, the `minecraft_agent` strategy beside its own, and the operations the API exposes
 * (list instances, create a task with settings, stop an instance, retry a task).
 */
import type {
  Clock,
  CommandOutcome,
  Logger,
  NewTaskInput,
  StrategyResolver,
  Task,
  ToolCallRequest,
  ToolExecutor,
} from '@ccagent/engine';
import { isEngineError } from '@ccagent/engine';
import { z } from 'zod';
import { createMinecraftStrategy } from '../agent/minecraft-strategy.js';
import {
  defaultModelFactory,
  MINECRAFT_TASK_KIND,
  MinecraftTaskSettingsSchema,
  type MinecraftTaskSettings,
  type ModelFactory,
} from '../agent/settings.js';
import { MinecraftActionExecutor } from '../endpoint/action-executor.js';
import { MinecraftEndpoint, type InstanceInfo } from '../endpoint/mc-endpoint.js';
import type { McUpgradeCheck } from '../endpoint/mod-server.js';

/** The engine operations the Minecraft API needs (the orchestrator's `Engine` satisfies it). */
export interface McTaskHost {
  createTask(input: NewTaskInput): Promise<Task>;
  cancelTask(taskId: string, reason?: string): Promise<Task>;
  getTask(taskId: string): Promise<Task | undefined>;
  listTasks(filter?: { kind?: string; status?: Task['status'][] }): Promise<Task[]>;
}

/** Options of {@link createMinecraftAgent}. */
export interface MinecraftAgentOptions {
  /** Mod endpoint interface (default 127.0.0.1). */
  host?: string;
  /** Mod endpoint port (default 9876; 0 = any free port). */
  port?: number;
  /** Ollama URL for tasks that do not name one. */
  ollamaUrl?: string;
  /** Chat model per task settings (default: Ollama or OpenAI-compatible adapters). */
  modelFor?: ModelFactory;
  /**
   * The `num_ctx` to ask for a task's model (see `MinecraftStrategyOptions.numCtxFor`): a host running other roles on
   * the same model gives theirs, so the server does not reload the model between task kinds.
   */
  numCtxFor?: (settings: MinecraftTaskSettings) => number | undefined;
  /** Who may connect as a mod (default: no browser pages, no foreign Host; see `MinecraftEndpointOptions.authorize`). */
  authorize?: McUpgradeCheck;
  clock?: Clock;
  logger?: Logger;
}

/** Input of {@link MinecraftAgent.createTask}: the prompt and the task settings. */
export const McTaskRequestSchema = z.object({
  prompt: z.string().min(1).max(20_000),
  settings: MinecraftTaskSettingsSchema,
});

/** Outcome of an API operation. `code`: `invalid_input`, `not_found`, `not_retryable`. */
export type McResult<T> =
  { ok: true; value: T } | { ok: false; code: string; message: string; path?: string[] };

/** The composed Minecraft side of a host. */
export interface MinecraftAgent {
  endpoint: MinecraftEndpoint;
  /** Start the mod endpoint; resolves with its URL. Rejects with `MinecraftError('listen_failed')`. */
  start(): Promise<string>;
  close(): Promise<void>;
  /** `executor` with `minecraft_action` calls routed to the mod endpoint. */
  routeExecutor(executor: ToolExecutor): ToolExecutor;
  /** `resolver` with the `minecraft_agent` kind added. */
  withStrategy(resolver: StrategyResolver): StrategyResolver;
  /** Instances known to the endpoint. */
  listInstances(): InstanceInfo[];
  /** Create a `minecraft_agent` task (input validated; the settings are the task's `context`). */
  createTask(host: McTaskHost, input: unknown): Promise<McResult<Task>>;
  /** Send `stop` to the instance and cancel its unfinished tasks. */
  stopInstance(host: McTaskHost, instanceId: string): Promise<{ stopSent: boolean; cancelled: string[] }>;
  /** A new task with the prompt and settings of a failed or cancelled one. */
  retryTask(host: McTaskHost, taskId: string): Promise<McResult<Task>>;
}

const UNFINISHED: Task['status'][] = ['queued', 'running', 'waiting_for_command', 'waiting_for_user'];

/** Compose the Minecraft side (nothing listens before {@link MinecraftAgent.start}). */
export function createMinecraftAgent(opts: MinecraftAgentOptions = {}): MinecraftAgent {
  const endpoint = new MinecraftEndpoint({
    ...(opts.host !== undefined ? { host: opts.host } : {}),
    ...(opts.port !== undefined ? { port: opts.port } : {}),
    ...(opts.clock !== undefined ? { clock: opts.clock } : {}),
    ...(opts.logger !== undefined ? { logger: opts.logger } : {}),
    ...(opts.authorize !== undefined ? { authorize: opts.authorize } : {}),
  });
  const actions = new MinecraftActionExecutor(endpoint);
  const strategy = createMinecraftStrategy({
    states: endpoint,
    modelFor:
      opts.modelFor ?? defaultModelFactory(opts.ollamaUrl !== undefined ? { ollamaUrl: opts.ollamaUrl } : {}),
    ...(opts.numCtxFor !== undefined ? { numCtxFor: opts.numCtxFor } : {}),
  });
  const instanceOf = (t: Task): string | undefined => {
    const ctx = t.context as { instanceId?: unknown } | undefined;
    return typeof ctx?.instanceId === 'string' ? ctx.instanceId : undefined;
  };
  return {
    endpoint,
    start: async () => (await endpoint.start()).url,
    close: () => endpoint.close(),
    routeExecutor: (executor) => ({
      execute: (call: ToolCallRequest): Promise<CommandOutcome> =>
        actions.handles(call.command) ? actions.execute(call) : executor.execute(call),
      ...(executor.listCommands
        ? { listCommands: (clientId) => executor.listCommands?.(clientId) ?? [] }
        : {}),
    }),
    withStrategy: (resolver) => (kind) => (kind === MINECRAFT_TASK_KIND ? strategy : resolver(kind)),
    listInstances: () => endpoint.listInstances(),
    async createTask(host, input) {
      const parsed = McTaskRequestSchema.safeParse(input);
      if (!parsed.success) {
        const i = parsed.error.issues[0];
        return {
          ok: false,
          code: 'invalid_input',
          message: `${i?.path.join('.') || '(body)'}: ${i?.message ?? 'invalid'}`,
          path: (i?.path ?? []).map(String),
        };
      }
      const { prompt, settings } = parsed.data;
      return createdOrRefused(() =>
        host.createTask({
          kind: MINECRAFT_TASK_KIND,
          prompt,
          context: JSON.parse(JSON.stringify(settings)) as NewTaskInput['context'],
          allowedCommands: [actions.listCommands()[0]?.name ?? 'minecraft_action'],
          metadata: { instanceId: settings.instanceId },
        }),
      );
    },
    async stopInstance(host, instanceId) {
      const stopSent = endpoint.stop(instanceId);
      const cancelled: string[] = [];
      for (const t of await host.listTasks({ kind: MINECRAFT_TASK_KIND, status: UNFINISHED })) {
        if (instanceOf(t) !== instanceId) continue;
        await host.cancelTask(t.id, 'stopped by the user');
        cancelled.push(t.id);
      }
      return { stopSent, cancelled };
    },
    async retryTask(host, taskId) {
      const t = await host.getTask(taskId);
      if (t === undefined || t.kind !== MINECRAFT_TASK_KIND) {
        return { ok: false, code: 'not_found', message: `no minecraft_agent task ${taskId}` };
      }
      if (t.status !== 'failed' && t.status !== 'cancelled') {
        return {
          ok: false,
          code: 'not_retryable',
          message: `task ${taskId} is ${t.status}; only failed or cancelled tasks are retried`,
        };
      }
      return createdOrRefused(() =>
        host.createTask({
          kind: MINECRAFT_TASK_KIND,
          prompt: t.prompt,
          ...(t.context !== undefined ? { context: t.context } : {}),
          allowedCommands: t.allowedCommands,
          metadata: { ...t.metadata, retryOf: t.id },
        }),
      );
    },
  };
}

/**
 * The task the engine created, or its refusal of the input (`invalid_input`: the prompt or context over the server's
 * input limits, which the engine checks for every adapter) as a result naming the field; other failures propagate.
 */
async function createdOrRefused(create: () => Promise<Task>): Promise<McResult<Task>> {
  try {
    return { ok: true, value: await create() };
  } catch (err) {
    if (isEngineError(err, 'invalid_input')) {
      const field = err.details?.['field'];
      return {
        ok: false,
        code: 'invalid_input',
        message: `${typeof field === 'string' ? field : '(body)'}: ${err.message}`,
        ...(typeof field === 'string' ? { path: [field] } : {}),
      };
    }
    throw err;
  }
}
