/**
 * Dashboard routes: the page and its assets (open: they hold no secret), the live event stream, and what this server
 * offers the page (task kinds, optional features).
 */
import type { DashboardFeaturesResponse } from '@ccagent/protocol';
import { z } from 'zod';
import { requestPrincipal } from '../../security/request-principal.js';
import { ORCHESTRATOR_VERSION } from '../../version.js';
import { HttpError, parseWith, sendJson } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';
import { ROUTES } from './index.js';
import { CREATE_TAKES_SETTINGS } from './tasks.js';

/** Task ids of `GET /api/events?task=a,b`: at most 100, each a plain id. */
const eventsQuery = z.strictObject({
  task: z
    .string()
    .transform((s) => s.split(',').filter((x) => x !== ''))
    .pipe(z.array(z.string().min(1).max(200)).max(100))
    .optional(),
  last_event_id: z.string().max(100).optional(),
});

/** `GET /api/events`: Server-Sent Events (see `EventHub`); resumes after `Last-Event-ID`. */
export function eventStream(d: HttpApiOptions, { req, res, url }: RouteRequest): Promise<void> {
  const q = parseWith(eventsQuery, Object.fromEntries(url.searchParams), 'query');
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
export function dashboardFeatures(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const features = ['events', 'search', 'step_summary'];
  const has = (name: string): boolean => ROUTES.some((r) => r.name === name);
  if (has('tasks.message')) features.push('message');
  if (has('tasks.retry')) features.push('retry');
  if (CREATE_TAKES_SETTINGS) features.push('task_settings');
  const body: DashboardFeaturesResponse = {
    version: ORCHESTRATOR_VERSION,
    task_kinds: [...d.taskKinds],
    features,
    role: requestPrincipal(req)?.role ?? 'operator',
  };
  sendJson(res, 200, body);
  return Promise.resolve();
}

/** `GET /`, `/index.html`, `/assets/*`: the dashboard's files. */
export function dashboardFile(d: HttpApiOptions, { req, res, url }: RouteRequest): Promise<void> {
  if (!d.dashboard.serve(req, res, url.pathname)) {
    throw new HttpError(404, 'not_found', `no dashboard file ${url.pathname}`);
  }
  return Promise.resolve();
}
