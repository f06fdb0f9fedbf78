/**
 * Steering routes: a follow-up message to a task (`POST /api/tasks/:id/messages`), an outside event
 * (`POST /api/tasks/:id/events`) and a retry of a failed or cancelled task (`POST /api/tasks/:id/retry`). Each answers
 * `{task}` once the change is on disk; a refusal changes nothing.
 */
import {
  RetryBodySchema,
  TaskEventBodySchema,
  TaskMessageBodySchema,
  type TaskResponse,
} from '@ccagent/protocol';
import { taskToWire } from '../../wire.js';
import { parseWith, readJson, sendJson, serviceError } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

/** `POST /api/tasks/:id/messages`: a running task sees it next step; an ended one continues with it. */
export async function postMessage(
  d: HttpApiOptions,
  { req, res, params: { id = '' } }: RouteRequest,
): Promise<void> {
  const b = parseWith(TaskMessageBodySchema, await readJson(req), 'body');
  const r = await d.tasks.message(id, b.text, b.from ?? 'http');
  if (!r.ok) throw serviceError(r.error);
  const body: TaskResponse = { task: taskToWire(r.value) };
  sendJson(res, 200, body);
}

/** `POST /api/tasks/:id/events`: into the history of a task that has not ended; a sleeping task wakes. */
export async function postEvent(
  d: HttpApiOptions,
  { req, res, params: { id = '' } }: RouteRequest,
): Promise<void> {
  const b = parseWith(TaskEventBodySchema, await readJson(req), 'body');
  const r = await d.tasks.event(id, b.name, b.data);
  if (!r.ok) throw serviceError(r.error);
  const body: TaskResponse = { task: taskToWire(r.value) };
  sendJson(res, 200, body);
}

/** `POST /api/tasks/:id/retry`: a failed or cancelled task resumes from its memory with fresh budgets. */
export async function retryTask(
  d: HttpApiOptions,
  { req, res, params: { id = '' } }: RouteRequest,
): Promise<void> {
  parseWith(RetryBodySchema, await readJson(req, true), 'body');
  const r = await d.tasks.retry(id);
  if (!r.ok) throw serviceError(r.error);
  const body: TaskResponse = { task: taskToWire(r.value) };
  sendJson(res, 200, body);
}
