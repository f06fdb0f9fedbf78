/**
 * The model side as operators see it: the roles' models and every pool's servers with their state, in the HTTP API's
 * wire form (`GET /api/models`), from the pools' own snapshots.
 */
import type { ModelPool, PoolServerSnapshot } from '@ccagent/models';
import type { HttpModelServer, ModelsResponse } from '@ccagent/protocol';

/** A role's model and where it is served (`provider: 'pool'` with the pool's name for a pool). */
export interface RoleModel {
  role: string;
  name: string;
  provider: string;
  url: string;
}

/** One pool server in wire form. */
export function serverToWire(s: PoolServerSnapshot): HttpModelServer {
  return {
    name: s.name,
    provider: s.provider,
    state: s.state,
    concurrency: s.concurrency,
    in_flight: s.inFlight,
    queued: s.queued,
    calls: s.calls,
    failures: s.failures,
    failovers: s.failovers,
    wait_ms_total: s.waitMsTotal,
    wait_ms_max: s.waitMsMax,
    affinity_hits: s.affinityHits,
    affinity_misses: s.affinityMisses,
    affinity_hit_rate: s.affinityHitRate ?? null,
    ...(s.lastError !== undefined ? { last_error: { ...s.lastError } } : {}),
    ...(s.nextProbeAt !== undefined ? { next_probe_at: s.nextProbeAt } : {}),
  };
}

/** The whole view now. */
export function modelView(
  roles: readonly RoleModel[],
  pools: ReadonlyMap<string, ModelPool>,
): ModelsResponse {
  return {
    roles: roles.map((r) => ({ ...r })),
    pools: [...pools].map(([name, pool]) => {
      const snap = pool.snapshot();
      return { name, queued: snap.queued, servers: snap.servers.map(serverToWire) };
    }),
  };
}
