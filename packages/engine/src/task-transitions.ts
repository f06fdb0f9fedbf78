/**
 * The state changes a person or the host asks of a task, each under the task's lock and durable before it resolves:
 * cancel (and the open call with it), answer a question (a confirmation question's answer releases or refuses the
 * held call), post a follow-up message or an outside event, and reopen an ended task. The {@link Engine} facade
 * delegates its public entries of the same names here.
 */
import { confirmedCallId, isConfirmingAnswer } from './confirmation.js';
import type { EngineKernel } from './engine-kernel.js';
import { EngineError } from './engine-error.js';
import { finishMessage } from './finish-message.js';
import type { TaskCommit } from './ports.js';
import { assertTransition, isTerminalStatus } from './task-state-machine.js';
import type {
  CommandCallRecord,
  CommandOutcome,
  JsonValue,
  QuestionRecord,
  Task,
  TaskBudgets,
} from './types.js';

/** What `Engine.postToTask` adds to a task's history: a person's follow-up message or an outside event. */
export type TaskPost =
  { type: 'message'; text: string; from?: string } | { type: 'event'; name: string; data?: JsonValue };

/** How `Engine.reopenTask` reopens an ended task: why, its new budgets, and entries to add (the message). */
export interface ReopenOptions {
  reason: 'message' | 'retry';
  budgets: TaskBudgets;
  entries?: Array<{ type: 'message'; text: string; from?: string }>;
}

/** See the module comment. */
export class TaskTransitions {
  constructor(private readonly k: EngineKernel) {}

  /**
   * Outside trigger: step a `queued`/`running` task now — also one sleeping after a `continue` with `wakeAfterMs` —
   * or right after its current step if it is stepping. No-op for waiting and terminal tasks.
   */
  trigger(taskId: string): void {
    if (this.k.scheduler.state !== 'started') return;
    this.k.scheduler.runtime(taskId).forced = true;
    this.k.scheduler.schedule(taskId);
  }

  /** `Engine.cancelTask`: see its contract there. */
  async cancelTask(taskId: string, reason?: string): Promise<Task> {
    this.k.scheduler.assertNotStopped();
    const task = await this.k.cache.withLock(taskId, async () => {
      const current = await this.k.cache.requireTask(taskId);
      assertTransition(current.status, 'cancelled', taskId);
      const now = this.k.clock.now();
      const next: Task = { ...current, status: 'cancelled', updatedAt: now };
      next.progressMessage = finishMessage(next, reason);
      const pending = await this.k.store.listCommandCalls({
        taskId,
        status: ['pending', 'awaiting_confirmation'],
      });
      const change: TaskCommit = {
        task: next,
        expectedStatus: current.status,
        history: [{ type: 'cancel', ...(reason ? { reason } : {}), step: current.counters.steps, at: now }],
      };
      const call = pending[0];
      if (call) change.commandCall = { ...call, status: 'cancelled', completedAt: now };
      await this.k.cache.commitTask(change);
      this.k.events.emitStatus(next, current.status);
      return next;
    });
    return task;
  }

  /** `Engine.answerQuestion`: see its contract there. */
  async answerQuestion(taskId: string, questionId: string, text: string): Promise<Task> {
    this.k.scheduler.assertNotStopped();
    const task = await this.k.cache.withLock(taskId, async () => {
      const current = await this.k.cache.requireTask(taskId);
      const q = await this.k.store.getQuestion(questionId);
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
      const now = this.k.clock.now();
      const question: QuestionRecord = { ...q, answer: text, answeredAt: now };
      const callId = confirmedCallId(questionId);
      const held = callId !== undefined ? await this.k.store.getCommandCall(callId) : undefined;
      if (held?.status === 'awaiting_confirmation' && held.taskId === taskId) {
        return this.confirmCall(current, question, held, now);
      }
      const next: Task = {
        ...current,
        status: assertTransition(current.status, 'running', taskId),
        updatedAt: now,
      };
      await this.k.cache.commitTask({
        task: next,
        expectedStatus: current.status,
        question,
        history: [{ type: 'answer', questionId, answer: text, step: current.counters.steps, at: now }],
      });
      this.k.events.emit('questionAnswered', { task: next, question });
      this.k.events.emitStatus(next, current.status);
      return { task: next, dispatch: undefined };
    });
    if (task.dispatch) this.k.calls.dispatch(task.task, task.dispatch);
    else this.k.scheduler.schedule(taskId);
    return task.task;
  }

  /**
   * The answer to a confirmation question (under the task's lock): a yes makes the held call pending (the task waits
   * for the command, the caller dispatches it after the commit); anything else is the call's failed result
   * (`refused`, with the answer), and the task steps on with it in its history.
   */
  private async confirmCall(
    current: Task,
    question: QuestionRecord,
    held: CommandCallRecord,
    now: number,
  ): Promise<{ task: Task; dispatch: CommandCallRecord | undefined }> {
    const text = question.answer ?? '';
    const yes = isConfirmingAnswer(text);
    const next: Task = {
      ...current,
      status: assertTransition(current.status, yes ? 'waiting_for_command' : 'running', current.id),
      updatedAt: now,
    };
    const outcome: CommandOutcome = {
      ok: false,
      error: {
        code: 'refused',
        message: `the user did not allow ${held.command}${text.trim() ? ` (answer: "${text.trim()}")` : ''}; it did not run`,
      },
    };
    const call: CommandCallRecord = yes
      ? { ...held, status: 'pending' }
      : { ...held, status: 'failed', outcome, completedAt: now };
    await this.k.cache.commitTask({
      task: next,
      expectedStatus: current.status,
      question,
      commandCall: call,
      history: yes
        ? []
        : [
            {
              type: 'tool_result',
              callId: held.callId,
              command: held.command,
              outcome,
              step: current.counters.steps,
              at: now,
            },
          ],
    });
    this.k.events.emit('questionAnswered', { task: next, question });
    this.k.events.emitStatus(next, current.status);
    return { task: next, dispatch: yes ? call : undefined };
  }

  /** `Engine.postToTask`: see its contract there. */
  async postToTask(taskId: string, body: TaskPost): Promise<Task> {
    this.k.scheduler.assertNotStopped();
    const task = await this.k.cache.withLock(taskId, async () => {
      const current = await this.k.cache.requireTask(taskId);
      if (isTerminalStatus(current.status)) {
        throw new EngineError('illegal_transition', `task ${taskId} has ended (${current.status})`, {
          details: { taskId, status: current.status },
        });
      }
      const now = this.k.clock.now();
      const next: Task = { ...current, updatedAt: now };
      await this.k.cache.commitTask({
        task: next,
        expectedStatus: current.status,
        history: [{ ...body, step: current.counters.steps, at: now }],
      });
      return next;
    });
    this.trigger(taskId);
    return task;
  }

  /** `Engine.reopenTask`: see its contract there. */
  async reopenTask(taskId: string, opts: ReopenOptions): Promise<Task> {
    this.k.scheduler.assertNotStopped();
    const task = await this.k.cache.withLock(taskId, async () => {
      const current = await this.k.cache.requireTask(taskId);
      if (!isTerminalStatus(current.status) || (opts.reason === 'retry' && current.status === 'completed')) {
        throw new EngineError(
          'illegal_transition',
          opts.reason === 'retry'
            ? `task ${taskId} is ${current.status}; only a failed or cancelled task can be retried`
            : `task ${taskId} is ${current.status}; only an ended task is reopened`,
          { details: { taskId, status: current.status } },
        );
      }
      const now = this.k.clock.now();
      const { result: _result, error: _error, wakeAt: _wakeAt, progress: _progress, ...rest } = current;
      const next: Task = {
        ...rest,
        status: assertTransition(current.status, 'queued', taskId),
        budgets: { ...opts.budgets },
        progressMessage: opts.reason === 'retry' ? 'retrying' : 'continuing with a new message',
        updatedAt: now,
      };
      const step = current.counters.steps;
      await this.k.cache.commitTask({
        task: next,
        expectedStatus: current.status,
        history: [
          { type: 'resume', reason: opts.reason, from: current.status, step, at: now },
          ...(opts.entries ?? []).map((e) => ({ ...e, step, at: now })),
        ],
        steps: [
          {
            kind: 'reopened',
            directive: {
              reason: opts.reason,
              from: current.status,
              budgets: { ...opts.budgets } as JsonValue,
              ...(current.error !== undefined
                ? { previousError: current.error as unknown as JsonValue }
                : {}),
            },
            step,
            at: now,
          },
        ],
      });
      this.k.events.emitStatus(next, current.status);
      return next;
    });
    this.k.scheduler.schedule(taskId);
    return task;
  }
}
