/**
 * Task routes: list (paged, filtered), create (idempotent with `request_id`), one task with its whole record, a page
 * of its step log, cancel and answer. Bodies and queries are checked with zod; a refusal changes nothing.
 */
import { TASK_STATUSES, type CommandCallRecord, type TaskStatus } from '@ccagent/engine';
import { TaskSettingsSchema } from '@ccagent/protocol';
import { z } from 'zod';
import { callToWire, historyToWire, questionToWire, stepCallId, stepToWire, taskToWire } from '../../wire.js';
import { HttpError, parseWith, readJson, sendJson, serviceError } from '../http-kit.js';
import type { HttpApiOptions, RouteRequest } from '../route.js';

const statusList = z
  .string()
  .transform((s) => s.split(',').filter((x) => x !== ''))
  .pipe(z.array(z.enum(TASK_STATUSES as [TaskStatus, ...TaskStatus[]])));

const listQuery = z.strictObject({
  status: statusList.optional(),
  kind: z.string().min(1).optional(),
  client: z.string().min(1).optional(),
  limit: z.coerce.number().int().min(1).max(1000).default(50),
  offset: z.coerce.number().int().min(0).default(0),
  order: z.enum(['newest', 'oldest']).default('newest'),
});

const createBody = z.strictObject({
  task_kind: z.string().min(1),
  prompt: z.string(),
  client_id: z.string().min(1).nullable().optional(),
  context: z.unknown().optional(),
  allowed_commands: z.array(z.string().min(1)).optional(),
  request_id: z.string().min(1).max(200).optional(),
  settings: TaskSettingsSchema.optional(),
});

/** Default `limit` of `GET /api/tasks/:id/steps`. */
export const STEP_PAGE_DEFAULT = 100;
/** Largest `limit` of `GET /api/tasks/:id/steps` (step records carry whole model inputs: pages stay bounded). */
export const STEP_PAGE_MAX = 500;

/** A query parameter that must be a whole number (no sign, exponent, blank or fraction). */
const wholeNumber = z
  .string()
  .regex(/^\d{1,15}$/, 'expected a whole number ≥ 0')
  .transform(Number);

const stepsQuery = z.strictObject({
  after_seq: wholeNumber.optional(),
  limit: wholeNumber.pipe(z.number().min(1).max(STEP_PAGE_MAX)).optional(),
});

const cancelBody = z.strictObject({ reason: z.string().max(1000).optional() });
const answerBody = z.strictObject({ text: z.string(), question_id: z.string().min(1).optional() });

/** `GET /api/tasks`: a page of tasks, newest first by default. */
export async function listTasks(d: HttpApiOptions, { res, url }: RouteRequest): Promise<void> {
  const q = parseWith(listQuery, Object.fromEntries(url.searchParams), 'query');
  const status = q.status && q.status.length > 0 ? q.status : undefined;
  let tasks;
  let total: number;
  if (d.pages) {
    const page = await d.pages.listTasksPage({
      ...(status ? { status } : {}),
      ...(q.kind ? { kind: q.kind } : {}),
      ...(q.client ? { clientId: q.client } : {}),
      limit: q.limit,
      offset: q.offset,
      order: q.order,
    });
    tasks = page.tasks;
    total = page.total;
  } else {
    const all = await d.engine.listTasks({
      ...(status ? { status } : {}),
      ...(q.kind ? { kind: q.kind } : {}),
      ...(q.client ? { clientId: q.client } : {}),
    });
    if (q.order === 'newest') all.reverse();
    total = all.length;
    tasks = all.slice(q.offset, q.offset + q.limit);
  }
  sendJson(res, 200, { tasks: tasks.map(taskToWire), total, limit: q.limit, offset: q.offset });
}

/** `GET /api/tasks/:id`: the task with its steps, history, calls and questions. */
export async function getTask(d: HttpApiOptions, { res, params: [id] }: RouteRequest): Promise<void> {
  const task = await d.engine.getTask(id as string);
  if (!task) throw new HttpError(404, 'not_found', `no task ${id}`);
  const [steps, history, calls, questions] = await Promise.all([
    d.store.getSteps(task.id),
    d.store.getHistory(task.id),
    d.store.listCommandCalls({ taskId: task.id }),
    d.store.listQuestions(task.id),
  ]);
  sendJson(res, 200, {
    task: taskToWire(task),
    steps: steps.map(stepToWire),
    history: history.map(historyToWire),
    command_calls: calls.map(callToWire),
    questions: questions.map(questionToWire),
  });
}

/**
 * `GET /api/tasks/:id/steps`: one page of a task's step log (`seq > after_seq`, at most `limit`), with the task and
 * its questions, so a follower reads only what is new in one request per poll. The task is read before the steps:
 * when it is seen finished, the steps read after it hold every record it wrote.
 */
export async function getSteps(d: HttpApiOptions, { res, params: [id], url }: RouteRequest): Promise<void> {
  const q = parseWith(stepsQuery, Object.fromEntries(url.searchParams), 'query');
  const afterSeq = q.after_seq ?? 0;
  const limit = q.limit ?? STEP_PAGE_DEFAULT;
  const task = await d.engine.getTask(id as string);
  if (!task) throw new HttpError(404, 'not_found', `no task ${id}`);
  // One more than asked tells whether the page is the last.
  const steps = await d.store.getSteps(task.id, { afterSeq, limit: limit + 1 });
  const questions = await d.store.listQuestions(task.id);
  const hasMore = steps.length > limit;
  const page = hasMore ? steps.slice(0, limit) : steps;
  // The calls of this page's tool records (point reads by call id), so a follower sees where each went (sent_to).
  const callIds = [...new Set(page.map(stepCallId).filter((c): c is string => c !== undefined))];
  const calls = await Promise.all(callIds.map((c) => d.store.getCommandCall(c)));
  sendJson(res, 200, {
    task: taskToWire(task),
    steps: page.map(stepToWire),
    questions: questions.map(questionToWire),
    command_calls: calls.filter((c): c is CommandCallRecord => c !== undefined).map(callToWire),
    after_seq: afterSeq,
    limit,
    has_more: hasMore,
    next_after_seq: page.at(-1)?.seq ?? afterSeq,
  });
}

/** `POST /api/tasks`: create a task (201), or find the one a repeated `request_id` created (200). */
export async function createTask(d: HttpApiOptions, { req, res }: RouteRequest): Promise<void> {
  const b = parseWith(createBody, await readJson(req), 'body');
  const r = await d.tasks.create({
    kind: b.task_kind,
    prompt: b.prompt,
    clientId: b.client_id ?? null,
    ...(b.context !== undefined ? { context: b.context } : {}),
    ...(b.allowed_commands !== undefined ? { allowedCommands: b.allowed_commands } : {}),
    ...(b.request_id !== undefined ? { requestId: b.request_id, requestNamespace: 'http' } : {}),
    ...(b.settings !== undefined ? { settings: b.settings } : {}),
  });
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, r.value.created ? 201 : 200, { task: taskToWire(r.value.task), created: r.value.created });
}

/** `POST /api/tasks/:id/cancel`. */
export async function cancelTask(d: HttpApiOptions, { req, res, params: [id] }: RouteRequest): Promise<void> {
  const b = parseWith(cancelBody, await readJson(req, true), 'body');
  const r = await d.tasks.cancel(id as string, b.reason ?? 'cancelled over HTTP');
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, 200, { task: taskToWire(r.value) });
}

/** `POST /api/tasks/:id/answer`: answer the task's open question. */
export async function answerTask(d: HttpApiOptions, { req, res, params: [id] }: RouteRequest): Promise<void> {
  const b = parseWith(answerBody, await readJson(req), 'body');
  const r = await d.tasks.answer(id as string, b.question_id, b.text);
  if (!r.ok) throw serviceError(r.error);
  sendJson(res, 200, { task: taskToWire(r.value) });
}
