/**
 * Where an event from a computer (an in-game trigger, or a program's `client:event`) reaches a task: the one place
 * to point at another event path (a resident agent's) without touching the WebSocket handlers.
 */
import type { TaskOperations } from '@ccagent/engine';

/** Post event `name` with `data` into task `taskId` (a sleeping task wakes); refused when the task has ended. */
export function deliverTaskEvent(
  tasks: Pick<TaskOperations, 'event'>,
  taskId: string,
  name: string,
  data: unknown,
): ReturnType<TaskOperations['event']> {
  return tasks.event(taskId, name, data);
}
