/**
 * The operations a person or a client asks for on tasks, with their rules, for every adapter (WebSocket, HTTP, an
 * embedding program): create (kind resolution with aliases, the allow-list intersected with the kind's, per-task
 * settings against the kind and the operator maximums, run budgets stored in metadata, idempotent request ids),
 * cancel, message, event, retry and answer with their conflict rules and fresh budgets, and the access rule between
 * clients. Returns structured failures instead of throwing; nothing is changed when a request is refused.
 */
import { createHash, randomUUID } from 'node:crypto';
import type { TaskSettings } from '@ccagent/protocol';
import type { Engine } from './engine.js';
import { isEngineError } from './engine-error.js';
import type { Clock, TaskStore } from './ports.js';
import {
  allowedCommandsFor,
  kindRules,
  resolveRunBudgets,
  resolveTaskKind,
  taskKindNames,
} from './task-kinds.js';
import type { TaskKindCatalogue } from './task-kinds.js';
import {
  budgetsFrom,
  mayAccessTask,
  mayCreateTaskFor,
  resolveAgent,
  runBudgetsJson,
  runBudgetsOf,
  TASK_METADATA_KEYS,
  taskCreator,
  taskName,
  type AgentResolution,
} from './task-metadata.js';
import { isTerminalStatus } from './task-state-machine.js';
import { PERIOD_METADATA_KEYS, periodBudgetsJson } from './period-budgets.js';
import type { JsonValue, QuestionRecord, Task, TaskBudgets, TaskStatus } from './types.js';

/** The statuses of a task that has not ended: while it has one, its name is taken and an event may name it. */
export const LIVE_TASK_STATUSES: readonly TaskStatus[] = [
  'queued',
  'running',
  'waiting_for_command',
  'waiting_for_user',
];

/** Which tasks a name is resolved among, or must be unique among. */
export type NameScope = (task: Task) => boolean;

/** Why a task operation was refused. */
export type TaskOperationErrorCode =
  | 'not_found'
  | 'invalid_field'
  | 'forbidden'
  | 'conflict'
  | 'duplicate'
  /** The database cannot be written right now (locked by another process, disk full, I/O error): try later. */
  | 'unavailable'
  | 'internal';

/** A refused operation: code, message and (for bad input) the JSON path of the field in the request. */
export interface TaskOperationError {
  code: TaskOperationErrorCode;
  message: string;
  path?: string;
}

/** Result of a task operation. */
export type TaskOperationResult<T> = { ok: true; value: T } | { ok: false; error: TaskOperationError };

/** Input of {@link TaskOperations.create} (its shape already checked by the adapter). */
export interface CreateTaskRequest {
  /** A kind's name or alias. */
  kind: string;
  prompt: string;
  /** Client whose commands the task runs; null = any client that offers the command. */
  clientId: string | null;
  context?: unknown;
  /** Requested commands; empty or absent = whatever the kind allows. */
  allowedCommands?: string[];
  /** Client that created it over a connection of its own (it gets the task's events). */
  creator?: string;
  /** Idempotency: the same (namespace, requestId) always yields the same task. */
  requestId?: string;
  /** Namespace of `requestId`: the creating client id, or `http` (the default). */
  requestNamespace?: string;
  /** Per-task settings (checked here against the kind and the operator maximums; stored as given). */
  settings?: TaskSettings;
  /** The name the player gives the task (a printable id; an in-game trigger may address the task by it). */
  name?: string;
  /**
   * More metadata of the task, from the adapter (e.g. the Minecraft instance the task plays on). The operation's own
   * keys (creator, request id, settings, run budgets) are set over it.
   */
  metadata?: Record<string, JsonValue>;
}

/** What {@link TaskOperations} works on. */
export interface TaskOperationsOptions {
  engine: Engine;
  /** The engine's store (the open question of a task is read from it). */
  store: Pick<TaskStore, 'listQuestions'>;
  /** The kinds, their aliases and the operator maximums. */
  kinds: TaskKindCatalogue;
  clock: Clock;
  /** Let a client create, see and act on tasks bound to another client (default: each client its own). */
  crossClientAccess?: boolean;
  /**
   * The group peers of a computer (`server.groups`: named groups, computers sharing an operator key), or undefined
   * when it has none: a task's name must be free among the tasks its computer and that computer's peers have.
   */
  peerOf?: (clientId: string) => ((otherClientId: string) => boolean) | undefined;
  /**
   * The storage failure an error stands for (the request is then refused as `unavailable` with its message), or
   * undefined for any other error, which is rethrown. Default: {@link portStorageFailure}.
   */
  storageFailure?: (err: unknown) => { message: string } | undefined;
}

/** Storage conditions a `TaskStore` reports for a database that cannot be used right now. */
export type PortStorageFailureCode = 'locked' | 'disk_full' | 'io_error';

/**
 * The storage condition behind an error of the `TaskStore` port: an `EngineError('store_failure')` whose
 * `details.storeCode` is `locked`, `disk_full` or `io_error` (how the stores report a database that cannot be
 * written right now); undefined for anything else. `@ccagent/store`'s `storageFailureOf` reads port errors with it.
 */
export function portStorageFailure(
  err: unknown,
): { code: PortStorageFailureCode; message: string } | undefined {
  if (!isEngineError(err, 'store_failure')) return undefined;
  const code = err.details?.['storeCode'];
  return code === 'locked' || code === 'disk_full' || code === 'io_error'
    ? { code, message: err.message }
    : undefined;
}

/**
 * A UUID-formatted id derived from a key (SHA-256, version nibble 8 per RFC 9562's custom UUID), so a repeated
 * creation with the same request id maps to the same task id and the store's uniqueness makes it idempotent.
 */
export function taskIdFromKey(key: string): string {
  const h = createHash('sha256').update(key).digest('hex').slice(0, 32).split('');
  h[12] = '8';
  h[16] = ((parseInt(h[16] ?? '0', 16) & 0x3) | 0x8).toString(16);
  const s = h.join('');
  return `${s.slice(0, 8)}-${s.slice(8, 12)}-${s.slice(12, 16)}-${s.slice(16, 20)}-${s.slice(20, 32)}`;
}

const fail = (
  code: TaskOperationErrorCode,
  message: string,
  path?: string,
): { ok: false; error: TaskOperationError } => ({
  ok: false,
  error: path === undefined ? { code, message } : { code, message, path },
});

/** See the module comment. */
export class TaskOperations {
  private readonly engine: Engine;
  private readonly storageFailure: (err: unknown) => { message: string } | undefined;
  /** The last creation or reopening of each name still under way ({@link oneAtATime}). */
  private readonly nameTurns = new Map<string, Promise<unknown>>();

  constructor(private readonly o: TaskOperationsOptions) {
    this.engine = o.engine;
    this.storageFailure = o.storageFailure ?? portStorageFailure;
  }

  /** The id a create request will get (known before the task exists, so events can be held until the reply). */
  taskIdFor(req: CreateTaskRequest): string {
    return req.requestId !== undefined
      ? taskIdFromKey(`${req.requestNamespace ?? 'http'}\u0000${req.requestId}`)
      : randomUUID();
  }

  /**
   * Whether `clientId` may act on `task` (or only see it, `intent` `read`): its own, one it created, any with
   * `crossClientAccess`; and read-only any with `observeOthers` (a right given to that client).
   */
  canAccess(
    task: Task,
    clientId: string,
    intent: 'read' | 'act' = 'act',
    rights: { observeOthers?: boolean; peer?: (otherClientId: string) => boolean } = {},
  ): boolean {
    return mayAccessTask(task, clientId, intent, {
      crossClientAccess: this.o.crossClientAccess === true,
      ...rights,
    });
  }

  /**
   * Whether `creator` may create a task bound to `clientId` (its own, any with `crossClientAccess`, one of its group
   * with `peer`).
   */
  mayCreateFor(
    creator: string,
    clientId: string,
    rights: { peer?: (otherClientId: string) => boolean } = {},
  ): boolean {
    return mayCreateTaskFor(creator, clientId, {
      crossClientAccess: this.o.crossClientAccess === true,
      ...rights,
    });
  }

  /**
   * Create a task (status `queued`, on disk before this resolves). A repeated request id returns the existing
   * task with `created: false`.
   */
  async create(
    req: CreateTaskRequest,
    id = this.taskIdFor(req),
  ): Promise<TaskOperationResult<{ task: Task; created: boolean }>> {
    const name = req.name;
    if (name === undefined) return this.createNow(req, id);
    // One creation or reopening per name at a time, so two requests cannot both find the name free.
    return this.oneAtATime(name, async () => {
      const repeat = req.requestId !== undefined ? await this.engine.getTask(id) : undefined;
      if (repeat === undefined || repeat === null) {
        const taken = await this.nameTaken(name, this.nameScope(req.clientId ?? req.creator), id);
        if (taken) return { ok: false, error: taken };
      }
      return this.createNow(req, id);
    });
  }

  /**
   * The task that has not ended which `agent` names among those `scope` admits: by name, else by id (see
   * {@link resolveAgent}: none is `not_found`, several `ambiguous` with their ids).
   */
  async resolveAgent(agent: string, scope: NameScope): Promise<AgentResolution> {
    const live = (await this.engine.listTasks({ status: [...LIVE_TASK_STATUSES] })).filter(scope);
    return resolveAgent(live, agent);
  }

  private async createNow(
    req: CreateTaskRequest,
    id: string,
  ): Promise<TaskOperationResult<{ task: Task; created: boolean }>> {
    const catalogue = this.o.kinds;
    const kind = resolveTaskKind(catalogue, req.kind);
    if (kind === undefined) {
      const known = taskKindNames(catalogue).join(', ');
      return fail('invalid_field', `unknown task kind "${req.kind}"; known kinds: ${known}`, '$.task_kind');
    }
    const spec = kindRules(catalogue, kind);
    if (spec === undefined) return fail('internal', `task kind ${kind} vanished`);
    const allowed = allowedCommandsFor(spec, req.allowedCommands ?? []);
    if (allowed === undefined) {
      return fail(
        'forbidden',
        `none of the requested commands is allowed for task kind "${kind}" (it allows: ${spec.allowedCommands.join(', ')})`,
        '$.allowed_commands',
      );
    }
    const resolved = resolveRunBudgets(catalogue, kind, spec, req.settings);
    if (!resolved.ok) return fail(resolved.error.code, resolved.error.message, resolved.error.path);
    const now = this.o.clock.now();
    const metadata: Record<string, JsonValue> = { ...req.metadata };
    if (req.creator !== undefined) metadata[TASK_METADATA_KEYS.creator] = req.creator;
    if (req.requestId !== undefined) metadata[TASK_METADATA_KEYS.requestId] = req.requestId;
    if (req.name !== undefined) metadata[TASK_METADATA_KEYS.name] = req.name;
    if (req.settings !== undefined && Object.keys(req.settings).length > 0) {
      metadata[TASK_METADATA_KEYS.settings] = req.settings as JsonValue;
    }
    metadata[TASK_METADATA_KEYS.runBudgets] = runBudgetsJson(resolved.value);
    if (spec.periodBudgets !== undefined) {
      metadata[PERIOD_METADATA_KEYS.budgets] = periodBudgetsJson(spec.periodBudgets);
    }
    const budgets = budgetsFrom(resolved.value, { steps: 0, toolCalls: 0 }, now);
    try {
      const task = await this.engine.createTask({
        id,
        kind,
        prompt: req.prompt,
        clientId: req.clientId,
        ...(req.context !== undefined ? { context: req.context as JsonValue } : {}),
        allowedCommands: allowed,
        metadata,
        budgets,
      });
      return { ok: true, value: { task, created: true } };
    } catch (err) {
      if (isEngineError(err, 'task_exists')) {
        const existing = await this.engine.getTask(id);
        if (existing) return { ok: true, value: { task: existing, created: false } };
      }
      if (isEngineError(err, 'invalid_input')) {
        const field = err.details?.['field'];
        return fail(
          'invalid_field',
          err.message,
          field === 'prompt' || field === 'context' ? `$.${field}` : undefined,
        );
      }
      return this.storageRefusal(err);
    }
  }

  /** Cancel a task; cancelling an already cancelled task returns it unchanged. */
  async cancel(taskId: string, reason: string): Promise<TaskOperationResult<Task>> {
    const task = await this.engine.getTask(taskId);
    if (!task) return fail('not_found', `no task ${taskId}`);
    if (task.status === 'cancelled') return { ok: true, value: task };
    if (task.status === 'completed' || task.status === 'failed') {
      return fail('conflict', `task ${taskId} is already ${task.status}; it cannot be cancelled`);
    }
    try {
      return { ok: true, value: await this.engine.cancelTask(taskId, reason) };
    } catch (err) {
      if (isEngineError(err, 'illegal_transition') || isEngineError(err, 'conflict')) {
        const now = await this.engine.getTask(taskId);
        if (now?.status === 'cancelled') return { ok: true, value: now };
        return fail('conflict', `task ${taskId} is already ${now?.status ?? 'gone'}; it cannot be cancelled`);
      }
      return this.storageRefusal(err);
    }
  }

  /**
   * A follow-up message from a person (`from`: a client id, `http`, `cli`). A task that has not ended gets it in its
   * history (its next step sees it; a sleeping task wakes); an ended task (completed, failed, cancelled) is reopened
   * with it: same task and memory, fresh budgets of one run (those it was created with, within the operator maximums).
   */
  async message(taskId: string, text: string, from: string): Promise<TaskOperationResult<Task>> {
    const task = await this.engine.getTask(taskId);
    if (!task) return fail('not_found', `no task ${taskId}`);
    if (isTerminalStatus(task.status) && taskName(task) !== undefined) {
      return this.oneAtATime(taskName(task) as string, async () => {
        const taken = await this.nameTakenFor(task);
        return taken ? { ok: false, error: taken } : this.messageNow(task, text, from);
      });
    }
    return this.messageNow(task, text, from);
  }

  private async messageNow(task: Task, text: string, from: string): Promise<TaskOperationResult<Task>> {
    const taskId = task.id;
    try {
      if (isTerminalStatus(task.status)) {
        return {
          ok: true,
          value: await this.engine.reopenTask(taskId, {
            reason: 'message',
            budgets: this.freshBudgets(task),
            entries: [{ type: 'message', text, from }],
          }),
        };
      }
      return { ok: true, value: await this.engine.postToTask(taskId, { type: 'message', text, from }) };
    } catch (err) {
      if (isEngineError(err, 'illegal_transition') || isEngineError(err, 'conflict')) {
        // It ended (or was reopened) meanwhile: once more, on its new state.
        const again = await this.engine.getTask(taskId);
        if (again && again.status !== task.status) return this.messageNow(again, text, from);
        return fail('conflict', err.message);
      }
      return this.storageRefusal(err);
    }
  }

  /** An outside event for a task that has not ended: in its history, and a sleeping task wakes. */
  async event(taskId: string, name: string, data: unknown): Promise<TaskOperationResult<Task>> {
    const task = await this.engine.getTask(taskId);
    if (!task) return fail('not_found', `no task ${taskId}`);
    if (isTerminalStatus(task.status))
      return fail('conflict', `task ${taskId} has ended (${task.status}); it takes no events`);
    try {
      return {
        ok: true,
        value: await this.engine.postToTask(taskId, {
          type: 'event',
          name,
          ...(data !== undefined ? { data: data as JsonValue } : {}),
        }),
      };
    } catch (err) {
      if (isEngineError(err, 'illegal_transition') || isEngineError(err, 'conflict')) {
        return fail('conflict', err.message);
      }
      return this.storageRefusal(err);
    }
  }

  /** Resume a failed or cancelled task from its memory with fresh budgets (a `reopened` step-log record says so). */
  async retry(taskId: string): Promise<TaskOperationResult<Task>> {
    const task = await this.engine.getTask(taskId);
    if (!task) return fail('not_found', `no task ${taskId}`);
    if (task.status !== 'failed' && task.status !== 'cancelled') {
      return fail(
        'conflict',
        `task ${taskId} is ${task.status}; only a failed or cancelled task can be retried`,
      );
    }
    const name = taskName(task);
    if (name === undefined) return this.retryNow(task);
    return this.oneAtATime(name, async () => {
      const taken = await this.nameTakenFor(task);
      return taken ? { ok: false, error: taken } : this.retryNow(task);
    });
  }

  private async retryNow(task: Task): Promise<TaskOperationResult<Task>> {
    const taskId = task.id;
    try {
      return {
        ok: true,
        value: await this.engine.reopenTask(taskId, { reason: 'retry', budgets: this.freshBudgets(task) }),
      };
    } catch (err) {
      if (isEngineError(err, 'illegal_transition') || isEngineError(err, 'conflict')) {
        return fail('conflict', err.message);
      }
      return this.storageRefusal(err);
    }
  }

  /**
   * The tasks among which a task's name must be free, the same for its creation and for a retry or message that
   * reopens it: those its `owner` (its computer, else its creator) may act on, with the owner's group peers (the reach
   * a `task_event {agent}` of any computer of the group is resolved in); no owner: every task.
   */
  private nameScope(owner: string | null | undefined): NameScope {
    if (owner === undefined || owner === null) return () => true;
    const peer = this.o.peerOf?.(owner);
    return (t) => this.canAccess(t, owner, 'act', peer ? { peer } : {});
  }

  /** A `conflict` when a task that has not ended, other than `exceptId`, has `name` among those `scope` admits. */
  private async nameTaken(
    name: string,
    scope: NameScope,
    exceptId: string,
  ): Promise<TaskOperationError | undefined> {
    const live = await this.engine.listTasks({ status: [...LIVE_TASK_STATUSES] });
    const ids = live
      .filter((t) => t.id !== exceptId && taskName(t) === name && scope(t))
      .map((t) => t.id)
      .sort();
    if (ids.length === 0) return undefined;
    return {
      code: 'conflict',
      message: `a task that has not ended is already named "${name}" (${ids.join(', ')}): an event sent to "${name}" must reach one task, so give this one another name or end that one first`,
      path: '$.name',
    };
  }

  /** {@link nameTaken} for an ended task about to run again, in the scope its creation was checked in. */
  private nameTakenFor(task: Task): Promise<TaskOperationError | undefined> {
    return this.nameTaken(
      taskName(task) as string,
      this.nameScope(task.clientId ?? taskCreator(task)),
      task.id,
    );
  }

  /** Runs `fn` after every earlier call for `name` has settled (creations and reopenings of one name, in turn). */
  private async oneAtATime<T>(name: string, fn: () => Promise<T>): Promise<T> {
    const before = this.nameTurns.get(name) ?? Promise.resolve();
    const run = before.then(fn);
    const settled = run.then(
      () => undefined,
      () => undefined,
    );
    this.nameTurns.set(name, settled);
    try {
      return await run;
    } finally {
      if (this.nameTurns.get(name) === settled) this.nameTurns.delete(name);
    }
  }

  /** Answer the task's open question (`questionId` optional: the open one). */
  async answer(
    taskId: string,
    questionId: string | undefined,
    text: string,
  ): Promise<TaskOperationResult<Task>> {
    const task = await this.engine.getTask(taskId);
    if (!task) return fail('not_found', `no task ${taskId}`);
    let qid = questionId;
    if (qid === undefined) {
      if (task.status !== 'waiting_for_user') {
        return fail('conflict', `task ${taskId} is ${task.status}; it is not waiting for an answer`);
      }
      qid = (await this.openQuestion(taskId))?.questionId;
      if (qid === undefined) return fail('conflict', `task ${taskId} has no open question`);
    }
    try {
      return { ok: true, value: await this.engine.answerQuestion(taskId, qid, text) };
    } catch (err) {
      if (isEngineError(err, 'unknown_question')) return fail('not_found', err.message, '$.question_id');
      if (isEngineError(err, 'question_closed')) return fail('duplicate', err.message, '$.question_id');
      if (isEngineError(err, 'conflict') || isEngineError(err, 'illegal_transition')) {
        return fail('conflict', err.message);
      }
      return this.storageRefusal(err);
    }
  }

  /** The unanswered question of a task, if any. */
  async openQuestion(taskId: string): Promise<QuestionRecord | undefined> {
    const questions = await this.o.store.listQuestions(taskId);
    return questions.filter((q) => q.answer === undefined).pop();
  }

  /**
   * Budgets of a new run: the run budgets the task was created with (tasks created before they were stored: the
   * kind's), counted from what the task has used so far, the deadline from now.
   */
  private freshBudgets(task: Task): TaskBudgets {
    const run = runBudgetsOf(task, kindRules(this.o.kinds, task.kind)?.budgets);
    return budgetsFrom(run, task.counters, this.o.clock.now());
  }

  /**
   * A refusal for a storage failure (the request changed nothing: nothing is acknowledged without being on disk), with
   * the store's message saying what is wrong; any other error is rethrown.
   */
  private storageRefusal(err: unknown): { ok: false; error: TaskOperationError } {
    const failure = this.storageFailure(err);
    if (failure === undefined) throw err;
    return fail('unavailable', `not stored: ${failure.message}`);
  }
}
