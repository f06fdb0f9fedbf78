/**
 * Task-kind routes: the kinds in effect (`GET /api/task-kinds`), save one (`POST /api/task-kinds/:name`) and remove a
 * stored one (`POST /api/task-kinds/:name/remove`). A save is validated with the config file's schema and on disk
 * before it is answered; a refusal changes nothing. The route table audits each success.
 */
import { RemoveTaskKindBodySchema, SaveTaskKindBodySchema } from '@ccagent/protocol';
import type { TaskKindService, TaskKindView } from '../../task-kind-service.js';
import { HttpError, parseWith, readJson, sendJson, serviceError } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

function service(d: HttpApiOptions): TaskKindService {
  if (!d.kindService) throw new HttpError(404, 'no_task_kinds', 'this server does not edit task kinds');
  return d.kindService;
}

/** A kind on the wire (snake_case fields). */
function wire(k: TaskKindView): Record<string, unknown> {
  return {
    name: k.name,
    source: k.source,
    definition: k.definition,
    ...(k.configDefinition !== undefined ? { config_definition: k.configDefinition } : {}),
    ...(k.revision !== undefined ? { revision: k.revision } : {}),
    ...(k.savedAt !== undefined ? { saved_at: k.savedAt } : {}),
    ...(k.savedBy !== undefined ? { saved_by: k.savedBy } : {}),
    roles: k.roles,
    aliases: k.aliases,
  };
}

/** `GET /api/task-kinds`. */
export function listTaskKinds(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  const s = service(d);
  const { kinds, aliases } = s.list();
  sendJson(res, 200, { kinds: kinds.map(wire), aliases, ...s.modelChoices() });
  return Promise.resolve();
}

/** `POST /api/task-kinds/:name`. */
export async function saveTaskKind(
  d: HttpApiOptions,
  { req, res, caller, params: { name = '' } }: RouteRequest,
): Promise<void> {
  const s = service(d);
  const b = parseWith(SaveTaskKindBodySchema, await readJson(req), 'body');
  const r = await s.save(
    name,
    b.definition,
    caller ? `${caller.role}:${caller.actor}` : 'http',
    b.expected_revision,
  );
  if (!r.ok) throw serviceError(r.error);
  const { warnings } = r.value;
  sendJson(res, 200, { kind: wire(r.value), ...(warnings ? { warnings } : {}) });
}

/** `POST /api/task-kinds/:name/remove`. */
export async function removeTaskKind(
  d: HttpApiOptions,
  { req, res, caller, params: { name = '' } }: RouteRequest,
): Promise<void> {
  const s = service(d);
  const b = parseWith(RemoveTaskKindBodySchema, await readJson(req, true), 'body');
  const r = await s.remove(name, caller ? `${caller.role}:${caller.actor}` : 'http', b.expected_revision);
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, 200, { removed: r.value.name, ...(r.value.source ? { source: r.value.source } : {}) });
}
