/**
 * The access check of every WebSocket request about an existing task: the task must exist and the sender may act on
 * it (`TaskOperations.canAccess`, the engine's access rule); otherwise the sender gets `not_found` or `forbidden` with
 * the request's ids.
 */
import type { Engine, Task, TaskOperations } from '@ccagent/engine';
import type { ComputerGroups } from '../clients/computer-groups.js';
import type { Connection } from './connection.js';
import type { WsReplies } from './ws-replies.js';

/** What {@link authorizedTask} reads. */
export interface TaskAccessDeps {
  engine: Engine;
  tasks: TaskOperations;
  replies: WsReplies;
  /** A player's computers that may reach each other's tasks (`server.groups`). */
  groups?: ComputerGroups;
}

/** The task, if it exists and `sender` may act on it; else undefined after the error reply was sent. */
export async function authorizedTask(
  d: TaskAccessDeps,
  conn: Connection,
  sender: string,
  taskId: string,
  requestId?: string,
  readOnly = false,
): Promise<Task | undefined> {
  const ids = { task_id: taskId, ...(requestId !== undefined ? { request_id: requestId } : {}) };
  const task = await d.engine.getTask(taskId);
  if (!task) {
    d.replies.error(conn, 'not_found', `no task ${taskId}`, ids);
    return undefined;
  }
  // A key granted observe_others may read and subscribe to any task, never act on it.
  const observeOthers = conn.principal?.grants.observeOthers === true;
  const peer = d.groups?.peerOf(sender, conn.principal);
  if (
    !d.tasks.canAccess(task, sender, readOnly ? 'read' : 'act', { observeOthers, ...(peer ? { peer } : {}) })
  ) {
    // Same answer as for a missing task would leak less, but a clear reason helps the person at the computer.
    d.replies.error(conn, 'forbidden', `task ${taskId} belongs to another client`, ids);
    return undefined;
  }
  return task;
}
