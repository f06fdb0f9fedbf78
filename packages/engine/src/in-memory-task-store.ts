import { EngineError } from './engine-error.js';
import { bindClientRefusal, bindingRefusal } from './binding-verdicts.js';
import { normalizeStepQuery } from './step-query.js';
import { canTransition } from './task-state-machine.js';
import type { CommandCallFilter, CommitResult, TaskCommit, TaskStore } from './ports.js';
import type {
  CommandCallRecord,
  HistoryEntry,
  QuestionRecord,
  StepQuery,
  StepRecord,
  StoredStep,
  Task,
  TaskFilter,
} from './types.js';

/**
 * A {@link TaskStore} in process memory, for tests and embedding without persistence. Values are deep-copied on
 * the way in and out, so callers can never mutate stored state by accident. Commits are atomic (validated first,
 * then applied synchronously).
 */
export class InMemoryTaskStore implements TaskStore {
  private readonly tasks = new Map<string, Task>();
  private readonly history = new Map<string, HistoryEntry[]>();
  private readonly steps = new Map<string, StoredStep[]>();
  private readonly calls = new Map<string, CommandCallRecord>();
  private readonly questions = new Map<string, QuestionRecord>();
  private closed = false;

  commit(change: TaskCommit): Promise<CommitResult> {
    this.assertOpen();
    const id = change.task.id;
    const existing = this.tasks.get(id);
    if (change.create) {
      if (existing) return Promise.reject(new EngineError('task_exists', `task ${id} already exists`));
    } else {
      if (!existing) return Promise.reject(new EngineError('task_not_found', `task ${id} not found`));
      if (change.expectedStatus !== undefined && existing.status !== change.expectedStatus) {
        return Promise.reject(
          new EngineError('conflict', `task ${id} is ${existing.status}, expected ${change.expectedStatus}`, {
            details: { taskId: id, actual: existing.status, expected: change.expectedStatus },
          }),
        );
      }
      if (change.task.status !== existing.status && !canTransition(existing.status, change.task.status)) {
        return Promise.reject(
          new EngineError(
            'illegal_transition',
            `illegal task transition ${existing.status} → ${change.task.status} (task ${id})`,
            { details: { from: existing.status, to: change.task.status, taskId: id } },
          ),
        );
      }
    }
    if (change.commandCall && change.commandCall.taskId !== id) {
      return Promise.reject(
        new EngineError('invalid_input', `command call ${change.commandCall.callId} belongs to another task`),
      );
    }
    if (change.question && change.question.taskId !== id) {
      return Promise.reject(
        new EngineError('invalid_input', `question ${change.question.questionId} belongs to another task`),
      );
    }
    this.tasks.set(id, clone(change.task));
    const hist = this.history.get(id) ?? [];
    const steps = this.steps.get(id) ?? [];
    const result: CommitResult = { history: [], steps: [] };
    for (const h of change.history ?? []) {
      const entry = { ...clone(h), taskId: id, seq: hist.length + 1 } as HistoryEntry;
      hist.push(entry);
      result.history.push(clone(entry));
    }
    for (const s of change.steps ?? []) {
      const stored: StoredStep = { ...clone(s), taskId: id, seq: steps.length + 1 };
      steps.push(stored);
      result.steps.push(clone(stored));
    }
    this.history.set(id, hist);
    this.steps.set(id, steps);
    if (change.commandCall) {
      // A commit never changes the call's binding (set by bindCall only).
      const { sentTo: _ignored, ...call } = clone(change.commandCall);
      const bound = this.calls.get(call.callId)?.sentTo;
      this.calls.set(call.callId, bound === undefined ? call : { ...call, sentTo: bound });
    }
    if (change.question) this.questions.set(change.question.questionId, clone(change.question));
    return Promise.resolve(result);
  }

  appendStep(taskId: string, record: StepRecord & { step: number; at: number }): Promise<StoredStep> {
    this.assertOpen();
    if (!this.tasks.has(taskId))
      return Promise.reject(new EngineError('task_not_found', `task ${taskId} not found`));
    const steps = this.steps.get(taskId) ?? [];
    const stored: StoredStep = { ...clone(record), taskId, seq: steps.length + 1 };
    steps.push(stored);
    this.steps.set(taskId, steps);
    return Promise.resolve(clone(stored));
  }

  getTask(taskId: string): Promise<Task | undefined> {
    this.assertOpen();
    const t = this.tasks.get(taskId);
    return Promise.resolve(t ? clone(t) : undefined);
  }

  listTasks(filter: TaskFilter = {}): Promise<Task[]> {
    this.assertOpen();
    const statuses = filter.status === undefined ? undefined : [filter.status].flat();
    const out = [...this.tasks.values()]
      .filter(
        (t) =>
          (!statuses || statuses.includes(t.status)) &&
          (filter.kind === undefined || t.kind === filter.kind) &&
          (filter.clientId === undefined || t.clientId === filter.clientId) &&
          (filter.updatedSince === undefined || t.updatedAt >= filter.updatedSince),
      )
      .sort((a, b) => a.createdAt - b.createdAt || (a.id < b.id ? -1 : a.id > b.id ? 1 : 0));
    return Promise.resolve(clone(filter.limit === undefined ? out : out.slice(0, filter.limit)));
  }

  getHistory(taskId: string): Promise<HistoryEntry[]> {
    this.assertOpen();
    return Promise.resolve(clone(this.history.get(taskId) ?? []));
  }

  getSteps(taskId: string, query?: StepQuery): Promise<StoredStep[]> {
    this.assertOpen();
    let q;
    try {
      q = normalizeStepQuery(query);
    } catch (err) {
      return Promise.reject(err);
    }
    const all = this.steps.get(taskId) ?? [];
    // seq is dense from 1, so the record with seq n sits at index n - 1.
    const end = q.limit === undefined ? all.length : Math.min(all.length, q.afterSeq + q.limit);
    return Promise.resolve(clone(all.slice(q.afterSeq, end)));
  }

  getCommandCall(callId: string): Promise<CommandCallRecord | undefined> {
    this.assertOpen();
    const c = this.calls.get(callId);
    return Promise.resolve(c ? clone(c) : undefined);
  }

  bindCall(callId: string, clientId: string): Promise<CommandCallRecord> {
    this.assertOpen();
    const badClient = bindClientRefusal(clientId);
    if (badClient) return Promise.reject(badClient);
    const c = this.calls.get(callId);
    // As the durable stores' conditional UPDATE: only a pending call without a binding is bound (the first holds).
    const bound = c !== undefined && c.status === 'pending' && c.sentTo === undefined;
    if (bound) c.sentTo = clientId;
    const refused = bindingRefusal(callId, bound, c?.status);
    if (refused) return Promise.reject(refused);
    return Promise.resolve(clone(c as CommandCallRecord));
  }

  listCommandCalls(filter: CommandCallFilter = {}): Promise<CommandCallRecord[]> {
    this.assertOpen();
    const statuses = filter.status === undefined ? undefined : [filter.status].flat();
    return Promise.resolve(
      clone(
        [...this.calls.values()].filter(
          (c) =>
            (filter.taskId === undefined || c.taskId === filter.taskId) &&
            (!statuses || statuses.includes(c.status)),
        ),
      ),
    );
  }

  getQuestion(questionId: string): Promise<QuestionRecord | undefined> {
    this.assertOpen();
    const q = this.questions.get(questionId);
    return Promise.resolve(q ? clone(q) : undefined);
  }

  listQuestions(taskId: string): Promise<QuestionRecord[]> {
    this.assertOpen();
    return Promise.resolve(clone([...this.questions.values()].filter((q) => q.taskId === taskId)));
  }

  close(): Promise<void> {
    this.closed = true;
    return Promise.resolve();
  }

  private assertOpen(): void {
    if (this.closed) throw new EngineError('store_failure', 'store is closed');
  }
}

function clone<T>(value: T): T {
  return structuredClone(value);
}
