/**
 * Which configured models their servers have, checked at startup, on `/health` and before each step of a task
 * (cached), so a missing model produces a clear "run `ollama pull …`" instead of an obscure chat error.
 */
import type { Clock, Decision, TaskStrategy } from '@ccagent/engine';
import type { ModelInventory } from '@ccagent/models';

/**
 * One model server, the model names something would call on it (a role's configured model, a kind's model on its
 * endpoint, a task's own choice once made) and the names a task may still choose there (`limits.models`): those are
 * checked too, but one the server lacks is reported apart and does not degrade `/health`.
 */
export interface ModelServer {
  provider: string;
  url: string;
  inventory: ModelInventory;
  names: string[];
  allowed?: string[];
}

/** What one server said. */
export interface ServerReport {
  provider: string;
  url: string;
  reachable: boolean;
  version?: string;
  error?: string;
  present: string[];
  /** Names something would call on this server that it lacks. */
  missing: string[];
  /** Names only allowed here (`limits.models`, called by nothing yet) that it lacks. */
  allowedMissing: string[];
}

/**
 * Report over every server. `missing` lists models a reachable server lacks that something would call there;
 * `allowedMissing` the allowed-but-unused ones it lacks (a task choosing one would fail with the pull hint).
 */
export interface AvailabilityReport {
  servers: ServerReport[];
  missing: Array<{ name: string; provider: string; url: string }>;
  allowedMissing: Array<{ name: string; provider: string; url: string }>;
  checkedAt: number;
}

/** Checks and caches model availability. */
export class ModelAvailability {
  private last: AvailabilityReport | undefined;
  private inflight: Promise<AvailabilityReport> | undefined;

  constructor(
    private readonly servers: ModelServer[],
    private readonly clock: Clock,
    private readonly cacheMs = 10_000,
    private readonly timeoutMs = 1_500,
  ) {}

  /** The report, from cache when younger than the cache period (unless `fresh`). */
  async check(fresh = false): Promise<AvailabilityReport> {
    if (!fresh) {
      const cached = this.cached();
      if (cached) return cached;
    }
    this.inflight ??= this.run().finally(() => {
      this.inflight = undefined;
    });
    return this.inflight;
  }

  /** The cached report while it is younger than the cache period, else undefined (no check is started). */
  cached(): AvailabilityReport | undefined {
    const last = this.last;
    return last && this.clock.now() - last.checkedAt < this.cacheMs ? last : undefined;
  }

  private async run(): Promise<AvailabilityReport> {
    const servers = await Promise.all(
      this.servers.map(async (s): Promise<ServerReport> => {
        const base = { provider: s.provider, url: s.url, present: [], missing: [], allowedMissing: [] };
        const needed = new Set(s.names);
        const names = [...needed, ...(s.allowed ?? []).filter((n) => !needed.has(n))];
        try {
          const r = await s.inventory.checkModels(names, { timeoutMs: this.timeoutMs });
          if (!r.ok) return { ...base, reachable: false, error: r.error.message };
          const out: ServerReport = {
            ...base,
            reachable: true,
            present: r.value.present,
            missing: r.value.missing.filter((n) => needed.has(n)),
            allowedMissing: r.value.missing.filter((n) => !needed.has(n)),
          };
          if (r.value.version !== undefined) out.version = r.value.version;
          return out;
        } catch (err) {
          return { ...base, reachable: false, error: err instanceof Error ? err.message : String(err) };
        }
      }),
    );
    const missing = servers.flatMap((s) =>
      s.missing.map((name) => ({ name, provider: s.provider, url: s.url })),
    );
    const allowedMissing = servers.flatMap((s) =>
      s.allowedMissing.map((name) => ({ name, provider: s.provider, url: s.url })),
    );
    this.last = { servers, missing, allowedMissing, checkedAt: this.clock.now() };
    return this.last;
  }
}

/** The hint shown for a missing model. */
export function pullHint(m: { name: string; provider: string; url: string }): string {
  return m.provider === 'ollama'
    ? `model "${m.name}" is not installed in Ollama at ${m.url}; run: ollama pull ${m.name}`
    : `model "${m.name}" is not served by ${m.url}`;
}

/** A model a strategy calls: by name on any server, or by name on the server at `url`. */
export type ModelNeed = string | { name: string; url: string };

/**
 * Wraps a strategy so a task whose models are missing fails at its next step with the pull hint (checked against
 * the cached report, so pulling the model while the server runs makes new steps work again). An unreachable
 * server does not fail the task here: the model call's own retries and errors decide. A need that names its server
 * is only missing there (another server lacking a model of that name does not matter to this task).
 */
export function gateOnModels(
  strategy: TaskStrategy,
  needs: ModelNeed[],
  availability: ModelAvailability,
): TaskStrategy {
  const needed = (m: { name: string; url: string }): boolean =>
    needs.some((n) => (typeof n === 'string' ? n === m.name : n.name === m.name && n.url === m.url));
  const gate = (report: AvailabilityReport): Decision | undefined => {
    if (report.missing.length === 0 && report.allowedMissing.length === 0) return undefined;
    // a task's own choice of an allowed model may not be in the needed names of the cached report yet
    const missing = [...report.missing, ...report.allowedMissing].filter(needed);
    if (missing.length === 0) return undefined;
    return {
      type: 'fail',
      error: {
        code: 'model_missing',
        message: missing.map(pullHint).join('; '),
        details: { missing: missing.map((m) => m.name) },
      },
    };
  };
  return {
    // Not async: with a fresh cached report (nearly every step) the strategy's own promise is returned as is. The
    // async version cost every step an await and two more promise hops (it showed in the round-trip profile).
    decide(task, history, ctx): Promise<Decision> {
      const cached = availability.cached();
      if (cached) {
        const failed = gate(cached);
        return failed ? Promise.resolve(failed) : strategy.decide(task, history, ctx);
      }
      return availability.check().then((report) => gate(report) ?? strategy.decide(task, history, ctx));
    },
  };
}
