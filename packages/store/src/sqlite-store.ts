/**
 * The SQLite store: {@link openSqliteStore} opens (creating and migrating) a file, and {@link SqliteStore} is the
 * engine's `TaskStore` on it plus the queries the orchestrator and the CLI share. This file is the facade; each
 * concern has its own file under sqlite/ (a second store implementation can follow the same layout):
 *
 * - sqlite/connection.ts — the open file, the group-commit write queue, prepared statements, state kept beside the
 *   database (follows COMMIT), read/write wrappers and their error mapping;
 * - sqlite/tasks.ts — tasks and calls: the engine's commit, reads of tasks/history/calls/questions, call binding,
 *   task pages;
 * - sqlite/steps.ts — the step log (packed model inputs) and its pages;
 * - sqlite/clients.ts — clients and their model-written tools;
 * - sqlite/health.ts — the store's health for `/health`;
 * - sqlite/statements.ts — the SQL, built from the Drizzle schema.
 */
import { existsSync, mkdirSync } from 'node:fs';
import path from 'node:path';
import type {
  CommandCallFilter,
  CommandCallRecord,
  CommitResult,
  HistoryEntry,
  Logger,
  QuestionRecord,
  StepQuery,
  StepRecord,
  StoredStep,
  Task,
  TaskCommit,
  TaskFilter,
  TaskStore,
} from '@ccagent/engine';
import Database from 'better-sqlite3';
import { SecurityTables } from './security-tables.js';
import { SqliteScheduleTables } from './schedule-tables.js';
import { SqliteTaskKindTables } from './task-kind-tables.js';
import { SqliteMinecraftActivity } from './minecraft-activity-tables.js';
import { startCheckpointer, type Checkpointer } from './checkpointer.js';
import { checkSchema, migrate, readSchemaInfo, SCHEMA_VERSION } from './migrate.js';
import { SqliteClients } from './sqlite/clients.js';
import { DEFAULT_BUSY_TIMEOUT_MS, SqliteConnection } from './sqlite/connection.js';
import { WriteHealth } from './sqlite/health.js';
import { SqliteStepLog } from './sqlite/steps.js';
import { SqliteTasks } from './sqlite/tasks.js';
import {
  type ClientRecord,
  type ClientUpsert,
  isStoreError,
  type ModelToolInfo,
  type ModelToolRecord,
  StoreError,
  type StoreHealth,
  type TaskPage,
  type TaskPageQuery,
  type ToolFilter,
} from '@ccagent/store-core';

export { stepsPageQuery } from './sqlite/statements.js';

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

/** SQLite `busy_timeout` of a writer: the longest a single attempt may block the event loop waiting for a lock. */
const WRITER_SYNC_BUSY_MS = 5;

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
    let checkpointer: Checkpointer | undefined;
    if (!readonly && opts.checkpointer !== false) {
      const sync = opts.synchronous === 'normal' ? 'normal' : 'full';
      checkpointer = startCheckpointer({ path: file, writer: db, logger, synchronous: sync });
    }
    return new SqliteStore(db, file, readonly, logger, busyTimeoutMs, checkpointer);
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
  /** The WAL checkpointer of a writer (see {@link SqliteStoreOptions.checkpointer}). @internal */
  readonly checkpointer: Checkpointer | undefined;
  private readonly c: SqliteConnection;
  private readonly health: WriteHealth;
  private readonly tasks: SqliteTasks;
  private readonly steps: SqliteStepLog;
  private readonly clients: SqliteClients;
  /** Credentials, enrollment codes and the audit log (schema version 6). */
  readonly security: SecurityTables;
  /** Durable schedules and their firings (schema version 8): the engine's `ScheduleStore`. */
  readonly schedules: SqliteScheduleTables;
  /** Task kinds saved at run time (schema version 10): the engine's `TaskKindStore`. */
  readonly taskKinds: SqliteTaskKindTables;
  /** A Minecraft instance's last log lines and ended actions (schema version 11): the engine's `MinecraftActivityStore`. */
  readonly minecraftActivity: SqliteMinecraftActivity;

  /** @internal Use {@link openSqliteStore}. */
  constructor(
    db: Database.Database,
    file: string,
    readonly: boolean,
    logger: Logger,
    lockTimeoutMs: number = DEFAULT_BUSY_TIMEOUT_MS,
    checkpointer?: Checkpointer,
  ) {
    this.path = file;
    this.readonly = readonly;
    this.checkpointer = checkpointer;
    const health = new WriteHealth(file, logger);
    this.health = health;
    this.c = new SqliteConnection(db, file, readonly, logger, checkpointer, lockTimeoutMs, (o) =>
      health.noteOutcome(o),
    );
    this.steps = new SqliteStepLog(this.c);
    this.tasks = new SqliteTasks(this.c, this.steps);
    this.clients = new SqliteClients(this.c);
    const c = this.c;
    this.security = new SecurityTables({
      orm: c.orm,
      write: (run) => c.writeStore(run),
      read: (run) => c.read(run),
    });
    this.schedules = new SqliteScheduleTables({
      orm: c.orm,
      write: (run) => c.write(run),
      read: (run) => c.read(run),
    });
    this.taskKinds = new SqliteTaskKindTables({
      orm: c.orm,
      write: (run) => c.write(run),
      read: (run) => c.read(run),
    });
    this.minecraftActivity = new SqliteMinecraftActivity({
      orm: c.orm,
      write: (run) => c.write(run),
      read: (run) => c.read(run),
    });
  }

  // The connection's state, as the store's own tests inspect it (they read these by name).
  private get db(): Database.Database {
    return this.c.db;
  }
  private get r(): SqliteConnection['r'] {
    return this.c.r;
  }
  private get memoryWrites(): SqliteConnection['memoryWrites'] {
    return this.c.memoryWrites;
  }
  private get taskState(): SqliteConnection['taskState'] {
    return this.c.taskState;
  }

  // ------------------------------------------------------------------ TaskStore port (sqlite/tasks.ts, steps.ts)

  /**
   * One atomic, durable commit (see the engine's `TaskCommit`). The objects passed in must not be changed afterwards:
   * the task's memory is written into its `task_memory` row only when it is not the object this store last committed
   * for the task, and JSON encodings are reused for the same object.
   */
  commit(change: TaskCommit): Promise<CommitResult> {
    return this.tasks.commit(change);
  }

  /** Append one step-log record; durable when the promise resolves. */
  appendStep(taskId: string, record: StepRecord & { step: number; at: number }): Promise<StoredStep> {
    return this.tasks.appendStep(taskId, record);
  }

  getTask(taskId: string): Promise<Task | undefined> {
    return this.tasks.getTask(taskId);
  }

  /** Tasks matching the filter, oldest first (by `createdAt`, then id). */
  listTasks(filter: TaskFilter = {}): Promise<Task[]> {
    return this.tasks.listTasks(filter);
  }

  getHistory(taskId: string): Promise<HistoryEntry[]> {
    return this.tasks.getHistory(taskId);
  }

  /**
   * Step log of a task in `seq` order, or one page of it (`afterSeq`, `limit`): a range scan of the steps primary key
   * `(task_id, seq)`, so reading the newest records of a long task costs what reading them from a short one does.
   */
  getSteps(taskId: string, query?: StepQuery): Promise<StoredStep[]> {
    return this.steps.getSteps(taskId, query);
  }

  getCommandCall(callId: string): Promise<CommandCallRecord | undefined> {
    return this.tasks.getCommandCall(callId);
  }

  /**
   * Record the client a pending call is sent to (see the engine's `TaskStore.bindCall`): one UPDATE of the call row,
   * durable when this resolves, through the same group commit as every other write. The first binding holds.
   */
  bindCall(callId: string, clientId: string): Promise<CommandCallRecord> {
    return this.tasks.bindCall(callId, clientId);
  }

  /** Command calls matching the filter, in creation order. */
  listCommandCalls(filter: CommandCallFilter = {}): Promise<CommandCallRecord[]> {
    return this.tasks.listCommandCalls(filter);
  }

  getQuestion(questionId: string): Promise<QuestionRecord | undefined> {
    return this.tasks.getQuestion(questionId);
  }

  /** Questions of a task in the order they were asked. */
  listQuestions(taskId: string): Promise<QuestionRecord[]> {
    return this.tasks.listQuestions(taskId);
  }

  /** Commit whatever is queued, then close the connection. Idempotent. */
  close(): Promise<void> {
    return this.c.close();
  }

  // ------------------------------------------------------------------ queries for the orchestrator and the CLI

  /** One page of tasks (newest first by default) and the total matching the query. */
  listTasksPage(q: TaskPageQuery = {}): Promise<TaskPage> {
    return this.tasks.listTasksPage(q);
  }

  /** The latest `updatedAt` of any task (epoch ms), or undefined when there is none: when the last change was made. */
  lastTaskUpdateAt(): Promise<number | undefined> {
    return this.tasks.lastTaskUpdateAt();
  }

  /** Record a client's hello (or any sighting): commands, connection state, version. Creates it if new. */
  upsertClient(c: ClientUpsert): Promise<void> {
    return this.clients.upsertClient(c);
  }

  /** Mark a known client connected or disconnected at `at`. `StoreError('client_not_found')` for an unknown id. */
  setClientConnected(clientId: string, connected: boolean, at: number): Promise<void> {
    return this.clients.setClientConnected(clientId, connected, at);
  }

  /** Every client seen, by id. */
  listClients(): Promise<ClientRecord[]> {
    return this.clients.listClients();
  }

  /**
   * Replace a client's model-written tools with what it just reported (`tools_update`), atomically. The client must
   * have been upserted first (`client_not_found`); names must be unique and statuses valid (`invalid_input`).
   */
  replaceClientTools(clientId: string, tools: ModelToolInfo[], at: number): Promise<void> {
    return this.clients.replaceClientTools(clientId, tools, at);
  }

  /** Model-written tools, by client then name. */
  listTools(filter: ToolFilter = {}): Promise<ModelToolRecord[]> {
    return this.clients.listTools(filter);
  }

  /**
   * Cheap health check for `/health`, no write: the connection is open, the schema answers a query, writes are not
   * waiting for another process's lock, and the last write batch did not fail for a storage reason (disk full,
   * locked, I/O). It turns healthy again as soon as a write succeeds ({@link probeHealth} tries one).
   */
  checkHealth(): StoreHealth {
    return this.health.checkHealth(this.c);
  }

  /**
   * {@link checkHealth}, but while writes are failing and none is queued, first try one small real write (bounded
   * to a fraction of a second, never blocking the event loop) so that a cleared condition is noticed even when
   * nothing else writes.
   */
  probeHealth(): Promise<StoreHealth> {
    return this.health.probeHealth(this.c);
  }
}
