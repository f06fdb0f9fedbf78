/** Operations routes: `/health` (database, model servers, connected clients) and `/metrics` (Prometheus text). */
import type { HealthResponse } from '@ccagent/protocol';
import { ORCHESTRATOR_VERSION } from '../../version.js';
import { sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

/**
 * `GET /health`: 200 when the database works, 503 otherwise; `degraded` when a model server is unreachable or lacks a
 * model something would call on it. A model `limits.models` allows but nothing calls yet is listed apart
 * (`allowed_missing`) and does not degrade.
 */
export async function health(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const [db, models] = await Promise.all([d.checkDb(), d.models.check()]);
  const reachable = models.servers.every((s) => s.reachable);
  const body: HealthResponse = {
    ok: db.ok,
    degraded: !reachable || models.missing.length > 0,
    version: ORCHESTRATOR_VERSION,
    uptime_s: Math.round((d.now() - d.startedAt) / 100) / 10,
    ...d.role?.(),
    db: {
      ok: db.ok,
      path: d.dbPath,
      ...(db.ok ? {} : { error: db.error, ...(db.code !== undefined ? { code: db.code } : {}) }),
    },
    model_servers: models.servers.map((s) => ({
      provider: s.provider,
      url: s.url,
      reachable: s.reachable,
      ...(s.version !== undefined ? { version: s.version } : {}),
      ...(s.error !== undefined ? { error: s.error } : {}),
      present: s.present,
      missing: s.missing,
      allowed_missing: s.allowedMissing,
    })),
    models: {
      missing: [...new Set(models.missing.map((m) => m.name))],
      allowed_missing: [...new Set(models.allowedMissing.map((m) => m.name))],
    },
    clients: { connected: d.registry.connectedCount() },
  };
  sendJson(res, db.ok ? 200 : 503, body);
}

/** `GET /metrics`. */
export async function metricsText(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const text = await d.metrics.render();
  res.writeHead(200, { 'content-type': d.metrics.contentType });
  res.end(text);
}
