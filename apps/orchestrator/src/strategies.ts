/**
 * Builds one strategy per configured task kind from `@ccagent/agent`, with the model adapters of
 * `@ccagent/ollama`, each wrapped so a task whose models are missing fails with the `ollama pull` hint.
 */
import {
  createNativeToolStrategy,
  createPlannerExecutorStrategy,
  nativeOptionsFromEnv,
  resolvePolicy,
  type AgentPolicyInput,
  type ModelRole,
} from '@ccagent/agent';
import type { Clock, StrategyResolver, TaskStrategy } from '@ccagent/engine';
import {
  OllamaChatModel,
  OpenAICompatibleChatModel,
  type ChatModel,
  type ModelInventory,
  type ModelLogger,
} from '@ccagent/ollama';
import { rolesFor, type ModelConfig, type ModelRoleName, type OrchestratorConfig } from './config.js';
import { gateOnModels, ModelAvailability, type ModelServer } from './model-availability.js';
import { OrchestratorError } from './orchestrator-error.js';

/** Everything the composition root needs from the model side. */
export interface ModelSetup {
  resolver: StrategyResolver;
  availability: ModelAvailability;
  /** Model names per role that configured kinds use. */
  used: Array<{ role: ModelRoleName; name: string; provider: string; url: string }>;
}

type Adapter = ChatModel & ModelInventory;

/**
 * Create the model adapters (one per distinct provider + URL + call bounds), the strategies per kind and the availability
 * checker. Throws `OrchestratorError('config_invalid')` for an agent policy or environment override the agent
 * rejects, naming the config path.
 */
export function setupModels(
  config: OrchestratorConfig,
  opts: { ollamaUrl: string; env: NodeJS.ProcessEnv; logger: ModelLogger; clock: Clock },
): ModelSetup {
  /** One entry per model server (provider + URL + key): checked for installed models once. */
  const servers = new Map<string, { adapter: Adapter; provider: string; url: string; names: Set<string> }>();
  /** Chat adapters per server and call bounds (timeouts are adapter settings; roles may differ). */
  const adapters = new Map<string, { adapter: Adapter; url: string }>();
  const adapterFor = (
    m: ModelConfig,
  ): {
    adapter: Adapter;
    server: { adapter: Adapter; provider: string; url: string; names: Set<string> };
  } => {
    const url = (m.baseUrl ?? opts.ollamaUrl).replace(/\/+$/, '');
    const serverKey = `${m.provider} ${url} ${m.apiKeyEnv ?? ''}`;
    const key = `${serverKey} ${m.timeoutMs} ${m.stallTimeoutMs} ${m.firstChunkTimeoutMs}`;
    let made = adapters.get(key);
    if (!made) {
      const bounds = {
        timeoutMs: m.timeoutMs,
        stallTimeoutMs: m.stallTimeoutMs,
        firstChunkTimeoutMs: m.firstChunkTimeoutMs,
        logger: opts.logger,
      };
      if (m.provider === 'openai-compatible') {
        let apiKey: string | undefined;
        if (m.apiKeyEnv !== undefined) {
          apiKey = opts.env[m.apiKeyEnv];
          if (!apiKey) {
            throw new OrchestratorError(
              'config_invalid',
              `model ${m.name}: apiKeyEnv names ${m.apiKeyEnv}, but that environment variable is not set`,
            );
          }
        }
        const adapter = new OpenAICompatibleChatModel({
          baseUrl: url,
          ...bounds,
          ...(apiKey !== undefined ? { apiKey } : {}),
        });
        made = { adapter, url: adapter.baseUrl };
      } else {
        const adapter = new OllamaChatModel({ host: url, ...bounds });
        made = { adapter, url: adapter.host };
      }
      adapters.set(key, made);
    }
    const adapter = made.adapter;
    let server = servers.get(serverKey);
    if (!server) {
      server = { adapter, provider: m.provider, url: made.url, names: new Set() };
      servers.set(serverKey, server);
    }
    return { adapter, server };
  };
  const roleOf = (role: ModelRoleName): ModelRole => {
    const m = config.models[role];
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

  const strategies = new Map<string, TaskStrategy>();
  const needsByKind = new Map<string, string[]>();
  const used = new Map<ModelRoleName, { role: ModelRoleName; name: string; provider: string; url: string }>();
  for (const [kind, spec] of Object.entries(config.taskKinds)) {
    const roles = rolesFor(spec);
    for (const role of roles) {
      const m = config.models[role];
      used.set(role, { role, name: m.name, provider: m.provider, url: adapterFor(m).server.url });
    }
    let strategy: TaskStrategy;
    if (spec.strategy === 'native') {
      strategy = createNativeToolStrategy({
        model: roleOf('native'),
        ...(spec.maxIterations !== undefined ? { maxIterations: spec.maxIterations } : {}),
        ...(spec.systemPrompt !== undefined ? { systemPrompt: spec.systemPrompt } : {}),
        ...(spec.toolTimeoutMs !== undefined ? { toolTimeoutMs: spec.toolTimeoutMs } : {}),
        ...envNative,
      });
    } else {
      const policy = (spec.policy ?? {}) as AgentPolicyInput;
      try {
        resolvePolicy(policy);
      } catch (err) {
        throw new OrchestratorError('config_invalid', `taskKinds.${kind}.policy: ${(err as Error).message}`, {
          cause: err,
        });
      }
      strategy = createPlannerExecutorStrategy({
        planner: roleOf('planner'),
        executor: roleOf('executor'),
        mode: spec.executorMode,
        policy,
        interactive: spec.interactive,
        ...(spec.completion !== undefined ? { completion: spec.completion } : {}),
        ...(spec.systemPrompt !== undefined ? { systemPrompt: spec.systemPrompt } : {}),
      });
    }
    strategies.set(kind, strategy);
    needsByKind.set(
      kind,
      roles.map((r) => config.models[r].name),
    );
  }

  const inventories: ModelServer[] = [...servers.values()].map((a) => ({
    provider: a.provider,
    url: a.url,
    inventory: a.adapter,
    names: [...a.names],
  }));
  const availability = new ModelAvailability(inventories, opts.clock);
  const gated = new Map<string, TaskStrategy>();
  for (const [kind, s] of strategies)
    gated.set(kind, gateOnModels(s, needsByKind.get(kind) ?? [], availability));
  return {
    resolver: (kind) => gated.get(kind),
    availability,
    used: [...used.values()],
  };
}
