/**
 * The scheduler. Owns: the engine's run state (idle, started, stopping, stopped), each task's runtime (whether a
 * loop is stepping it, a trigger waiting, its wake timer, the abort of its step and of its open call, the call's
 * timer), the loop that steps one task while it is runnable (committing `queued` → `running` first; sleeping until
 * `wakeAt`), the periodic tick (deadlines, runnable tasks nothing steps), and the work in flight that `stop()` waits
 * for. What a step does is the step runner's (step-runner.ts).
 */
import type { Abort } from './abort.js';
import type { EngineKernel } from './engine-kernel.js';
import { EngineError, isEngineError } from './engine-error.js';
import type { TimerHandle } from './ports.js';
import { assertTransition, isTerminalStatus } from './task-state-machine.js';
import type { CommandOutcome, Task } from './types.js';

/** What the engine holds for a task it is working on (none for a task at rest). */
export interface TaskRuntime {
  stepping: boolean;
  retrigger: boolean;
  /** Set by `trigger`: the next loop steps even if the task sleeps until `wakeAt`. */
  forced: boolean;
  wakeTimer?: TimerHandle;
  /** The step being decided (its abort), while one is. */
  stepAbort?: Abort;
  /** The dispatched call's abort, while its outcome is open. */
  callAbort?: Abort;
  callTimer?: TimerHandle;
  /** Resolves the dispatched call's `recorded` promise (see `ToolCallRequest.recorded`), while its outcome is open. */
  callRecorded?: (outcome: CommandOutcome) => void;
}

/** See the module comment. */
export class Scheduler {
  readonly runtimes = new Map<string, TaskRuntime>();
  private readonly inflight = new Set<Promise<unknown>>();
  state: 'idle' | 'started' | 'stopping' | 'stopped' = 'idle';
  private tickTimer: TimerHandle | undefined;

  constructor(
    private readonly k: EngineKernel,
    /** Period of the tick (deadlines, re-stepping runnable tasks), ms; 0 disables it. */
    private readonly tickIntervalMs: number,
  ) {}

  /**
   * Stop: no new steps start, in-flight decides and calls are aborted, and the promise resolves once all tracked work
   * has settled.
   */
  async stop(): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping') return;
    this.state = 'stopping';
    if (this.tickTimer !== undefined) this.k.clock.clearTimeout(this.tickTimer);
    const reason = new EngineError('stopped', 'engine stopped');
    for (const rt of this.runtimes.values()) {
      rt.stepAbort?.abort(reason);
      rt.callAbort?.abort(reason);
      if (rt.callTimer !== undefined) this.k.clock.clearTimeout(rt.callTimer);
      if (rt.wakeTimer !== undefined) this.k.clock.clearTimeout(rt.wakeTimer);
    }
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    this.state = 'stopped';
  }

  runtime(taskId: string): TaskRuntime {
    let rt = this.runtimes.get(taskId);
    if (!rt) {
      rt = { stepping: false, retrigger: false, forced: false };
      this.runtimes.set(taskId, rt);
    }
    return rt;
  }

  schedule(taskId: string): void {
    if (this.state !== 'started') return;
    const rt = this.runtime(taskId);
    if (rt.stepping) {
      rt.retrigger = true;
      return;
    }
    rt.stepping = true;
    const done = (): void => {
      rt.stepping = false;
      if (rt.retrigger) {
        rt.retrigger = false;
        this.schedule(taskId);
      }
    };
    // `then(done, …)` rather than `finally(done)`: the same order, one promise fewer per step loop.
    this.track(
      this.runLoop(taskId).then(done, (err: unknown) => {
        done();
        throw err;
      }),
    );
  }

  /**
   * Keep `p` in {@link inflight} until it settles (`stop()` waits for it) and log a rejection. One reaction, not a
   * catch + finally chain: a command round trip tracks two promises (the step loop and the call dispatch).
   */
  track(p: Promise<unknown>): void {
    const guarded: Promise<void> = p.then(
      () => {
        this.inflight.delete(guarded);
      },
      (err: unknown) => {
        this.inflight.delete(guarded);
        this.k.logger.error({ err }, 'engine: background work failed');
      },
    );
    this.inflight.add(guarded);
  }

  private async runLoop(taskId: string): Promise<void> {
    while (this.state === 'started') {
      // A cache hit needs no await: the loop goes on in the same turn.
      const task = this.k.cache.cacheGet(taskId)?.task ?? (await this.k.cache.readTask(taskId));
      if (!task || isTerminalStatus(task.status)) {
        // e.g. a trigger for a finished task: do not keep a runtime for it
        if (!this.runtimes.get(taskId)?.callAbort) this.runtimes.delete(taskId);
        return;
      }
      if (task.status === 'queued') {
        await this.k.cache.withLock(taskId, async () => {
          const current = await this.k.cache.requireTask(taskId);
          if (current.status !== 'queued') return;
          const next: Task = {
            ...current,
            status: assertTransition('queued', 'running', taskId),
            updatedAt: this.k.clock.now(),
          };
          await this.k.cache.commitTask({ task: next, expectedStatus: 'queued' });
          this.k.events.emitStatus(next, 'queued');
        });
        continue;
      }
      if (task.status !== 'running') return;
      const rt = this.runtime(taskId);
      if (task.wakeAt !== undefined && task.wakeAt > this.k.clock.now() && !rt.forced) {
        this.armWake(taskId, task.wakeAt);
        return;
      }
      rt.forced = false;
      if (rt.wakeTimer !== undefined) this.k.clock.clearTimeout(rt.wakeTimer);
      rt.wakeTimer = undefined;
      // A step deferred by a store failure ends the loop: the tick tries again, instead of spinning on the failure.
      if ((await this.k.steps.runStep(task)) === 'deferred') return;
    }
  }

  /** Step a sleeping task when its `wakeAt` comes (one timer per task). */
  private armWake(taskId: string, wakeAt: number): void {
    const rt = this.runtime(taskId);
    if (rt.wakeTimer !== undefined) this.k.clock.clearTimeout(rt.wakeTimer);
    rt.wakeTimer = this.k.clock.setTimeout(
      () => {
        rt.wakeTimer = undefined;
        this.schedule(taskId);
      },
      Math.max(0, wakeAt - this.k.clock.now()),
    );
  }

  scheduleTick(): void {
    if (this.tickIntervalMs <= 0 || this.state !== 'started') return;
    this.tickTimer = this.k.clock.setTimeout(() => {
      this.track(this.tick().finally(() => this.scheduleTick()));
    }, this.tickIntervalMs);
  }

  /** Periodic pass: fail tasks past their deadline, and step runnable tasks that nothing is stepping. */
  private async tick(): Promise<void> {
    if (this.state !== 'started') return;
    const now = this.k.clock.now();
    for (const [id, t] of [...this.k.cache.unfinished]) {
      if (t.deadlineAt !== undefined && now >= t.deadlineAt) {
        await this.k.steps.failForBudget(id, 'deadlineAt', t.deadlineAt, now).catch((err: unknown) => {
          if (!isEngineError(err, 'conflict') && !isEngineError(err, 'illegal_transition')) throw err;
        });
      } else if (t.status === 'queued' || (t.status === 'running' && !this.runtimes.get(id)?.wakeTimer)) {
        this.schedule(id);
      }
    }
  }

  /**
   * A task reached a terminal state: abort its in-flight decide (and so its model call) and its pending command call,
   * drop its timers and runtime.
   */
  finishRuntime(task: Task): void {
    const rt = this.runtimes.get(task.id);
    if (!rt) return;
    const reason = new EngineError('stopped', `task ${task.status}`, {
      details: { taskId: task.id, status: task.status },
    });
    rt.stepAbort?.abort(reason);
    rt.callAbort?.abort(reason);
    if (rt.callTimer !== undefined) this.k.clock.clearTimeout(rt.callTimer);
    if (rt.wakeTimer !== undefined) this.k.clock.clearTimeout(rt.wakeTimer);
    this.runtimes.delete(task.id);
  }

  assertNotStopped(): void {
    if (this.state === 'stopping' || this.state === 'stopped') {
      throw new EngineError('stopped', 'engine is stopped');
    }
  }
}
