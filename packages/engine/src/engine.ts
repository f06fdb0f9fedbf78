import { randomUUID } from 'node:crypto';
import { Abort } from './abort.js';
import { systemClock } from './clock.js';
import { EngineError, isEngineError } from './engine-error.js';
import type { EngineEventName, EngineEvents, EngineListener } from './events.js';
import { decisionRecord } from './memory-json.js';
import { ModelLimiter } from './model-limiter.js';
import type {
  Clock,
  CommitResult,
  Logger,
  StepContext,
  StrategyResolver,
  TaskCommit,
  TaskStore,
  TaskStrategy,
  TimerHandle,
  ToolExecutor,
} from './ports.js';
import { assertTransition, isTerminalStatus } from './task-state-machine.js';
import { finishMessage } from './finish-message.js';
import type {
  CommandCallRecord,
  CommandDescriptor,
  CommandOutcome,
  Decision,
  HistoryEntry,
  JsonValue,
  NewTaskInput,
  QuestionRecord,
  StepQuery,
  StepRecord,
  StoredStep,
  Task,
  TaskErrorInfo,
  TaskFilter,
  TaskStatus,
} from './types.js';

/** Default timeout of one command call (milliseconds). */
export const DEFAULT_CALL_TIMEOUT_MS = 60_000;
/** Default period of the scheduler's tick (deadlines, periodic stepping), milliseconds. */
export const DEFAULT_TICK_INTERVAL_MS = 1_000;

/** Options of {@link Engine}. Only `store` and `strategies` are required. */
export interface EngineOptions {
  store: TaskStore;
  /** Strategy per task kind: a resolver function or a plain record. */
  strategies: StrategyResolver | Record<string, TaskStrategy>;
  /** Runs command calls; without one, the host reports results through `resolveCommand`. */
  executor?: ToolExecutor;
  clock?: Clock;
  logger?: Logger;
  /** Concurrent model calls allowed per model: one number for all, or per model name (default 1). */
  modelConcurrency?: number | Record<string, number>;
  /** Timeout of a command call when neither the decision nor the command descriptor sets one (default 60 s). */
  defaultCallTimeoutMs?: number;
  /** Scheduler tick period in ms (deadline checks, re-stepping runnable tasks); 0 disables (default 1 s). */
  tickIntervalMs?: number;
  /**
   * Tasks whose current row and history the engine keeps in memory between steps, least recently used evicted
   * (default 1024). Each step then reads nothing from the store: re-reading the whole history every step made a
   * step O(history) and a night-long task O(n²). The engine is the store's only writer for its tasks.
   */
  taskCacheSize?: number;
}

/** Default of {@link EngineOptions.taskCacheSize}. */
export const DEFAULT_TASK_CACHE_SIZE = 1024;

/**
 * Reason a call's abort ends with once its outcome is recorded: the engine's own wait for the executor ends with it,
 * and a timed-out call's signal aborts with it. One shared instance: building an Error (and its stack) for every
 * command round trip showed in the profile.
 */
const CALL_CLOSED = new EngineError('call_closed', 'the command call is closed: its outcome is recorded');

/** A task's committed row, and its history once loaded (kept equal to the store's after every commit). */
interface CachedTask {
  task: Task;
  history: HistoryEntry[] | undefined;
  /**
   * Steps deciding from `history` right now: the array is lent to the strategy as it is (copying it on every step
   * made a long task O(n²), see docs/benchmarks.md "Night-long task"), so a change while it is lent replaces the
   * array with a changed copy instead (see `ownHistory`) and the strategy keeps seeing the history it started from.
   */
  lent?: number;
  /**
   * The command call row this engine last committed for the task, as stored: a command result finds its open call
   * here instead of reading it back from the store on every round trip. Undefined after a load from the store.
   */
  call?: CommandCallRecord;
}

interface TaskRuntime {
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
}

const NON_TERMINAL: TaskStatus[] = ['queued', 'running', 'waiting_for_command', 'waiting_for_user'];

const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * Owns task lifecycle: persists every change through the {@link TaskStore} before emitting events or dispatching
 * calls (write-ahead), steps runnable tasks through their strategy, limits model calls per model, enforces budgets,
 * propagates cancellation, and resumes every non-terminal task on {@link Engine.start}.
 */
export class Engine {
  private readonly store: TaskStore;
  private readonly resolveStrategy: StrategyResolver;
  private readonly executor: ToolExecutor | undefined;
  private readonly clock: Clock;
  private readonly logger: Logger;
  private readonly limiter: ModelLimiter;
  private readonly defaultCallTimeoutMs: number;
  private readonly tickIntervalMs: number;
  private readonly listeners = new Map<EngineEventName, Set<(payload: never) => void>>();
  private readonly runtimes = new Map<string, TaskRuntime>();
  private readonly locks = new Map<string, Promise<void>>();
  private readonly cache = new Map<string, CachedTask>();
  private readonly cacheSize: number;
  /**
   * Tasks whose latest commit (a command result) is queued but not yet durable, while their next step is already
   * being decided from the state it will produce (so the step's commit joins the same transaction: one fsync per
   * command round trip instead of two). Everything else that touches the task waits for it.
   */
  private readonly speculating = new Map<string, Promise<unknown>>();
  /**
   * Every unfinished task's status and deadline, kept from the commits (the engine is the store's only writer): the
   * tick reads this instead of decoding every unfinished task from the store once a second.
   */
  private readonly unfinished = new Map<
    string,
    { status: TaskStatus; deadlineAt: number | undefined; generation: number }
  >();
  private readonly inflight = new Set<Promise<unknown>>();
  private state: 'idle' | 'started' | 'stopping' | 'stopped' = 'idle';
  private tickTimer: TimerHandle | undefined;

  constructor(options: EngineOptions) {
    this.store = options.store;
    const strategies = options.strategies;
    this.resolveStrategy =
      typeof strategies === 'function'
        ? strategies
        : (kind) => (Object.hasOwn(strategies, kind) ? strategies[kind] : undefined);
    this.executor = options.executor;
    this.clock = options.clock ?? systemClock;
    this.logger = options.logger ?? silentLogger;
    const mc = options.modelConcurrency ?? 1;
    this.limiter = new ModelLimiter((model) => (typeof mc === 'number' ? mc : (mc[model] ?? 1)));
    this.defaultCallTimeoutMs = options.defaultCallTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS;
    this.tickIntervalMs = options.tickIntervalMs ?? DEFAULT_TICK_INTERVAL_MS;
    this.cacheSize = Math.max(0, Math.floor(options.taskCacheSize ?? DEFAULT_TASK_CACHE_SIZE));
  }

  // ---------------------------------------------------------------- public API

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

  /**
   * Recover and start scheduling: `queued`/`running` tasks step (a `running` task repeats its interrupted step),
   * `waiting_for_command` tasks re-dispatch the same call id, `waiting_for_user` tasks keep waiting.
   */
  async start(): Promise<void> {
    if (this.state !== 'idle')
      throw new EngineError('invalid_input', `engine cannot start from state ${this.state}`);
    this.state = 'started';
    const tasks = await this.store.listTasks({ status: NON_TERMINAL });
    for (const task of tasks) this.noteStatus(task);
    // Concurrently, so the store can group the recovery writes (resuming 1,000 tasks is not 1,000 fsyncs in a row).
    const outcomes = await Promise.allSettled(tasks.map((task) => this.recover(task)));
    outcomes.forEach((o, i) => {
      // One task failing to recover (a store hiccup) must not keep the others from running; the tick retries steps.
      if (o.status === 'rejected') {
        this.logger.error(
          { err: o.reason as unknown, task_id: tasks[i]?.id },
          'engine: recovery of a task failed',
        );
      }
    });
    this.scheduleTick();
  }

  private async recover(task: Task): Promise<void> {
    if (task.status === 'waiting_for_command') {
      const pending = await this.store.listCommandCalls({ taskId: task.id, status: 'pending' });
      for (const call of pending) await this.redispatch(task.id, call.callId);
    } else if (task.status === 'running' && !(task.wakeAt !== undefined && task.wakeAt > this.clock.now())) {
      // The previous process died inside this step: say so in the step log, so the records of the lost attempt
      // (before this marker) are not mistaken for the repeated one.
      const stored = await this.store.appendStep(task.id, {
        kind: 'resumed',
        output: { reason: 'engine restarted; this step is repeated' },
        step: task.counters.steps + 1,
        at: this.clock.now(),
      });
      this.emit('stepLogged', { taskId: task.id, step: stored });
      this.schedule(task.id);
    } else if (task.status === 'queued' || task.status === 'running') {
      this.schedule(task.id);
    }
  }

  /**
   * Stop gracefully: no new steps start, in-flight decides and calls are aborted (their tasks stay in their durable
   * state and resume on the next start), and the promise resolves once all engine work has settled.
   */
  async stop(): Promise<void> {
    if (this.state === 'stopped' || this.state === 'stopping') return;
    this.state = 'stopping';
    if (this.tickTimer !== undefined) this.clock.clearTimeout(this.tickTimer);
    const reason = new EngineError('stopped', 'engine stopped');
    for (const rt of this.runtimes.values()) {
      rt.stepAbort?.abort(reason);
      rt.callAbort?.abort(reason);
      if (rt.callTimer !== undefined) this.clock.clearTimeout(rt.callTimer);
      if (rt.wakeTimer !== undefined) this.clock.clearTimeout(rt.wakeTimer);
    }
    while (this.inflight.size > 0) await Promise.allSettled([...this.inflight]);
    this.state = 'stopped';
  }

  /** Create and persist a task (status `queued`); it is on disk before the promise resolves. */
  async createTask(input: NewTaskInput): Promise<Task> {
    this.assertNotStopped();
    validateInput(input);
    const now = this.clock.now();
    const task: Task = {
      id: input.id ?? randomUUID(),
      kind: input.kind,
      status: 'queued',
      clientId: input.clientId ?? null,
      prompt: input.prompt,
      allowedCommands: [...(input.allowedCommands ?? [])],
      memory: input.memory ?? null,
      metadata: { ...(input.metadata ?? {}) },
      budgets: { ...(input.budgets ?? {}) },
      counters: { steps: 0, toolCalls: 0, questions: 0 },
      createdAt: now,
      updatedAt: now,
    };
    if (input.context !== undefined) task.context = input.context;
    // No lock needed: nothing else can change a task before it exists.
    await this.commitTask({ task, create: true });
    this.emit('taskCreated', { task });
    this.schedule(task.id);
    return task;
  }

  /** Cancel a non-terminal task: commits `cancelled`, then aborts its in-flight decide and pending command call. */
  async cancelTask(taskId: string, reason?: string): Promise<Task> {
    this.assertNotStopped();
    const task = await this.withLock(taskId, async () => {
      const current = await this.requireTask(taskId);
      assertTransition(current.status, 'cancelled', taskId);
      const now = this.clock.now();
      const next: Task = { ...current, status: 'cancelled', updatedAt: now };
      next.progressMessage = finishMessage(next, reason);
      const pending = await this.store.listCommandCalls({ taskId, status: 'pending' });
      const change: TaskCommit = {
        task: next,
        expectedStatus: current.status,
        history: [{ type: 'cancel', ...(reason ? { reason } : {}), step: current.counters.steps, at: now }],
      };
      const call = pending[0];
      if (call) change.commandCall = { ...call, status: 'cancelled', completedAt: now };
      await this.commitTask(change);
      this.emitStatus(next, current.status);
      return next;
    });
    return task;
  }

  /** Answer a pending question; the task resumes. Rejects with `unknown_question` / `question_closed`. */
  async answerQuestion(taskId: string, questionId: string, text: string): Promise<Task> {
    this.assertNotStopped();
    const task = await this.withLock(taskId, async () => {
      const current = await this.requireTask(taskId);
      const q = await this.store.getQuestion(questionId);
      if (!q || q.taskId !== taskId) {
        throw new EngineError('unknown_question', `task ${taskId} has no question ${questionId}`, {
          details: { taskId, questionId },
        });
      }
      if (q.answer !== undefined || current.status !== 'waiting_for_user') {
        throw new EngineError('question_closed', `question ${questionId} is no longer awaiting an answer`, {
          details: { taskId, questionId, status: current.status },
        });
      }
      const now = this.clock.now();
      const question: QuestionRecord = { ...q, answer: text, answeredAt: now };
      const next: Task = {
        ...current,
        status: assertTransition(current.status, 'running', taskId),
        updatedAt: now,
      };
      await this.commitTask({
        task: next,
        expectedStatus: current.status,
        question,
        history: [{ type: 'answer', questionId, answer: text, step: current.counters.steps, at: now }],
      });
      this.emit('questionAnswered', { task: next, question });
      this.emitStatus(next, current.status);
      return next;
    });
    this.schedule(taskId);
    return task;
  }

  /**
   * Report a command call's outcome out of band (e.g. a WebSocket `command_result`). Rejects with `unknown_call` for
   * a call the task never issued and `call_closed` for one already resolved, timed out or cancelled; a repeated
   * report therefore changes nothing. `onDurable` runs as soon as the outcome is on disk, after the engine's events
   * for it and before anything the next step sends (the place for an acknowledgement).
   */
  async resolveCommand(
    taskId: string,
    callId: string,
    outcome: CommandOutcome,
    options: { onDurable?: (task: Task) => void } = {},
  ): Promise<Task> {
    this.assertNotStopped();
    return this.completeCall(taskId, callId, outcome, false, options.onDurable);
  }

  /**
   * Count one more delivery of a pending call (the host sent its `command_call` again, e.g. to a client that
   * reconnected): `dispatchCount` + 1, durable when this resolves. Resolves with the updated call, or undefined when
   * the call is no longer pending.
   */
  async recordRedelivery(taskId: string, callId: string): Promise<CommandCallRecord | undefined> {
    this.assertNotStopped();
    return this.withLock(taskId, async () => {
      const call = await this.store.getCommandCall(callId);
      if (!call || call.taskId !== taskId || call.status !== 'pending') return undefined;
      const task = await this.requireTask(taskId);
      if (task.status !== 'waiting_for_command') return undefined;
      const next: CommandCallRecord = { ...call, dispatchCount: call.dispatchCount + 1 };
      await this.commitTask({ task, expectedStatus: task.status, commandCall: next });
      return next;
    });
  }

  /**
   * Outside trigger: step a `queued`/`running` task now — also one sleeping after a `continue` with `wakeAfterMs` —
   * or right after its current step if it is stepping. No-op for waiting and terminal tasks.
   */
  trigger(taskId: string): void {
    if (this.state !== 'started') return;
    this.runtime(taskId).forced = true;
    this.schedule(taskId);
  }

  /** A task by id, or undefined. */
  getTask(taskId: string): Promise<Task | undefined> {
    return this.store.getTask(taskId);
  }

  /** Tasks matching the filter, oldest first. */
  listTasks(filter?: TaskFilter): Promise<Task[]> {
    return this.store.listTasks(filter);
  }

  /**
   * The task's step log in `seq` order; with `query`, one page of it: the records after `query.afterSeq`, at most
   * `query.limit` (see {@link StepQuery}). Rejects with `EngineError('invalid_input')` on a bad query.
   */
  getSteps(taskId: string, query?: StepQuery): Promise<StoredStep[]> {
    return this.store.getSteps(taskId, query);
  }

  /** The task's durable observation log (what strategies see). */
  getHistory(taskId: string): Promise<HistoryEntry[]> {
    return this.store.getHistory(taskId);
  }

  /** Running/queued model calls for `model` (for metrics). */
  modelStats(model: string): { active: number; queued: number } {
    return this.limiter.stats(model);
  }

  // ---------------------------------------------------------------- scheduling

  private runtime(taskId: string): TaskRuntime {
    let rt = this.runtimes.get(taskId);
    if (!rt) {
      rt = { stepping: false, retrigger: false, forced: false };
      this.runtimes.set(taskId, rt);
    }
    return rt;
  }

  private schedule(taskId: string): void {
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
  private track(p: Promise<unknown>): void {
    const guarded: Promise<void> = p.then(
      () => {
        this.inflight.delete(guarded);
      },
      (err: unknown) => {
        this.inflight.delete(guarded);
        this.logger.error({ err }, 'engine: background work failed');
      },
    );
    this.inflight.add(guarded);
  }

  private async runLoop(taskId: string): Promise<void> {
    while (this.state === 'started') {
      // A cache hit needs no await: the loop goes on in the same turn.
      const task = this.cacheGet(taskId)?.task ?? (await this.readTask(taskId));
      if (!task || isTerminalStatus(task.status)) {
        // e.g. a trigger for a finished task: do not keep a runtime for it
        if (!this.runtimes.get(taskId)?.callAbort) this.runtimes.delete(taskId);
        return;
      }
      if (task.status === 'queued') {
        await this.withLock(taskId, async () => {
          const current = await this.requireTask(taskId);
          if (current.status !== 'queued') return;
          const next: Task = {
            ...current,
            status: assertTransition('queued', 'running', taskId),
            updatedAt: this.clock.now(),
          };
          await this.commitTask({ task: next, expectedStatus: 'queued' });
          this.emitStatus(next, 'queued');
        });
        continue;
      }
      if (task.status !== 'running') return;
      const rt = this.runtime(taskId);
      if (task.wakeAt !== undefined && task.wakeAt > this.clock.now() && !rt.forced) {
        this.armWake(taskId, task.wakeAt);
        return;
      }
      rt.forced = false;
      if (rt.wakeTimer !== undefined) this.clock.clearTimeout(rt.wakeTimer);
      rt.wakeTimer = undefined;
      // A step deferred by a store failure ends the loop: the tick tries again, instead of spinning on the failure.
      if ((await this.runStep(task)) === 'deferred') return;
    }
  }

  /** Step a sleeping task when its `wakeAt` comes (one timer per task). */
  private armWake(taskId: string, wakeAt: number): void {
    const rt = this.runtime(taskId);
    if (rt.wakeTimer !== undefined) this.clock.clearTimeout(rt.wakeTimer);
    rt.wakeTimer = this.clock.setTimeout(
      () => {
        rt.wakeTimer = undefined;
        this.schedule(taskId);
      },
      Math.max(0, wakeAt - this.clock.now()),
    );
  }

  private scheduleTick(): void {
    if (this.tickIntervalMs <= 0 || this.state !== 'started') return;
    this.tickTimer = this.clock.setTimeout(() => {
      this.track(this.tick().finally(() => this.scheduleTick()));
    }, this.tickIntervalMs);
  }

  /** Periodic pass: fail tasks past their deadline, and step runnable tasks that nothing is stepping. */
  private async tick(): Promise<void> {
    if (this.state !== 'started') return;
    const now = this.clock.now();
    for (const [id, t] of [...this.unfinished]) {
      if (t.deadlineAt !== undefined && now >= t.deadlineAt) {
        await this.failForBudget(id, 'deadlineAt', t.deadlineAt, now).catch((err: unknown) => {
          if (!isEngineError(err, 'conflict') && !isEngineError(err, 'illegal_transition')) throw err;
        });
      } else if (t.status === 'queued' || (t.status === 'running' && !this.runtimes.get(id)?.wakeTimer)) {
        this.schedule(id);
      }
    }
  }

  /** Keep {@link unfinished} in step with a committed task. */
  private noteStatus(task: Task): void {
    if (isTerminalStatus(task.status)) this.unfinished.delete(task.id);
    else {
      const generation = (this.unfinished.get(task.id)?.generation ?? 0) + 1;
      this.unfinished.set(task.id, { status: task.status, deadlineAt: task.budgets.deadlineAt, generation });
    }
  }

  /** Changes with every commit (and failed commit) of an unfinished task; undefined for others. */
  private generation(taskId: string): number | undefined {
    return this.unfinished.get(taskId)?.generation;
  }

  // ---------------------------------------------------------------- one step

  private async runStep(task: Task): Promise<'deferred' | undefined> {
    const taskId = task.id;
    const now = this.clock.now();
    const { budgets, counters } = task;
    if (budgets.deadlineAt !== undefined && now >= budgets.deadlineAt) {
      await this.failForBudget(taskId, 'deadlineAt', budgets.deadlineAt, now);
      return;
    }
    if (budgets.maxSteps !== undefined && counters.steps >= budgets.maxSteps) {
      await this.failForBudget(taskId, 'maxSteps', budgets.maxSteps, counters.steps);
      return;
    }
    const strategy = this.resolveStrategy(task.kind);
    if (!strategy) {
      await this.failTask(taskId, 'running', {
        code: 'no_strategy',
        message: `no strategy for task kind "${task.kind}"`,
      });
      return;
    }
    const rt = this.runtime(taskId);
    // `stop()` aborts every runtime's step (no AbortSignal.any per step: it showed in the profile). The step's
    // AbortSignal is created only if the strategy reads `ctx.signal` or calls a model (see `Abort`).
    const abort = new Abort();
    rt.stepAbort = abort;
    const step = counters.steps + 1;
    // A step decided from a state not yet durable (see `speculating`) does nothing outside the engine before that
    // state is on disk: no model call, no step-log record. Deciding from memory alone is free to go ahead.
    const basis = this.speculating.get(taskId);
    const logStep = async (record: StepRecord): Promise<StoredStep> => {
      const stored = await this.store.appendStep(taskId, { ...record, step, at: this.clock.now() });
      this.emit('stepLogged', { taskId, step: stored });
      return stored;
    };
    const ctx: StepContext = {
      get signal(): AbortSignal {
        return abort.signal;
      },
      clock: this.clock,
      logger: this.logger,
      step,
      // Without a speculative basis, no extra await: a step's model call starts in the same turn as before.
      callModel: (model, fn) =>
        basis
          ? basis.then(() => this.limiter.run(model, abort.signal, fn))
          : this.limiter.run(model, abort.signal, fn),
      logStep: (record: StepRecord) => (basis ? basis.then(() => logStep(record)) : logStep(record)),
      availableCommands: () => this.availableCommands(task),
    };
    let decision: Decision;
    let lent: { entry: CachedTask; history: HistoryEntry[] } | undefined;
    try {
      const entry = this.cacheGet(taskId);
      const cached = entry?.history;
      if (entry && cached) {
        entry.lent = (entry.lent ?? 0) + 1;
        lent = { entry, history: cached };
      }
      const history = cached ?? (await this.loadHistory(taskId));
      // Raced with the signal: a strategy that ignores its abort cannot hold up cancellation or stop().
      decision = await abort.race(strategy.decide(task, history, ctx));
    } catch (err) {
      if (abort.aborted) return; // cancel/stop/deadline own the state change
      if (isEngineError(err, 'store_failure')) {
        // The store cannot be written (disk full, locked by another process …): that is not the task's fault. It
        // stays running in its durable state, and the tick steps it again once the store works.
        this.logger.warn({ err, task_id: taskId }, 'engine: step deferred, the store failed');
        return 'deferred';
      }
      this.logger.warn({ err, task_id: taskId }, 'engine: strategy failed');
      await this.failTask(taskId, 'running', {
        code: 'strategy_error',
        message: err instanceof Error ? err.message : String(err),
      }).catch((e: unknown) => {
        if (!isEngineError(e, 'conflict')) throw e;
      });
      return;
    } finally {
      if (rt.stepAbort === abort) rt.stepAbort = undefined;
      // Given back, unless a change already replaced the lent array with a copy (that reset the count).
      if (lent && lent.entry.history === lent.history && lent.entry.lent) lent.entry.lent--;
    }
    if (abort.aborted) return;
    await this.applyDecision(taskId, step, decision);
  }

  private availableCommands(task: Task): CommandDescriptor[] {
    const offered = this.executor?.listCommands?.(task.clientId);
    if (!offered) return task.allowedCommands.map((name) => ({ name }));
    if (task.allowedCommands.length === 0) return offered;
    return offered.filter((c) => task.allowedCommands.includes(c.name));
  }

  private async applyDecision(taskId: string, step: number, decision: Decision): Promise<void> {
    const dispatch = await this.withLock(
      taskId,
      async (): Promise<{ task: Task; call: CommandCallRecord } | undefined> => {
        const current = await this.requireTask(taskId);
        if (current.status !== 'running' || current.counters.steps !== step - 1) return undefined; // cancelled meanwhile
        const now = this.clock.now();
        const { wakeAt: _previousWake, ...rest } = current;
        const base: Task = {
          ...rest,
          memory: decision.memory !== undefined ? decision.memory : current.memory,
          counters: { ...current.counters, steps: step },
          updatedAt: now,
        };
        if (decision.progress !== undefined) base.progress = decision.progress;
        if (decision.message !== undefined) base.progressMessage = decision.message;
        const decisionStep = {
          kind: 'decision',
          directive: decisionRecord(decision, current.memory) as unknown as JsonValue,
          step,
          at: now,
        };
        const change: TaskCommit = { task: base, expectedStatus: 'running', steps: [decisionStep] };

        switch (decision.type) {
          case 'tool_call': {
            const { budgets, counters } = current;
            if (budgets.maxToolCalls !== undefined && counters.toolCalls >= budgets.maxToolCalls) {
              const history = await this.lockedHistory(taskId);
              base.status = assertTransition('running', 'failed', taskId);
              base.error = budgetError(
                'maxToolCalls',
                budgets.maxToolCalls,
                counters.toolCalls,
                decision,
                history,
              );
              base.progressMessage = finishMessage(base);
              change.history = [{ type: 'fail', error: base.error, step, at: now }];
              break;
            }
            if (current.allowedCommands.length > 0 && !current.allowedCommands.includes(decision.command)) {
              change.history = [
                {
                  type: 'note',
                  text: `command "${decision.command}" is not allowed for this task; allowed: ${current.allowedCommands.join(', ')}`,
                  step,
                  at: now,
                },
              ];
              break;
            }
            const callId = `${taskId}:call:${counters.toolCalls + 1}`;
            const descriptor = this.executor
              ?.listCommands?.(current.clientId)
              .find((c) => c.name === decision.command);
            const call: CommandCallRecord = {
              callId,
              taskId,
              command: decision.command,
              args: decision.args,
              timeoutMs: decision.timeoutMs ?? descriptor?.timeoutMs ?? this.defaultCallTimeoutMs,
              status: 'pending',
              dispatchCount: 1,
              createdAt: now,
            };
            base.status = assertTransition('running', 'waiting_for_command', taskId);
            base.counters.toolCalls = counters.toolCalls + 1;
            change.commandCall = call;
            change.history = [
              { type: 'tool_call', callId, command: call.command, args: call.args, step, at: now },
            ];
            break;
          }
          case 'ask_user': {
            const questionId = `${taskId}:q:${current.counters.questions + 1}`;
            const question: QuestionRecord = {
              questionId,
              taskId,
              question: decision.question,
              askedAt: now,
            };
            if (decision.why !== undefined) question.why = decision.why;
            base.status = assertTransition('running', 'waiting_for_user', taskId);
            base.counters.questions = current.counters.questions + 1;
            change.question = question;
            change.history = [
              {
                type: 'question',
                questionId,
                question: decision.question,
                ...(decision.why !== undefined ? { why: decision.why } : {}),
                step,
                at: now,
              },
            ];
            break;
          }
          case 'complete':
            base.status = assertTransition('running', 'completed', taskId);
            base.result = decision.result;
            base.progressMessage = decision.message ?? finishMessage(base);
            change.history = [{ type: 'complete', result: decision.result, step, at: now }];
            break;
          case 'fail':
            base.status = assertTransition('running', 'failed', taskId);
            base.error = decision.error;
            base.progressMessage = decision.message ?? finishMessage(base);
            change.history = [{ type: 'fail', error: decision.error, step, at: now }];
            break;
          case 'continue':
            if (decision.note !== undefined)
              change.history = [{ type: 'note', text: decision.note, step, at: now }];
            if (
              decision.wakeAfterMs !== undefined &&
              Number.isFinite(decision.wakeAfterMs) &&
              decision.wakeAfterMs > 0
            ) {
              base.wakeAt = now + decision.wakeAfterMs;
            }
            break;
        }
        let committed: CommitResult;
        try {
          committed = await this.commitTask(change);
        } catch (err) {
          // The state this step was decided from did not become durable (see `speculating`), or someone else
          // changed the task meanwhile: the decision is void, the task is stepped again from its durable state.
          if (isEngineError(err, 'conflict')) return undefined;
          throw err;
        }
        for (const s of committed.steps) this.emit('stepLogged', { taskId, step: s });
        if (base.status !== 'running' || decision.progress !== undefined || decision.message !== undefined) {
          this.emitStatus(base, 'running', decision.progress, decision.message);
        }
        if (change.question) this.emit('questionAsked', { task: base, question: change.question });
        return change.commandCall ? { task: base, call: change.commandCall } : undefined;
      },
      true,
    );
    if (dispatch) this.dispatch(dispatch.task, dispatch.call);
  }

  // ---------------------------------------------------------------- command calls

  private async redispatch(taskId: string, callId: string): Promise<void> {
    const found = await this.withLock(taskId, async () => {
      const task = await this.requireTask(taskId);
      const call = await this.store.getCommandCall(callId);
      if (!call || call.status !== 'pending' || task.status !== 'waiting_for_command') return undefined;
      const next: CommandCallRecord = { ...call, dispatchCount: call.dispatchCount + 1 };
      const updated: Task = { ...task, updatedAt: this.clock.now() };
      await this.commitTask({ task: updated, expectedStatus: task.status, commandCall: next });
      return { task: updated, call: next };
    });
    if (found) this.dispatch(found.task, found.call);
  }

  /** Hand a committed call to the executor, arm its timeout. Call only after the call row is on disk. */
  private dispatch(task: Task, call: CommandCallRecord): void {
    if (this.state !== 'started') return;
    const rt = this.runtime(task.id);
    const abort = new Abort();
    rt.callAbort = abort;
    const signal = abort.signal; // the executor's: always created
    rt.callTimer = this.clock.setTimeout(() => {
      const outcome: CommandOutcome = {
        ok: false,
        error: { code: 'timeout', message: `command "${call.command}" timed out after ${call.timeoutMs} ms` },
      };
      this.track(
        this.completeCall(task.id, call.callId, outcome, true).catch((err: unknown) => {
          if (!isEngineError(err, 'call_closed') && !isEngineError(err, 'unknown_call')) throw err;
        }),
      );
    }, call.timeoutMs);
    this.emit('commandDispatched', { task, call });
    if (!this.executor) return;
    const executor = this.executor;
    this.track(
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
  private async completeCall(
    taskId: string,
    callId: string,
    outcome: CommandOutcome,
    timedOut: boolean,
    onDurable?: (task: Task) => void,
  ): Promise<Task> {
    let speculative = false;
    const { durable } = await this.withLock(taskId, async () => {
      const known = this.cache.get(taskId)?.call;
      const call = known?.callId === callId ? known : await this.store.getCommandCall(callId);
      if (!call || call.taskId !== taskId) {
        throw new EngineError('unknown_call', `task ${taskId} has no command call ${callId}`, {
          details: { taskId, callId },
        });
      }
      const current = await this.requireTask(taskId);
      if (call.status !== 'pending' || current.status !== 'waiting_for_command') {
        throw new EngineError('call_closed', `command call ${callId} is already ${call.status}`, {
          details: { taskId, callId, status: call.status },
        });
      }
      const now = this.clock.now();
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
        const rt = this.runtime(taskId);
        if (rt.callTimer !== undefined) this.clock.clearTimeout(rt.callTimer);
        rt.callTimer = undefined;
        // A timed-out call's signal aborts (the executor stops waiting); a call closed by its outcome only ends the
        // engine's wait: the executor settled it, or — a host reporting through resolveCommand — cleans up itself.
        if (timedOut) rt.callAbort?.abort(CALL_CLOSED);
        else rt.callAbort?.settle(CALL_CLOSED);
        rt.callAbort = undefined;
        for (const s of committed.steps) this.emit('stepLogged', { taskId, step: s });
        this.emit('commandResolved', { task: next, call: closed, outcome });
        this.emitStatus(next, current.status);
        if (onDurable) {
          try {
            onDurable(next);
          } catch (err) {
            this.logger.error({ err, task_id: taskId, call_id: callId }, 'engine: onDurable threw');
          }
        }
        return next;
      };
      const cached = this.cache.get(taskId);
      if (this.state === 'started' && cached?.history !== undefined && cached.task === current) {
        const history = this.ownHistory(cached, cached.history);
        const lastSeq = history.length > 0 ? (history[history.length - 1] as HistoryEntry).seq : 0;
        const pending = this.store.commit(change);
        // What the store will assign (dense seq under this lock); replaced by the stored entries once durable.
        for (const [i, h] of (change.history ?? []).entries()) {
          history.push({ ...h, taskId, seq: lastSeq + 1 + i } as HistoryEntry);
        }
        cached.task = next;
        speculative = true;
        const settled = pending.then(
          (committed) => {
            this.cacheCommitted(next, committed, closed);
            return finish(committed);
          },
          (err: unknown) => {
            this.cacheDrop(taskId);
            this.runtimes
              .get(taskId)
              ?.stepAbort?.abort(
                new EngineError('conflict', 'the state this step was decided from was not stored'),
              );
            throw err;
          },
        );
        this.speculating.set(taskId, settled);
        settled.then(
          () => this.endSpeculation(taskId, settled),
          () => this.endSpeculation(taskId, settled),
        );
        return { durable: settled };
      }
      return { durable: Promise.resolve(finish(await this.commitTask(change))) };
    });
    if (speculative) this.schedule(taskId);
    const task = await durable;
    if (!speculative) this.schedule(taskId);
    return task;
  }

  private endSpeculation(taskId: string, settled: Promise<unknown>): void {
    if (this.speculating.get(taskId) === settled) this.speculating.delete(taskId);
  }

  // ---------------------------------------------------------------- failure paths

  private async failForBudget(
    taskId: string,
    budget: 'maxSteps' | 'deadlineAt',
    limit: number,
    used: number,
  ): Promise<void> {
    const history = await this.readHistory(taskId);
    const last = [...history].reverse().find((h) => h.type !== 'tool_result' && h.type !== 'answer');
    await this.failTask(taskId, undefined, budgetError(budget, limit, used, last, history));
  }

  private async failTask(
    taskId: string,
    expected: TaskStatus | undefined,
    error: TaskErrorInfo,
  ): Promise<void> {
    await this.withLock(taskId, async () => {
      const current = await this.requireTask(taskId);
      if (expected !== undefined && current.status !== expected) return;
      const now = this.clock.now();
      const next: Task = {
        ...current,
        status: assertTransition(current.status, 'failed', taskId),
        error,
        updatedAt: now,
      };
      next.progressMessage = finishMessage(next);
      const change: TaskCommit = {
        task: next,
        expectedStatus: current.status,
        history: [{ type: 'fail', error, step: current.counters.steps, at: now }],
      };
      const pending = await this.store.listCommandCalls({ taskId, status: 'pending' });
      if (pending[0]) change.commandCall = { ...pending[0], status: 'cancelled', completedAt: now };
      await this.commitTask(change);
      this.emitStatus(next, current.status);
    });
  }

  /**
   * A task reached a terminal state: abort its in-flight decide (and so its model call) and its pending command call,
   * drop its timers and runtime.
   */
  private finishRuntime(task: Task): void {
    const rt = this.runtimes.get(task.id);
    if (!rt) return;
    const reason = new EngineError('stopped', `task ${task.status}`, {
      details: { taskId: task.id, status: task.status },
    });
    rt.stepAbort?.abort(reason);
    rt.callAbort?.abort(reason);
    if (rt.callTimer !== undefined) this.clock.clearTimeout(rt.callTimer);
    if (rt.wakeTimer !== undefined) this.clock.clearTimeout(rt.wakeTimer);
    this.runtimes.delete(task.id);
  }

  private assertNotStopped(): void {
    if (this.state === 'stopping' || this.state === 'stopped') {
      throw new EngineError('stopped', 'engine is stopped');
    }
  }

  // ---------------------------------------------------------------- helpers

  // ---------------------------------------------------------------- task cache
  // The engine is the only writer of its tasks and commits every change of a task under that task's lock, so a copy
  // updated after each successful commit equals the stored state. Loads from the store happen under the lock too
  // (a load racing a commit could otherwise cache a stale row). Strategies get the cached task and a copy of the
  // history array; they must treat both as read-only (they did already: the store returned fresh copies).

  /** The task, under its lock: from the cache, else from the store (then cached). */
  private async requireTask(taskId: string): Promise<Task> {
    const hit = this.cacheGet(taskId);
    if (hit) return hit.task;
    const task = await this.store.getTask(taskId);
    if (!task) throw new EngineError('task_not_found', `task ${taskId} not found`, { details: { taskId } });
    if (!isTerminalStatus(task.status)) this.cacheSet(taskId, { task, history: undefined });
    return task;
  }

  /**
   * The task without holding its lock (the scheduler's read): a cache hit, else a store read that is cached only if
   * no commit of the task happened meanwhile (it could be older than the cache then).
   */
  private async readTask(taskId: string): Promise<Task | undefined> {
    const hit = this.cacheGet(taskId);
    if (hit) return hit.task;
    const before = this.generation(taskId);
    const task = await this.store.getTask(taskId);
    if (task && before !== undefined && this.generation(taskId) === before && !this.cache.has(taskId)) {
      this.cacheSet(taskId, { task, history: undefined });
    }
    return task;
  }

  /** The task's history, under its lock (the cached array itself: do not keep or change it). */
  private async lockedHistory(taskId: string): Promise<HistoryEntry[]> {
    const hit = this.cacheGet(taskId);
    if (hit?.history) return hit.history;
    await this.requireTask(taskId);
    const history = await this.store.getHistory(taskId);
    const entry = this.cache.get(taskId);
    if (entry) entry.history = history;
    return history;
  }

  /** A copy of the task's history without holding its lock (cached like {@link readTask}). */
  private async readHistory(taskId: string): Promise<HistoryEntry[]> {
    const hit = this.cacheGet(taskId)?.history;
    return hit ? hit.slice() : this.loadHistory(taskId);
  }

  /** The task's history from the store, cached when no commit of the task happened during the read. */
  private loadHistory(taskId: string): Promise<HistoryEntry[]> {
    const before = this.generation(taskId);
    const loading = this.store.getHistory(taskId);
    // Checked in a reaction on the store's own promise: no extra turn before the caller gets the history.
    void loading.then(
      (history) => {
        const entry = this.cache.get(taskId);
        if (
          entry &&
          entry.history === undefined &&
          before !== undefined &&
          this.generation(taskId) === before
        ) {
          entry.history = history.slice();
        }
      },
      () => undefined,
    );
    return loading;
  }

  /** Commit a change of a task (caller holds its lock) and bring the cache in line with what was stored. */
  private async commitTask(change: TaskCommit): Promise<CommitResult> {
    let committed: CommitResult;
    try {
      committed = await this.store.commit(change);
    } catch (err) {
      this.cacheDrop(change.task.id);
      throw err;
    }
    this.cacheCommitted(change.task, committed, change.commandCall);
    return committed;
  }

  /**
   * `task` is stored with `committed.history` appended (replacing entries predicted for it while speculating), and
   * `call`, if the commit wrote one.
   */
  private cacheCommitted(task: Task, committed: CommitResult, call?: CommandCallRecord): void {
    this.noteStatus(task);
    if (isTerminalStatus(task.status)) {
      this.cache.delete(task.id); // never stepped again
      return;
    }
    const entry = this.cacheGet(task.id);
    if (!entry) {
      this.cacheSet(task.id, call ? { task, history: undefined, call } : { task, history: undefined });
      return;
    }
    entry.task = task;
    if (call) entry.call = call;
    const added = committed.history;
    const h = entry.history;
    if (!h || added.length === 0) return;
    const first = (added[0] as HistoryEntry).seq;
    let keep = h.length;
    while (keep > 0 && (h[keep - 1] as HistoryEntry).seq >= first) keep--;
    const before = keep > 0 ? (h[keep - 1] as HistoryEntry).seq : 0;
    if (before !== first - 1) {
      entry.history = undefined; // not contiguous: reload when next needed
      return;
    }
    const own = this.ownHistory(entry, h);
    own.length = keep;
    own.push(...added);
  }

  /** The cached history `h` of `entry`, to change in place: a copy of it (now cached) while a step decides from it. */
  private ownHistory(entry: CachedTask, h: HistoryEntry[]): HistoryEntry[] {
    if (!entry.lent) return h;
    entry.lent = 0;
    entry.history = h.slice();
    return entry.history;
  }

  private cacheGet(taskId: string): CachedTask | undefined {
    const entry = this.cache.get(taskId);
    if (entry) {
      // Most recently used last (Map keeps insertion order).
      this.cache.delete(taskId);
      this.cache.set(taskId, entry);
    }
    return entry;
  }

  private cacheSet(taskId: string, entry: CachedTask): void {
    if (this.cacheSize === 0) return;
    this.cache.delete(taskId);
    this.cache.set(taskId, entry);
    while (this.cache.size > this.cacheSize) {
      const oldest = this.cache.keys().next().value;
      if (oldest === undefined) break;
      this.cache.delete(oldest);
    }
  }

  private cacheDrop(taskId: string): void {
    this.cache.delete(taskId);
    // A failed commit leaves the stored state uncertain to loads in flight: do not let them cache it.
    const u = this.unfinished.get(taskId);
    if (u) u.generation++;
  }

  /**
   * Serialise state changes of one task (the store's `expectedStatus` check backs this up). Unless `speculative`
   * (only the step decided from a not-yet-durable state), the holder first waits for such a state to be durable, so
   * it never reads a row the store has not written yet.
   */
  private async withLock<T>(taskId: string, fn: () => Promise<T>, speculative = false): Promise<T> {
    const previous = this.locks.get(taskId) ?? Promise.resolve();
    let release!: () => void;
    const mine = new Promise<void>((resolve) => (release = resolve));
    const tail = previous.then(() => mine);
    this.locks.set(taskId, tail);
    await previous;
    try {
      if (!speculative) {
        const pending = this.speculating.get(taskId);
        if (pending) await pending.catch(() => undefined);
      }
      return await fn();
    } finally {
      release();
      if (this.locks.get(taskId) === tail) this.locks.delete(taskId);
    }
  }

  private emitStatus(task: Task, previousStatus: TaskStatus, progress?: number, message?: string): void {
    const payload: EngineEvents['taskUpdated'] = { task, previousStatus };
    if (progress !== undefined) payload.progress = progress;
    if (message !== undefined) payload.message = message;
    this.emit('taskUpdated', payload);
    if (task.status === 'completed') this.emit('taskCompleted', { task });
    else if (task.status === 'failed') this.emit('taskFailed', { task });
    else if (task.status === 'cancelled') this.emit('taskCancelled', { task });
    if (isTerminalStatus(task.status)) this.finishRuntime(task);
  }

  private emit<E extends EngineEventName>(event: E, payload: EngineEvents[E]): void {
    const set = this.listeners.get(event);
    if (!set) return;
    for (const listener of [...set]) {
      try {
        (listener as EngineListener<E>)(payload);
      } catch (err) {
        this.logger.error({ err, event }, 'engine: event listener threw');
      }
    }
  }
}

function budgetError(
  budget: 'maxSteps' | 'maxToolCalls' | 'deadlineAt',
  limit: number,
  used: number,
  lastDecision: Decision | HistoryEntry | undefined,
  history: HistoryEntry[],
): TaskErrorInfo {
  const lastFailure = [...history].reverse().find((h) => h.type === 'tool_result' && !h.outcome.ok);
  const lastError =
    lastFailure && lastFailure.type === 'tool_result' && !lastFailure.outcome.ok
      ? lastFailure.outcome.error
      : undefined;
  return {
    code: 'budget_exhausted',
    message: `task budget ${budget} exhausted (limit ${limit}, used ${used})`,
    details: {
      budget,
      limit,
      used,
      lastDecision: (lastDecision ?? null) as unknown as JsonValue,
      lastError: (lastError ?? null) as unknown as JsonValue,
    },
  };
}

function validateInput(input: NewTaskInput): void {
  const bad = (message: string): never => {
    throw new EngineError('invalid_input', message, { details: { field: message.split(' ')[0] } });
  };
  if (typeof input.kind !== 'string' || input.kind.length === 0) bad('kind must be a non-empty string');
  if (typeof input.prompt !== 'string') bad('prompt must be a string');
  if (input.id !== undefined && (typeof input.id !== 'string' || input.id.length === 0))
    bad('id must be a non-empty string');
  const b = input.budgets ?? {};
  for (const key of ['maxSteps', 'maxToolCalls', 'deadlineAt'] as const) {
    const v = b[key];
    if (v !== undefined && (!Number.isFinite(v) || v < 0)) bad(`budgets.${key} must be a finite number >= 0`);
  }
  if (input.allowedCommands !== undefined && !input.allowedCommands.every((c) => typeof c === 'string')) {
    bad('allowedCommands must be strings');
  }
}
