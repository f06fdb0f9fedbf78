/**
 * A task kind's own model and provider per role (`taskKinds.<kind>.models.<role>`): which model name a role calls
 * and on which of the configured servers. A kind never names a URL — a kind saved over HTTP must not be able to point
 * the orchestrator at a new address — it chooses a configured role's server (`endpoint`) or a configured provider
 * (`provider`: the first role configured with it, as a task's own `settings.provider`), and a model name the operator
 * allows (`limits.models`, the same rule as a task's own choice).
 *
 * Precedence, per field: the task's own settings, then the kind's `models`, then the configuration's `models.<role>`.
 * The same checks (`kindModelIssues`) run for the config file (at load) and for a kind saved at run time.
 */
import type { ModelConfig, ModelRoleName, OrchestratorConfig, TaskKindConfig } from './config.js';
import { providerRole } from './task-catalogue.js';

/** What the checks read of the configuration. */
type ModelsAndLimits = Pick<OrchestratorConfig, 'models' | 'limits'>;

/** Model names a task or a kind may choose: `limits.models`, by default the names the roles configure. */
export function allowedModelNames(config: ModelsAndLimits): string[] {
  return (
    config.limits.models ?? (['planner', 'executor', 'native'] as const).map((r) => config.models[r].name)
  );
}

/** The configured role whose server(s) serve role `role` of a kind (the kind's `endpoint` or `provider`, else the role's own). */
export function kindEndpoint(
  config: Pick<OrchestratorConfig, 'models'>,
  role: ModelRoleName,
  spec: TaskKindConfig | undefined,
): ModelRoleName {
  const k = spec?.models?.[role];
  if (k?.endpoint !== undefined) return k.endpoint;
  if (k?.provider !== undefined && k.provider !== config.models[role].provider) {
    return providerRole(config as OrchestratorConfig, k.provider) ?? role;
  }
  return role;
}

/** `m` served where `p` is configured: its provider, URL or pool, key and pool settings (the rest stays `m`'s). */
export function onServerOf(m: ModelConfig, p: ModelConfig): ModelConfig {
  if (m === p) return m;
  const out: ModelConfig = { ...m, provider: p.provider, pool: p.pool };
  for (const field of ['baseUrl', 'apiKeyEnv', 'servers'] as const) {
    if (p[field] !== undefined) (out as Record<string, unknown>)[field] = p[field];
    else delete out[field];
  }
  return out;
}

/** Role `role`'s model configuration with kind `spec`'s choice applied (the configuration's when it makes none). */
export function kindRoleConfig(
  config: Pick<OrchestratorConfig, 'models'>,
  role: ModelRoleName,
  spec: TaskKindConfig | undefined,
): ModelConfig {
  const base = config.models[role];
  const k = spec?.models?.[role];
  if (k === undefined) return base;
  const endpoint = kindEndpoint(config, role, spec);
  const m = endpoint === role ? base : onServerOf(base, config.models[endpoint]);
  return k.name !== undefined ? { ...m, name: k.name } : m;
}

/** One problem of a kind's `models`, at a path inside the kind. */
export interface KindModelIssue {
  path: Array<string | number>;
  message: string;
}

/**
 * What a kind's `models` gets wrong against the configuration (the field schema cannot see it): a role its strategy
 * does not call, a model name the operator does not allow, a provider no role is configured with, or an endpoint
 * configured with another provider than the one named.
 */
export function kindModelIssues(config: ModelsAndLimits, spec: TaskKindConfig): KindModelIssue[] {
  const issues: KindModelIssue[] = [];
  const models = spec.models;
  if (models === undefined) return issues;
  const calls = spec.strategy === 'planner_executor' ? ['planner', 'executor'] : ['native'];
  const allowed = allowedModelNames(config);
  for (const role of ['planner', 'executor', 'native'] as const) {
    const k = models[role];
    if (k === undefined) continue;
    if (!calls.includes(role)) {
      issues.push({
        path: ['models', role],
        message: `a ${spec.strategy} kind calls no ${role} model; it calls: ${calls.join(', ')}${spec.strategy === 'chat' ? ' (chat kinds run on the native role)' : ''}`,
      });
      continue;
    }
    if (k.name !== undefined && !allowed.includes(k.name)) {
      issues.push({
        path: ['models', role, 'name'],
        message: `model "${k.name}" is not allowed by the server (limits.models): ${allowed.join(', ')}`,
      });
    }
    if (k.provider !== undefined) {
      const providers = (['planner', 'executor', 'native'] as const).map((r) => config.models[r].provider);
      if (!providers.includes(k.provider)) {
        issues.push({
          path: ['models', role, 'provider'],
          message: `no model role is configured with provider "${k.provider}" (configured: ${[...new Set(providers)].join(', ')})`,
        });
      } else if (k.endpoint !== undefined && config.models[k.endpoint].provider !== k.provider) {
        issues.push({
          path: ['models', role, 'provider'],
          message: `endpoint ${k.endpoint} is configured with provider "${config.models[k.endpoint].provider}", not "${k.provider}"`,
        });
      }
    }
  }
  return issues;
}

/** A configured role's server as the dashboard offers it: which role, provider and where. */
export function endpointOf(
  config: Pick<OrchestratorConfig, 'models'>,
  role: ModelRoleName,
  ollamaUrl: string,
): { endpoint: ModelRoleName; provider: string; url: string } {
  const m = config.models[role];
  const url = m.servers !== undefined ? m.servers.map((s) => s.baseUrl).join(', ') : (m.baseUrl ?? ollamaUrl);
  return { endpoint: role, provider: m.provider, url: url.replace(/\/+$/, '') };
}
