/**
 * The engine's event hub: listeners by event name, and emitting an event once the state it reports is committed
 * (a listener that throws is logged, never rethrown). `emitStatus` is the one place a status change is announced:
 * `taskUpdated`, then the terminal event, and a task that reached a terminal state has its runtime released.
 */
import type { EngineKernel } from './engine-kernel.js';
import type { EngineEventName, EngineEvents, EngineListener } from './events.js';
import { isTerminalStatus } from './task-state-machine.js';
import type { Task, TaskStatus } from './types.js';

/** See the module comment. */
export class EngineEventHub {
  private readonly listeners = new Map<EngineEventName, Set<(payload: never) => void>>();

  constructor(private readonly k: EngineKernel) {}

  /** Subscribe to an event; returns the unsubscribe function. */
  on<E extends EngineEventName>(event: E, listener: EngineListener<E>): () => void {
    let set = this.listeners.get(event);
    if (!set) {
      set = new Set();
      this.listeners.set(event, set);
    }
    set.add(listener as (payload: never) => void);
    return () => set.delete(listener as (payload: never) => void);
  }

  /** Announce a committed status (or progress) change; a terminal one also releases the task's runtime. */
  emitStatus(task: Task, previousStatus: TaskStatus, progress?: number, message?: string): void {
    const payload: EngineEvents['taskUpdated'] = { task, previousStatus };
    if (progress !== undefined) payload.progress = progress;
    if (message !== undefined) payload.message = message;
    this.emit('taskUpdated', payload);
    if (task.status === 'completed') this.emit('taskCompleted', { task });
    else if (task.status === 'failed') this.emit('taskFailed', { task });
    else if (task.status === 'cancelled') this.emit('taskCancelled', { task });
    if (isTerminalStatus(task.status)) this.k.scheduler.finishRuntime(task);
  }

  /** Call every listener of `event` (synchronously; one that throws is logged). */
  emit<E extends EngineEventName>(event: E, payload: EngineEvents[E]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as EngineListener<E>)(payload);
      } catch (err) {
        this.k.logger.error({ err, event }, 'engine: event listener threw');
      }
    }
  }
}
