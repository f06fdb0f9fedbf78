/**
 * What a client that comes back is sent about its tasks: the open question of each of its tasks waiting for an
 * answer, and the current state of each task it may have missed events of (bound to it, created by it, or
 * subscribed) while it was away.
 */
import { taskCreator, type Engine, type Logger, type Task, type TaskOperations } from '@ccagent/engine';
import type { ClientEntry, ClientRegistry } from '../clients/client-registry.js';
import type { ComputerGroups } from '../clients/computer-groups.js';
import type { OrchestratorConfig } from '../config.js';
import { toAskUser, toTaskCompleted, toTaskFailed, toTaskUpdate } from '../wire.js';
import type { Connection } from './connection.js';

/** What the replay reads. */
export interface ReplayDeps {
  config: OrchestratorConfig;
  engine: Engine;
  tasks: TaskOperations;
  registry: ClientRegistry;
  logger: Logger;
  groups?: ComputerGroups;
}

/**
 * Send `conn` the current state of each task of `clientId` (bound to it, created by it, or subscribed) updated at
 * or after `since`: `task_update`, plus `task_completed` / `task_failed` for one that ended. A live event that
 * reaches the connection meanwhile wins over an older replayed state: `guard` holds, by task id, the `updatedAt` of
 * the newest live event sent to it during the replay. `isRecipient`: whether the client gets the task's events.
 */
export async function replayMissed(
  d: ReplayDeps,
  clientId: string,
  conn: Connection,
  since: number,
  guard: ReadonlyMap<string, number>,
  isRecipient: (task: Task, clientId: string) => boolean,
): Promise<void> {
  const found = new Map<string, Task>();
  for (const t of await d.engine.listTasks({ clientId, updatedSince: since })) found.set(t.id, t);
  if (d.config.server.crossClientAccess || d.groups?.enabled === true) {
    // Tasks it created for other clients (only with crossClientAccess or groups): no index on the creator.
    for (const t of await d.engine.listTasks({ updatedSince: since })) {
      if (taskCreator(t) === clientId) found.set(t.id, t);
    }
  }
  for (const id of d.registry.get(clientId)?.subscriptions ?? []) {
    if (found.has(id)) continue;
    const t = await d.engine.getTask(id);
    if (t && t.updatedAt >= since) found.set(id, t);
  }
  let sent = 0;
  for (const task of found.values()) {
    if (!isRecipient(task, clientId)) continue;
    const live = guard.get(task.id);
    if (live !== undefined && live >= task.updatedAt) continue;
    if (!conn.send(toTaskUpdate(task))) return;
    if (task.status === 'completed') conn.send(toTaskCompleted(task));
    else if (task.status === 'failed') conn.send(toTaskFailed(task));
    sent++;
  }
  if (sent > 0) d.logger.info({ client_id: clientId, tasks: sent, since }, 'replayed missed task events');
}

/** Send the client the open question of each of its tasks waiting for an answer. */
export async function resendQuestions(d: ReplayDeps, entry: ClientEntry): Promise<void> {
  const waiting = await d.engine.listTasks({ clientId: entry.clientId, status: 'waiting_for_user' });
  for (const task of waiting) {
    const q = await d.tasks.openQuestion(task.id);
    const conn = entry.connection;
    if (q && conn) conn.send(toAskUser(q));
  }
}
