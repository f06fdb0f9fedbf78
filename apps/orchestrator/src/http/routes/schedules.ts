/**
 * Schedule routes: list (`GET /api/schedules`), add (`POST /api/schedules`), pause, resume and remove
 * (`POST /api/schedules/:id/pause|resume|remove`). Each change is on disk before it is answered; a refusal changes
 * nothing. A server without schedules (an embedded store without them) answers 404 `no_schedules`.
 */
import { CreateScheduleBodySchema, EmptyScheduleBodySchema } from '@ccagent/protocol';
import type { ScheduleService } from '../../schedule-service.js';
import { HttpError, parseWith, readJson, sendJson, serviceError } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

function service(d: HttpApiOptions): ScheduleService {
  if (!d.schedules) throw new HttpError(404, 'no_schedules', 'this server keeps no schedules');
  return d.schedules;
}

/** `GET /api/schedules`: every schedule with its next due time, and the latest firings. */
export async function listSchedules(d: HttpApiOptions, { res }: RouteRequest): Promise<void> {
  sendJson(res, 200, await service(d).list());
}

/** `POST /api/schedules`: add one (201). */
export async function addSchedule(d: HttpApiOptions, { req, res, caller }: RouteRequest): Promise<void> {
  const s = service(d);
  const b = parseWith(CreateScheduleBodySchema, await readJson(req), 'body');
  const r = await s.add(b, caller ? `${caller.role}:${caller.actor}` : 'http');
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, 201, { schedule: r.value });
}

/** `POST /api/schedules/:id/pause` and `/resume`. */
function pauseRoute(paused: boolean) {
  return async (d: HttpApiOptions, { req, res, params: { id = '' } }: RouteRequest): Promise<void> => {
    const s = service(d);
    parseWith(EmptyScheduleBodySchema, await readJson(req, true), 'body');
    const r = await s.setPaused(id, paused);
    if (!r.ok) throw serviceError(r.error);
    sendJson(res, 200, { schedule: r.value });
  };
}

/** `POST /api/schedules/:id/pause`: it fires nothing until resumed. */
export const pauseSchedule = pauseRoute(true);
/** `POST /api/schedules/:id/resume`: from now on; occurrences while paused are not fired. */
export const resumeSchedule = pauseRoute(false);

/** `POST /api/schedules/:id/remove`: the schedule and its firing records. */
export async function removeSchedule(
  d: HttpApiOptions,
  { req, res, params: { id = '' } }: RouteRequest,
): Promise<void> {
  const s = service(d);
  parseWith(EmptyScheduleBodySchema, await readJson(req, true), 'body');
  const r = await s.remove(id);
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, 200, { removed: r.value });
}
