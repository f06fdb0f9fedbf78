/**
 * Requests about tasks from a welcomed client: `create_task` (for itself, or any client with `crossClientAccess`;
 * the task's events wait until the creator got `task_created`), `command_result` (judged and committed by the
 * engine's `submitResult`, acknowledged once on disk), `cancel_task`, `user_answer`, and `tools_update` (its registry
 * of model-written tools). Each refusal is an `error` with the request's ids; nothing is changed by a refused request.
 */
import {
  isEngineError,
  taskCreator,
  type Clock,
  type Engine,
  type Logger,
  type SubmitResult,
  type TaskOperations,
} from '@ccagent/engine';
import type {
  CommandResultMessage,
  CreateTaskMessage,
  TaskEventMessage,
  TaskMessageMessage,
} from '@ccagent/protocol';
import { storageFailureOf } from '@ccagent/store';
import type { ClientPersistence } from '../client-persistence.js';
import type { ComputerGroups } from '../clients/computer-groups.js';
import { resultToOutcome, toTaskUpdate } from '../wire.js';
import type { Principal } from '@ccagent/security';
import type { Connection } from './connection.js';
import { duplicateName, toToolInfo } from './handshake.js';
import type { TaskSubscriptions } from './subscriptions.js';
import { authorizedTask } from './task-access.js';
import { deliverTaskEvent } from './trigger-delivery.js';
import type { TriggerLimits } from './trigger-limits.js';
import type { WsReplies } from './ws-replies.js';

/** Dependencies of {@link TaskRequests}. */
export interface TaskRequestsOptions {
  engine: Engine;
  tasks: TaskOperations;
  clients: ClientPersistence;
  subscriptions: TaskSubscriptions;
  replies: WsReplies;
  clock: Clock;
  logger: Logger;
  /** A player's computers that may create tasks for each other (`server.groups`). */
  groups?: ComputerGroups;
  /** Limits on what in-game triggers send (`server.triggerRateLimit`); none: unlimited. */
  triggerLimits?: TriggerLimits;
  /** Record a client's request in the audit log (created, cancelled, answered). */
  audit?: (who: Principal, action: string, target: string, detail?: unknown) => void;
  /** The task of an open call last sent to `sender` (for a refused result whose task id was not read). */
  callTask?: (callId: string, sender: string) => string | undefined;
}

/** See the module comment. */
export class TaskRequests {
  constructor(private readonly o: TaskRequestsOptions) {}

  async createTask(conn: Connection, sender: string, msg: CreateTaskMessage): Promise<void> {
    const ids = { request_id: msg.request_id };
    const peer = this.o.groups?.peerOf(sender, conn.principal);
    if (!this.o.tasks.mayCreateFor(sender, msg.client_id, peer ? { peer } : {})) {
      const text = this.o.groups?.enabled
        ? `a client may only create tasks for itself ("${sender}") or a computer of its group; "${msg.client_id}" is not in one with it`
        : `a client may only create tasks for itself ("${sender}")`;
      this.o.replies.error(conn, 'forbidden', text, { ...ids, path: '$.client_id' });
      return;
    }
    if (!this.triggerAdmitted(conn, sender, msg.trigger, ids)) return;
    const kinds = conn.principal?.grants.kinds;
    if (kinds !== undefined && !kinds.includes(msg.task_kind)) {
      this.o.replies.error(
        conn,
        'forbidden',
        `this computer may not create tasks of kind "${msg.task_kind}"`,
        {
          ...ids,
          path: '$.task_kind',
        },
      );
      return;
    }
    const req = {
      kind: msg.task_kind,
      prompt: msg.prompt,
      clientId: msg.client_id,
      context: msg.context,
      allowedCommands: msg.allowed_commands,
      ...(msg.settings !== undefined ? { settings: msg.settings } : {}),
      creator: sender,
      requestId: msg.request_id,
      requestNamespace: sender,
      // unique among the tasks the task's computer and its group reach (the engine's one rule, also on a reopening)
      ...(msg.name !== undefined ? { name: msg.name } : {}),
    };
    const id = this.o.tasks.taskIdFor(req);
    this.o.subscriptions.hold(id);
    try {
      const r = await this.o.tasks.create(req, id);
      if (!r.ok) {
        this.o.replies.serviceError(conn, r.error, ids);
        return;
      }
      const { task } = r.value;
      if (taskCreator(task) !== sender) {
        this.o.replies.error(conn, 'forbidden', 'that request id belongs to another client', ids);
        return;
      }
      conn.send({ type: 'task_created', request_id: msg.request_id, task_id: task.id, status: task.status });
      if (r.value.created) this.auditAs(conn, 'task.create', task.id, { via: 'ws', kind: task.kind });
    } finally {
      this.o.subscriptions.release(id);
    }
  }

  /**
   * `command_result`: the engine judges it against the call (its owner, open or how it was closed) and commits an
   * accepted one; the `command_ack` leaves the moment it is on disk, ahead of the next step's messages. A duplicate
   * (the ack was lost, or the answer to a `command_cancel`) is acknowledged again; a refusal is an `error`.
   */
  async commandResult(conn: Connection, sender: string, msg: CommandResultMessage): Promise<void> {
    const ids = { call_id: msg.call_id, task_id: msg.task_id };
    const ack = (): void => {
      conn.send({ type: 'command_ack', task_id: msg.task_id, call_id: msg.call_id });
    };
    let r: SubmitResult;
    try {
      r = await this.o.engine.submitResult(
        { taskId: msg.task_id, callId: msg.call_id, sender, outcome: resultToOutcome(msg) },
        { onDurable: ack },
      );
    } catch (err) {
      const storage = storageFailureOf(err);
      const log = { err, task_id: msg.task_id, call_id: msg.call_id, client_id: sender };
      if (isEngineError(err, 'task_not_found')) {
        this.o.replies.refused(conn, 'command_result', 'not_found', err.message, ids);
      } else if (storage) {
        this.o.logger.warn(log, 'command result not stored: storage failure');
        const text = `the result is not stored (${storage.message}); send it again`;
        this.o.replies.refused(conn, 'command_result', 'unavailable', text, ids);
      } else {
        this.o.logger.error(log, 'command result not stored');
        const text = 'the result could not be stored; send it again';
        this.o.replies.refused(conn, 'command_result', 'internal', text, ids);
      }
      return;
    }
    if (r.ok) {
      if (r.value.verdict === 'duplicate') ack();
      return;
    }
    const code = r.error.code === 'forbidden' ? 'forbidden' : 'unknown_call';
    this.o.replies.refused(conn, 'command_result', code, r.error.message, ids);
  }

  /**
   * A `command_result` refused for its size (the gateway already sent the `error`): the call it answers fails now with
   * `output_too_large`, judged by the engine like any result (only the call's owner, only an open call), so the task
   * goes on at once and the model reads why, instead of the call waiting for its timeout. The `command_ack` tells
   * the computer to stop re-sending the result it stored. Nothing happens for a call that is not open or not the
   * sender's.
   */
  async oversizedResult(
    conn: Connection,
    sender: string,
    ids: { call_id: string; task_id?: string },
    why: string,
  ): Promise<void> {
    const callId = ids.call_id;
    const taskId = ids.task_id ?? this.o.callTask?.(callId, sender);
    if (taskId === undefined) return;
    const message =
      `the command's result was not taken: ${why}, over the server's limit for a result ` +
      '(server.inputLimits.maxToolOutputBytes). Ask for less output: part of a file, fewer lines, a filter.';
    const ack = (): void => {
      conn.send({ type: 'command_ack', task_id: taskId, call_id: callId });
    };
    try {
      const r = await this.o.engine.submitResult(
        { taskId, callId, sender, outcome: { ok: false, error: { code: 'output_too_large', message } } },
        { onDurable: ack },
      );
      if (r.ok && r.value.verdict === 'duplicate') ack();
    } catch (err) {
      // The result is still the computer's to send again (smaller); the call's timeout stays the bound.
      this.o.logger.warn(
        { err, task_id: taskId, call_id: callId, client_id: sender },
        'oversized result: the call could not be failed',
      );
    }
  }

  async cancelTask(conn: Connection, sender: string, taskId: string, requestId?: string): Promise<void> {
    const task = await authorizedTask(this.o, conn, sender, taskId, requestId);
    if (!task) return;
    const r = await this.o.tasks.cancel(taskId, `cancelled by client ${sender}`);
    if (!r.ok) {
      this.o.replies.serviceError(conn, r.error, {
        task_id: taskId,
        ...(requestId !== undefined ? { request_id: requestId } : {}),
      });
      return;
    }
    if (task.status !== 'cancelled') this.auditAs(conn, 'task.cancel', taskId, { via: 'ws' });
    // The canceller always hears the outcome: a repeated cancel emits no event, and it may not be a recipient.
    if (task.status === 'cancelled' || !this.o.subscriptions.recipients(r.value).has(sender))
      conn.send(toTaskUpdate(r.value));
  }

  /**
   * `task_message`: a follow-up from the person at the computer (see `TaskOperations.message`). The sender hears the
   * task's state once: from the status event of a reopened task when it is a recipient, else from this reply.
   */
  async taskMessage(conn: Connection, sender: string, msg: TaskMessageMessage): Promise<void> {
    const task = await authorizedTask(this.o, conn, sender, msg.task_id, msg.request_id);
    if (!task) return;
    const r = await this.o.tasks.message(msg.task_id, msg.text, sender);
    this.answerSteering(conn, sender, msg.task_id, msg.request_id, task.status, r);
  }

  /** `task_event`: something happened on the computer that the task should know; a sleeping task wakes. */
  async taskEvent(conn: Connection, sender: string, msg: TaskEventMessage): Promise<void> {
    const taskId = await this.eventTarget(conn, sender, msg);
    if (taskId === undefined) return;
    const task = await authorizedTask(this.o, conn, sender, taskId, msg.request_id);
    if (!task) return;
    const ids = {
      task_id: taskId,
      ...(msg.request_id !== undefined ? { request_id: msg.request_id } : {}),
    };
    if (!this.triggerAdmitted(conn, sender, msg.trigger, ids)) return;
    const r = await deliverTaskEvent(this.o.tasks, taskId, msg.name, msg.data);
    this.answerSteering(conn, sender, taskId, msg.request_id, task.status, r);
  }

  /**
   * The task a `task_event` is for: its `task_id`, or the running task its `agent` names among those the sender may
   * act on (`resolveAgent`). Undefined after an error reply: neither or both given, an unknown or ambiguous name.
   */
  private async eventTarget(
    conn: Connection,
    sender: string,
    msg: TaskEventMessage,
  ): Promise<string | undefined> {
    const ids = msg.request_id !== undefined ? { request_id: msg.request_id } : {};
    if ((msg.task_id === undefined) === (msg.agent === undefined)) {
      const both = msg.task_id !== undefined;
      this.o.replies.error(
        conn,
        both ? 'invalid_message' : 'missing_field',
        both ? 'give either task_id or agent, not both' : 'a task_event needs task_id or agent',
        { ...ids, path: both ? '$.agent' : '$.task_id' },
      );
      return undefined;
    }
    if (msg.task_id !== undefined) return msg.task_id;
    const agent = msg.agent as string;
    const observeOthers = false;
    const peer = this.o.groups?.peerOf(sender, conn.principal);
    const found = await this.o.tasks.resolveAgent(agent, (t) =>
      this.o.tasks.canAccess(t, sender, 'act', { observeOthers, ...(peer ? { peer } : {}) }),
    );
    if (found.ok) return found.task.id;
    this.o.replies.error(conn, found.code === 'not_found' ? 'not_found' : 'invalid_field', found.message, {
      ...ids,
      path: '$.agent',
    });
    return undefined;
  }

  /** A request a trigger sent is charged to its bucket; over the limit it is refused (`rate_limited`). */
  private triggerAdmitted(
    conn: Connection,
    sender: string,
    trigger: string | undefined,
    ids: { request_id?: string; task_id?: string },
  ): boolean {
    if (trigger === undefined || !this.o.triggerLimits) return true;
    const r = this.o.triggerLimits.admit(sender, trigger, this.o.clock.now());
    if (r.ok) return true;
    const wait = Math.ceil(r.retryAfterMs / 1000);
    this.o.replies.error(
      conn,
      'rate_limited',
      `trigger "${trigger}" of "${sender}" sends more than the server allows; next in ${wait} s`,
      ids,
    );
    return false;
  }

  private answerSteering(
    conn: Connection,
    sender: string,
    taskId: string,
    requestId: string | undefined,
    before: string,
    r: Awaited<ReturnType<TaskOperations['message']>>,
  ): void {
    if (!r.ok) {
      this.o.replies.serviceError(conn, r.error, {
        task_id: taskId,
        ...(requestId !== undefined ? { request_id: requestId } : {}),
      });
      return;
    }
    if (r.value.status === before || !this.o.subscriptions.recipients(r.value).has(sender)) {
      conn.send(toTaskUpdate(r.value));
    }
  }

  async userAnswer(
    conn: Connection,
    sender: string,
    taskId: string,
    questionId: string,
    text: string,
  ): Promise<void> {
    const task = await authorizedTask(this.o, conn, sender, taskId);
    if (!task) return;
    const r = await this.o.tasks.answer(taskId, questionId, text);
    if (!r.ok) this.o.replies.serviceError(conn, r.error, { task_id: taskId });
    else this.auditAs(conn, 'task.answer', taskId, { via: 'ws', question_id: questionId });
  }

  private auditAs(conn: Connection, action: string, target: string, detail?: unknown): void {
    if (conn.principal) this.o.audit?.(conn.principal, action, target, detail);
  }

  async toolsUpdate(
    conn: Connection,
    sender: string,
    tools: Array<Parameters<typeof toToolInfo>[0]>,
  ): Promise<void> {
    const dup = duplicateName(tools);
    if (dup !== undefined) {
      this.o.replies.error(conn, 'invalid_field', `tool "${dup.name}" is listed twice`, {
        path: `$.tools[${dup.index}].name`,
      });
      return;
    }
    await this.o.clients.replaceTools(sender, tools.map(toToolInfo), this.o.clock.now());
    this.o.logger.info({ client_id: sender, tools: tools.length }, 'tools updated');
  }
}
