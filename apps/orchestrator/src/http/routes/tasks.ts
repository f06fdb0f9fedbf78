/**
 * Task routes: list (paged, filtered), create (idempotent with `request_id`), one task with its whole record, a page
 * of its step log, cancel and answer. Bodies and queries are checked with zod; a refusal changes nothing.
 */
import { taskCreator, type CommandCallRecord, type Task } from '@ccagent/engine';
import {
  AnswerBodySchema,
  CancelBodySchema,
  CreateTaskBodySchema,
  STEP_PAGE_DEFAULT,
  type StepsQuerySchema,
  type TaskDetailQuerySchema,
  type TaskListQuerySchema,
  type CreateTaskResponse,
  type TaskDetailResponse,
  type TaskListResponse,
  type TaskResponse,
  type TaskStepSummariesResponse,
  type TaskStepsResponse,
  type TaskWithoutStepsResponse,
} from '@ccagent/protocol';
import {
  callToWire,
  historyToWire,
  questionToWire,
  stepCallId,
  stepSummaryToWire,
  stepToWire,
  taskToWire,
} from '../../wire.js';
import {
  mayCreateOver,
  mayListClient,
  mayUseTask,
  refusalMessage,
  taskListClient,
} from '../../security/route-access.js';
import { HttpError, parseWith, readJson, sendJson, serviceError } from '../http-kit.js';
import type { HttpApiOptions, QueryOf, RouteRequest } from '../route.js';

/** Whether `POST /api/tasks` takes per-task `settings` (the dashboard enables its settings fields then). */
export const CREATE_TAKES_SETTINGS = 'settings' in CreateTaskBodySchema.shape;

/**
 * `GET /api/tasks`: a page of tasks, newest first by default. A computer key that may list only its own tasks (and,
 * with `server.groups`, those of its group's computers) gets them only: the list refuses any other `client` itself,
 * whatever the access check did.
 */
export async function listTasks(
  d: HttpApiOptions,
  { res, query: q, caller }: RouteRequest<QueryOf<typeof TaskListQuerySchema>>,
): Promise<void> {
  const only = taskListClient(caller);
  if (only !== undefined && caller !== undefined && !mayListClient(caller, q.client, d.peerOf?.(caller))) {
    throw new HttpError(
      403,
      'forbidden',
      refusalMessage(caller, `a computer lists its own tasks (or its group's): add ?client=${only}`),
    );
  }
  const status = q.status && q.status.length > 0 ? q.status : undefined;
  let tasks;
  let total: number;
  if (d.pages) {
    const page = await d.pages.listTasksPage({
      ...(status ? { status } : {}),
      ...(q.kind ? { kind: q.kind } : {}),
      ...(q.client ? { clientId: q.client } : {}),
      ...(q.q ? { search: q.q } : {}),
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
  const body: TaskListResponse = { tasks: tasks.map(taskToWire), total, limit: q.limit, offset: q.offset };
  sendJson(res, 200, body);
}

/** `GET /api/tasks/:id`: the task with its steps, history, calls and questions. */
export async function getTask(
  d: HttpApiOptions,
  { res, params: { id = '' }, query: tq, caller }: RouteRequest<QueryOf<typeof TaskDetailQuerySchema>>,
): Promise<void> {
  const task = await d.engine.getTask(id);
  if (!task) throw new HttpError(404, 'not_found', `no task ${id}`);
  refuseUnlessMay(d, caller, task, 'read');
  if (tq.steps === false) {
    const [calls, questions] = await Promise.all([
      d.store.listCommandCalls({ taskId: task.id }),
      d.store.listQuestions(task.id),
    ]);
    const body: TaskWithoutStepsResponse = {
      task: taskToWire(task),
      command_calls: calls.map(callToWire),
      questions: questions.map(questionToWire),
    };
    // messages=1: the follow-up messages too (the conversation view shows them in the thread).
    if (tq.messages === true)
      body.messages = (await d.store.getHistory(task.id))
        .filter((h) => h.type === 'message')
        .map(historyToWire);
    sendJson(res, 200, body);
    return;
  }
  const [steps, history, calls, questions] = await Promise.all([
    d.store.getSteps(task.id),
    d.store.getHistory(task.id),
    d.store.listCommandCalls({ taskId: task.id }),
    d.store.listQuestions(task.id),
  ]);
  const body: TaskDetailResponse = {
    task: taskToWire(task),
    steps: steps.map(stepToWire),
    history: history.map(historyToWire),
    command_calls: calls.map(callToWire),
    questions: questions.map(questionToWire),
  };
  sendJson(res, 200, body);
}

/**
 * `GET /api/tasks/:id/steps`: one page of a task's step log (`seq > after_seq`, at most `limit`), with the task and
 * its questions, so a follower reads only what is new in one request per poll. The task is read before the steps:
 * when it is seen finished, the steps read after it hold every record it wrote.
 */
export async function getSteps(
  d: HttpApiOptions,
  { res, params: { id = '' }, query: q, caller }: RouteRequest<QueryOf<typeof StepsQuerySchema>>,
): Promise<void> {
  const afterSeq = q.after_seq ?? 0;
  const limit = q.limit ?? STEP_PAGE_DEFAULT;
  const task = await d.engine.getTask(id);
  if (!task) throw new HttpError(404, 'not_found', `no task ${id}`);
  refuseUnlessMay(d, caller, task, 'read');
  // One more than asked tells whether the page is the last.
  const steps = await d.store.getSteps(task.id, { afterSeq, limit: limit + 1 });
  const questions = await d.store.listQuestions(task.id);
  const hasMore = steps.length > limit;
  const page = hasMore ? steps.slice(0, limit) : steps;
  // The calls of this page's tool records (point reads by call id), so a follower sees where each went (sent_to).
  const callIds = [...new Set(page.map(stepCallId).filter((c): c is string => c !== undefined))];
  const calls = await Promise.all(callIds.map((c) => d.store.getCommandCall(c)));
  const rest = {
    task: taskToWire(task),
    questions: questions.map(questionToWire),
    command_calls: calls.filter((c): c is CommandCallRecord => c !== undefined).map(callToWire),
    after_seq: afterSeq,
    limit,
    has_more: hasMore,
    next_after_seq: page.at(-1)?.seq ?? afterSeq,
  };
  // summary=1: the short form (sizes and a preview instead of the model input and output).
  const body: TaskStepsResponse | TaskStepSummariesResponse =
    q.summary === true
      ? { ...rest, steps: page.map(stepSummaryToWire) }
      : {
          ...rest,
          // input=0: whole records without the model input (every prompt the model saw), for the conversation view.
          steps: page.map((s) => {
            const w = stepToWire(s);
            if (q.input === false) delete w.input;
            return w;
          }),
        };
  sendJson(res, 200, body);
}

/**
 * `POST /api/tasks`: create a task (201), or find the one a repeated `request_id` created (200). A computer key creates
 * one for itself or (with `server.groups`) a computer of its group, of a kind its key allows, decided here on the
 * parsed body right before the task is created; the task records it as its creator (so it may follow it), and its
 * request ids are its own (as on its WebSocket).
 */
export async function createTask(d: HttpApiOptions, { req, res, caller }: RouteRequest): Promise<void> {
  const b = parseWith(CreateTaskBodySchema, await readJson(req), 'body');
  const clientId = b.client_id ?? null;
  const computer = caller?.role === 'computer' ? (caller.clientId ?? '') : undefined;
  const may = mayCreateOver(caller, clientId, b.task_kind, caller ? d.peerOf?.(caller) : undefined);
  if (!may.ok && caller !== undefined) {
    const path = clientId === null || clientId !== computer ? '$.client_id' : '$.task_kind';
    throw new HttpError(403, 'forbidden', refusalMessage(caller, may.reason), path);
  }
  const namespace = computer ?? 'http';
  const r = await d.tasks.create({
    kind: b.task_kind,
    prompt: b.prompt,
    clientId,
    ...(b.context !== undefined ? { context: b.context } : {}),
    ...(b.allowed_commands !== undefined ? { allowedCommands: b.allowed_commands } : {}),
    ...(b.request_id !== undefined ? { requestId: b.request_id, requestNamespace: namespace } : {}),
    ...(b.name !== undefined ? { name: b.name } : {}),
    ...(b.settings !== undefined ? { settings: b.settings } : {}),
    ...(computer !== undefined ? { creator: computer } : {}),
  });
  if (!r.ok) throw serviceError(r.error);
  if (caller !== undefined && computer !== undefined && taskCreator(r.value.task) !== computer) {
    // A repeated request id of a task another client created (the WebSocket refuses it the same way).
    throw new HttpError(
      403,
      'forbidden',
      refusalMessage(caller, 'that request id belongs to another client'),
    );
  }
  const body: CreateTaskResponse = { task: taskToWire(r.value.task), created: r.value.created };
  sendJson(res, r.value.created ? 201 : 200, body);
}

/** `POST /api/tasks/:id/cancel`. */
export async function cancelTask(
  d: HttpApiOptions,
  { req, res, params: { id = '' }, caller }: RouteRequest,
): Promise<void> {
  const b = parseWith(CancelBodySchema, await readJson(req, true), 'body');
  await refuseOthersTask(d, caller, id);
  const r = await d.tasks.cancel(id, b.reason ?? 'cancelled over HTTP');
  if (!r.ok) throw serviceError(r.error);
  const body: TaskResponse = { task: taskToWire(r.value) };
  sendJson(res, 200, body);
}

/** `POST /api/tasks/:id/answer`: answer the task's open question. */
export async function answerTask(
  d: HttpApiOptions,
  { req, res, params: { id = '' }, caller }: RouteRequest,
): Promise<void> {
  const b = parseWith(AnswerBodySchema, await readJson(req), 'body');
  await refuseOthersTask(d, caller, id);
  const r = await d.tasks.answer(id, b.question_id, b.text);
  if (!r.ok) throw serviceError(r.error);
  const body: TaskResponse = { task: taskToWire(r.value) };
  sendJson(res, 200, body);
}

/** A 403 unless `caller` may read or act on `task` (the route serves a computer its own tasks itself). */
function refuseUnlessMay(
  d: HttpApiOptions,
  caller: RouteRequest['caller'],
  task: Task,
  intent: 'read' | 'act',
): void {
  if (caller === undefined || mayUseTask(caller, task, intent, d.peerOf?.(caller))) return;
  throw new HttpError(
    403,
    'forbidden',
    refusalMessage(
      caller,
      caller.role === 'viewer' ? 'a viewer key is read-only' : `task ${task.id} belongs to another client`,
    ),
  );
}

/** Before acting on task `id` for a caller that may act only on some tasks (a computer): its own, or a 403. */
async function refuseOthersTask(
  d: HttpApiOptions,
  caller: RouteRequest['caller'],
  id: string,
): Promise<void> {
  if (caller === undefined || caller.role === 'operator') return;
  const task = await d.engine.getTask(id);
  if (task) refuseUnlessMay(d, caller, task, 'act');
}
