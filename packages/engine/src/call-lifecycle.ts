/**
 * The call lifecycle. Owns a command call from its commit to its outcome: handing it to the executor with its abort
 * and timeout (after the call row is on disk), re-dispatching a pending call after a restart (same call id, counted),
 * counting a re-send, and committing the outcome — from the executor, from the host (`Engine.resolveCommand`) or
 * from the timeout — exactly once. When the task's history is cached, the next step is decided from the outcome
 * before it is durable (*speculation*, see docs/architecture.md "The command round trip inside the engine"): nothing
 * leaves the engine before the commit that carries it resolves, and a failed commit voids that step.
 */
import { Abort } from './abort.js';
import type { EngineKernel } from './engine-kernel.js';
import { EngineError, isEngineError } from './engine-error.js';
import type { CommitResult, TaskCommit } from './ports.js';
import { assertTransition } from './task-state-machine.js';
import type { CommandCallRecord, CommandOutcome, HistoryEntry, JsonValue, Task } from './types.js';

/**
 * Reason a call's abort ends with once its outcome is recorded: the engine's own wait for the executor ends with it,
 * and a timed-out call's signal aborts with it. One shared instance: building an Error (and its stack) for every
 * command round trip showed in the profile.
 */
const CALL_CLOSED = new EngineError('call_closed', 'the command call is closed: its outcome is recorded');

/** See the module comment. */
export class CallLifecycle {
  constructor(private readonly k: EngineKernel) {}

  /**
   * Count one more delivery of a pending call (the host sent its `command_call` again): `dispatchCount` + 1, durable
   * when this resolves; undefined when the call is no longer pending.
   */
  async recordRedelivery(taskId: string, callId: string): Promise<CommandCallRecord | undefined> {
    this.k.scheduler.assertNotStopped();
    return this.k.cache.withLock(taskId, async () => {
      const call = await this.k.store.getCommandCall(callId);
      if (!call || call.taskId !== taskId || call.status !== 'pending') return undefined;
      const task = await this.k.cache.requireTask(taskId);
      if (task.status !== 'waiting_for_command') return undefined;
      const next: CommandCallRecord = { ...call, dispatchCount: call.dispatchCount + 1 };
      await this.k.cache.commitTask({ task, expectedStatus: task.status, commandCall: next });
      return next;
    });
  }

  async redispatch(taskId: string, callId: string): Promise<void> {
    const found = await this.k.cache.withLock(taskId, async () => {
      const task = await this.k.cache.requireTask(taskId);
      const call = await this.k.store.getCommandCall(callId);
      if (!call || call.status !== 'pending' || task.status !== 'waiting_for_command') return undefined;
      const next: CommandCallRecord = { ...call, dispatchCount: call.dispatchCount + 1 };
      const updated: Task = { ...task, updatedAt: this.k.clock.now() };
      await this.k.cache.commitTask({ task: updated, expectedStatus: task.status, commandCall: next });
      return { task: updated, call: next };
    });
    if (found) this.dispatch(found.task, found.call);
  }

  /** Hand a committed call to the executor, arm its timeout. Call only after the call row is on disk. */
  dispatch(task: Task, call: CommandCallRecord): void {
    if (this.k.scheduler.state !== 'started') return;
    const rt = this.k.scheduler.runtime(task.id);
    const abort = new Abort();
    rt.callAbort = abort;
    const signal = abort.signal; // the executor's: always created
    rt.callTimer = this.k.clock.setTimeout(() => {
      const outcome: CommandOutcome = {
        ok: false,
        error: { code: 'timeout', message: `command "${call.command}" timed out after ${call.timeoutMs} ms` },
      };
      this.k.scheduler.track(
        this.completeCall(task.id, call.callId, outcome, true).catch((err: unknown) => {
          if (!isEngineError(err, 'call_closed') && !isEngineError(err, 'unknown_call')) throw err;
        }),
      );
    }, call.timeoutMs);
    this.k.events.emit('commandDispatched', { task, call });
    if (!this.k.executor) return;
    const executor = this.k.executor;
    this.k.scheduler.track(
      (async () => {
        let outcome: CommandOutcome;
        try {
          outcome = await abort.race(
            executor.execute({
              taskId: task.id,
              callId: call.callId,
              clientId: task.clientId,
              command: call.command,
              args: call.args,
              timeoutMs: call.timeoutMs,
              attempt: call.dispatchCount,
              sentTo: call.sentTo,
              signal,
              recordRedelivery: () => this.recordRedelivery(task.id, call.callId),
            }),
          );
        } catch (err) {
          outcome = {
            ok: false,
            error: { code: 'executor_error', message: err instanceof Error ? err.message : String(err) },
          };
        }
        if (abort.aborted) return; // timed out, cancelled or stopping: someone else owns the outcome
        await this.completeCall(task.id, call.callId, outcome, false).catch((err: unknown) => {
          if (!isEngineError(err, 'call_closed')) throw err;
        });
      })(),
    );
  }

  /**
   * Commit a call's outcome and step the task again. When the task's history is in memory, the next step is decided
   * right away from the state this commit produces, before it is durable, so that the step's own commit joins the
   * same transaction (one fsync per round trip). Nothing leaves the engine before its state is durable: events,
   * `onDurable` (the orchestrator's `command_ack`) and the next call's dispatch all follow the commit; a step built
   * on a commit that fails is void (its commit conflicts) and the task stays in its durable state.
   */
  async completeCall(
    taskId: string,
    callId: string,
    outcome: CommandOutcome,
    timedOut: boolean,
    onDurable?: (task: Task) => void,
  ): Promise<Task> {
    let speculative = false;
    const { durable } = await this.k.cache.withLock(taskId, async () => {
      const known = this.k.cache.entries.get(taskId)?.call;
      const call = known?.callId === callId ? known : await this.k.store.getCommandCall(callId);
      if (!call || call.taskId !== taskId) {
        throw new EngineError('unknown_call', `task ${taskId} has no command call ${callId}`, {
          details: { taskId, callId },
        });
      }
      const current = await this.k.cache.requireTask(taskId);
      if (call.status !== 'pending' || current.status !== 'waiting_for_command') {
        throw new EngineError('call_closed', `command call ${callId} is already ${call.status}`, {
          details: { taskId, callId, status: call.status },
        });
      }
      const now = this.k.clock.now();
      const closed: CommandCallRecord = {
        ...call,
        status: timedOut ? 'timed_out' : outcome.ok ? 'succeeded' : 'failed',
        outcome,
        completedAt: now,
      };
      const next: Task = {
        ...current,
        status: assertTransition(current.status, 'running', taskId),
        updatedAt: now,
      };
      const change: TaskCommit = {
        task: next,
        expectedStatus: 'waiting_for_command',
        commandCall: closed,
        history: [
          {
            type: 'tool_result',
            callId,
            command: call.command,
            outcome,
            ...(timedOut ? { timedOut: true } : {}),
            step: current.counters.steps,
            at: now,
          },
        ],
        steps: [
          {
            kind: 'tool_result',
            toolCall: { callId, command: call.command, args: call.args },
            toolResult: outcome as unknown as JsonValue,
            step: current.counters.steps,
            at: now,
            durationMs: now - call.createdAt,
          },
        ],
      };
      const finish = (committed: CommitResult): Task => {
        const rt = this.k.scheduler.runtime(taskId);
        if (rt.callTimer !== undefined) this.k.clock.clearTimeout(rt.callTimer);
        rt.callTimer = undefined;
        // A timed-out call's signal aborts (the executor stops waiting); a call closed by its outcome only ends the
        // engine's wait: the executor settled it, or — a host reporting through resolveCommand — cleans up itself.
        if (timedOut) rt.callAbort?.abort(CALL_CLOSED);
        else rt.callAbort?.settle(CALL_CLOSED);
        rt.callAbort = undefined;
        for (const s of committed.steps) this.k.events.emit('stepLogged', { taskId, step: s });
        this.k.events.emit('commandResolved', { task: next, call: closed, outcome });
        this.k.events.emitStatus(next, current.status);
        if (onDurable) {
          try {
            onDurable(next);
          } catch (err) {
            this.k.logger.error({ err, task_id: taskId, call_id: callId }, 'engine: onDurable threw');
          }
        }
        return next;
      };
      const cached = this.k.cache.entries.get(taskId);
      if (this.k.scheduler.state === 'started' && cached?.history !== undefined && cached.task === current) {
        const history = this.k.cache.ownHistory(cached, cached.history);
        const lastSeq = history.length > 0 ? (history[history.length - 1] as HistoryEntry).seq : 0;
        const pending = this.k.store.commit(change);
        // What the store will assign (dense seq under this lock); replaced by the stored entries once durable.
        for (const [i, h] of (change.history ?? []).entries()) {
          history.push({ ...h, taskId, seq: lastSeq + 1 + i } as HistoryEntry);
        }
        cached.task = next;
        speculative = true;
        const settled = pending.then(
          (committed) => {
            this.k.cache.cacheCommitted(next, committed, closed);
            return finish(committed);
          },
          (err: unknown) => {
            this.k.cache.cacheDrop(taskId);
            this.k.scheduler.runtimes
              .get(taskId)
              ?.stepAbort?.abort(
                new EngineError('conflict', 'the state this step was decided from was not stored'),
              );
            throw err;
          },
        );
        this.k.cache.speculating.set(taskId, settled);
        settled.then(
          () => this.k.cache.endSpeculation(taskId, settled),
          () => this.k.cache.endSpeculation(taskId, settled),
        );
        return { durable: settled };
      }
      return { durable: Promise.resolve(finish(await this.k.cache.commitTask(change))) };
    });
    if (speculative) this.k.scheduler.schedule(taskId);
    const task = await durable;
    if (!speculative) this.k.scheduler.schedule(taskId);
    return task;
  }
}
