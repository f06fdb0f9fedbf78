/**
 * Who hears about a task, and delivery of its events: the engine's task events become `task_update` /
 * `task_completed` / `task_failed` / `ask_user` for the task's client, its creator and its subscribers
 * (`subscribe` / `unsubscribe`). Events of a task being created over WebSocket are held until the creator got its
 * `task_created`. A client that comes back gets its open questions and, replayed, the state of the tasks whose
 * events it missed (replay.ts); a live event during the replay wins over an older replayed state.
 */
import { taskCreator, type Engine, type Logger, type Task, type TaskOperations } from '@ccagent/engine';
import type { ServerMessage } from '@ccagent/protocol';
import type { ClientEntry, ClientRegistry } from '../clients/client-registry.js';
import type { ComputerGroups } from '../clients/computer-groups.js';
import type { ReplyStream } from '../reply-stream.js';
import type { OrchestratorConfig } from '../config.js';
import { toAskUser, toTaskCompleted, toTaskFailed, toTaskUpdate } from '../wire.js';
import type { Connection } from './connection.js';
import { replayMissed, resendQuestions } from './replay.js';
import { authorizedTask } from './task-access.js';
import type { WsReplies } from './ws-replies.js';

/** Dependencies of {@link TaskSubscriptions}. */
export interface TaskSubscriptionsOptions {
  config: OrchestratorConfig;
  engine: Engine;
  tasks: TaskOperations;
  registry: ClientRegistry;
  replies: WsReplies;
  /** Chat replies as they are written: sent as `task_update` with `delta`. */
  replyStream?: ReplyStream;
  logger: Logger;
  /** A player's computers that may follow each other's tasks (`server.groups`). */
  groups?: ComputerGroups;
}

/** See the module comment. Relays the engine's events from construction on. */
export class TaskSubscriptions {
  /** task id → client ids subscribed to it. */
  private readonly subscribers = new Map<string, Set<string>>();
  /** Tasks whose events wait until the creator got `task_created`. */
  private readonly held = new Map<string, Array<{ task: Task; msg: ServerMessage }>>();
  /** Connections receiving a replay of missed events → task id → `updatedAt` of the newest live event sent. */
  private readonly replaying = new Map<Connection, Map<string, number>>();

  constructor(private readonly o: TaskSubscriptionsOptions) {
    this.relayEngineEvents();
    o.registry.on('online', (entry, missedSince) => this.clientOnline(entry, missedSince));
  }

  /** Hold the events of task `id` (being created) until {@link release}. */
  hold(id: string): void {
    this.held.set(id, []);
  }

  /** Deliver the held events of task `id`, and stop holding them. */
  release(id: string): void {
    const queued = this.held.get(id) ?? [];
    this.held.delete(id);
    for (const m of queued) this.deliver(m.task, m.msg);
  }

  async subscribe(conn: Connection, sender: string, taskId: string, requestId?: string): Promise<void> {
    const task = await authorizedTask(this.o, conn, sender, taskId, requestId, true);
    if (!task) return;
    this.o.registry.get(sender)?.subscriptions.add(taskId);
    this.index(taskId, sender);
    conn.send(toTaskUpdate(task));
    if (task.status === 'completed') conn.send(toTaskCompleted(task));
    else if (task.status === 'failed') conn.send(toTaskFailed(task));
    else if (task.status === 'waiting_for_user') {
      const q = await this.o.tasks.openQuestion(taskId);
      if (q) conn.send(toAskUser(q));
    }
  }

  /** `unsubscribe`: the client no longer hears about the task (unless it is its own or it created it). */
  unsubscribe(sender: string, taskId: string): void {
    this.subscribers.get(taskId)?.delete(sender);
    this.o.registry.get(sender)?.subscriptions.delete(taskId);
  }

  /**
   * A client was (re)welcomed (registry `online`; the tool executor has re-sent its calls): re-send questions of its tasks that wait for an answer, then the
   * current state of its tasks that changed while it was away (`missedSince`: events of that time were not
   * delivered to it).
   */
  private clientOnline(entry: ClientEntry, missedSince: number | undefined): void {
    for (const taskId of entry.subscriptions) this.index(taskId, entry.clientId);
    void resendQuestions(this.o, entry).catch((err: unknown) =>
      this.o.logger.error({ err, client_id: entry.clientId }, 'could not re-send open questions'),
    );
    if (missedSince !== undefined && entry.connection) {
      const conn = entry.connection;
      void this.replay(entry.clientId, conn, missedSince).catch((err: unknown) =>
        this.o.logger.error({ err, client_id: entry.clientId }, 'could not replay missed task events'),
      );
    }
  }

  private async replay(clientId: string, conn: Connection, since: number): Promise<void> {
    const guard = new Map<string, number>();
    this.replaying.set(conn, guard);
    try {
      await replayMissed(this.o, clientId, conn, since, guard, (task, id) => this.recipients(task).has(id));
    } finally {
      this.replaying.delete(conn);
    }
  }

  private relayEngineEvents(): void {
    const e = this.o.engine;
    e.on('taskUpdated', ({ task, progress, message }) =>
      this.publish(task, toTaskUpdate(task, progress, message)),
    );
    e.on('taskCompleted', ({ task }) => this.publish(task, toTaskCompleted(task)));
    e.on('taskFailed', ({ task }) => this.publish(task, toTaskFailed(task)));
    e.on('questionAsked', ({ task, question }) => this.publish(task, toAskUser(question)));
    this.o.replyStream?.on(({ task, delta }) =>
      this.publish(task, { type: 'task_update', task_id: task.id, status: 'running', delta }),
    );
  }

  private publish(task: Task, msg: ServerMessage): void {
    const held = this.held.get(task.id);
    if (held) {
      held.push({ task, msg });
      return;
    }
    this.deliver(task, msg);
  }

  private deliver(task: Task, msg: ServerMessage): void {
    for (const clientId of this.recipients(task)) {
      const conn = this.o.registry.connection(clientId);
      if (!conn) continue;
      conn.send(msg);
      const guard = this.replaying.get(conn);
      if (guard) guard.set(task.id, Math.max(guard.get(task.id) ?? 0, task.updatedAt));
    }
    if (
      msg.type === 'task_completed' ||
      msg.type === 'task_failed' ||
      (msg.type === 'task_update' && msg.status === 'cancelled')
    ) {
      this.subscribers.delete(task.id);
    }
  }

  /** The task's client, its creator, and its subscribers. */
  recipients(task: Task): Set<string> {
    const out = new Set<string>(this.subscribers.get(task.id) ?? []);
    if (task.clientId !== null) out.add(task.clientId);
    const creator = taskCreator(task);
    if (creator !== undefined) out.add(creator);
    return out;
  }

  private index(taskId: string, clientId: string): void {
    let set = this.subscribers.get(taskId);
    if (!set) {
      set = new Set();
      this.subscribers.set(taskId, set);
    }
    set.add(clientId);
  }
}
