/**
 * Dashboard routes: the page and its assets (open: they hold no secret), the live event stream, and what this server
 * offers the page (task kinds, optional features).
 */
import type { DashboardFeaturesResponse, EventsQuerySchema } from '@ccagent/protocol';
import { ORCHESTRATOR_VERSION } from '../../version.js';
import { HttpError, sendJson } from '../http-kit.js';
import type { HttpApiOptions, QueryOf, RouteRequest } from '../route.js';
import { CREATE_TAKES_SETTINGS } from './tasks.js';

/** `GET /api/events`: Server-Sent Events (see `EventHub`); resumes after `Last-Event-ID`. */
export function eventStream(
  d: HttpApiOptions,
  { req, res, query: q }: RouteRequest<QueryOf<typeof EventsQuerySchema>>,
): Promise<void> {
  const header = req.headers['last-event-id'];
  const lastEventId = typeof header === 'string' && header !== '' ? header : q.last_event_id;
  d.events.subscribe(res, {
    ...(q.task !== undefined ? { taskIds: q.task } : {}),
    ...(lastEventId !== undefined ? { lastEventId } : {}),
  });
  return Promise.resolve();
}

/**
 * `GET /api/dashboard`: the task kinds, `features` naming what this server has beyond the basic routes
 * (`message`, `retry`, `task_settings`, …), so the page shows the others disabled, and the caller's `role`
 * (`operator`, `viewer` or `computer`; `operator` on a server without a token), so a viewer's page disables what the
 * server would refuse it.
 */
export function dashboardFeatures(d: HttpApiOptions, { res, caller, routes }: RouteRequest): Promise<void> {
  const features = ['events', 'search', 'step_summary'];
  const has = (name: string): boolean => routes.some((r) => r.name === name);
  if (has('tasks.message')) features.push('message');
  if (has('tasks.retry')) features.push('retry');
  if (CREATE_TAKES_SETTINGS) features.push('task_settings');
  const body: DashboardFeaturesResponse = {
    version: ORCHESTRATOR_VERSION,
    task_kinds: [...d.taskKinds],
    features,
    role: caller?.role ?? 'operator',
  };
  sendJson(res, 200, body);
  return Promise.resolve();
}

/** `GET /`, `/index.html`, `/assets/*`: the dashboard's files. */
export function dashboardFile(d: HttpApiOptions, { req, res, path }: RouteRequest): Promise<void> {
  if (!d.dashboard.serve(req, res, path)) {
    throw new HttpError(404, 'not_found', `no dashboard file ${path}`);
  }
  return Promise.resolve();
}
