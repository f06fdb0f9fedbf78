/**
 * Tasks and their calls: the engine's commit (one task's row, memory, history, step records, command call and
 * question in one write, checked against the status and columns this connection last committed, so a round trip
 * reads nothing back), the reads of tasks, history, calls and questions, binding a call to a client, and task pages
 * for people (the HTTP API, the CLI).
 */
import {
  EngineError,
  canTransition,
  isTerminalStatus,
  memoryJson,
  type CommandCallFilter,
  type CommandCallRecord,
  type CommitResult,
  type HistoryEntry,
  type JsonValue,
  type QuestionRecord,
  type StepRecord,
  type StoredStep,
  type Task,
  type TaskCommit,
  type TaskFilter,
  type TaskStatus,
} from '@ccagent/engine';
import { and, asc, count, desc, eq, gte, inArray, sql, type SQL } from 'drizzle-orm';
import {
  bindClientRefusal,
  bindingRefusal,
  callToRow,
  historyToRow,
  pageOf,
  questionToRow,
  recordToStep,
  rowToCall,
  rowToHistory,
  rowToQuestion,
  rowToTask,
  taskToRow,
  type TaskPage,
  type TaskPageQuery,
  type TaskRowWithMemory,
} from '@ccagent/store-core';
import * as schema from '../schema.js';
import type { SqliteConnection, TaskState } from './connection.js';
import { selectTasks, taskWhere } from './statements.js';
import type { SqliteStepLog } from './steps.js';

/** See the module comment. */
export class SqliteTasks {
  /** Prepared `listTasks` queries by filter shape (a handful at most). */
  private readonly listQueries = new Map<
    string,
    { all(params: Record<string, unknown>): TaskRowWithMemory[] }
  >();

  constructor(
    private readonly c: SqliteConnection,
    private readonly steps: SqliteStepLog,
  ) {}

  /**
   * One atomic, durable commit (see the engine's `TaskCommit`). The objects passed in must not be changed afterwards:
   * the task's memory is written into its `task_memory` row only when it is not the object this store last committed
   * for the task, and JSON encodings are reused for the same object.
   */
  commit(change: TaskCommit): Promise<CommitResult> {
    return this.c.write(() => this.applyCommit(change));
  }

  /** Append one step-log record; durable when the promise resolves. */
  appendStep(taskId: string, record: StepRecord & { step: number; at: number }): Promise<StoredStep> {
    return this.c.write(() => {
      const state = this.stateOf(taskId);
      if (state === undefined) throw new EngineError('task_not_found', `task ${taskId} not found`);
      const seq = (state.steps ?? this.lastSeq('steps', taskId)) + 1;
      this.steps.insertStep(taskId, seq, record);
      this.keepState(taskId, { ...state, steps: seq });
      return recordToStep(taskId, seq, record);
    });
  }

  getTask(taskId: string): Promise<Task | undefined> {
    return this.c.read(() => {
      const row = this.c.r.getTask.get({ id: taskId });
      return row ? rowToTask(row) : undefined;
    });
  }

  /** Tasks matching the filter, oldest first (by `createdAt`, then id). */
  listTasks(filter: TaskFilter = {}): Promise<Task[]> {
    return this.c.read(() => {
      const statuses = filter.status === undefined ? undefined : [filter.status].flat();
      // One prepared statement per filter shape (which fields, how many statuses): building the query with Drizzle
      // on every call cost more than running it, and every reconnecting client runs two of these.
      const shape = `${statuses?.length ?? '-'}|${filter.kind !== undefined}|${filter.clientId !== undefined}|${filter.updatedSince !== undefined}|${filter.limit !== undefined}`;
      let prepared = this.listQueries.get(shape);
      if (!prepared) {
        const p = sql.placeholder;
        const conds: SQL[] = [];
        if (statuses)
          conds.push(
            inArray(
              schema.tasks.status,
              statuses.map((_, i) => p(`s${i}`)),
            ),
          );
        if (filter.kind !== undefined) conds.push(eq(schema.tasks.kind, p('kind')));
        if (filter.clientId !== undefined) conds.push(eq(schema.tasks.clientId, p('clientId')));
        if (filter.updatedSince !== undefined) conds.push(gte(schema.tasks.updatedAt, p('since')));
        const q = selectTasks(this.c.orm)
          .where(and(...conds))
          .orderBy(asc(schema.tasks.createdAt), asc(schema.tasks.id));
        prepared = (filter.limit === undefined ? q : q.limit(p('limit'))).prepare();
        this.listQueries.set(shape, prepared);
      }
      const params: Record<string, unknown> = {};
      statuses?.forEach((st, i) => (params[`s${i}`] = st));
      if (filter.kind !== undefined) params.kind = filter.kind;
      if (filter.clientId !== undefined) params.clientId = filter.clientId;
      if (filter.updatedSince !== undefined) params.since = filter.updatedSince;
      if (filter.limit !== undefined) params.limit = Math.max(0, Math.floor(filter.limit));
      return prepared.all(params).map(rowToTask);
    });
  }

  getHistory(taskId: string): Promise<HistoryEntry[]> {
    return this.c.read(() => this.c.r.getHistory.all({ taskId }).map(rowToHistory));
  }

  getCommandCall(callId: string): Promise<CommandCallRecord | undefined> {
    return this.c.read(() => {
      const row = this.c.r.getCall.get({ callId });
      return row ? rowToCall(row) : undefined;
    });
  }

  /**
   * Record the client a pending call is sent to (see the engine's `TaskStore.bindCall`): one UPDATE of the call row,
   * durable when this resolves, through the same group commit as every other write. The first binding holds.
   */
  bindCall(callId: string, clientId: string): Promise<CommandCallRecord> {
    const badClient = bindClientRefusal(clientId);
    if (badClient) return Promise.reject(badClient);
    return this.c.write(() => {
      const bound = this.c.w.bindCall.run(clientId, callId).changes === 1;
      const row = this.c.r.getCall.get({ callId });
      const refused = bindingRefusal(callId, bound, row?.status);
      if (refused) throw refused;
      return rowToCall(row as NonNullable<typeof row>);
    });
  }

  /** Command calls matching the filter, in creation order. */
  listCommandCalls(filter: CommandCallFilter = {}): Promise<CommandCallRecord[]> {
    return this.c.read(() => {
      const conds: SQL[] = [];
      if (filter.taskId !== undefined) conds.push(eq(schema.commandCalls.taskId, filter.taskId));
      if (filter.status !== undefined)
        conds.push(inArray(schema.commandCalls.status, [filter.status].flat()));
      return this.c.orm
        .select()
        .from(schema.commandCalls)
        .where(and(...conds))
        .orderBy(asc(schema.commandCalls.createdAt), sql`rowid`)
        .all()
        .map(rowToCall);
    });
  }

  getQuestion(questionId: string): Promise<QuestionRecord | undefined> {
    return this.c.read(() => {
      const row = this.c.orm
        .select()
        .from(schema.questions)
        .where(eq(schema.questions.questionId, questionId))
        .get();
      return row ? rowToQuestion(row) : undefined;
    });
  }

  /** Questions of a task in the order they were asked. */
  listQuestions(taskId: string): Promise<QuestionRecord[]> {
    return this.c.read(() =>
      this.c.orm
        .select()
        .from(schema.questions)
        .where(eq(schema.questions.taskId, taskId))
        .orderBy(asc(schema.questions.askedAt), sql`rowid`)
        .all()
        .map(rowToQuestion),
    );
  }

  /** One page of tasks (newest first by default) and the total matching the query. */
  listTasksPage(q: TaskPageQuery = {}): Promise<TaskPage> {
    return this.c.read(() => {
      const { limit, offset } = pageOf(q);
      const where = taskWhere(q);
      const dir = q.order === 'oldest' ? asc : desc;
      const rows = selectTasks(this.c.orm)
        .where(where)
        .orderBy(dir(schema.tasks.createdAt), dir(schema.tasks.id))
        .limit(limit)
        .offset(offset)
        .all();
      const total = this.c.orm.select({ n: count() }).from(schema.tasks).where(where).get()?.n ?? 0;
      return { tasks: rows.map(rowToTask), total };
    });
  }

  /** The latest `updatedAt` of any task (epoch ms), or undefined when there is none: when the last change was made. */
  lastTaskUpdateAt(): Promise<number | undefined> {
    return this.c.read(() => {
      const row = this.c.orm
        .select({ m: sql<number | null>`max(${schema.tasks.updatedAt})` })
        .from(schema.tasks)
        .get();
      return row?.m ?? undefined;
    });
  }

  private applyCommit(change: TaskCommit): CommitResult {
    const task = change.task;
    const id = task.id;
    const head = this.stateOf(id);
    const actual = head?.status;
    let row: ReturnType<typeof taskToRow>;
    if (change.create) {
      if (actual !== undefined) throw new EngineError('task_exists', `task ${id} already exists`);
      row = taskToRow(task, encodeJson);
      this.c.w.insertTask.run(row);
      this.c.w.insertMemory.run(id, memoryJson(task.memory));
    } else {
      if (actual === undefined) throw new EngineError('task_not_found', `task ${id} not found`);
      if (change.expectedStatus !== undefined && actual !== change.expectedStatus) {
        throw new EngineError('conflict', `task ${id} is ${actual}, expected ${change.expectedStatus}`, {
          details: { taskId: id, actual, expected: change.expectedStatus },
        });
      }
      if (task.status !== actual && !canTransition(actual, task.status)) {
        throw new EngineError(
          'illegal_transition',
          `illegal task transition ${actual} → ${task.status} (task ${id})`,
          {
            details: { from: actual, to: task.status, taskId: id },
          },
        );
      }
      row = taskToRow(task, encodeJson);
      // The indexed columns a task never changes are left out of the UPDATE when unchanged: SQLite maintains the
      // index of every column an UPDATE assigns, whether or not its value changed (two index rewrites per commit).
      if (head?.kind === row.kind && head.clientId === row.clientId && head.createdAt === row.createdAt) {
        this.c.w.updateTaskState.run(row);
      } else {
        this.c.w.updateTask.run(row);
      }
      // The memory row only when the memory changed (most commits carry the object the last one wrote).
      const text = this.c.memoryWrites.textToWrite(id, task.memory);
      if (text !== undefined && this.c.w.updateMemory.run(text, id).changes === 0) {
        this.c.w.insertMemory.run(id, text); // a row lost by hand: put it back rather than lose the memory
      }
    }
    this.c.memoryWrites.wrote(id, task.memory, isTerminalStatus(task.status));
    const result: CommitResult = { history: [], steps: [] };
    // A new task has no history or steps yet (they reference it); a known one's last seqs as this connection left them.
    let lastHistory = head === undefined ? 0 : head.history;
    let lastStep = head === undefined ? 0 : head.steps;
    if (change.history && change.history.length > 0) {
      let seq = (lastHistory ?? this.lastSeq('history', id)) + 1;
      const rows = change.history.map((h) => historyToRow(id, seq++, h));
      for (const r of rows) this.c.w.insertHistory.run(r);
      result.history = rows.map(rowToHistory);
      lastHistory = seq - 1;
    }
    if (change.steps && change.steps.length > 0) {
      const first = (lastStep ?? this.lastSeq('steps', id)) + 1;
      change.steps.forEach((s, i) => this.steps.insertStep(id, first + i, s));
      result.steps = change.steps.map((s, i) => recordToStep(id, first + i, s));
      lastStep = first + change.steps.length - 1;
    }
    if (change.commandCall) {
      if (change.commandCall.taskId !== id) {
        throw new EngineError(
          'invalid_input',
          `command call ${change.commandCall.callId} belongs to another task`,
        );
      }
      this.c.w.upsertCall.run(callToRow(change.commandCall));
    }
    if (change.question) {
      if (change.question.taskId !== id) {
        throw new EngineError(
          'invalid_input',
          `question ${change.question.questionId} belongs to another task`,
        );
      }
      const { questionId: _q, ...set } = questionToRow(change.question);
      this.c.orm
        .insert(schema.questions)
        .values(questionToRow(change.question))
        .onConflictDoUpdate({ target: schema.questions.questionId, set })
        .run();
    }
    // Last, once every statement of the write has run (one that throws leaves what the transaction knew).
    this.keepState(id, {
      status: task.status,
      kind: row.kind,
      clientId: row.clientId,
      createdAt: row.createdAt,
      history: lastHistory,
      steps: lastStep,
    });
    return result;
  }

  /** The task's state as the running write sees it: remembered, else read from its row (`undefined`: no task). */
  private stateOf(id: string): TaskState | undefined {
    const known = this.c.taskState.get(id);
    if (known !== undefined) return known;
    const head = this.c.w.taskHead.get(id) as
      { status: TaskStatus; kind: string; clientId: string | null; createdAt: number } | undefined;
    return head && { ...head, history: undefined, steps: undefined };
  }

  /** The running write left the task in `state` (terminal tasks are forgotten: they are rarely written again). */
  private keepState(id: string, state: TaskState): void {
    if (isTerminalStatus(state.status)) this.c.taskState.forget(id);
    else this.c.taskState.set(id, state);
  }

  /** The largest `seq` of the task's history or steps in the database (0 when none). */
  private lastSeq(table: 'history' | 'steps', taskId: string): number {
    const q = table === 'history' ? this.c.w.historySeq : this.c.w.stepSeq;
    return (q.get(taskId) as { m: number }).m;
  }
}

/**
 * JSON text of a task's JSON columns (allowed commands, metadata, budgets), reused for the same object (the engine's
 * `memoryJson`, which also encodes the memory): a command round trip commits the task twice and both commits carry
 * the same objects. Committed values are immutable by the port's contract (the engine copies before it changes
 * anything; strategies get them read-only).
 */
const encodeJson = (value: JsonValue | undefined): string => memoryJson(value);
