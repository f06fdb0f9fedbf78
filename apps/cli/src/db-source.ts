import type { QuestionRecord, StoredStep, Task, TaskStatus } from '@ccagent/engine';
import {
  isStoreError,
  openSqliteStore,
  type ClientRecord,
  type ModelToolRecord,
  type SqliteStore,
} from '@ccagent/store';
import { CliError } from './errors.js';
import { callIdOf, routingOf, withSentTo } from './sent-to.js';
import type {
  ClientView,
  QuestionView,
  StepView,
  TaskDetail,
  TaskListQuery,
  TaskPageView,
  TaskSource,
  TaskUpdates,
  TaskView,
  ToolView,
} from './source.js';

/** What the CLI reads from a store: the part of the SQLite and PostgreSQL stores' surface it uses. */
export type ReadableStore = Pick<
  SqliteStore,
  | 'path'
  | 'listTasksPage'
  | 'getTask'
  | 'getSteps'
  | 'listQuestions'
  | 'getHistory'
  | 'listCommandCalls'
  | 'getCommandCall'
  | 'listClients'
  | 'listTools'
  | 'close'
>;

/**
 * Opens the orchestrator's database read-only (`--db`): an SQLite file (never migrates, never writes, never takes a
 * write lock, reads through the WAL, so it works with the server running or stopped), or a `postgres://` URL (a
 * read-only store of `@ccagent/store-postgres`: never migrates, never writes). Open failures become one-line
 * {@link CliError}s.
 */
export async function openDbSource(path: string): Promise<TaskSource> {
  if (/^postgres(ql)?:\/\//i.test(path)) {
    // Loaded only for a PostgreSQL URL: reading an SQLite file starts as fast as before.
    const { openPostgresStore, redactUrl } = await import('@ccagent/store-postgres');
    try {
      return new DbTaskSource(await openPostgresStore({ url: path, readonly: true, readConnections: 2 }));
    } catch (err) {
      throw openError(err, redactUrl(path));
    }
  }
  let store: SqliteStore;
  try {
    store = openSqliteStore({ path, readonly: true });
  } catch (err) {
    throw openError(err, path);
  }
  return new DbTaskSource(store);
}

function openError(err: unknown, path: string): CliError {
  if (!isStoreError(err)) return new CliError('error', `cannot open ${path}: ${String(err)}`, { cause: err });
  const file =
    typeof err.details?.path === 'string'
      ? err.details.path
      : typeof err.details?.database === 'string'
        ? err.details.database
        : path;
  switch (err.code) {
    case 'not_found':
      return new CliError(
        'unavailable',
        `no ccagent database at ${file} (start the orchestrator once, or pass --db PATH or --url URL)`,
        { cause: err },
      );
    case 'schema_too_new':
      return new CliError('error', `${file} was written by a newer ccagent; upgrade the CLI`, { cause: err });
    case 'schema_outdated':
      return new CliError(
        'error',
        `${file} has an older schema; start the orchestrator once so it migrates the file`,
        { cause: err },
      );
    case 'not_a_ccagent_db':
      return new CliError('error', `${file} is not a ccagent database`, { cause: err });
    case 'open_failed': {
      const why = err.cause instanceof Error ? err.cause.message : err.message;
      return new CliError('error', `cannot open ${file}: ${why}`, { cause: err });
    }
    default:
      return new CliError('error', err.message, { cause: err });
  }
}

/** A read failure (SQLite busy past its timeout, a corrupt page …) as one line. */
function readError(err: unknown): CliError {
  if (err instanceof CliError) return err;
  return new CliError(
    'error',
    `reading the database failed: ${err instanceof Error ? err.message : String(err)}`,
    {
      cause: err,
    },
  );
}

/** The database (SQLite file or PostgreSQL) as a {@link TaskSource}. */
export class DbTaskSource implements TaskSource {
  readonly label: string;
  constructor(private readonly store: ReadableStore) {
    this.label = store.path;
  }

  async listTasks(q: TaskListQuery): Promise<TaskPageView> {
    try {
      const page = await this.store.listTasksPage({
        ...(q.status?.length ? { status: q.status as TaskStatus[] } : {}),
        ...(q.kind !== undefined ? { kind: q.kind } : {}),
        ...(q.client !== undefined ? { clientId: q.client } : {}),
        limit: q.limit,
        offset: q.offset,
        order: 'newest',
      });
      return { tasks: page.tasks.map(taskView), total: page.total };
    } catch (err) {
      throw isStoreError(err, 'invalid_input') ? new CliError('usage', err.message) : readError(err);
    }
  }

  async getTask(id: string): Promise<TaskDetail> {
    try {
      const task = await this.store.getTask(id);
      if (!task) throw new CliError('not_found', `no task ${id}`);
      const [steps, questions, history, calls] = await Promise.all([
        this.store.getSteps(id),
        this.store.listQuestions(id),
        this.store.getHistory(id),
        // Only a task bound to no client has calls bound to a client of their own.
        task.clientId === null ? this.store.listCommandCalls({ taskId: id }) : [],
      ]);
      const { sentTo, openCall } = routingOf(calls);
      const detail: TaskDetail = {
        task: taskView(task),
        steps: withSentTo(steps.map(stepView), sentTo),
        questions: questions.map(questionView),
        messages: history.flatMap((h) =>
          h.type === 'message'
            ? [{ text: h.text, at: h.at, ...(h.from !== undefined ? { from: h.from } : {}) }]
            : [],
        ),
      };
      if (openCall) detail.openCall = openCall;
      return detail;
    } catch (err) {
      throw readError(err);
    }
  }

  async getTaskUpdates(id: string, afterSeq: number, limit: number): Promise<TaskUpdates> {
    try {
      // The task first: when it is finished, the steps read after it include every record it wrote.
      const task = await this.store.getTask(id);
      if (!task) throw new CliError('not_found', `no task ${id}`);
      // One record more than the page tells whether more follow.
      const steps = await this.store.getSteps(id, { afterSeq, limit: limit + 1 });
      const questions = await this.store.listQuestions(id);
      const hasMore = steps.length > limit;
      const page = (hasMore ? steps.slice(0, limit) : steps).map(stepView);
      return {
        task: taskView(task),
        steps: task.clientId === null ? withSentTo(page, await this.sentToOf(page)) : page,
        questions: questions.map(questionView),
        hasMore,
      };
    } catch (err) {
      throw readError(err);
    }
  }

  /** The clients the calls of these records were sent to (one read by call id each: a page, not the whole task). */
  private async sentToOf(steps: StepView[]): Promise<Map<string, string>> {
    const out = new Map<string, string>();
    const ids = new Set(steps.map(callIdOf).filter((c): c is string => c !== undefined));
    for (const id of ids) {
      const call = await this.store.getCommandCall(id);
      if (call?.sentTo !== undefined) out.set(id, call.sentTo);
    }
    return out;
  }

  async listClients(): Promise<ClientView[]> {
    try {
      return (await this.store.listClients()).map(clientView);
    } catch (err) {
      throw readError(err);
    }
  }

  async listTools(): Promise<ToolView[]> {
    try {
      return (await this.store.listTools()).map(toolView);
    } catch (err) {
      throw readError(err);
    }
  }

  close(): Promise<void> {
    return this.store.close();
  }
}

/**
 * Engine task → view (memory, metadata and context stay out: they are strategy internals), with the per-task settings
 * the orchestrator keeps in `metadata.settings`.
 */
export function taskView(t: Task): TaskView {
  const budgets: TaskView['budgets'] = {};
  if (t.budgets.maxSteps !== undefined) budgets.maxSteps = t.budgets.maxSteps;
  if (t.budgets.maxToolCalls !== undefined) budgets.maxToolCalls = t.budgets.maxToolCalls;
  if (t.budgets.deadlineAt !== undefined) budgets.deadlineAt = t.budgets.deadlineAt;
  const out: TaskView = {
    id: t.id,
    kind: t.kind,
    status: t.status,
    clientId: t.clientId,
    prompt: t.prompt,
    allowedCommands: [...t.allowedCommands],
    counters: { steps: t.counters.steps, toolCalls: t.counters.toolCalls, questions: t.counters.questions },
    budgets,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
  };
  if (t.result !== undefined) out.result = t.result;
  const settings = t.metadata.settings;
  if (settings !== null && typeof settings === 'object' && !Array.isArray(settings)) out.settings = settings;
  if (t.error !== undefined) {
    out.error = { code: t.error.code, message: t.error.message };
    if (t.error.details !== undefined) out.error.details = t.error.details;
  }
  if (t.progress !== undefined) out.progress = t.progress;
  if (t.progressMessage !== undefined) out.progressMessage = t.progressMessage;
  return out;
}

/** Stored step-log record → view. */
export function stepView(s: StoredStep): StepView {
  const out: StepView = { seq: s.seq, step: s.step, kind: s.kind, at: s.at };
  if (s.model !== undefined) out.model = s.model;
  if (s.input !== undefined) out.input = s.input;
  if (s.output !== undefined) out.output = s.output;
  if (s.directive !== undefined) out.directive = s.directive;
  if (s.validationErrors !== undefined) out.validationErrors = [...s.validationErrors];
  if (s.toolCall !== undefined) out.toolCall = s.toolCall;
  if (s.toolResult !== undefined) out.toolResult = s.toolResult;
  if (s.error !== undefined) {
    out.error = { code: s.error.code, message: s.error.message };
    if (s.error.details !== undefined) out.error.details = s.error.details;
  }
  if (s.startedAt !== undefined) out.startedAt = s.startedAt;
  if (s.durationMs !== undefined) out.durationMs = s.durationMs;
  if (s.usage !== undefined) {
    const u: NonNullable<StepView['usage']> = {};
    if (s.usage.promptTokens !== undefined) u.promptTokens = s.usage.promptTokens;
    if (s.usage.completionTokens !== undefined) u.completionTokens = s.usage.completionTokens;
    if (s.usage.totalDurationMs !== undefined) u.totalDurationMs = s.usage.totalDurationMs;
    out.usage = u;
  }
  return out;
}

function questionView(q: QuestionRecord): QuestionView {
  const out: QuestionView = { questionId: q.questionId, question: q.question, askedAt: q.askedAt };
  if (q.why !== undefined) out.why = q.why;
  if (q.answer !== undefined) out.answer = q.answer;
  if (q.answeredAt !== undefined) out.answeredAt = q.answeredAt;
  return out;
}

function clientView(c: ClientRecord): ClientView {
  const out: ClientView = {
    clientId: c.clientId,
    connected: c.connected,
    commands: c.commands.map((d) => d.name),
  };
  if (c.clientVersion !== undefined) out.clientVersion = c.clientVersion;
  out.firstSeenAt = c.firstSeenAt;
  out.lastSeenAt = c.lastSeenAt;
  return out;
}

function toolView(t: ModelToolRecord): ToolView {
  const out: ToolView = { clientId: t.clientId, name: t.name, status: t.status, version: t.version };
  if (t.description !== undefined) out.description = t.description;
  if (t.file !== undefined) out.file = t.file;
  if (t.updatedAt !== undefined) out.updatedAt = t.updatedAt;
  out.recordedAt = t.recordedAt;
  return out;
}
