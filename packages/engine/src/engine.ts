/**
 * The engine's public surface (the facade): options, start/stop and recovery, the task operations (create, cancel,
 * answer, post, reopen, submit a command's result, bind a call to a client, trigger) and the reads, each with its
 * contract in TSDoc and a few lines delegating to the parts, each in its own file:
 *
 * - task-cache.ts — the per-task cache (row, history, open call), the per-task lock and speculation;
 * - scheduler.ts — run state, task runtimes, the step loop, wake timers, the tick, work in flight;
 * - step-runner.ts — one step: budgets, the strategy's decision, its commit, the failure paths;
 * - call-lifecycle.ts — a command call from dispatch to its committed outcome: binding, judging a submitted result,
 *   the commit (and the next step's speculation);
 * - task-transitions.ts — what a person or the host asks of a task: cancel, answer (and confirmations), post a
 *   message or event, reopen;
 * - engine-events.ts — listeners and emitting events after their commit.
 *
 * They share one {@link EngineKernel}, built here.
 */
import { randomUUID } from 'node:crypto';
import { CallLifecycle } from './call-lifecycle.js';
import { systemClock } from './clock.js';
import { EngineError } from './engine-error.js';
import { EngineEventHub } from './engine-events.js';
import type { EngineKernel } from './engine-kernel.js';
import type { EngineEventName, EngineListener } from './events.js';
import { ModelLimiter } from './model-limiter.js';
import type {
  Clock,
  ConfirmationRule,
  Logger,
  StrategyResolver,
  TaskStore,
  TaskStrategy,
  ToolExecutor,
} from './ports.js';
import { DEFAULT_TASK_INPUT_LIMITS, taskInputProblem, type TaskInputLimits } from './input-limits.js';
import { Scheduler } from './scheduler.js';
import type { ServerToolRegistry } from './server-tools/server-tool-registry.js';
import { withServerTools } from './server-tools/server-tool-executor.js';
import { StepRunner } from './step-runner.js';
import { TaskCache } from './task-cache.js';
import { TaskTransitions, type ReopenOptions, type TaskPost } from './task-transitions.js';
import type {
  CommandCallRecord,
  CommandResultInput,
  SubmitResult,
  HistoryEntry,
  NewTaskInput,
  StepQuery,
  StoredStep,
  Task,
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
  /** Runs command calls; without one, the host reports results through `submitResult`. */
  executor?: ToolExecutor;
  /**
   * Tools run in this process, offered to every task beside `executor`'s commands (`withServerTools`): a call of one
   * runs here, after the task's allow-list is checked again; every other call goes to `executor`.
   */
  serverTools?: ServerToolRegistry;
  clock?: Clock;
  logger?: Logger;
  /** Concurrent model calls allowed per model: one number for all, or per model name (default 1). */
  modelConcurrency?: number | Record<string, number>;
  /** Timeout of a command call when neither the decision nor the command descriptor sets one (default 60 s). */
  defaultCallTimeoutMs?: number;
  /**
   * Which tool calls need a person's yes before they are sent (destructive commands): such a call is committed
   * `awaiting_confirmation` with a question (the task waits for the user); a yes dispatches it, any other answer is
   * its failed result (`refused`). Default: none.
   */
  confirm?: ConfirmationRule;
  /** Scheduler tick period in ms (deadline checks, re-stepping runnable tasks); 0 disables (default 1 s). */
  tickIntervalMs?: number;
  /**
   * Tasks whose current row and history the engine keeps in memory between steps, least recently used evicted
   * (default 1024). Each step then reads nothing from the store: re-reading the whole history every step made a
   * step O(history) and a night-long task O(n²). The engine is the store's only writer for its tasks.
   */
  taskCacheSize?: number;
  /**
   * Size limits of a new task's prompt and context, checked by {@link Engine.createTask} whatever adapter asks
   * (default `DEFAULT_INPUT_LIMITS` of `@ccagent/protocol`); a task over one is refused with `invalid_input`.
   */
  inputLimits?: Partial<TaskInputLimits>;
}

/** Default of {@link EngineOptions.taskCacheSize}. */
export const DEFAULT_TASK_CACHE_SIZE = 1024;

const NON_TERMINAL: TaskStatus[] = ['queued', 'running', 'waiting_for_command', 'waiting_for_user'];

const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * Owns task lifecycle: persists every change through the {@link TaskStore} before emitting events or dispatching
 * calls (write-ahead), steps runnable tasks through their strategy, limits model calls per model, enforces budgets,
 * propagates cancellation, and resumes every non-terminal task on {@link Engine.start}.
 */
export class Engine {
  private readonly k: EngineKernel;
  private readonly transitions: TaskTransitions;
  private readonly inputLimits: TaskInputLimits;

  constructor(options: EngineOptions) {
    const strategies = options.strategies;
    const mc = options.modelConcurrency ?? 1;
    const k = {
      store: options.store,
      resolveStrategy:
        typeof strategies === 'function'
          ? strategies
          : (kind: string) => (Object.hasOwn(strategies, kind) ? strategies[kind] : undefined),
      executor: options.serverTools
        ? withServerTools(
            options.executor,
            options.serverTools,
            options.logger ? { logger: options.logger } : {},
          )
        : options.executor,
      clock: options.clock ?? systemClock,
      logger: options.logger ?? silentLogger,
      limiter: new ModelLimiter((model) => (typeof mc === 'number' ? mc : (mc[model] ?? 1))),
      defaultCallTimeoutMs: options.defaultCallTimeoutMs ?? DEFAULT_CALL_TIMEOUT_MS,
      confirm: options.confirm,
    } as { -readonly [P in keyof EngineKernel]: EngineKernel[P] };
    // The parts reach each other through `k`, and call one another only after all are built.
    k.events = new EngineEventHub(k);
    k.cache = new TaskCache(k, Math.max(0, Math.floor(options.taskCacheSize ?? DEFAULT_TASK_CACHE_SIZE)));
    k.scheduler = new Scheduler(k, options.tickIntervalMs ?? DEFAULT_TICK_INTERVAL_MS);
    k.steps = new StepRunner(k);
    k.calls = new CallLifecycle(k);
    this.k = k;
    this.transitions = new TaskTransitions(k);
    this.inputLimits = { ...DEFAULT_TASK_INPUT_LIMITS, ...options.inputLimits };
  }

  /** Subscribe to an event; returns the unsubscribe function. */
  on<E extends EngineEventName>(event: E, listener: EngineListener<E>): () => void {
    return this.k.events.on(event, listener);
  }

  /**
   * Recover and start scheduling: `queued`/`running` tasks step (a `running` task repeats its interrupted step),
   * `waiting_for_command` tasks re-dispatch the same call id, `waiting_for_user` tasks keep waiting.
   */
  async start(): Promise<void> {
    if (this.k.scheduler.state !== 'idle')
      throw new EngineError('invalid_input', `engine cannot start from state ${this.k.scheduler.state}`);
    this.k.scheduler.state = 'started';
    const tasks = await this.k.store.listTasks({ status: NON_TERMINAL });
    for (const task of tasks) this.k.cache.noteStatus(task);
    // Concurrently, so the store can group the recovery writes (resuming 1,000 tasks is not 1,000 fsyncs in a row).
    const outcomes = await Promise.allSettled(tasks.map((task) => this.recover(task)));
    outcomes.forEach((o, i) => {
      // One task failing to recover (a store hiccup) must not keep the others from running; the tick retries steps.
      if (o.status === 'rejected') {
        this.k.logger.error(
          { err: o.reason as unknown, task_id: tasks[i]?.id },
          'engine: recovery of a task failed',
        );
      }
    });
    this.k.scheduler.scheduleTick();
  }

  private async recover(task: Task): Promise<void> {
    if (task.status === 'waiting_for_command') {
      const pending = await this.k.store.listCommandCalls({ taskId: task.id, status: 'pending' });
      if (pending.length > 0) {
        // The previous process died with a call open (a command on a computer, an action in the game): say so in
        // the step log as a crash while planning does, before the call is sent again with the same id.
        const stored = await this.k.store.appendStep(task.id, {
          kind: 'resumed',
          output: {
            reason: 'engine restarted with a call open; it is sent again with the same id',
            calls: pending.map((c) => c.callId),
          },
          step: task.counters.steps + 1,
          at: this.k.clock.now(),
        });
        this.k.events.emit('stepLogged', { taskId: task.id, step: stored });
      }
      for (const call of pending) await this.k.calls.redispatch(task.id, call.callId);
    } else if (
      task.status === 'running' &&
      !(task.wakeAt !== undefined && task.wakeAt > this.k.clock.now())
    ) {
      // The previous process died inside this step: say so in the step log, so the records of the lost attempt
      // (before this marker) are not mistaken for the repeated one.
      const stored = await this.k.store.appendStep(task.id, {
        kind: 'resumed',
        output: { reason: 'engine restarted; this step is repeated' },
        step: task.counters.steps + 1,
        at: this.k.clock.now(),
      });
      this.k.events.emit('stepLogged', { taskId: task.id, step: stored });
      this.k.scheduler.schedule(task.id);
    } else if (task.status === 'queued' || task.status === 'running') {
      this.k.scheduler.schedule(task.id);
    }
  }

  /**
   * Stop gracefully: no new steps start, in-flight decides and calls are aborted (their tasks stay in their durable
   * state and resume on the next start), and the promise resolves once all engine work has settled.
   */
  stop(): Promise<void> {
    return this.k.scheduler.stop();
  }

  /** Create and persist a task (status `queued`); it is on disk before the promise resolves. */
  async createTask(input: NewTaskInput): Promise<Task> {
    this.k.scheduler.assertNotStopped();
    validateInput(input, this.inputLimits);
    const now = this.k.clock.now();
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
    await this.k.cache.commitTask({ task, create: true });
    this.k.events.emit('taskCreated', { task });
    this.k.scheduler.schedule(task.id);
    return task;
  }

  /** Cancel a non-terminal task: commits `cancelled`, then aborts its in-flight decide and pending command call. */
  cancelTask(taskId: string, reason?: string): Promise<Task> {
    return this.transitions.cancelTask(taskId, reason);
  }

  /**
   * Answer a pending question; the task resumes. The answer to a confirmation question releases the held call on a
   * yes and is the call's `refused` result otherwise. Rejects with `unknown_question` / `question_closed`.
   */
  answerQuestion(taskId: string, questionId: string, text: string): Promise<Task> {
    return this.transitions.answerQuestion(taskId, questionId, text);
  }

  /**
   * Add a person's follow-up message, or an outside event, to the history of a task that has not ended: its next step
   * sees it, and a task sleeping after a `continue` with `wakeAfterMs` (waiting for an event or a timer) is woken now.
   * Durable before the promise resolves. Rejects with `illegal_transition` for an ended task (see
   * {@link reopenTask}). A step deciding while the entry is written decides without it; the step after sees it.
   */
  postToTask(taskId: string, body: TaskPost): Promise<Task> {
    return this.transitions.postToTask(taskId, body);
  }

  /**
   * Reopen an ended task — by a follow-up message (any end) or a retry (`failed` or `cancelled` only) — with new
   * budgets: status `queued`, its memory and history kept, its result and error cleared. A `resume` history entry
   * (then `entries`, e.g. the message) and a `reopened` step-log record say why, both in one commit with the status.
   * Rejects with `illegal_transition` for a task that has not ended, or a retry of a completed task.
   */
  reopenTask(taskId: string, opts: ReopenOptions): Promise<Task> {
    return this.transitions.reopenTask(taskId, opts);
  }

  /**
   * The one entry for a command call's result from outside the engine (e.g. a WebSocket `command_result`): judged
   * against the engine's record of the call — its task, its owner (the task's client, or the client it was bound to
   * with {@link bindCall}), whether it is open, and how it was closed (in this process, or from the stored row after a
   * restart) — and committed when the call is open and `sender` is its owner. See {@link SubmitResult} for the
   * verdicts; a refused or repeated result changes nothing. `onDurable` runs for an accepted result as soon as it is
   * on disk, after the engine's events for it and before anything the next step sends (the place for an
   * acknowledgement); a `duplicate` was already on disk (acknowledge it at once). Rejects only on failures (a
   * store failure: nothing recorded, send it again; `stopped`).
   */
  submitResult(
    input: CommandResultInput,
    options: { onDurable?: (task: Task) => void } = {},
  ): Promise<SubmitResult> {
    this.k.scheduler.assertNotStopped();
    return this.k.calls.close(input.taskId, input.callId, input.outcome, {
      timedOut: false,
      sender: input.sender,
      ...(options.onDurable ? { onDurable: options.onDurable } : {}),
    });
  }

  /**
   * Bind a pending call of a task bound to no client to the client chosen for it, before anything is sent to that
   * client: durable when this resolves, so after a restart the same call goes to that client only, and from then on
   * only that client's result is accepted. The first binding holds; resolves with the client in force. Rejects with
   * `EngineError`: `unknown_call`, `call_closed` (not pending), `invalid_input` (empty `clientId`), `store_failure`.
   * Executors get it for each call as `ToolCallRequest.bind`.
   */
  bindCall(taskId: string, callId: string, clientId: string): Promise<string> {
    return this.k.calls.bind(taskId, callId, clientId);
  }

  /**
   * Count one more delivery of a pending call (the host sent its `command_call` again, e.g. to a client that
   * reconnected): `dispatchCount` + 1, durable when this resolves. Resolves with the updated call, or undefined when
   * the call is no longer pending.
   */
  recordRedelivery(taskId: string, callId: string): Promise<CommandCallRecord | undefined> {
    return this.k.calls.recordRedelivery(taskId, callId);
  }

  /**
   * Outside trigger: step a `queued`/`running` task now — also one sleeping after a `continue` with `wakeAfterMs` —
   * or right after its current step if it is stepping. No-op for waiting and terminal tasks.
   */
  trigger(taskId: string): void {
    this.transitions.trigger(taskId);
  }

  /** A task by id, or undefined. */
  getTask(taskId: string): Promise<Task | undefined> {
    return this.k.store.getTask(taskId);
  }

  /** Tasks matching the filter, oldest first. */
  listTasks(filter?: TaskFilter): Promise<Task[]> {
    return this.k.store.listTasks(filter);
  }

  /**
   * The task's step log in `seq` order; with `query`, one page of it: the records after `query.afterSeq`, at most
   * `query.limit` (see {@link StepQuery}). Rejects with `EngineError('invalid_input')` on a bad query.
   */
  getSteps(taskId: string, query?: StepQuery): Promise<StoredStep[]> {
    return this.k.store.getSteps(taskId, query);
  }

  /** The task's durable observation log (what strategies see). */
  getHistory(taskId: string): Promise<HistoryEntry[]> {
    return this.k.store.getHistory(taskId);
  }

  /** Running/queued model calls for `model` (for metrics). */
  modelStats(model: string): { active: number; queued: number } {
    return this.k.limiter.stats(model);
  }
}

function validateInput(input: NewTaskInput, limits: TaskInputLimits): void {
  const bad = (message: string): never => {
    throw new EngineError('invalid_input', message, { details: { field: message.split(' ')[0] } });
  };
  if (typeof input.kind !== 'string' || input.kind.length === 0) bad('kind must be a non-empty string');
  if (typeof input.prompt !== 'string') bad('prompt must be a string');
  const tooBig = taskInputProblem(input, limits);
  if (tooBig) throw new EngineError('invalid_input', tooBig.message, { details: { field: tooBig.field } });
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
