/**
 * The call lifecycle. Owns a command call from its commit to its outcome: handing it to the executor with its abort
 * and timeout (after the call row is on disk), binding a call of a task bound to no client to the client chosen for
 * it, re-dispatching a pending call after a restart (same call id, counted), counting a re-send, judging a result
 * submitted from outside against the call's record (its owner, open or how it was closed: see {@link CallLifecycle.close})
 * and committing the outcome — from the executor, from a client through `Engine.submitResult` or from the timeout —
 * exactly once. When the task's history is cached, the next step is decided from the outcome
 * before it is durable (*speculation*, see docs/architecture.md "The command round trip inside the engine"): nothing
 * leaves the engine before the commit that carries it resolves, and a failed commit voids that step.
 */
import { Abort } from './abort.js';
import { AnsweredCalls, closedByServer } from './answered-calls.js';
import type { EngineKernel } from './engine-kernel.js';
import { EngineError } from './engine-error.js';
import type { CommitResult, TaskCommit } from './ports.js';
import { assertTransition } from './task-state-machine.js';
import type {
  CommandCallRecord,
  CommandOutcome,
  HistoryEntry,
  JsonValue,
  SubmitResult,
  Task,
} from './types.js';

/**
 * Reason a call's abort ends with once its outcome is recorded: the engine's own wait for the executor ends with it,
 * and a timed-out call's signal aborts with it. One shared instance: building an Error (and its stack) for every
 * command round trip showed in the profile.
 */
const CALL_CLOSED = new EngineError('call_closed', 'the command call is closed: its outcome is recorded');

/** See the module comment. */
export class CallLifecycle {
  /** Calls answered by a client, or whose client was told to drop them, in this process (bounded). */
  private readonly answered = new AnsweredCalls();

  constructor(private readonly k: EngineKernel) {}

  /**
   * Bind a pending call of a task bound to no client to `clientId`, durably, under the task's lock (so a result is
   * judged against the binding in force). The first binding holds; resolves with the client in force. Rejects with
   * `EngineError`: `unknown_call`, `call_closed`, `invalid_input`, `store_failure` (see `TaskStore.bindCall`).
   */
  async bind(taskId: string, callId: string, clientId: string): Promise<string> {
    this.k.scheduler.assertNotStopped();
    return this.k.cache.withLock(taskId, async () => {
      const entry = this.k.cache.entries.get(taskId);
      const call = entry?.call?.callId === callId ? entry.call : await this.k.store.getCommandCall(callId);
      if (!call || call.taskId !== taskId) {
        throw new EngineError('unknown_call', `task ${taskId} has no command call ${callId}`, {
          details: { taskId, callId },
        });
      }
      const stored = await this.k.store.bindCall(callId, clientId);
      const cached = this.k.cache.entries.get(taskId);
      if (cached?.call?.callId === callId) cached.call = stored;
      return stored.sentTo ?? clientId;
    });
  }

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
    let recordedNow!: (outcome: CommandOutcome) => void;
    const recorded = new Promise<CommandOutcome>((resolve) => (recordedNow = resolve));
    rt.callRecorded = recordedNow;
    rt.callTimer = this.k.clock.setTimeout(() => {
      const outcome: CommandOutcome = {
        ok: false,
        error: { code: 'timeout', message: `command "${call.command}" timed out after ${call.timeoutMs} ms` },
      };
      this.k.scheduler.track(this.close(task.id, call.callId, outcome, { timedOut: true }));
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
              allowedCommands: task.allowedCommands,
              sentTo: call.sentTo,
              signal,
              recorded,
              recordRedelivery: () => this.recordRedelivery(task.id, call.callId),
              bind: (clientId) => this.bind(task.id, call.callId, clientId),
              cancelledOn: (clientId) => this.answered.remember(call.callId, clientId, task.id),
            }),
          );
        } catch (err) {
          outcome = {
            ok: false,
            error: { code: 'executor_error', message: err instanceof Error ? err.message : String(err) },
          };
        }
        if (abort.aborted) return; // closed, timed out, cancelled or stopping: someone else owns the outcome
        await this.close(task.id, call.callId, outcome, { timedOut: false });
      })(),
    );
  }

  /**
   * Judge an outcome against the call's record and, for an open call, commit it and step the task again. `sender`
   * undefined: the engine's own (the executor's promise, the timeout); `null`: the host, trusted; a client id: only
   * the call's owner (the task's client, or the client the call is bound to) may answer it, and a repeat of a result
   * it already had committed — or its answer to a `command_cancel` — is a `duplicate` (from memory in this process,
   * from the stored row after a restart: a call the server closed is not acknowledged).
   *
   * When the task's history is in memory, the next step is decided right away from the state this commit produces,
   * before it is durable, so that the step's own commit joins the same transaction (one fsync per round trip).
   * Nothing leaves the engine before its state is durable: events, `onDurable` (the orchestrator's `command_ack`)
   * and the next call's dispatch all follow the commit; a step built on a commit that fails is void (its commit
   * conflicts) and the task stays in its durable state. A duplicate of a result being committed waits for it (the
   * task's lock waits for the speculation); `onDurable` runs for an accepted result only.
   */
  async close(
    taskId: string,
    callId: string,
    outcome: CommandOutcome,
    opts: { timedOut: boolean; sender?: string | null; onDurable?: (task: Task) => void },
  ): Promise<SubmitResult> {
    const { timedOut, sender, onDurable } = opts;
    let speculative = false;
    const judged = await this.k.cache.withLock(taskId, async () => {
      const known = this.k.cache.entries.get(taskId)?.call;
      const call = known?.callId === callId ? known : await this.k.store.getCommandCall(callId);
      if (!call || call.taskId !== taskId) {
        return refuse('unknown_call', `no open call ${callId} for task ${taskId}`);
      }
      const current = await this.k.cache.requireTask(taskId);
      if (typeof sender === 'string' && (current.clientId ?? call.sentTo) !== sender) {
        return refuse(
          'forbidden',
          current.clientId === null && call.sentTo !== undefined
            ? `call ${callId} was sent to another client; its result is not accepted from "${sender}"`
            : `call ${callId} was not sent to client "${sender}"; its result is not accepted from it`,
        );
      }
      if (call.status !== 'pending' || current.status !== 'waiting_for_command') {
        if (
          typeof sender === 'string' &&
          call.status !== 'pending' &&
          call.status !== 'awaiting_confirmation' &&
          (this.answered.get(callId)?.clientId === sender || !closedByServer(call))
        ) {
          return DUPLICATE;
        }
        return refuse('call_closed', `command call ${callId} is already ${call.status}`);
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
        // engine's wait: the executor settled it, or — a result submitted from outside — settles on `recorded`.
        if (timedOut) rt.callAbort?.abort(CALL_CLOSED);
        else rt.callAbort?.settle(CALL_CLOSED);
        rt.callAbort = undefined;
        rt.callRecorded?.(outcome);
        rt.callRecorded = undefined;
        if (typeof sender === 'string') this.answered.remember(callId, sender, taskId);
        for (const s of committed.steps) this.k.events.emit('stepLogged', { taskId, step: s });
        this.k.events.emit('commandResolved', { task: next, call: closed, outcome });
        this.k.events.emitStatus(next, current.status);
        if (onDurable) runOnDurable(onDurable, next, this.k, taskId, callId);
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
    if ('ok' in judged) return judged;
    if (speculative) this.k.scheduler.schedule(taskId);
    const task = await judged.durable;
    if (!speculative) this.k.scheduler.schedule(taskId);
    return { ok: true, value: { verdict: 'accepted', task } };
  }
}

const DUPLICATE: SubmitResult = { ok: true, value: { verdict: 'duplicate' } };

function refuse(code: 'forbidden' | 'call_closed' | 'unknown_call', message: string): SubmitResult {
  return { ok: false, error: { code, message } };
}

function runOnDurable(
  onDurable: (task: Task) => void,
  task: Task,
  k: EngineKernel,
  taskId: string,
  callId: string,
): void {
  try {
    onDurable(task);
  } catch (err) {
    k.logger.error({ err, task_id: taskId, call_id: callId }, 'engine: onDurable threw');
  }
}
