/**
 * The step runner. Owns one step of a task: the budget checks before it, the strategy's decision (with the step
 * context: model calls under the per-model limit, the step log, the commands the task may call; from the cached
 * history, lent without a copy; deferred while the state it decides from is not yet durable), the commit of the
 * decision (tool call, question, completion, failure, continue — with the tool-call budget and the task's allow-list
 * enforced here, the last point before a call is issued), and the failure paths (budget exhausted, strategy error,
 * no strategy). A committed tool call is handed to the call lifecycle (call-lifecycle.ts).
 */
import { Abort } from './abort.js';
import type { EngineKernel } from './engine-kernel.js';
import { isEngineError } from './engine-error.js';
import type { CachedTask } from './task-cache.js';
import { confirmationQuestionId } from './confirmation.js';
import { finishMessage } from './finish-message.js';
import { decisionRecord } from './memory-json.js';
import { periodExhausted, withPeriodUsage, type PeriodExhaustion } from './period-budgets.js';
import type { CommitResult, StepContext, TaskCommit } from './ports.js';
import { assertTransition } from './task-state-machine.js';
import type {
  CommandCallRecord,
  CommandDescriptor,
  Decision,
  HistoryEntry,
  JsonValue,
  QuestionRecord,
  StepRecord,
  StoredStep,
  Task,
  TaskErrorInfo,
  TaskStatus,
} from './types.js';

/** See the module comment. */
export class StepRunner {
  constructor(private readonly k: EngineKernel) {}

  async runStep(task: Task): Promise<'deferred' | undefined> {
    const taskId = task.id;
    const now = this.k.clock.now();
    const { budgets, counters } = task;
    if (budgets.deadlineAt !== undefined && now >= budgets.deadlineAt) {
      await this.failForBudget(taskId, 'deadlineAt', budgets.deadlineAt, now);
      return;
    }
    if (budgets.maxSteps !== undefined && counters.steps >= budgets.maxSteps) {
      await this.failForBudget(taskId, 'maxSteps', budgets.maxSteps, counters.steps);
      return;
    }
    const overPeriod = periodExhausted(task, now);
    if (overPeriod) {
      await this.sleepForPeriod(taskId, overPeriod);
      return;
    }
    const strategy = this.k.resolveStrategy(task.kind);
    if (!strategy) {
      await this.failTask(taskId, 'running', {
        code: 'no_strategy',
        message: `no strategy for task kind "${task.kind}"`,
      });
      return;
    }
    const rt = this.k.scheduler.runtime(taskId);
    // `stop()` aborts every runtime's step (no AbortSignal.any per step: it showed in the profile). The step's
    // AbortSignal is created only if the strategy reads `ctx.signal` or calls a model (see `Abort`).
    const abort = new Abort();
    rt.stepAbort = abort;
    const step = counters.steps + 1;
    // A step decided from a state not yet durable (see `speculating`) does nothing outside the engine before that
    // state is on disk: no model call, no step-log record. Deciding from memory alone is free to go ahead.
    const basis = this.k.cache.speculating.get(taskId);
    // Tokens this step's model calls reported (their step-log records' usage): counted in the period budgets.
    let tokens = 0;
    const logStep = async (record: StepRecord): Promise<StoredStep> => {
      tokens += (record.usage?.promptTokens ?? 0) + (record.usage?.completionTokens ?? 0);
      const stored = await this.k.store.appendStep(taskId, { ...record, step, at: this.k.clock.now() });
      this.k.events.emit('stepLogged', { taskId, step: stored });
      return stored;
    };
    const ctx: StepContext = {
      get signal(): AbortSignal {
        return abort.signal;
      },
      clock: this.k.clock,
      logger: this.k.logger,
      step,
      // Without a speculative basis, no extra await: a step's model call starts in the same turn as before.
      callModel: (model, fn) =>
        basis
          ? basis.then(() => this.k.limiter.run(model, abort.signal, fn))
          : this.k.limiter.run(model, abort.signal, fn),
      logStep: (record: StepRecord) => (basis ? basis.then(() => logStep(record)) : logStep(record)),
      availableCommands: () => this.availableCommands(task),
    };
    let decision: Decision;
    let lent: { entry: CachedTask; history: HistoryEntry[] } | undefined;
    try {
      const entry = this.k.cache.cacheGet(taskId);
      const cached = entry?.history;
      if (entry && cached) {
        entry.lent = (entry.lent ?? 0) + 1;
        lent = { entry, history: cached };
      }
      const history = cached ?? (await this.k.cache.loadHistory(taskId));
      // Raced with the signal: a strategy that ignores its abort cannot hold up cancellation or stop().
      decision = await abort.race(strategy.decide(task, history, ctx));
    } catch (err) {
      if (abort.aborted) return; // cancel/stop/deadline own the state change
      if (isEngineError(err, 'store_failure')) {
        // The store cannot be written (disk full, locked by another process …): that is not the task's fault. It
        // stays running in its durable state, and the tick steps it again once the store works.
        this.k.logger.warn({ err, task_id: taskId }, 'engine: step deferred, the store failed');
        return 'deferred';
      }
      this.k.logger.warn({ err, task_id: taskId }, 'engine: strategy failed');
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
    await this.applyDecision(taskId, step, decision, tokens);
  }

  /**
   * A task with budgets per period that has used one up sleeps until its window ends (`wakeAt`), with a step-log
   * record saying which budget and until when; nothing is written when it already sleeps until then (an event that
   * woke it early). Posts made meanwhile stay in its history for the step after.
   */
  private async sleepForPeriod(taskId: string, over: PeriodExhaustion): Promise<void> {
    await this.k.cache.withLock(taskId, async () => {
      const current = await this.k.cache.requireTask(taskId);
      if (current.status !== 'running' || current.wakeAt === over.until) return;
      const now = this.k.clock.now();
      const next: Task = { ...current, wakeAt: over.until, updatedAt: now };
      const committed = await this.k.cache.commitTask({
        task: next,
        expectedStatus: 'running',
        steps: [
          {
            kind: 'period_budget',
            output: {
              ...over,
              reason: `budget ${over.budget} per ${over.period} used; sleeping until the window ends`,
            },
            step: current.counters.steps + 1,
            at: now,
          },
        ],
      });
      for (const s of committed.steps) this.k.events.emit('stepLogged', { taskId, step: s });
    });
  }

  private availableCommands(task: Task): CommandDescriptor[] {
    const offered = this.k.executor?.listCommands?.(task.clientId);
    if (!offered) return task.allowedCommands.map((name) => ({ name }));
    if (task.allowedCommands.length === 0) return offered;
    return offered.filter((c) => task.allowedCommands.includes(c.name));
  }

  async applyDecision(taskId: string, step: number, decision: Decision, tokens = 0): Promise<void> {
    const dispatch = await this.k.cache.withLock(
      taskId,
      async (): Promise<{ task: Task; call: CommandCallRecord } | undefined> => {
        const current = await this.k.cache.requireTask(taskId);
        if (current.status !== 'running' || current.counters.steps !== step - 1) return undefined; // cancelled meanwhile
        const now = this.k.clock.now();
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
              const history = await this.k.cache.lockedHistory(taskId);
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
            const descriptor = this.k.executor
              ?.listCommands?.(current.clientId)
              .find((c) => c.name === decision.command);
            const call: CommandCallRecord = {
              callId,
              taskId,
              command: decision.command,
              args: decision.args,
              timeoutMs: decision.timeoutMs ?? descriptor?.timeoutMs ?? this.k.defaultCallTimeoutMs,
              status: 'pending',
              dispatchCount: 1,
              createdAt: now,
            };
            base.counters.toolCalls = counters.toolCalls + 1;
            change.commandCall = call;
            change.history = [
              { type: 'tool_call', callId, command: call.command, args: call.args, step, at: now },
            ];
            // A destructive call waits for a person's yes (durably: the call row and its question are committed
            // together, and an awaiting call is never dispatched, also not after a restart).
            const ask = this.k.confirm?.(current, call.command, call.args);
            if (ask !== undefined) {
              call.status = 'awaiting_confirmation';
              base.status = assertTransition('running', 'waiting_for_user', taskId);
              change.question = {
                questionId: confirmationQuestionId(callId),
                taskId,
                question: ask,
                why: `confirmation of ${call.command}`,
                askedAt: now,
              };
              break;
            }
            base.status = assertTransition('running', 'waiting_for_command', taskId);
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
        base.metadata = withPeriodUsage(current, now, {
          steps: 1,
          toolCalls: base.counters.toolCalls - current.counters.toolCalls,
          tokens,
        });
        let committed: CommitResult;
        try {
          committed = await this.k.cache.commitTask(change);
        } catch (err) {
          // The state this step was decided from did not become durable (see `speculating`), or someone else
          // changed the task meanwhile: the decision is void, the task is stepped again from its durable state.
          if (isEngineError(err, 'conflict')) return undefined;
          throw err;
        }
        for (const s of committed.steps) this.k.events.emit('stepLogged', { taskId, step: s });
        if (base.status !== 'running' || decision.progress !== undefined || decision.message !== undefined) {
          this.k.events.emitStatus(base, 'running', decision.progress, decision.message);
        }
        if (change.question) this.k.events.emit('questionAsked', { task: base, question: change.question });
        return change.commandCall?.status === 'pending'
          ? { task: base, call: change.commandCall }
          : undefined;
      },
      true,
    );
    if (dispatch) this.k.calls.dispatch(dispatch.task, dispatch.call);
  }

  async failForBudget(
    taskId: string,
    budget: 'maxSteps' | 'deadlineAt',
    limit: number,
    used: number,
  ): Promise<void> {
    const history = await this.k.cache.readHistory(taskId);
    const last = [...history].reverse().find((h) => h.type !== 'tool_result' && h.type !== 'answer');
    await this.failTask(taskId, undefined, budgetError(budget, limit, used, last, history));
  }

  async failTask(taskId: string, expected: TaskStatus | undefined, error: TaskErrorInfo): Promise<void> {
    await this.k.cache.withLock(taskId, async () => {
      const current = await this.k.cache.requireTask(taskId);
      if (expected !== undefined && current.status !== expected) return;
      const now = this.k.clock.now();
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
      const pending = await this.k.store.listCommandCalls({
        taskId,
        status: ['pending', 'awaiting_confirmation'],
      });
      if (pending[0]) change.commandCall = { ...pending[0], status: 'cancelled', completedAt: now };
      await this.k.cache.commitTask(change);
      this.k.events.emitStatus(next, current.status);
    });
  }
}

/**
 * What a person reads when a budget ends a task: which budget, in its own units (steps, calls, a time of day), and
 * the last thing that went wrong, so "failed" says why without opening the step log. The raw figures stay in
 * `details`.
 */
function budgetMessage(
  budget: 'maxSteps' | 'maxToolCalls' | 'deadlineAt',
  limit: number,
  used: number,
  lastError: { message?: unknown } | undefined,
  lastDecision: Decision | HistoryEntry | undefined,
): string {
  const head =
    budget === 'deadlineAt'
      ? `the task's deadline (${new Date(limit).toISOString()}) passed before it finished (budget deadlineAt, over by ${Math.max(0, used - limit)} ms)`
      : budget === 'maxSteps'
        ? `the task used all ${limit} of its steps without finishing (budget maxSteps)`
        : `the task used all ${limit} of its command calls without finishing (budget maxToolCalls)`;
  const note =
    typeof lastError?.message === 'string'
      ? `last error: ${lastError.message}`
      : lastDecision && 'type' in lastDecision && lastDecision.type === 'note' && 'text' in lastDecision
        ? `last note to the model: ${String(lastDecision.text)}`
        : undefined;
  return note ? `${head}; ${note.length > 300 ? `${note.slice(0, 300)}…` : note}` : head;
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
    message: budgetMessage(budget, limit, used, lastError, lastDecision),
    details: {
      budget,
      limit,
      used,
      lastDecision: (lastDecision ?? null) as unknown as JsonValue,
      lastError: (lastError ?? null) as unknown as JsonValue,
    },
  };
}
