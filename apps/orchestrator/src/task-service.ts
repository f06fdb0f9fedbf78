/**
 * Task operations shared by the WebSocket and HTTP adapters: create (kind resolution, allow-list, budgets from the
 * kind's config, idempotent request ids), cancel, answer, and the access rule between clients. Returns structured
 * failures instead of throwing; nothing is changed when a request is refused.
 */
import { randomUUID } from 'node:crypto';
import {
  isEngineError,
  type Clock,
  type Engine,
  type JsonValue,
  type QuestionRecord,
  type Task,
  type TaskStore,
} from '@ccagent/engine';
import type { TaskSettings } from '@ccagent/protocol';
import { storageFailureOf } from '@ccagent/store';
import { resolveKind, type OrchestratorConfig } from './config.js';
import { idFromKey } from './ids.js';
import {
  budgetsFrom,
  resolveTaskSettings,
  storedRunBudgets,
  type RunBudgets,
  RUN_BUDGETS_KEY,
  runBudgetsJson,
  SETTINGS_KEY,
} from './task-settings.js';
import { CREATOR_KEY, REQUEST_ID_KEY } from './wire.js';

/** Why a task operation was refused. */
export type ServiceErrorCode =
  | 'not_found'
  | 'invalid_field'
  | 'forbidden'
  | 'conflict'
  | 'duplicate'
  /** The database cannot be written right now (locked by another process, disk full, I/O error): try later. */
  | 'unavailable'
  | 'internal';

/** A refused operation: code, message and (for bad input) the JSON path of the field. */
export interface ServiceError {
  code: ServiceErrorCode;
  message: string;
  path?: string;
}

/** Result of a task operation. */
export type ServiceResult<T> = { ok: true; value: T } | { ok: false; error: ServiceError };

/** Input of {@link TaskService.create} (already schema-checked by the adapter). */
export interface CreateRequest {
  kind: string;
  prompt: string;
  /** Client whose commands the task runs; null = any client that offers the command. */
  clientId: string | null;
  context?: unknown;
  /** Requested commands; empty or absent = whatever the kind allows. */
  allowedCommands?: string[];
  /** Client that created it over WebSocket (it gets the task's events). */
  creator?: string;
  /** Idempotency: the same (namespace, requestId) always yields the same task. */
  requestId?: string;
  /** Namespace of `requestId`: the creating client id, or `http`. */
  requestNamespace?: string;
  /** Per-task settings (validated for shape; checked here against the kind and the operator maximums). */
  settings?: TaskSettings;
}

const fail = (
  code: ServiceErrorCode,
  message: string,
  path?: string,
): { ok: false; error: ServiceError } => ({
  ok: false,
  error: path === undefined ? { code, message } : { code, message, path },
});

/** See the module comment. */
export class TaskService {
  constructor(
    private readonly engine: Engine,
    private readonly store: TaskStore,
    private readonly config: OrchestratorConfig,
    private readonly clock: Clock,
  ) {}

  /** The id a create request will get (known before the task exists, so events can be held until the reply). */
  taskIdFor(req: CreateRequest): string {
    return req.requestId !== undefined
      ? idFromKey(`${req.requestNamespace ?? 'http'}\u0000${req.requestId}`)
      : randomUUID();
  }

  /** Whether `clientId` may see or act on `task` (its own, one it created, or any with `crossClientAccess`). */
  canAccess(task: Task, clientId: string): boolean {
    if (this.config.server.crossClientAccess) return true;
    return task.clientId === clientId || task.metadata[CREATOR_KEY] === clientId;
  }

  /**
   * Create a task (status `queued`, on disk before this resolves). A repeated request id returns the existing
   * task with `created: false`.
   */
  async create(
    req: CreateRequest,
    id = this.taskIdFor(req),
  ): Promise<ServiceResult<{ task: Task; created: boolean }>> {
    const kind = resolveKind(this.config, req.kind);
    if (kind === undefined) {
      const known = [...Object.keys(this.config.taskKinds), ...Object.keys(this.config.kindAliases)].join(
        ', ',
      );
      return fail('invalid_field', `unknown task kind "${req.kind}"; known kinds: ${known}`, '$.task_kind');
    }
    const spec = this.config.taskKinds[kind];
    if (spec === undefined) return fail('internal', `task kind ${kind} vanished`);
    const requested = req.allowedCommands ?? [];
    let allowed = requested;
    if (spec.allowedCommands.length > 0) {
      allowed =
        requested.length === 0
          ? spec.allowedCommands
          : requested.filter((c) => spec.allowedCommands.includes(c));
      if (allowed.length === 0) {
        return fail(
          'forbidden',
          `none of the requested commands is allowed for task kind "${kind}" (it allows: ${spec.allowedCommands.join(', ')})`,
          '$.allowed_commands',
        );
      }
    }
    const resolved = resolveTaskSettings(this.config, kind, spec, req.settings);
    if (!resolved.ok) return fail(resolved.error.code, resolved.error.message, resolved.error.path);
    const now = this.clock.now();
    const metadata: Record<string, JsonValue> = {};
    if (req.creator !== undefined) metadata[CREATOR_KEY] = req.creator;
    if (req.requestId !== undefined) metadata[REQUEST_ID_KEY] = req.requestId;
    if (req.settings !== undefined && Object.keys(req.settings).length > 0) {
      metadata[SETTINGS_KEY] = req.settings as JsonValue;
    }
    metadata[RUN_BUDGETS_KEY] = runBudgetsJson(resolved.value);
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
      if (isEngineError(err, 'invalid_input')) return fail('invalid_field', err.message);
      return storageRefusal(err);
    }
  }

  /** Cancel a task; cancelling an already cancelled task returns it unchanged. */
  async cancel(taskId: string, reason: string): Promise<ServiceResult<Task>> {
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
      return storageRefusal(err);
    }
  }

  /**
   * A follow-up message from a person (`from`: a client id, `http`, `cli`). A task that has not ended gets it in its
   * history (its next step sees it; a sleeping task wakes); an ended task (completed, failed, cancelled) is reopened
   * with it: same task and memory, fresh budgets of one run (those it was created with, within the operator maximums).
   */
  async message(taskId: string, text: string, from: string): Promise<ServiceResult<Task>> {
    const task = await this.engine.getTask(taskId);
    if (!task) return fail('not_found', `no task ${taskId}`);
    try {
      if (isEnded(task)) {
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
        if (again && again.status !== task.status) return this.message(taskId, text, from);
        return fail('conflict', err.message);
      }
      return storageRefusal(err);
    }
  }

  /** An outside event (`task_event`) for a task that has not ended: in its history, and a sleeping task wakes. */
  async event(taskId: string, name: string, data: unknown): Promise<ServiceResult<Task>> {
    const task = await this.engine.getTask(taskId);
    if (!task) return fail('not_found', `no task ${taskId}`);
    if (isEnded(task))
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
      return storageRefusal(err);
    }
  }

  /** Resume a failed or cancelled task from its memory with fresh budgets (a `reopened` step-log record says so). */
  async retry(taskId: string): Promise<ServiceResult<Task>> {
    const task = await this.engine.getTask(taskId);
    if (!task) return fail('not_found', `no task ${taskId}`);
    if (task.status !== 'failed' && task.status !== 'cancelled') {
      return fail(
        'conflict',
        `task ${taskId} is ${task.status}; only a failed or cancelled task can be retried`,
      );
    }
    try {
      return {
        ok: true,
        value: await this.engine.reopenTask(taskId, { reason: 'retry', budgets: this.freshBudgets(task) }),
      };
    } catch (err) {
      if (isEngineError(err, 'illegal_transition') || isEngineError(err, 'conflict')) {
        return fail('conflict', err.message);
      }
      return storageRefusal(err);
    }
  }

  /**
   * Budgets of a new run: the run budgets the task was created with (tasks created before they were stored: the
   * kind's), counted from what the task has used so far, the deadline from now.
   */
  private freshBudgets(task: Task): { maxSteps?: number; maxToolCalls?: number; deadlineAt?: number } {
    let run: RunBudgets | undefined = storedRunBudgets(task);
    if (run === undefined) {
      const spec = this.config.taskKinds[task.kind];
      run = {};
      if (spec?.budgets.maxSteps !== undefined) run.maxSteps = spec.budgets.maxSteps;
      if (spec?.budgets.maxToolCalls !== undefined) run.maxToolCalls = spec.budgets.maxToolCalls;
      if (spec?.budgets.deadlineMs !== undefined) run.deadlineMs = spec.budgets.deadlineMs;
    }
    return budgetsFrom(run, task.counters, this.clock.now());
  }

  /** Answer the task's open question (`questionId` optional: the open one). */
  async answer(taskId: string, questionId: string | undefined, text: string): Promise<ServiceResult<Task>> {
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
      return storageRefusal(err);
    }
  }

  /** The unanswered question of a task, if any. */
  async openQuestion(taskId: string): Promise<QuestionRecord | undefined> {
    const questions = await this.store.listQuestions(taskId);
    return questions.filter((q) => q.answer === undefined).pop();
  }
}

/**
 * A refusal for a storage failure (the request changed nothing: nothing is acknowledged without being on disk), with
 * the store's message saying what is wrong; any other error is rethrown.
 */
function storageRefusal(err: unknown): { ok: false; error: ServiceError } {
  const failure = storageFailureOf(err);
  if (failure === undefined) throw err;
  return fail('unavailable', `not stored: ${failure.message}`);
}

function isEnded(task: Task): boolean {
  return task.status === 'completed' || task.status === 'failed' || task.status === 'cancelled';
}
