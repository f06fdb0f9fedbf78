/**
 * Steering routes: a follow-up message to a task (`POST /api/tasks/:id/messages`), an outside event
 * (`POST /api/tasks/:id/events`) and a retry of a failed or cancelled task (`POST /api/tasks/:id/retry`). Each answers
 * `{task}` once the change is on disk; a refusal changes nothing.
 */
import { z } from 'zod';
import { taskToWire } from '../../wire.js';
import { parseWith, readJson, sendJson, serviceError } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

const messageBody = z.strictObject({
  text: z.string().min(1).max(20_000),
  /** Who writes (shown to the model as the message's source in the history); default `http`. */
  from: z.string().min(1).max(100).optional(),
});
const eventBody = z.strictObject({ name: z.string().min(1).max(100), data: z.unknown().optional() });
const retryBody = z.strictObject({});

/** `POST /api/tasks/:id/messages`: a running task sees it next step; an ended one continues with it. */
export async function postMessage(
  d: HttpApiOptions,
  { req, res, params: [id] }: RouteRequest,
): Promise<void> {
  const b = parseWith(messageBody, await readJson(req), 'body');
  const r = await d.tasks.message(id as string, b.text, b.from ?? 'http');
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, 200, { task: taskToWire(r.value) });
}

/** `POST /api/tasks/:id/events`: into the history of a task that has not ended; a sleeping task wakes. */
export async function postEvent(d: HttpApiOptions, { req, res, params: [id] }: RouteRequest): Promise<void> {
  const b = parseWith(eventBody, await readJson(req), 'body');
  const r = await d.tasks.event(id as string, b.name, b.data);
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, 200, { task: taskToWire(r.value) });
}

/** `POST /api/tasks/:id/retry`: a failed or cancelled task resumes from its memory with fresh budgets. */
export async function retryTask(d: HttpApiOptions, { req, res, params: [id] }: RouteRequest): Promise<void> {
  parseWith(retryBody, await readJson(req, true), 'body');
  const r = await d.tasks.retry(id as string);
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, 200, { task: taskToWire(r.value) });
}
