/** `GET /api/models`: the model roles and each pool of servers with its servers' state (`ccagent models`). */
import type { ModelsResponse } from '@ccagent/protocol';
import { sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

/** `GET /api/models`. */
export function listModels(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const body: ModelsResponse = d.modelView?.() ?? { roles: [], pools: [] };
  sendJson(res, 200, body);
  return Promise.resolve();
}
