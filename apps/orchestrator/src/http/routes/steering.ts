/**
 * Steering routes: a follow-up message to a task (`POST /api/tasks/:id/messages`), an outside event
 * (`POST /api/tasks/:id/events`, or `POST /api/agents/:name/events` by the agent's name) and a retry of a failed or cancelled task (`POST /api/tasks/:id/retry`). Each answers
 * `{task}` once the change is on disk; a refusal changes nothing.
 */
import {
  AgentEventBodySchema,
  RetryBodySchema,
  TaskEventBodySchema,
  TaskMessageBodySchema,
  type TaskResponse,
} from '@ccagent/protocol';
import { taskToWire } from '../../wire.js';
import { HttpError, parseWith, readJson, sendJson, serviceError } from '../http-kit.js';
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

/**
 * `POST /api/agents/:name/events`: the event to the agent of that name, resolved as a computer's `task_event {agent}`
 * is (the one task that has not ended with that name, else with that id) among every task, or those `client_id`
 * reaches. None is a 404, several a 400 listing them; a refusal posts nothing.
 */
export async function postAgentEvent(
  d: HttpApiOptions,
  { req, res, params: { name = '' } }: RouteRequest,
): Promise<void> {
  const b = parseWith(AgentEventBodySchema, await readJson(req), 'body');
  const client = b.client_id;
  const found = await d.tasks.resolveAgent(
    name,
    client === undefined ? () => true : (t) => d.tasks.canAccess(t, client, 'act'),
  );
  if (!found.ok) {
    throw found.code === 'not_found'
      ? new HttpError(404, 'not_found', found.message)
      : new HttpError(400, 'invalid_body', found.message, '$.client_id');
  }
  const r = await d.tasks.event(found.task.id, b.name, b.data);
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
