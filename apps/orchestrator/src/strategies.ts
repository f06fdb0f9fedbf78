/**
 * Builds one strategy per configured task kind from `@ccagent/agent`, with the model adapters of
 * `@ccagent/models`, each wrapped so a task whose models are missing fails with the `ollama pull` hint.
 */
import {
  createChatStrategy,
  createNativeToolStrategy,
  createPlannerExecutorStrategy,
  nativeOptionsFromEnv,
  withRunBudget,
  type RunBudget,
  resolvePolicy,
  type AgentPolicyInput,
  type ModelRole,
} from '@ccagent/agent';
import {
  runBudgetsOf,
  taskSettings,
  type Clock,
  type StoredStep,
  type StrategyResolver,
  type Task,
  type TaskStrategy,
} from '@ccagent/engine';
import {
  ModelPool,
  OllamaChatModel,
  OpenAICompatibleChatModel,
  type ChatModel,
  type ModelInventory,
  type ModelLogger,
} from '@ccagent/models';
import type { TaskSettings } from '@ccagent/protocol';
import {
  rolesFor,
  type ModelConfig,
  type ModelRoleName,
  type OrchestratorConfig,
  type TaskKindConfig,
} from './config.js';
import { kindRoleConfig, onServerOf } from './kind-models.js';
import {
  gateOnModels,
  ModelAvailability,
  pullHint,
  type ModelNeed,
  type ModelServer,
} from './model-availability.js';
import { OrchestratorError } from './orchestrator-error.js';
import { providerRole } from './task-catalogue.js';

/** Everything the composition root needs from the model side. */
export interface ModelSetup {
  resolver: StrategyResolver;
  availability: ModelAvailability;
  /** Model names per role that configured kinds use. */
  used: Array<{ role: ModelRoleName; name: string; provider: string; url: string }>;
  /** The pools of roles with several `servers`, by a name listing their servers; started and closed by the caller. */
  pools: Map<string, ModelPool>;
  /**
   * The engine's concurrent calls per model name: `server.modelConcurrency` for models on one server; for a model
   * served by a pool, enough for every task to wait in the pool, which queues fairly and knows each server's limit.
   */
  modelConcurrency: Record<string, number>;
  /** Builds and keeps the strategy of a kind's definition (throws `config_invalid` for a policy the agent refuses). */
  prepareKind: (kind: string, spec: TaskKindConfig, version: string) => void;
  /** From now on, each task runs the version of its kind in effect when it was created (run-time kinds). */
  useKinds: (source: KindVersionSource) => void;
  /**
   * Asks the servers of the roles a kind sets in its `models` whether they have the kind's models: `missing` (a
   * reachable server lacks one: the pull hint) and `unreachable` (a server did not answer), both keyed by role.
   */
  checkKindModels: (spec: TaskKindConfig) => Promise<KindModelCheck>;
}

/** What the servers said about a kind's own models (see `ModelSetup.checkKindModels`). */
export interface KindModelCheck {
  missing: Array<{ role: ModelRoleName; message: string }>;
  unreachable: Array<{ role: ModelRoleName; message: string }>;
}

/** The kinds' definitions per task (the task-kind service). */
export interface KindVersionSource {
  /** Whether a kind of that name exists now or ever existed. */
  known(kind: string): boolean;
  /** The definition and its version key for a task, by its kind and creation time. */
  versionOf(task: Pick<Task, 'kind' | 'createdAt'>): { spec: TaskKindConfig; version: string } | undefined;
}

/** The engine's limit for a pooled model: the pool does the limiting, per server. */
const POOLED_MODEL_CONCURRENCY = 1_000_000;

type Adapter = ChatModel & ModelInventory;

/**
 * A model server (or a pool of them), the model names something calls on it (roles, kinds, tasks' own choices) and
 * the names `limits.models` allows a task to choose there (checked, but reported apart when missing).
 */
interface ServerEntry {
  adapter: Adapter;
  provider: string;
  url: string;
  names: Set<string>;
  allowed: Set<string>;
}

/**
 * The `num_ctx` the configured roles ask of an Ollama model named `name` (planner first, then native, then executor),
 * or undefined when no Ollama role uses it. Given to other callers of the same model (the Minecraft agent), so a
 * request never asks the server for another context size than the roles do: that would reload the model.
 */
export function ollamaNumCtx(config: OrchestratorConfig, name: string): number | undefined {
  const tagged = (n: string): string => (n.includes(':') ? n : `${n}:latest`);
  for (const role of ['planner', 'native', 'executor'] as const) {
    const m = config.models[role];
    if (m.provider === 'ollama' && tagged(m.name) === tagged(name) && m.options.numCtx !== undefined)
      return m.options.numCtx;
  }
  return undefined;
}

/**
 * Create the model adapters (one per distinct provider + URL + call bounds), the strategies per kind and the availability
 * checker. Throws `OrchestratorError('config_invalid')` for an agent policy or environment override the agent
 * rejects, naming the config path.
 */
export function setupModels(
  config: OrchestratorConfig,
  opts: {
    ollamaUrl: string;
    env: NodeJS.ProcessEnv;
    logger: ModelLogger;
    clock: Clock;
    /** A task's whole step log: token budgets are counted from it once per task after a restart. */
    readSteps?: (taskId: string) => Promise<StoredStep[]>;
    /** Where chat kinds stream their replies: each piece of text as the model writes it. */
    onChatDelta?: (task: Task, step: number, text: string) => void;
  },
): ModelSetup {
  /** One entry per model server (provider + URL + key): checked for installed models once. */
  const servers = new Map<string, ServerEntry>();
  /** Chat adapters per server and call bounds (timeouts are adapter settings; roles may differ). */
  const adapters = new Map<string, { adapter: Adapter; url: string }>();
  /** One adapter for one server; `pooled`: no retries of its own (its pool sends a failed call to another server). */
  const makeAdapter = (
    m: ModelConfig,
    provider: 'ollama' | 'openai-compatible',
    url: string,
    apiKeyEnv: string | undefined,
    pooled: boolean,
  ): { adapter: Adapter; url: string } => {
    const bounds = {
      timeoutMs: m.timeoutMs,
      stallTimeoutMs: m.stallTimeoutMs,
      firstChunkTimeoutMs: m.firstChunkTimeoutMs,
      logger: opts.logger,
      ...(pooled ? { retry: { retries: 0 } } : {}),
    };
    if (provider === 'openai-compatible') {
      let apiKey: string | undefined;
      if (apiKeyEnv !== undefined) {
        apiKey = opts.env[apiKeyEnv];
        if (!apiKey) {
          throw new OrchestratorError(
            'config_invalid',
            `model ${m.name}: apiKeyEnv names ${apiKeyEnv}, but that environment variable is not set`,
          );
        }
      }
      const adapter = new OpenAICompatibleChatModel({
        baseUrl: url,
        ...bounds,
        ...(apiKey !== undefined ? { apiKey } : {}),
      });
      return { adapter, url: adapter.baseUrl };
    }
    const adapter = new OllamaChatModel({ host: url, ...bounds });
    return { adapter, url: adapter.host };
  };
  /**
   * Pools by their servers and settings: roles naming the same servers share one pool, so a server's concurrency and
   * its conversations' affinity hold across roles. Its servers' adapters take the call bounds of the first role
   * naming them; each role's own `timeoutMs` goes with each of its calls.
   */
  const pools = new Map<string, { pool: ModelPool; server: ServerEntry }>();
  const poolFor = (
    m: ModelConfig,
    list: NonNullable<ModelConfig['servers']>,
  ): { adapter: Adapter; server: ServerEntry } => {
    const members = list.map((s) => ({
      provider: s.provider ?? m.provider,
      url: s.baseUrl.replace(/\/+$/, ''),
      apiKeyEnv: s.apiKeyEnv,
      concurrency: s.concurrency,
    }));
    const name = members.map((s) => s.url).join(', ');
    const key = `${JSON.stringify(members)} ${JSON.stringify(m.pool)}`;
    let made = pools.get(key);
    if (!made) {
      const pool = new ModelPool({
        servers: members.map((s) => {
          const a = makeAdapter(m, s.provider, s.url, s.apiKeyEnv, members.length > 1);
          return { name: a.url, model: a.adapter, concurrency: s.concurrency };
        }),
        affinityWaitMs: m.pool.affinityWaitMs,
        probeIntervalMs: m.pool.probeIntervalMs,
        probeBackoffMs: m.pool.probeBackoffMs,
        maxProbeBackoffMs: m.pool.maxProbeBackoffMs,
        logger: opts.logger,
      });
      made = {
        pool,
        server: { adapter: pool, provider: 'pool', url: name, names: new Set(), allowed: new Set() },
      };
      pools.set(key, made);
    }
    const { pool, server } = made;
    const timeoutMs = m.timeoutMs;
    const adapter: Adapter = {
      provider: pool.provider,
      chat: (request) => pool.chat({ timeoutMs, ...request }),
      checkModels: (names, options) => pool.checkModels(names, options),
    };
    pooledNames.add(m.name);
    return { adapter, server };
  };
  const pooledNames = new Set<string>();
  const adapterFor = (m: ModelConfig): { adapter: Adapter; server: ServerEntry } => {
    if (m.servers !== undefined) return poolFor(m, m.servers);
    const url = (m.baseUrl ?? opts.ollamaUrl).replace(/\/+$/, '');
    const serverKey = `${m.provider} ${url} ${m.apiKeyEnv ?? ''}`;
    const key = `${serverKey} ${m.timeoutMs} ${m.stallTimeoutMs} ${m.firstChunkTimeoutMs}`;
    let made = adapters.get(key);
    if (!made) {
      made = makeAdapter(m, m.provider, url, m.apiKeyEnv, false);
      adapters.set(key, made);
    }
    const adapter = made.adapter;
    let server = servers.get(serverKey);
    if (!server) {
      server = { adapter, provider: m.provider, url: made.url, names: new Set(), allowed: new Set() };
      servers.set(serverKey, server);
    }
    return { adapter, server };
  };
  const roleOf = (role: ModelRoleName, spec: TaskKindConfig, settings?: TaskSettings): ModelRole => {
    const m = roleConfig(config, role, settings, spec);
    const { adapter, server } = adapterFor(m);
    server.names.add(m.name);
    const r: ModelRole = { model: adapter, name: m.name, options: m.options };
    if (m.keepAlive !== undefined) r.keepAlive = m.keepAlive;
    if (m.think !== undefined) r.think = m.think;
    return r;
  };

  let envNative: ReturnType<typeof nativeOptionsFromEnv>;
  try {
    envNative = nativeOptionsFromEnv(opts.env);
  } catch (err) {
    throw new OrchestratorError('config_invalid', (err as Error).message, { cause: err });
  }

  /** The strategy of a kind, with a task's settings (models, provider, sampling, executor mode …) applied. */
  const onChatDelta = opts.onChatDelta;
  /** Tasks whose step is being decided now (a streamed piece names only the task's id). */
  const deciding = new Map<string, Task>();
  const build = (kind: string, spec: TaskKindConfig, settings?: TaskSettings): TaskStrategy => {
    if (spec.strategy === 'chat') {
      const requested = settings?.budgets?.max_model_calls ?? spec.maxIterations;
      const role = roleOf('native', spec, settings);
      if (onChatDelta) {
        role.onDelta = (d, meta) => {
          const task = deciding.get(meta.taskId);
          if (d.content && task) onChatDelta(task, meta.step, d.content);
        };
      }
      return createChatStrategy({
        model: role,
        ...(spec.systemPrompt !== undefined ? { systemPrompt: spec.systemPrompt } : {}),
        ...(requested !== undefined ? { maxReplies: requested } : {}),
      });
    }
    if (spec.strategy === 'native') {
      const requested = settings?.budgets?.max_model_calls;
      return createNativeToolStrategy({
        model: roleOf('native', spec, settings),
        ...(spec.maxIterations !== undefined ? { maxIterations: spec.maxIterations } : {}),
        ...(spec.systemPrompt !== undefined ? { systemPrompt: spec.systemPrompt } : {}),
        ...(spec.toolTimeoutMs !== undefined ? { toolTimeoutMs: spec.toolTimeoutMs } : {}),
        waitTool: spec.waitTool,
        ...envNative,
        // a request's own budget wins over the kind's and the environment's
        ...(requested !== undefined ? { maxIterations: requested } : {}),
      });
    }
    const policy = (spec.policy ?? {}) as AgentPolicyInput;
    try {
      resolvePolicy(policy);
    } catch (err) {
      throw new OrchestratorError('config_invalid', `taskKinds.${kind}.policy: ${(err as Error).message}`, {
        cause: err,
      });
    }
    const completion =
      settings?.completion !== undefined ? completionOf(settings.completion) : spec.completion;
    return createPlannerExecutorStrategy({
      planner: roleOf('planner', spec, settings),
      executor: roleOf('executor', spec, settings),
      mode: settings?.executor_mode ?? spec.executorMode,
      policy,
      interactive: settings?.interactive ?? spec.interactive,
      strict: spec.strict,
      ...(completion !== undefined ? { completion } : {}),
      ...(spec.systemPrompt !== undefined ? { systemPrompt: spec.systemPrompt } : {}),
    });
  };

  const strategies = new Map<string, TaskStrategy>();
  const needsByKind = new Map<string, ModelNeed[]>();
  /** A role's model on the server that serves it (the same name elsewhere may be missing without harm). */
  const needOf = (m: ModelConfig): ModelNeed => ({ name: m.name, url: adapterFor(m).server.url });
  const used = new Map<ModelRoleName, { role: ModelRoleName; name: string; provider: string; url: string }>();
  for (const [kind, spec] of Object.entries(config.taskKinds)) {
    const roles = rolesFor(spec);
    for (const role of roles) {
      const m = config.models[role];
      const server = adapterFor(m).server;
      used.set(role, { role, name: m.name, provider: server.provider, url: server.url });
    }
    strategies.set(kind, build(kind, spec));
    needsByKind.set(
      kind,
      roles.map((r) => needOf(kindRoleConfig(config, r, spec))),
    );
  }
  // Models a request may choose (limits.models) are checked on the servers of the roles that may use them, as allowed
  // names: nothing calls them until a task chooses one (its strategy then adds it to `names`), so one a server lacks
  // is not reported as missing there.
  for (const name of config.limits.models ?? []) {
    for (const role of ['planner', 'executor', 'native'] as const) {
      adapterFor(config.models[role]).server.allowed.add(name);
    }
  }

  for (const { pool, server } of pools.values()) pool.setModels([...server.names]);
  // `names` read live: a kind saved at run time adds its models to its servers' names.
  const inventories: ModelServer[] = [...servers.values(), ...[...pools.values()].map((p) => p.server)].map(
    (a) => ({
      provider: a.provider,
      url: a.url,
      inventory: a.adapter,
      get names() {
        return [...a.names];
      },
      get allowed() {
        return [...a.allowed];
      },
    }),
  );
  const availability = new ModelAvailability(inventories, opts.clock);
  /** Strategies of tasks with settings, by kind, version and settings (a handful of distinct combinations in practice). */
  const variants = new Map<string, TaskStrategy>();
  const readSteps = opts.readSteps ?? (() => Promise.resolve([]));
  /** A kind's strategy with a task's settings applied, and its run budgets. */
  const finish = (kind: string, spec: TaskKindConfig, version: string, base: TaskStrategy): TaskStrategy => {
    const variantFor = (settings: TaskSettings): TaskStrategy => {
      const key = `${kind}\u0000${version}\u0000${JSON.stringify(settings)}`;
      let v = variants.get(key);
      if (!v) {
        const needs = rolesFor(spec).map((r) => needOf(roleConfig(config, r, settings, spec)));
        v = gateOnModels(build(kind, spec, settings), needs, availability);
        if (variants.size >= 256) variants.delete(variants.keys().next().value as string);
        variants.set(key, v);
      }
      return v;
    };
    const budgetOf = (task: Task): RunBudget => {
      const run = runBudgetsOf(task, spec.budgets);
      const b: RunBudget = {};
      if (run.maxSteps !== undefined) b.maxSteps = run.maxSteps;
      if (run.maxToolCalls !== undefined) b.maxToolCalls = run.maxToolCalls;
      if (run.maxPromptTokens !== undefined) b.maxPromptTokens = run.maxPromptTokens;
      if (run.maxOutputTokens !== undefined) b.maxOutputTokens = run.maxOutputTokens;
      return b;
    };
    const inner: TaskStrategy = {
      async decide(task, history, ctx) {
        const settings = taskSettings(task);
        const strategy = settings === undefined ? base : variantFor(settings);
        deciding.set(task.id, task);
        try {
          return await strategy.decide(task, history, ctx);
        } finally {
          deciding.delete(task.id);
        }
      },
    };
    // Token budgets of each run, and progress as the share of the run's budgets used.
    return withRunBudget(inner, { budgetOf, readSteps });
  };
  /** Strategies by kind and version (`file`: the configuration's; `r<n>`: a stored revision). */
  const byVersion = new Map<string, TaskStrategy>();
  for (const [kind, s] of strategies) {
    const spec = config.taskKinds[kind] as TaskKindConfig;
    byVersion.set(
      `${kind}\u0000file`,
      finish(kind, spec, 'file', gateOnModels(s, needsByKind.get(kind) ?? [], availability)),
    );
  }
  const prepare = (kind: string, spec: TaskKindConfig, version: string): TaskStrategy => {
    const key = `${kind}\u0000${version}`;
    let made = byVersion.get(key);
    if (!made) {
      const needs = rolesFor(spec).map((r) => needOf(kindRoleConfig(config, r, spec)));
      made = finish(kind, spec, version, gateOnModels(build(kind, spec), needs, availability));
      byVersion.set(key, made);
      // a kind's own models are probed by the pools that serve them
      for (const p of pools.values()) p.pool.setModels([...p.server.names]);
    }
    return made;
  };
  /** Run-time kinds (set once the task-kind service has loaded): each task runs its kind's version of its creation. */
  let kindSource: KindVersionSource | undefined;
  const dynamic = new Map<string, TaskStrategy>();
  const resolver: StrategyResolver = (kind) => {
    if (kindSource === undefined) return byVersion.get(`${kind}\u0000file`);
    const source = kindSource;
    if (!source.known(kind)) return undefined;
    let d = dynamic.get(kind);
    if (!d) {
      d = {
        decide(task, history, ctx) {
          const v = source.versionOf(task);
          if (v === undefined) {
            return Promise.reject(
              new OrchestratorError('config_invalid', `task kind ${kind} is not defined`),
            );
          }
          return prepare(kind, v.spec, v.version).decide(task, history, ctx);
        },
      };
      dynamic.set(kind, d);
    }
    return d;
  };
  const modelConcurrency: Record<string, number> = {};
  for (const name of [...configuredNames(config), ...(config.limits.models ?? [])]) {
    modelConcurrency[name] = config.server.modelConcurrency;
  }
  for (const name of pooledNames) modelConcurrency[name] = POOLED_MODEL_CONCURRENCY;
  const checkKindModels = async (spec: TaskKindConfig): Promise<KindModelCheck> => {
    const out: KindModelCheck = { missing: [], unreachable: [] };
    await Promise.all(
      rolesFor(spec)
        .filter((role) => spec.models?.[role] !== undefined)
        .map(async (role) => {
          const m = kindRoleConfig(config, role, spec);
          const { server } = adapterFor(m);
          const r = await server.adapter
            .checkModels([m.name], { timeoutMs: 1_500 })
            .catch((err: unknown) => ({ ok: false as const, error: err as Error }));
          if (!r.ok) {
            out.unreachable.push({
              role,
              message: `${server.provider} at ${server.url} did not answer (${r.error.message}); model "${m.name}" was not checked`,
            });
          } else if (r.value.missing.length > 0) {
            out.missing.push({
              role,
              message: pullHint({ name: m.name, provider: server.provider, url: server.url }),
            });
          }
        }),
    );
    // the models were just found (or not) on their servers: the report tasks are gated on says the same from now
    if (spec.models !== undefined) await availability.check(true);
    return out;
  };
  return {
    resolver,
    prepareKind: (kind, spec, version) => void prepare(kind, spec, version),
    useKinds: (source) => {
      kindSource = source;
    },
    checkKindModels,
    availability,
    used: [...used.values()],
    pools: new Map([...pools.values()].map((p) => [p.server.url, p.pool])),
    modelConcurrency,
  };
}

/** Model names the roles use. */
function configuredNames(config: OrchestratorConfig): string[] {
  return (['planner', 'executor', 'native'] as const).map((r) => config.models[r].name);
}

/**
 * A role's model configuration with a kind's own `models` and then a task's settings applied (model name, provider,
 * temperature, context size): the task's settings win over the kind's, which win over `models.<role>`.
 */
export function roleConfig(
  config: OrchestratorConfig,
  role: ModelRoleName,
  settings?: TaskSettings,
  kind?: TaskKindConfig,
): ModelConfig {
  const base = kindRoleConfig(config, role, kind);
  if (settings === undefined) return base;
  let m: ModelConfig = base;
  if (settings.provider !== undefined && settings.provider !== base.provider) {
    const from = providerRole(config, settings.provider);
    if (from !== undefined) m = onServerOf(m, config.models[from]);
  }
  // Chat kinds run on the native role's configuration; a request names their model `models.chat`.
  const name = settings.models?.[role] ?? (role === 'native' ? settings.models?.chat : undefined);
  if (name !== undefined) m = { ...m, name };
  if (settings.temperature !== undefined || settings.num_ctx !== undefined) {
    m = {
      ...m,
      options: {
        ...m.options,
        ...(settings.temperature !== undefined ? { temperature: settings.temperature } : {}),
        ...(settings.num_ctx !== undefined ? { numCtx: settings.num_ctx } : {}),
      },
    };
  }
  return m;
}

/** The agent's completion criteria from their wire form. */
function completionOf(c: NonNullable<TaskSettings['completion']>): NonNullable<TaskKindConfig['completion']> {
  const out: NonNullable<TaskKindConfig['completion']> = {};
  if (c.require_successful_run !== undefined) out.requireSuccessfulRun = c.require_successful_run;
  if (c.require_last_run_ok !== undefined) out.requireLastRunOk = c.require_last_run_ok;
  if (c.required_commands !== undefined) out.requiredCommands = c.required_commands;
  if (c.required_runs !== undefined) {
    out.requiredRuns = c.required_runs.map((r) =>
      r.args !== undefined ? { path: r.path, args: r.args } : { path: r.path },
    );
  }
  return out;
}
