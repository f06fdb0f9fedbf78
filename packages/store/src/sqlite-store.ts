import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import {
  EngineError,
  canTransition,
  isEngineError,
  isTerminalStatus,
  memoryJson,
  normalizeStepQuery,
  type CommandCallFilter,
  type CommandCallRecord,
  type CommitResult,
  type HistoryEntry,
  type JsonValue,
  type Logger,
  type QuestionRecord,
  type StepQuery,
  type StepRecord,
  type StoredStep,
  type Task,
  type TaskCommit,
  type TaskFilter,
  type TaskStatus,
  type TaskStore,
} from '@ccagent/engine';
import Database from 'better-sqlite3';
import {
  and,
  asc,
  count,
  desc,
  eq,
  getTableColumns,
  getTableName,
  gt,
  gte,
  inArray,
  sql,
  type SQL,
} from 'drizzle-orm';
import type { SQLiteTable } from 'drizzle-orm/sqlite-core';
import { drizzle, type BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import {
  callToRow,
  historyToRow,
  packedStepToRow,
  questionToRow,
  recordToStep,
  rowToCall,
  rowToClient,
  rowToHistory,
  rowToQuestion,
  rowToStep,
  rowToTask,
  rowToTool,
  taskToRow,
  type TaskRowWithMemory,
} from './codec.js';
import { APPLICATION_ID, checkSchema, migrate, readSchemaInfo, SCHEMA_VERSION } from './migrate.js';
import * as schema from './schema.js';
import {
  StoreError,
  findStorageFailure,
  isStoreError,
  storageFailureCode,
  storageFailureMessage,
  type StorageFailureCode,
} from './store-error.js';
import {
  MODEL_TOOL_STATUSES,
  type ClientRecord,
  type ClientUpsert,
  type ModelToolInfo,
  type ModelToolRecord,
  type StoreHealth,
  type TaskPage,
  type TaskPageQuery,
  type ToolFilter,
} from './types.js';
import { CommittedState, MemoryWrites } from './memory-writes.js';
import { MessageHashMemo, chunkHashes, packedHashes } from './step-messages.js';
import { WriteQueue, type BatchOutcome } from './write-queue.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';

/** Options of {@link openSqliteStore}. */
export interface SqliteStoreOptions {
  /** Database file; its parent directories and the file are created unless `readonly`. */
  path: string;
  /**
   * Open for reading only (the CLI): never migrates, never writes, never takes a write lock; reads through the WAL,
   * so it works while the orchestrator runs. A missing file is `StoreError('not_found')`.
   */
  readonly?: boolean;
  /**
   * How long a write waits for another process's lock before it is refused with `locked` (default 5000 ms). The wait
   * never blocks the event loop for more than a few milliseconds at a time: SQLite's own `busy_timeout` is kept
   * short and the write is retried asynchronously with backoff. On a read-only connection (the CLI, which may
   * block) this is SQLite's `busy_timeout` itself.
   */
  busyTimeoutMs?: number;
  /**
   * `full` (default): every acknowledged commit survives power loss. `normal`: survives a process crash (kill -9) but
   * the last commits may be lost on power loss; faster on slow disks.
   */
  synchronous?: 'full' | 'normal';
  /**
   * Run WAL checkpoints in a worker thread with its own connection (default true for a writer), so that no commit
   * pays for one: SQLite's auto-checkpoint otherwise copies ~1,000 pages and fsyncs inside whichever COMMIT crosses
   * the threshold, on the event loop. If the worker cannot start or dies, the writer's auto-checkpoint is turned back
   * on (logged). `false`: SQLite's auto-checkpoint, no worker (about 30 ms and 10 MB less per open store).
   */
  checkpointer?: boolean;
  logger?: Logger;
}

const DEFAULT_BUSY_TIMEOUT_MS = 5000;
/** SQLite `busy_timeout` of a writer: the longest a single attempt may block the event loop waiting for a lock. */
const WRITER_SYNC_BUSY_MS = 5;
/** Deadline of the write probe `/health` runs while writes are failing (ms). */
const PROBE_LOCK_TIMEOUT_MS = 250;
/**
 * Every write this store queues is rerunnable (the queue may run it again after rolling its transaction back): it
 * runs statements on the connection and stages what it wrote in `memoryWrites` / `taskState`, which the queue's
 * listener clears on a rollback; it keeps nothing else (validation, codecs and JSON encodings are pure).
 */
const RERUNNABLE = { rerunnable: true } as const;
const RERUNNABLE_PROBE = { rerunnable: true, lockTimeoutMs: PROBE_LOCK_TIMEOUT_MS } as const;
const DEFAULT_PAGE_SIZE = 50;
/** Hashes of stored step messages remembered (about 100 bytes each): the messages and chunks of the last prompts. */
const STORED_MESSAGES_CAP = 8192;
const MAX_PAGE_SIZE = 1000;

const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * Open (creating and migrating if needed) the SQLite database at `opts.path`. Throws {@link StoreError}:
 * `not_found` (read-only, no file), `schema_too_new` (written by a newer ccagent), `schema_outdated` (read-only, older
 * schema), `not_a_ccagent_db`, `migrations_missing`, `open_failed`.
 */
export function openSqliteStore(opts: SqliteStoreOptions): SqliteStore {
  const file = path.resolve(opts.path);
  const readonly = opts.readonly ?? false;
  const logger = opts.logger ?? silentLogger;
  if (readonly && !existsSync(file)) {
    throw new StoreError('not_found', `no ccagent database at ${file}`, { details: { path: file } });
  }
  let db: Database.Database;
  try {
    if (!readonly) mkdirSync(path.dirname(file), { recursive: true });
    db = new Database(file, readonly ? { readonly: true, fileMustExist: true } : {});
  } catch (cause) {
    throw new StoreError('open_failed', `cannot open ${file}: ${String(cause)}`, {
      cause,
      details: { path: file },
    });
  }
  try {
    const busyTimeoutMs = Math.max(0, Math.floor(opts.busyTimeoutMs ?? DEFAULT_BUSY_TIMEOUT_MS));
    db.pragma(`busy_timeout = ${readonly ? busyTimeoutMs : Math.min(busyTimeoutMs, WRITER_SYNC_BUSY_MS)}`);
    // Refuse a newer or foreign file before writing anything to it (even the journal mode).
    checkSchema(readSchemaInfo(db), file, readonly);
    if (!readonly) {
      db.pragma('journal_mode = WAL');
      db.pragma(`synchronous = ${opts.synchronous === 'normal' ? 'NORMAL' : 'FULL'}`);
      db.pragma('foreign_keys = ON');
      const applied = migrate(db, file);
      if (applied.length > 0) logger.info({ path: file, applied }, 'store: applied schema migrations');
    } else {
      db.pragma('foreign_keys = ON');
    }
    const store = new SqliteStore(db, file, readonly, logger, busyTimeoutMs);
    if (!readonly && opts.checkpointer !== false) {
      const sync = opts.synchronous === 'normal' ? 'normal' : 'full';
      store.checkpointer = startCheckpointer({ path: file, writer: db, logger, synchronous: sync });
    }
    return store;
  } catch (err) {
    db.close();
    if (isStoreError(err)) throw err;
    throw new StoreError('open_failed', `cannot open ${file}: ${String(err)}`, {
      cause: err,
      details: { path: file },
    });
  }
}

/**
 * The engine's {@link TaskStore} on SQLite (Drizzle + better-sqlite3), plus the queries the orchestrator and the CLI
 * need (task pages, clients, the model-written tools registry). Create it with {@link openSqliteStore}.
 *
 * Writes are group-committed (see `WriteQueue`): a write's promise resolves only after its transaction is durable.
 * Reads run synchronously on the same connection and see every resolved write.
 */
export class SqliteStore implements TaskStore {
  /** Absolute path of the database file. */
  readonly path: string;
  /** Schema version of the open file (always the current one: older files are migrated, newer ones refused). */
  readonly schemaVersion: number = SCHEMA_VERSION;
  /** True when opened read-only. */
  readonly readonly: boolean;
  private readonly orm: BetterSQLite3Database<typeof schema>;
  private readonly writes: WriteQueue;
  /** What each task's `task_memory` row holds as of the last commit, so unchanged memories are not rewritten. */
  private readonly memoryWrites = new MemoryWrites();
  /**
   * What each task's rows hold as of the last commit that the commit path checks or extends (status, the immutable
   * indexed columns, the last history and step `seq`), so a command round trip does not read them back: every change
   * to them is made by this connection's commits.
   */
  private readonly taskState = new CommittedState<TaskState>();
  /**
   * Hashes of `step_messages` rows known to be in the file as of the last commit (or written by the running
   * transaction), so a model step inserts only the messages and chunks that are new: most of a prompt repeats the
   * previous one. Staged like `taskState`: a rolled-back write's rows are forgotten with it. Bounded (oldest first).
   */
  private readonly storedMessages = new CommittedState<true>(STORED_MESSAGES_CAP);
  /** The hashes of recently seen message texts (a prompt repeats most of the last one's messages). */
  private readonly messageHashes = new MessageHashMemo();
  private closed = false;
  private readQueries: ReturnType<typeof prepareReads> | undefined;
  private writeQueries: ReturnType<typeof prepareWrites> | undefined;
  /** Outcome of the last write batch that reached a verdict: storage failures make `/health` say so. */
  private writeState: { ok: true } | { ok: false; code: StorageFailureCode; error: string; since: number } = {
    ok: true,
  };
  private probing: Promise<void> | undefined;
  /** The WAL checkpointer of a writer (see {@link SqliteStoreOptions.checkpointer}). @internal */
  checkpointer: Checkpointer | undefined;
  /** Prepared `listTasks` queries by filter shape (a handful at most). */
  private readonly listQueries = new Map<
    string,
    { all(params: Record<string, unknown>): TaskRowWithMemory[] }
  >();

  /** @internal Use {@link openSqliteStore}. */
  constructor(
    private readonly db: Database.Database,
    file: string,
    readonly: boolean,
    private readonly logger: Logger,
    lockTimeoutMs: number = DEFAULT_BUSY_TIMEOUT_MS,
  ) {
    this.path = file;
    this.readonly = readonly;
    this.orm = drizzle(db, { schema });
    this.writes = new WriteQueue(db, {
      mapError: toPortError,
      lockedError: (waitedMs) =>
        toPortError(
          new StoreError('locked', storageFailureMessage('locked', undefined, waitedMs), {
            details: { path: file, waitedMs: Math.round(waitedMs) },
          }),
        ),
      lockTimeoutMs,
      onOutcome: (o) => this.noteOutcome(o),
      transactions: {
        writeEnded: (kept) => {
          this.memoryWrites.writeEnded(kept);
          this.taskState.writeEnded(kept);
          this.storedMessages.writeEnded(kept);
        },
        committed: () => {
          this.memoryWrites.committed();
          this.taskState.committed();
          this.storedMessages.committed();
        },
        rolledBack: () => {
          this.memoryWrites.rolledBack();
          this.taskState.rolledBack();
          this.storedMessages.rolledBack();
        },
      },
    });
  }

  // ------------------------------------------------------------------ TaskStore port

  /**
   * One atomic, durable commit (see the engine's `TaskCommit`). The objects passed in must not be changed afterwards:
   * the task's memory is written into its `task_memory` row only when it is not the object this store last committed
   * for the task, and JSON encodings are reused for the same object.
   */
  commit(change: TaskCommit): Promise<CommitResult> {
    return this.write(() => this.applyCommit(change));
  }

  /** Append one step-log record; durable when the promise resolves. */
  appendStep(taskId: string, record: StepRecord & { step: number; at: number }): Promise<StoredStep> {
    return this.write(() => {
      const state = this.stateOf(taskId);
      if (state === undefined) throw new EngineError('task_not_found', `task ${taskId} not found`);
      const seq = (state.steps ?? this.lastSeq('steps', taskId)) + 1;
      this.insertStep(taskId, seq, record);
      this.keepState(taskId, { ...state, steps: seq });
      return recordToStep(taskId, seq, record);
    });
  }

  getTask(taskId: string): Promise<Task | undefined> {
    return this.read(() => {
      const row = this.r.getTask.get({ id: taskId });
      return row ? rowToTask(row) : undefined;
    });
  }

  /** Tasks matching the filter, oldest first (by `createdAt`, then id). */
  listTasks(filter: TaskFilter = {}): Promise<Task[]> {
    return this.read(() => {
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
        const q = selectTasks(this.orm)
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
    return this.read(() => this.r.getHistory.all({ taskId }).map(rowToHistory));
  }

  /**
   * Step log of a task in `seq` order, or one page of it (`afterSeq`, `limit`): a range scan of the steps primary key
   * `(task_id, seq)`, so reading the newest records of a long task costs what reading them from a short one does.
   */
  getSteps(taskId: string, query?: StepQuery): Promise<StoredStep[]> {
    return this.read(() => {
      const { afterSeq, limit } = normalizeStepQuery(query);
      // SQLite reads LIMIT -1 as "no limit".
      return this.rowsToSteps(this.r.getSteps.all({ taskId, afterSeq, limit: limit ?? -1 }));
    });
  }

  getCommandCall(callId: string): Promise<CommandCallRecord | undefined> {
    return this.read(() => {
      const row = this.r.getCall.get({ callId });
      return row ? rowToCall(row) : undefined;
    });
  }

  /**
   * Record the client a pending call is sent to (see the engine's `TaskStore.bindCall`): one UPDATE of the call row,
   * durable when this resolves, through the same group commit as every other write. The first binding holds.
   */
  bindCall(callId: string, clientId: string): Promise<CommandCallRecord> {
    if (typeof clientId !== 'string' || clientId.length === 0) {
      return Promise.reject(new EngineError('invalid_input', 'clientId must be a non-empty string'));
    }
    return this.write(() => {
      const bound = this.w.bindCall.run(clientId, callId).changes === 1;
      const row = this.r.getCall.get({ callId });
      if (!row) throw new EngineError('unknown_call', `no command call ${callId}`);
      if (!bound && row.status !== 'pending') {
        throw new EngineError('call_closed', `command call ${callId} is already ${row.status}`, {
          details: { callId, status: row.status },
        });
      }
      return rowToCall(row);
    });
  }

  /** Command calls matching the filter, in creation order. */
  listCommandCalls(filter: CommandCallFilter = {}): Promise<CommandCallRecord[]> {
    return this.read(() => {
      const conds: SQL[] = [];
      if (filter.taskId !== undefined) conds.push(eq(schema.commandCalls.taskId, filter.taskId));
      if (filter.status !== undefined)
        conds.push(inArray(schema.commandCalls.status, [filter.status].flat()));
      return this.orm
        .select()
        .from(schema.commandCalls)
        .where(and(...conds))
        .orderBy(asc(schema.commandCalls.createdAt), sql`rowid`)
        .all()
        .map(rowToCall);
    });
  }

  getQuestion(questionId: string): Promise<QuestionRecord | undefined> {
    return this.read(() => {
      const row = this.orm
        .select()
        .from(schema.questions)
        .where(eq(schema.questions.questionId, questionId))
        .get();
      return row ? rowToQuestion(row) : undefined;
    });
  }

  /** Questions of a task in the order they were asked. */
  listQuestions(taskId: string): Promise<QuestionRecord[]> {
    return this.read(() =>
      this.orm
        .select()
        .from(schema.questions)
        .where(eq(schema.questions.taskId, taskId))
        .orderBy(asc(schema.questions.askedAt), sql`rowid`)
        .all()
        .map(rowToQuestion),
    );
  }

  /** Commit whatever is queued, then close the connection. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    try {
      this.writes.flush(true);
    } finally {
      this.closed = true;
      this.db.close();
      // Last connection out: the worker's final checkpoint leaves a small WAL (never rejects).
      await this.checkpointer?.stop();
    }
  }

  // ------------------------------------------------------------------ queries for the orchestrator and the CLI

  /** One page of tasks (newest first by default) and the total matching the query. */
  listTasksPage(q: TaskPageQuery = {}): Promise<TaskPage> {
    return this.read(() => {
      const limit = q.limit ?? DEFAULT_PAGE_SIZE;
      const offset = q.offset ?? 0;
      if (!Number.isInteger(limit) || limit < 1 || limit > MAX_PAGE_SIZE) {
        throw new StoreError('invalid_input', `limit must be an integer in 1..${MAX_PAGE_SIZE}`, {
          details: { limit },
        });
      }
      if (!Number.isInteger(offset) || offset < 0) {
        throw new StoreError('invalid_input', 'offset must be an integer >= 0', { details: { offset } });
      }
      if (q.order !== undefined && q.order !== 'newest' && q.order !== 'oldest') {
        throw new StoreError('invalid_input', "order must be 'newest' or 'oldest'", {
          details: { order: q.order },
        });
      }
      const where = taskWhere(q);
      const dir = q.order === 'oldest' ? asc : desc;
      const rows = selectTasks(this.orm)
        .where(where)
        .orderBy(dir(schema.tasks.createdAt), dir(schema.tasks.id))
        .limit(limit)
        .offset(offset)
        .all();
      const total = this.orm.select({ n: count() }).from(schema.tasks).where(where).get()?.n ?? 0;
      return { tasks: rows.map(rowToTask), total };
    });
  }

  /** The latest `updatedAt` of any task (epoch ms), or undefined when there is none: when the last change was made. */
  lastTaskUpdateAt(): Promise<number | undefined> {
    return this.read(() => {
      const row = this.orm
        .select({ m: sql<number | null>`max(${schema.tasks.updatedAt})` })
        .from(schema.tasks)
        .get();
      return row?.m ?? undefined;
    });
  }

  /** Record a client's hello (or any sighting): commands, connection state, version. Creates it if new. */
  upsertClient(c: ClientUpsert): Promise<void> {
    return this.writeStore(() => {
      requireId(c.clientId, 'clientId');
      if (!Array.isArray(c.commands) || !c.commands.every((d) => d && typeof d.name === 'string' && d.name)) {
        throw new StoreError('invalid_input', 'commands must be an array of { name, … } descriptors', {
          details: { clientId: c.clientId },
        });
      }
      requireTime(c.seenAt, 'seenAt');
      const commands = JSON.stringify(c.commands);
      const set: Partial<typeof schema.clients.$inferInsert> = {
        commands,
        connected: c.connected,
        lastSeenAt: c.seenAt,
      };
      if (c.clientVersion !== undefined) set.clientVersion = c.clientVersion;
      this.orm
        .insert(schema.clients)
        .values({
          clientId: c.clientId,
          commands,
          connected: c.connected,
          clientVersion: c.clientVersion ?? null,
          firstSeenAt: c.seenAt,
          lastSeenAt: c.seenAt,
        })
        .onConflictDoUpdate({ target: schema.clients.clientId, set })
        .run();
    });
  }

  /** Mark a known client connected or disconnected at `at`. `StoreError('client_not_found')` for an unknown id. */
  setClientConnected(clientId: string, connected: boolean, at: number): Promise<void> {
    return this.writeStore(() => {
      requireId(clientId, 'clientId');
      requireTime(at, 'at');
      const r = this.orm
        .update(schema.clients)
        .set({ connected, lastSeenAt: at })
        .where(eq(schema.clients.clientId, clientId))
        .run();
      if (r.changes === 0) throw clientNotFound(clientId);
    });
  }

  /** Every client seen, by id. */
  listClients(): Promise<ClientRecord[]> {
    return this.read(() =>
      this.orm.select().from(schema.clients).orderBy(asc(schema.clients.clientId)).all().map(rowToClient),
    );
  }

  /**
   * Replace a client's model-written tools with what it just reported (`tools_update`), atomically. The client must
   * have been upserted first (`client_not_found`); names must be unique and statuses valid (`invalid_input`).
   */
  replaceClientTools(clientId: string, tools: ModelToolInfo[], at: number): Promise<void> {
    return this.writeStore(() => {
      requireId(clientId, 'clientId');
      requireTime(at, 'at');
      if (!Array.isArray(tools)) throw new StoreError('invalid_input', 'tools must be an array');
      const seen = new Set<string>();
      for (const t of tools) {
        if (typeof t?.name !== 'string' || t.name.length === 0) {
          throw new StoreError('invalid_input', 'every tool needs a non-empty name', {
            details: { clientId },
          });
        }
        if (seen.has(t.name)) {
          throw new StoreError('invalid_input', `tool "${t.name}" is listed twice`, {
            details: { clientId },
          });
        }
        seen.add(t.name);
        if (!MODEL_TOOL_STATUSES.includes(t.status)) {
          throw new StoreError(
            'invalid_input',
            `tool "${t.name}" has status "${String(t.status)}"; expected one of ${MODEL_TOOL_STATUSES.join(', ')}`,
            { details: { clientId, tool: t.name } },
          );
        }
        if (!Number.isInteger(t.version) || t.version < 0) {
          throw new StoreError('invalid_input', `tool "${t.name}" needs an integer version >= 0`, {
            details: { clientId, tool: t.name },
          });
        }
      }
      const known = this.orm
        .select({ id: schema.clients.clientId })
        .from(schema.clients)
        .where(eq(schema.clients.clientId, clientId))
        .get();
      if (!known) throw clientNotFound(clientId);
      this.orm.delete(schema.modelTools).where(eq(schema.modelTools.clientId, clientId)).run();
      if (tools.length > 0) {
        this.orm
          .insert(schema.modelTools)
          .values(
            tools.map((t) => ({
              clientId,
              name: t.name,
              status: t.status,
              version: t.version,
              description: t.description ?? null,
              file: t.file ?? null,
              updatedAt: t.updatedAt ?? null,
              recordedAt: at,
            })),
          )
          .run();
      }
    });
  }

  /** Model-written tools, by client then name. */
  listTools(filter: ToolFilter = {}): Promise<ModelToolRecord[]> {
    return this.read(() => {
      const conds: SQL[] = [];
      if (filter.clientId !== undefined) conds.push(eq(schema.modelTools.clientId, filter.clientId));
      if (filter.status !== undefined) conds.push(eq(schema.modelTools.status, filter.status));
      return this.orm
        .select()
        .from(schema.modelTools)
        .where(and(...conds))
        .orderBy(asc(schema.modelTools.clientId), asc(schema.modelTools.name))
        .all()
        .map(rowToTool);
    });
  }

  /**
   * Cheap health check for `/health`, no write: the connection is open, the schema answers a query, writes are not
   * waiting for another process's lock, and the last write batch did not fail for a storage reason (disk full,
   * locked, I/O). It turns healthy again as soon as a write succeeds ({@link probeHealth} tries one).
   */
  checkHealth(): StoreHealth {
    if (this.closed) return { ok: false, error: 'store is closed', code: 'closed' };
    try {
      this.db.prepare('SELECT count(*) FROM (SELECT 1 FROM tasks LIMIT 1)').get();
    } catch (err) {
      const code = storageFailureCode(err);
      return {
        ok: false,
        error: code ? storageFailureMessage(code, err) : errorMessage(err),
        code: code ?? 'sqlite_error',
      };
    }
    const waitSince = this.writes.lockWaitSince;
    if (waitSince !== undefined) {
      return {
        ok: false,
        code: 'locked',
        error: storageFailureMessage('locked', undefined, performance.now() - waitSince),
      };
    }
    const w = this.writeState;
    if (!w.ok) return { ok: false, error: w.error, code: w.code };
    return { ok: true };
  }

  /**
   * {@link checkHealth}, but while writes are failing and none is queued, first try one small real write (bounded
   * to a fraction of a second, never blocking the event loop) so that a cleared condition is noticed even when
   * nothing else writes.
   */
  async probeHealth(): Promise<StoreHealth> {
    if (!this.closed && !this.readonly && !this.writeState.ok && this.writes.size === 0) {
      this.probing ??= this.writes
        .enqueue(() => {
          // Re-stamps the same application id: a real page write (WAL frame + commit), changing nothing.
          this.db.pragma(`application_id = ${APPLICATION_ID}`);
        }, RERUNNABLE_PROBE)
        .then(
          () => undefined,
          () => undefined,
        )
        .finally(() => (this.probing = undefined));
      await this.probing;
    }
    return this.checkHealth();
  }

  private noteOutcome(o: BatchOutcome): void {
    if (o.ok) this.checkpointer?.nudge(); // a transaction committed: the WAL grew
    if (o.ok === false && o.busy) return; // live in checkHealth while the wait lasts; the verdict comes later
    const errors = o.ok ? o.writeErrors : [o.error];
    for (const err of errors) {
      const failure = findStorageFailure(err);
      if (failure === undefined) continue; // a logic error (conflict, unknown task…), not the storage's fault
      if (this.writeState.ok || this.writeState.code !== failure.code) {
        this.logger.error(
          { path: this.path, code: failure.code, err },
          `store: writes fail: ${failure.message}`,
        );
      }
      this.writeState = { ok: false, code: failure.code, error: failure.message, since: Date.now() };
      return;
    }
    if (o.ok) {
      if (!this.writeState.ok) this.logger.info({ path: this.path }, 'store: writes succeed again');
      this.writeState = { ok: true };
    }
  }

  // ------------------------------------------------------------------ internals

  private applyCommit(change: TaskCommit): CommitResult {
    const task = change.task;
    const id = task.id;
    const head = this.stateOf(id);
    const actual = head?.status;
    let row: ReturnType<typeof taskToRow>;
    if (change.create) {
      if (actual !== undefined) throw new EngineError('task_exists', `task ${id} already exists`);
      row = taskToRow(task, encodeJson);
      this.w.insertTask.run(row);
      this.w.insertMemory.run(id, memoryJson(task.memory));
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
        this.w.updateTaskState.run(row);
      } else {
        this.w.updateTask.run(row);
      }
      // The memory row only when the memory changed (most commits carry the object the last one wrote).
      const text = this.memoryWrites.textToWrite(id, task.memory);
      if (text !== undefined && this.w.updateMemory.run(text, id).changes === 0) {
        this.w.insertMemory.run(id, text); // a row lost by hand: put it back rather than lose the memory
      }
    }
    this.memoryWrites.wrote(id, task.memory, isTerminalStatus(task.status));
    const result: CommitResult = { history: [], steps: [] };
    // A new task has no history or steps yet (they reference it); a known one's last seqs as this connection left them.
    let lastHistory = head === undefined ? 0 : head.history;
    let lastStep = head === undefined ? 0 : head.steps;
    if (change.history && change.history.length > 0) {
      let seq = (lastHistory ?? this.lastSeq('history', id)) + 1;
      const rows = change.history.map((h) => historyToRow(id, seq++, h));
      for (const r of rows) this.w.insertHistory.run(r);
      result.history = rows.map(rowToHistory);
      lastHistory = seq - 1;
    }
    if (change.steps && change.steps.length > 0) {
      const first = (lastStep ?? this.lastSeq('steps', id)) + 1;
      change.steps.forEach((s, i) => this.insertStep(id, first + i, s));
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
      this.w.upsertCall.run(callToRow(change.commandCall));
    }
    if (change.question) {
      if (change.question.taskId !== id) {
        throw new EngineError(
          'invalid_input',
          `question ${change.question.questionId} belongs to another task`,
        );
      }
      const { questionId: _q, ...set } = questionToRow(change.question);
      this.orm
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

  /**
   * Insert one step row inside the running write: a packed model input's new messages and chunks first (INSERT OR
   * IGNORE, skipping the ones known to be stored), so the step never references a row its transaction did not see;
   * a rolled-back write takes both back, and they are forgotten as stored.
   */
  private insertStep(taskId: string, seq: number, record: StepRecord & { step: number; at: number }): void {
    const { row, messages } = packedStepToRow(taskId, seq, record, this.messageHashes.hash);
    if (messages.length > 0) {
      const insert = this.w.insertMessage;
      for (const m of messages) {
        if (this.storedMessages.get(m.hash) !== undefined) continue;
        insert.run(m.hash, m.body);
        this.storedMessages.set(m.hash, true);
      }
    }
    this.w.insertStep.run(row);
  }

  /**
   * Stored steps of step rows, their packed inputs rebuilt: the chunks every packed row of the page references are read
   * in one query, then the messages those chunks list in another (distinct hashes, as one JSON array parameter), not
   * one query per step or message.
   */
  private rowsToSteps(rows: Array<typeof schema.steps.$inferSelect>): StoredStep[] {
    let chunks: Set<string> | undefined;
    for (const r of rows) {
      if (r.input === null && r.inputPacked !== null) {
        chunks ??= new Set();
        for (const h of packedHashes(r.inputPacked)) chunks.add(h);
      }
    }
    if (chunks === undefined) return rows.map((r) => rowToStep(r));
    const bodies = new Map<string, string>();
    this.readMessages(chunks, bodies);
    const messages = new Set<string>();
    for (const h of chunks) {
      const body = bodies.get(h);
      if (body === undefined) continue; // missing: rowToStep names the step
      for (const m of chunkHashes(body)) if (!bodies.has(m)) messages.add(m);
    }
    if (messages.size > 0) this.readMessages(messages, bodies);
    return rows.map((r) => rowToStep(r, bodies));
  }

  /** Read the `step_messages` rows of `hashes` into `into` (one query). */
  private readMessages(hashes: Set<string>, into: Map<string, string>): void {
    const found = this.r.getMessages.all(JSON.stringify([...hashes])) as Array<{
      hash: string;
      body: string;
    }>;
    for (const m of found) into.set(m.hash, m.body);
  }

  /** The task's state as the running write sees it: remembered, else read from its row (`undefined`: no task). */
  private stateOf(id: string): TaskState | undefined {
    const known = this.taskState.get(id);
    if (known !== undefined) return known;
    const head = this.w.taskHead.get(id) as
      { status: TaskStatus; kind: string; clientId: string | null; createdAt: number } | undefined;
    return head && { ...head, history: undefined, steps: undefined };
  }

  /** The running write left the task in `state` (terminal tasks are forgotten: they are rarely written again). */
  private keepState(id: string, state: TaskState): void {
    if (isTerminalStatus(state.status)) this.taskState.forget(id);
    else this.taskState.set(id, state);
  }

  /** The largest `seq` of the task's history or steps in the database (0 when none). */
  private lastSeq(table: 'history' | 'steps', taskId: string): number {
    const q = table === 'history' ? this.w.historySeq : this.w.stepSeq;
    return (q.get(taskId) as { m: number }).m;
  }

  /** Prepared reads (Drizzle `.prepare()`, built once: building the query on every call was the main per-write cost). */
  private get r(): ReturnType<typeof prepareReads> {
    return (this.readQueries ??= prepareReads(this.orm, this.db));
  }

  /** Prepared writes, built on the first write (never on a read-only connection). */
  private get w(): ReturnType<typeof prepareWrites> {
    return (this.writeQueries ??= prepareWrites(this.orm, this.db));
  }

  /** A port write: EngineError on failure (the engine branches on its codes). */
  private write<T>(run: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new EngineError('store_failure', 'store is closed'));
    if (this.readonly) {
      return Promise.reject(new StoreError('readonly', `${this.path} is open read-only`));
    }
    return this.writes.enqueue(run, RERUNNABLE);
  }

  /** A store-specific write: StoreError on failure. */
  private writeStore<T>(run: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new StoreError('closed', 'store is closed'));
    if (this.readonly) return Promise.reject(new StoreError('readonly', `${this.path} is open read-only`));
    return this.writes.enqueue(run, RERUNNABLE).catch((err: unknown) => {
      if (isStoreError(err)) throw err;
      // A storage condition the queue reported in the port's terms: the StoreError it wraps.
      if (isEngineError(err) && isStoreError(err.cause)) throw err.cause;
      throw toStoreError(err);
    });
  }

  private read<T>(run: () => T): Promise<T> {
    if (this.closed) return Promise.reject(new EngineError('store_failure', 'store is closed'));
    try {
      return Promise.resolve(run());
    } catch (err) {
      this.logger.debug({ err }, 'store: read failed');
      return Promise.reject(isStoreError(err) || isEngineError(err) ? err : toPortError(err));
    }
  }
}

/**
 * JSON text of a task's JSON columns (allowed commands, metadata, budgets), reused for the same object (the engine's
 * `memoryJson`, which also encodes the memory): a command round trip commits the task twice and both commits carry
 * the same objects. Committed values are immutable by the port's contract (the engine copies before it changes
 * anything; strategies get them read-only).
 */
const encodeJson = (value: JsonValue | undefined): string => memoryJson(value);

/**
 * What a commit needs of a task's stored rows before it writes: the status check, the indexed immutable columns, and
 * the last `seq` of its history and steps (`undefined`: not known, read `max(seq)` when needed).
 */
interface TaskState {
  status: TaskStatus;
  kind: string;
  clientId: string | null;
  createdAt: number;
  history: number | undefined;
  steps: number | undefined;
}

/** `{ column: sql.placeholder(column) }` for every column of `table` (for prepared inserts and updates). */
function placeholders<T extends SQLiteTable>(table: T): T['$inferInsert'] {
  return Object.fromEntries(
    Object.keys(getTableColumns(table)).map((k) => [k, sql.placeholder(k)]),
  ) as unknown as T['$inferInsert'];
}

/**
 * `SELECT` of whole tasks: every `tasks` column and the task's memory from `task_memory` (a LEFT JOIN on its primary
 * key; every task has its row, written in the transaction that creates the task).
 */
function selectTasks(orm: BetterSQLite3Database<typeof schema>) {
  const { tasks, taskMemory } = schema;
  return orm
    .select({ ...getTableColumns(tasks), memory: taskMemory.memory })
    .from(tasks)
    .leftJoin(taskMemory, eq(taskMemory.taskId, tasks.id));
}

function prepareReads(orm: BetterSQLite3Database<typeof schema>, db: Database.Database) {
  const p = sql.placeholder;
  const { tasks, history, commandCalls } = schema;
  return {
    getTask: selectTasks(orm)
      .where(eq(tasks.id, p('id')))
      .prepare(),
    getHistory: orm
      .select()
      .from(history)
      .where(eq(history.taskId, p('taskId')))
      .orderBy(asc(history.seq))
      .prepare(),
    getSteps: stepsPageQuery(orm).prepare(),
    /** The model-input messages of the given hashes (a JSON array of them): primary-key lookups. */
    getMessages: db.prepare(
      'SELECT "hash", "body" FROM "step_messages" WHERE "hash" IN (SELECT "value" FROM json_each(?))',
    ),
    getCall: orm
      .select()
      .from(commandCalls)
      .where(eq(commandCalls.callId, p('callId')))
      .prepare(),
  };
}

/**
 * The step-log page query (`task_id = :taskId AND seq > :afterSeq ORDER BY seq LIMIT :limit`), built in one place so
 * a test can check SQLite answers it from the primary key index.
 */
export function stepsPageQuery(orm: BetterSQLite3Database<typeof schema>) {
  const p = sql.placeholder;
  const { steps } = schema;
  return orm
    .select()
    .from(steps)
    .where(and(eq(steps.taskId, p('taskId')), gt(steps.seq, p('afterSeq'))))
    .orderBy(asc(steps.seq))
    .limit(p('limit'));
}

/**
 * `"sql_name"` and `@propertyKey` of every column of `table` but `skip` (property keys): plain better-sqlite3
 * statements bind the codec's rows (keyed by property) directly.
 */
function columns(table: SQLiteTable, skip: string[] = []): Array<{ name: string; param: string }> {
  return Object.entries(getTableColumns(table))
    .filter(([key]) => !skip.includes(key))
    .map(([key, col]) => ({ name: `"${col.name}"`, param: `@${key}` }));
}

function insertSql(table: SQLiteTable, skip: string[] = []): string {
  const cols = columns(table, skip);
  return `INSERT INTO "${getTableName(table)}" (${cols.map((c) => c.name).join(', ')}) VALUES (${cols.map((c) => c.param).join(', ')})`;
}

/**
 * Statements of the commit path, as plain better-sqlite3 statements: run several times per command round trip, where
 * Drizzle's per-call placeholder filling over 20 columns was a visible share of the time. The SQL is built from the
 * Drizzle schema, so it follows the tables.
 */
function prepareWrites(orm: BetterSQLite3Database<typeof schema>, db: Database.Database) {
  const { tasks, history, steps, commandCalls } = schema;
  const set = (cols: Array<{ name: string; param: string }>) =>
    cols.map((c) => `${c.name} = ${c.param}`).join(', ');
  // A call's binding (`sentTo`) is written by bindCall only: a commit of the call neither sets nor clears it.
  const callCols = columns(commandCalls, ['callId', 'sentTo']);
  return {
    insertTask: orm.insert(tasks).values(placeholders(tasks)).prepare(),
    /** Every column but the id. */
    updateTask: db.prepare(`UPDATE "tasks" SET ${set(columns(tasks, ['id']))} WHERE "id" = @id`),
    /** Every column but the id and the indexed ones a task keeps for life (kind, client, creation time). */
    updateTaskState: db.prepare(
      `UPDATE "tasks" SET ${set(columns(tasks, ['id', 'kind', 'clientId', 'createdAt']))} WHERE "id" = @id`,
    ),
    taskHead: db.prepare(
      'SELECT "status", "kind", "client_id" AS "clientId", "created_at" AS "createdAt" FROM "tasks" WHERE "id" = ?',
    ),
    insertMemory: db.prepare('INSERT INTO "task_memory" ("task_id", "memory") VALUES (?, ?)'),
    updateMemory: db.prepare('UPDATE "task_memory" SET "memory" = ? WHERE "task_id" = ?'),
    historySeq: db.prepare('SELECT coalesce(max("seq"), 0) AS "m" FROM "history" WHERE "task_id" = ?'),
    stepSeq: db.prepare('SELECT coalesce(max("seq"), 0) AS "m" FROM "steps" WHERE "task_id" = ?'),
    insertHistory: db.prepare(insertSql(history)),
    insertStep: db.prepare(insertSql(steps)),
    /** A model-input message of a packed step (already stored: nothing to do). */
    insertMessage: db.prepare('INSERT OR IGNORE INTO "step_messages" ("hash", "body") VALUES (?, ?)'),
    upsertCall: db.prepare(
      `${insertSql(commandCalls, ['sentTo'])} ON CONFLICT ("call_id") DO UPDATE SET ${callCols
        .map((c) => `${c.name} = excluded.${c.name}`)
        .join(', ')}`,
    ),
    /** Bind a pending, not yet bound call (first binding wins); `changes` 0 otherwise. */
    bindCall: db.prepare(
      'UPDATE "command_calls" SET "sent_to" = ? WHERE "call_id" = ? AND "status" = \'pending\' AND "sent_to" IS NULL',
    ),
  };
}

function taskWhere(f: {
  status?: TaskStatus | TaskStatus[];
  kind?: string;
  clientId?: string;
  updatedSince?: number;
}): SQL | undefined {
  const conds: SQL[] = [];
  if (f.status !== undefined) conds.push(inArray(schema.tasks.status, [f.status].flat()));
  if (f.kind !== undefined) conds.push(eq(schema.tasks.kind, f.kind));
  if (f.clientId !== undefined) conds.push(eq(schema.tasks.clientId, f.clientId));
  if (f.updatedSince !== undefined) conds.push(gte(schema.tasks.updatedAt, f.updatedSince));
  return and(...conds);
}

/**
 * What a `TaskStore` method rejects with: the engine's own errors as they are; a storage condition (locked, disk
 * full, I/O) as `EngineError('store_failure')` whose message says what is wrong and whose `cause` is the
 * `StoreError` with the precise code (callers find it with `findStorageFailure`); anything else as `store_failure`.
 */
function toPortError(err: unknown): unknown {
  if (isEngineError(err)) return err;
  const failure = isStoreError(err) ? err : storageFailureCode(err) ? toStoreError(err) : undefined;
  if (failure && (failure.code === 'locked' || failure.code === 'disk_full' || failure.code === 'io_error')) {
    return new EngineError('store_failure', failure.message, {
      cause: failure,
      details: { storeCode: failure.code },
    });
  }
  if (isStoreError(err)) return err;
  return new EngineError('store_failure', `SQLite store failed: ${errorMessage(err)}`, { cause: err });
}

/** A SQLite error as a `StoreError`: `locked` / `disk_full` / `io_error` when it is one of those, else `sqlite_error`. */
function toStoreError(err: unknown): StoreError {
  const code = storageFailureCode(err);
  if (code) return new StoreError(code, storageFailureMessage(code, err), { cause: err });
  return new StoreError('sqlite_error', errorMessage(err), { cause: err });
}

function errorMessage(err: unknown): string {
  return err instanceof Error ? err.message : String(err);
}

function requireId(value: unknown, field: string): void {
  if (typeof value !== 'string' || value.length === 0) {
    throw new StoreError('invalid_input', `${field} must be a non-empty string`, { details: { field } });
  }
}

function requireTime(value: unknown, field: string): void {
  if (typeof value !== 'number' || !Number.isFinite(value)) {
    throw new StoreError('invalid_input', `${field} must be a finite number (epoch ms)`, {
      details: { field },
    });
  }
}

function clientNotFound(clientId: string): StoreError {
  return new StoreError('client_not_found', `no client ${clientId} has been seen`, { details: { clientId } });
}
