/**
 * Everything a host process (the orchestrator) composes to offer Minecraft tasks: the mod endpoint, the action
 * executor routed beside its own, the `minecraft_agent` strategy beside its own, and the operations the API exposes
 * (list instances, create a task with settings, stop an instance, retry a task). Tasks are created and retried by the
 * engine's `TaskOperations` over a catalogue holding the `minecraft_agent` kind ({@link minecraftTaskKinds}): the same
 * rules, run budgets, input limits and storage refusals as every other task, and a retry that reopens the task.
 */
import type {
  Clock,
  CommandOutcome,
  CreateTaskRequest,
  JsonValue,
  Logger,
  StrategyResolver,
  Task,
  TaskKindCatalogue,
  TaskKindRules,
  TaskOperationError,
  TaskOperationResult,
  ToolCallRequest,
  ToolExecutor,
} from '@ccagent/engine';
import { z } from 'zod';
import { createMinecraftStrategy } from '../agent/minecraft-strategy.js';
import {
  defaultModelFactory,
  MINECRAFT_TASK_KIND,
  MinecraftTaskSettingsSchema,
  type MinecraftTaskSettings,
  type ModelFactory,
} from '../agent/settings.js';
import { MC_ACTION_COMMAND, MinecraftActionExecutor } from '../endpoint/action-executor.js';
import { MinecraftEndpoint, type InstanceInfo } from '../endpoint/mc-endpoint.js';
import type { McTls, McUpgradeCheck } from '../endpoint/mod-server.js';
import { ActionPolicies, ActionPolicySchema, type ActionPolicy } from './action-policy.js';
import { fileSettingsStore, InstanceSeat, type McSettingsStore } from './instance-seat.js';

/** The engine operations the Minecraft API needs (the orchestrator's `Engine` satisfies it). */
export interface McTaskHost {
  cancelTask(taskId: string, reason?: string): Promise<Task>;
  getTask(taskId: string): Promise<Task | undefined>;
  listTasks(filter?: { kind?: string; status?: Task['status'][] }): Promise<Task[]>;
}

/**
 * The task operations that create and retry `minecraft_agent` tasks: the engine's `TaskOperations` built with
 * {@link minecraftTaskKinds} satisfies it.
 */
export interface McTaskOperations {
  create(req: CreateTaskRequest): Promise<TaskOperationResult<{ task: Task; created: boolean }>>;
  retry(taskId: string): Promise<TaskOperationResult<Task>>;
}

/** The rules of the `minecraft_agent` kind: only the mod's action command, no model role a request may choose. */
export const MINECRAFT_KIND_RULES: TaskKindRules = {
  strategy: MINECRAFT_TASK_KIND,
  allowedCommands: [MC_ACTION_COMMAND],
  budgets: {},
  modelRoles: [],
};

/**
 * The catalogue of the Minecraft API's task operations: the `minecraft_agent` kind alone (so the general task routes,
 * which use the host's own catalogue, never create one), with the host's operator limits and providers.
 */
export function minecraftTaskKinds(base: Pick<TaskKindCatalogue, 'limits' | 'providers'>): TaskKindCatalogue {
  return {
    kinds: { [MINECRAFT_TASK_KIND]: MINECRAFT_KIND_RULES },
    aliases: {},
    limits: base.limits,
    providers: base.providers,
  };
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
  /** Certificate and key for `wss://` (see `MinecraftEndpointOptions.tls`). */
  tls?: McTls;
  /** Frames per second and burst one instance may send (see `MinecraftEndpointOptions.rateLimit`). */
  rateLimit?: { messagesPerSecond: number; burst: number };
  /**
   * A JSON file keeping the per-instance action allow/deny lists and the active instance (`connect-instance`) across
   * restarts (the SQLite deployment: beside its database); absent, and no `settingsStore`: kept in memory only.
   */
  settingsFile?: string;
  /**
   * Where the same settings are kept instead of a file (the PostgreSQL deployment: `PostgresStore.minecraftSettings`).
   * Read by {@link MinecraftAgent.loadSettings}; each change is saved before it is acknowledged.
   */
  settingsStore?: McSettingsStore;
  /** Where each instance's log numbering resumes (see `MinecraftEndpointOptions.lastLogSeq`). */
  lastLogSeq?: (instanceId: string) => number;
  clock?: Clock;
  logger?: Logger;
}

/** Input of {@link MinecraftAgent.createTask}: the prompt and the task settings. */
export const McTaskRequestSchema = z.object({
  prompt: z.string().min(1).max(20_000),
  settings: MinecraftTaskSettingsSchema,
});

/**
 * Outcome of an API operation. `code`: `invalid_input`, `not_found`, `conflict` (the task cannot be retried in its
 * state), `unavailable` (the database cannot be written right now; nothing changed), `instance_busy` (the instance
 * runs another task: one at a time), `no_instance`.
 */
export type McResult<T> =
  { ok: true; value: T } | { ok: false; code: string; message: string; path?: string[] };

/** The composed Minecraft side of a host. */
export interface MinecraftAgent {
  endpoint: MinecraftEndpoint;
  /**
   * Read the kept settings (active instance, action lists); once, later calls answer the same promise. A host calls
   * it before it resumes tasks, so no step reads the lists before they are there; `start` calls it too. Rejects with
   * `MinecraftError('settings_invalid')` when the kept document is not valid, or the store's error.
   */
  loadSettings(): Promise<void>;
  /**
   * Read the settings (see `loadSettings`), then start the mod endpoint; resolves with its URL. Rejects with
   * `MinecraftError('listen_failed')`.
   */
  start(): Promise<string>;
  close(): Promise<void>;
  /** `executor` with `minecraft_action` calls routed to the mod endpoint. */
  routeExecutor(executor: ToolExecutor): ToolExecutor;
  /** `resolver` with the `minecraft_agent` kind added. */
  withStrategy(resolver: StrategyResolver): StrategyResolver;
  /** Instances known to the endpoint. */
  listInstances(): InstanceInfo[];
  /** Create a `minecraft_agent` task (input validated; the settings are the task's `context`). */
  createTask(host: McTaskHost, ops: McTaskOperations, input: unknown): Promise<McResult<Task>>;
  /** Send `stop` to the instance and cancel its unfinished tasks. */
  stopInstance(host: McTaskHost, instanceId: string): Promise<{ stopSent: boolean; cancelled: string[] }>;
  /** Reopen a failed or cancelled `minecraft_agent` task with fresh budgets (the engine's retry). */
  retryTask(host: McTaskHost, ops: McTaskOperations, taskId: string): Promise<McResult<Task>>;
  /** The instance a prompt without an instance id goes to (the seed's `connect-instance`), or null. */
  activeInstance(): string | null;
  /**
   * Make `instanceId` the active instance (kept before it resolves); `unavailable` when it could not be kept (nothing
   * changed).
   */
  connectInstance(instanceId: string): Promise<McResult<string>>;
  /** The instance's unfinished task, else its last one (newest first), or undefined. */
  currentTask(host: McTaskHost, instanceId: string): Promise<Task | undefined>;
  /** An instance's action allow/deny lists (undefined: none). */
  actionPolicy(instanceId: string): ActionPolicy | undefined;
  /**
   * Set an instance's lists (validated: `invalid_input`; kept before it resolves: `unavailable` when they could not
   * be, and nothing changed).
   */
  setActionPolicy(instanceId: string, policy: unknown): Promise<McResult<ActionPolicy>>;
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
    ...(opts.tls !== undefined ? { tls: opts.tls } : {}),
    ...(opts.rateLimit !== undefined ? { rateLimit: opts.rateLimit } : {}),
    ...(opts.lastLogSeq !== undefined ? { lastLogSeq: opts.lastLogSeq } : {}),
  });
  const seat = new InstanceSeat(
    opts.settingsStore ??
      (opts.settingsFile !== undefined ? fileSettingsStore(opts.settingsFile) : undefined),
  );
  const policies = new ActionPolicies(seat);
  const actions = new MinecraftActionExecutor(endpoint, (id, type) => policies.refusal(id, type));
  // One plan per instance: creations for one instance run one at a time, and each checks that no task of the
  // instance is unfinished (a second task is refused with instance_busy, docs/minecraft.md).
  const creating = new Map<string, Promise<unknown>>();
  const oneAtATime = <T>(instanceId: string, fn: () => Promise<T>): Promise<T> => {
    const before = creating.get(instanceId) ?? Promise.resolve();
    const run = before.then(fn, fn);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    creating.set(instanceId, settled);
    void settled.then(() => {
      if (creating.get(instanceId) === settled) creating.delete(instanceId);
    });
    return run;
  };
  const busyWith = async (host: McTaskHost, instanceId: string): Promise<Task | undefined> =>
    (await host.listTasks({ kind: MINECRAFT_TASK_KIND, status: UNFINISHED })).find(
      (t) => instanceOf(t) === instanceId,
    );
  const createFor = (
    host: McTaskHost,
    instanceId: string,
    create: () => Promise<McResult<Task>>,
    self?: string,
  ): Promise<McResult<Task>> =>
    oneAtATime(instanceId, async () => {
      const busy = await busyWith(host, instanceId);
      // A retry's own task, not ended yet, is the engine's to refuse (`conflict`), not another task in the way.
      if (busy !== undefined && busy.id !== self) {
        return {
          ok: false as const,
          code: 'instance_busy',
          message:
            `instance ${instanceId} is running task ${busy.id} (${busy.status}); one task per instance at a time: ` +
            'stop it (stop-task) or wait for it to finish',
        };
      }
      return create();
    });
  const strategy = createMinecraftStrategy({
    states: endpoint,
    modelFor:
      opts.modelFor ?? defaultModelFactory(opts.ollamaUrl !== undefined ? { ollamaUrl: opts.ollamaUrl } : {}),
    ...(opts.numCtxFor !== undefined ? { numCtxFor: opts.numCtxFor } : {}),
    // The instance's allow/deny lists in the prompt (the executor below still refuses at the last point).
    actionListsOf: (instanceId) => policies.get(instanceId),
  });
  const instanceOf = (t: Task): string | undefined => {
    const ctx = t.context as { instanceId?: unknown } | undefined;
    return typeof ctx?.instanceId === 'string' ? ctx.instanceId : undefined;
  };
  return {
    endpoint,
    loadSettings: () => seat.load(),
    start: async () => {
      await seat.load();
      return (await endpoint.start()).url;
    },
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
    async createTask(host, ops, input) {
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
      return createFor(host, settings.instanceId, async () => {
        const r = await ops.create({
          kind: MINECRAFT_TASK_KIND,
          prompt,
          clientId: null,
          context: JSON.parse(JSON.stringify(settings)) as JsonValue,
          allowedCommands: [actions.listCommands()[0]?.name ?? 'minecraft_action'],
          metadata: { instanceId: settings.instanceId },
        });
        return r.ok ? { ok: true, value: r.value.task } : refusal(r.error);
      });
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
    async retryTask(host, ops, taskId) {
      const t = await host.getTask(taskId);
      if (t === undefined || t.kind !== MINECRAFT_TASK_KIND) {
        return { ok: false, code: 'not_found', message: `no minecraft_agent task ${taskId}` };
      }
      // A retry reopens the task; like a new task, it waits for no other task of the instance to be running.
      return createFor(
        host,
        instanceOf(t) ?? '',
        async () => {
          const r = await ops.retry(taskId);
          return r.ok ? { ok: true, value: r.value } : refusal(r.error);
        },
        taskId,
      );
    },
    activeInstance: () => seat.active(),
    async connectInstance(instanceId) {
      try {
        await seat.setActive(instanceId);
      } catch (e) {
        return {
          ok: false,
          code: 'unavailable',
          message: `the active instance was not kept: ${(e as Error).message}`,
        };
      }
      return { ok: true, value: instanceId };
    },
    async currentTask(host, instanceId) {
      const busy = await busyWith(host, instanceId);
      if (busy !== undefined) return busy;
      const mine = (await host.listTasks({ kind: MINECRAFT_TASK_KIND })).filter(
        (t) => instanceOf(t) === instanceId,
      );
      return mine.sort((a, b) => b.createdAt - a.createdAt)[0];
    },
    actionPolicy: (instanceId) => policies.get(instanceId),
    async setActionPolicy(instanceId, policy) {
      const parsed = ActionPolicySchema.safeParse(policy);
      if (!parsed.success) {
        const i = parsed.error.issues[0];
        return {
          ok: false,
          code: 'invalid_input',
          message: `${i?.path.join('.') || '(body)'}: ${i?.message ?? 'invalid'}`,
          path: (i?.path ?? []).map(String),
        };
      }
      try {
        await policies.set(instanceId, parsed.data);
      } catch (e) {
        return {
          ok: false,
          code: 'unavailable',
          message: `the action lists were not kept: ${(e as Error).message}`,
        };
      }
      return { ok: true, value: policies.get(instanceId) ?? {} };
    },
  };
}

/**
 * A refusal of the task operations as the API's result: the input over the server's limits (which the engine checks
 * for every adapter) as `invalid_input` naming the field, the other codes as they are.
 */
function refusal(e: TaskOperationError): { ok: false; code: string; message: string; path?: string[] } {
  if (e.code !== 'invalid_field') return { ok: false, code: e.code, message: e.message };
  const field = e.path?.replace(/^\$\./, '');
  return {
    ok: false,
    code: 'invalid_input',
    message: `${field ?? '(body)'}: ${e.message}`,
    ...(field !== undefined ? { path: [field] } : {}),
  };
}
