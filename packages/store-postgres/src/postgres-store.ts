/**
 * `PostgresStore`: the engine's `TaskStore` port on PostgreSQL, plus the store-specific queries (task pages, clients,
 * tools, health) the orchestrator and CLI use, behind the write fence of the leader lease.
 *
 * Size (over 500 lines): one class implementing a wide port (about forty methods, most a few lines over a prepared
 * query). The parts that stand alone are already out: the write queue (write-queue.ts), staging of committed state
 * (staged.ts), the lease (lease.ts), error mapping (errors.ts), migrations and the schema. Splitting the class by
 * table like packages/store/src/sqlite/ is the next step, left until the security tables land here too.
 */
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
import {
  MessageHashMemo,
  StoreError,
  bindClientRefusal,
  bindingRefusal,
  callToRow,
  chunkHashes,
  clientNotFound,
  storageFailureOf,
  historyToRow,
  isStoreError,
  packedHashes,
  packedStepToRow,
  pageOf,
  questionToRow,
  recordToStep,
  requireId,
  requireTime,
  rowToCall,
  rowToClient,
  rowToHistory,
  rowToQuestion,
  rowToStep,
  rowToTask,
  rowToTool,
  taskToRow,
  validateClientUpsert,
  validateTools,
  type ClientRecord,
  type ClientUpsert,
  type ModelToolInfo,
  type ModelToolRecord,
  type StoreErrorCode,
  type StoreHealth,
  type TaskPage,
  type TaskPageQuery,
  type TaskRowWithMemory,
  type ToolFilter,
} from '@ccagent/store-core';
import { and, asc, count, desc, eq, inArray, sql, type SQL as DrizzleSQL } from 'drizzle-orm';
import { drizzle, type NodePgDatabase } from 'drizzle-orm/node-postgres';
import pg from 'pg';
import { toPortError, toStoreError } from './errors.js';
import { checkPgSchema, migratePg, readPgSchemaVersion, PG_SCHEMA_VERSION } from './migrate.js';
import * as schema from './schema.js';
import { PgSecurityTables } from './security-tables.js';
import { PgScheduleTables } from './schedule-tables.js';
import { PgTaskKindTables } from './task-kind-tables.js';
import { PgSettingsDocument } from './settings-documents.js';
import { PgMinecraftActivity } from './minecraft-activity-tables.js';
import { SQL, valuesOf } from './sql.js';
import { Staged } from './staged.js';
import { RowGroups } from './row-groups.js';
import { PgWriteQueue, Sent, type BatchOutcome, type Work } from './write-queue.js';

/** Options of {@link openPostgresStore}. */
export interface PostgresStoreOptions {
  /** Connection URL, `postgres://user:password@host:port/database` (libpq-style parameters allowed). */
  url: string;
  /**
   * Open for reading only (the CLI): never migrates, never writes; the schema must be the current one. A read-only
   * store still connects with the URL's role: give the CLI a role with SELECT rights only if that matters.
   */
  readonly?: boolean;
  /** Connections for reads (default 4). Writes use one connection of their own. */
  readConnections?: number;
  /** How long to wait for a connection before failing (ms, default 5000). */
  connectTimeoutMs?: number;
  logger?: Logger;
}

/** Something that says which fencing token a write transaction must find in the lease row (see `LeaderLease`). */
export interface WriteFence {
  /** Lease name (row of `leases`). */
  readonly name: string;
  /** The token this process holds, or undefined when it holds none (then every write is refused). */
  readonly token: number | undefined;
}

/** Hashes of step messages known to be stored (about 100 bytes each). */
const STORED_MESSAGES_CAP = 8192;

const silentLogger: Logger = { debug: () => {}, info: () => {}, warn: () => {}, error: () => {} };

/**
 * `int8` (bigint) columns as JS numbers: every one of them holds epoch milliseconds, a timeout or an identity, far
 * below 2^53. Per connection (not `pg.types`, which is process-wide).
 */
const pgTypes = {
  getTypeParser: ((oid: number, format?: 'text' | 'binary') =>
    oid === 20
      ? (v: string) => Number(v)
      : pg.types.getTypeParser(oid, format)) as typeof pg.types.getTypeParser,
};

/** `postgres://user:secret@host/db` with the password hidden, for messages and logs. */
export function redactUrl(url: string): string {
  try {
    const u = new URL(url);
    if (u.password) u.password = '***';
    return u.toString();
  } catch {
    return 'postgres://(unparsable URL)';
  }
}

/**
 * Connect to the PostgreSQL database at `opts.url`, migrate it (unless `readonly`) and return the store. Rejects with
 * `StoreError`: `open_failed` (cannot connect or authenticate), `schema_too_new`, `schema_outdated` (read-only),
 * `not_a_ccagent_db`, `migrations_missing`.
 */
export async function openPostgresStore(opts: PostgresStoreOptions): Promise<PostgresStore> {
  const logger = opts.logger ?? silentLogger;
  const where = redactUrl(opts.url);
  const config: pg.PoolConfig = {
    connectionString: opts.url,
    connectionTimeoutMillis: opts.connectTimeoutMs ?? 5000,
    application_name: 'ccagent',
    types: pgTypes,
  };
  const pool = new pg.Pool({ ...config, max: Math.max(1, opts.readConnections ?? 4) });
  // An idle connection the server dropped: the pool replaces it; the next query reports a real failure.
  pool.on('error', (err) => logger.warn({ err }, 'store: idle PostgreSQL connection lost'));
  let client: pg.PoolClient;
  try {
    client = await pool.connect();
  } catch (cause) {
    await pool.end().catch(() => undefined);
    throw new StoreError('open_failed', `cannot connect to ${where}: ${(cause as Error).message}`, {
      cause,
      details: { database: where },
    });
  }
  try {
    if (opts.readonly) checkPgSchema(await readPgSchemaVersion(client), where, true);
    else {
      const applied = await migratePg(client, where);
      if (applied.length > 0) logger.info({ database: where, applied }, 'store: applied schema migrations');
    }
  } catch (err) {
    client.release();
    await pool.end().catch(() => undefined);
    if (isStoreError(err)) throw err;
    throw new StoreError('open_failed', `cannot open ${where}: ${(err as Error).message}`, {
      cause: err,
      details: { database: where },
    });
  }
  client.release();
  return new PostgresStore(pool, config, where, opts.readonly ?? false, logger);
}

/**
 * The engine's {@link TaskStore} on PostgreSQL (Drizzle's PostgreSQL dialect on node-postgres), plus the queries the
 * orchestrator and the CLI need (task pages, clients, model-written tools, health) — the surface of
 * `@ccagent/store`'s `SqliteStore`, with the same rows, step-log packing and read-back. Create it with
 * {@link openPostgresStore}.
 *
 * Writes are group-committed on one connection (see `PgWriteQueue`): a write's promise resolves only after its
 * transaction committed. Reads use a pool and see every resolved write. With {@link fenceWith}, every write
 * transaction first checks the lease row (see `LeaderLease`): once another process took the lease, nothing more is
 * written.
 */
export class PostgresStore implements TaskStore {
  /** The database, password hidden (for logs, `/health` and the CLI's label). */
  readonly path: string;
  /** Schema version of the database (always the current one: older ones are migrated, newer ones refused). */
  readonly schemaVersion: number = PG_SCHEMA_VERSION;
  readonly readonly: boolean;
  private readonly orm: NodePgDatabase<typeof schema>;
  private readonly writes: PgWriteQueue;
  private fence: WriteFence | undefined;
  private closed = false;
  /** Hashes of `step_messages` rows committed (bounded, oldest first); a batch's own are staged until it commits. */
  private readonly storedMessages = new Set<string>();
  private stagedMessages: string[] = [];
  private readonly messageHashes = new MessageHashMemo();
  /**
   * Each task's status and last history/step seq as committed by this store, so a command round trip does not read
   * them back (one round trip per commit fewer). Sound while this store is the database's only writer — the leader
   * lease makes it so for orchestrators (see `Staged`).
   */
  private readonly heads = new Staged<TaskHead>();
  /** The memory object each task's `task_memory` row was last written with (immutable by the port's contract). */
  private readonly memories = new Staged<JsonValue>();
  /**
   * The rows the running batch's commits and appended steps write, one statement per table at the flush (before
   * COMMIT, or before any statement of another write) instead of a statement per row per write.
   */
  private readonly rows = new RowGroups<keyof typeof SQL.rows>([
    { name: 'insertTasks', statement: SQL.rows.insertTasks },
    { name: 'updateTasks', statement: SQL.rows.updateTasks, keyed: true },
    { name: 'insertMemory', statement: SQL.rows.insertMemory },
    { name: 'upsertMemory', statement: SQL.rows.upsertMemory, keyed: true },
    { name: 'insertHistory', statement: SQL.rows.insertHistory },
    { name: 'insertMessages', statement: SQL.rows.insertMessages, keyed: true },
    { name: 'insertSteps', statement: SQL.rows.insertSteps },
    { name: 'upsertCalls', statement: SQL.rows.upsertCalls, keyed: true },
    { name: 'upsertQuestions', statement: SQL.rows.upsertQuestions, keyed: true },
  ]);
  private writeState: { ok: true } | { ok: false; code: StoreErrorCode; error: string } = { ok: true };
  /**
   * Credentials, enrollment codes, pairing requests and the audit log, in this database: shared by every
   * orchestrator using it, kept across restarts. Writes go through this store's write queue (durable and fenced).
   */
  readonly security: PgSecurityTables;
  /** Durable schedules and their firings (schema version 3): the engine's `ScheduleStore`, writes fenced. */
  readonly schedules: PgScheduleTables;
  /** Task kinds saved at run time (schema version 5): the engine's `TaskKindStore`, writes fenced. */
  readonly taskKinds: PgTaskKindTables;
  /**
   * The Minecraft side's settings document (schema version 6): active instance and action allow/deny lists, saved
   * fenced through the write queue like the schedules.
   */
  readonly minecraftSettings: PgSettingsDocument;
  /** The operators' screen mirror switches (a document of the same settings table, key `screen_switches`). */
  readonly screenSwitches: PgSettingsDocument;
  /** A Minecraft instance's last log lines and ended actions (schema version 7), written fenced through the write queue. */
  readonly minecraftActivity: PgMinecraftActivity;

  /** @internal Use {@link openPostgresStore}. */
  constructor(
    private readonly pool: pg.Pool,
    config: pg.ClientConfig,
    where: string,
    readonly: boolean,
    private readonly logger: Logger,
  ) {
    this.path = where;
    this.readonly = readonly;
    this.orm = drizzle(pool, { schema });
    this.writes = new PgWriteQueue({
      connect: async () => {
        // Pipelined: a write batch's statements go out without waiting for each other's answers (see PgWriteQueue).
        const c = new pg.Client({ ...config, pipeline: true });
        c.on('error', (err) => logger.warn({ err }, 'store: PostgreSQL writer connection lost'));
        await c.connect();
        return c;
      },
      begin: (c) => this.begin(c),
      onWriteEnded: (kept) => {
        this.heads.writeEnded(kept);
        this.memories.writeEnded(kept);
      },
      flush: (c) => this.rows.flush(c),
      discard: (reason) => this.rows.discard(reason),
      mapError: toPortError,
      onOutcome: (o) => this.noteOutcome(o),
      onCommitted: () => {
        for (const h of this.stagedMessages) this.rememberMessage(h);
        this.stagedMessages = [];
        this.heads.committed();
        this.memories.committed();
      },
      onRolledBack: () => {
        this.rows.discard(new Error('the write transaction was rolled back'));
        this.stagedMessages = [];
        this.heads.rolledBack();
        this.memories.rolledBack();
      },
    });
    this.security = new PgSecurityTables({
      read: (run) => this.readStore(() => run(this.pool)),
      write: (run) => this.writeStore(run),
    });
    this.schedules = new PgScheduleTables({
      read: (run) => this.read(() => run(this.pool)),
      write: (run) => this.write(run),
    });
    this.taskKinds = new PgTaskKindTables({
      read: (run) => this.read(() => run(this.pool)),
      write: (run) => this.write(run),
    });
    this.minecraftSettings = new PgSettingsDocument(
      {
        read: (run) => this.read(() => run(this.pool)),
        write: (run) => this.write(run),
      },
      'seat',
    );
    this.screenSwitches = new PgSettingsDocument(
      {
        read: (run) => this.read(() => run(this.pool)),
        write: (run) => this.write(run),
      },
      'screen_switches',
    );
    this.minecraftActivity = new PgMinecraftActivity({
      read: (run) => this.read(() => run(this.pool)),
      write: (run) => this.write(run),
    });
  }

  /**
   * Make every later write transaction check `fence` first: it must find the lease row with the fence's token, and
   * holds a share lock on that row until it commits (a takeover waits for it). A write that finds another token, or
   * runs while the fence holds none, is refused with `EngineError('store_failure')` wrapping `StoreError('fenced')`.
   */
  fenceWith(fence: WriteFence): void {
    this.fence = fence;
  }

  // ------------------------------------------------------------------ TaskStore port

  /** One atomic commit (see the engine's `TaskCommit`), committed when the promise resolves. */
  commit(change: TaskCommit): Promise<CommitResult> {
    return this.write((c) => {
      // The hot path: the task's head is known (or it is new), so its rows join the batch's grouped statements (one
      // round trip per batch). A create of an id that exists fails on the primary key (see sendCommit).
      const head = this.heads.get(change.task.id);
      return head === undefined && !change.create
        ? this.applyCommit(c, change)
        : new Sent(this.sendCommit(change, head));
    }, true);
  }

  /** Append one step-log record; committed when the promise resolves. */
  appendStep(taskId: string, record: StepRecord & { step: number; at: number }): Promise<StoredStep> {
    /** Sends the step row (and its new messages) and stages the head; settles with the answers. */
    const append = (head: TaskHead): Promise<StoredStep> => {
      const seq = head.steps + 1;
      const inserted = this.insertSteps(taskId, seq, [record]);
      this.keepHead(taskId, { ...head, steps: seq });
      return inserted.then(() => recordToStep(taskId, seq, record));
    };
    return this.write((c) => {
      const known = this.heads.get(taskId);
      if (known !== undefined) return new Sent(append(known));
      return (async () => {
        this.rows.flush(c); // the head is read from the rows: the batch's own go first
        const head = await this.head(c, taskId);
        if (head === undefined) throw new EngineError('task_not_found', `task ${taskId} not found`);
        const appended = append(head);
        this.rows.flush(c); // this write waits for its answer
        return appended;
      })();
    }, true);
  }

  getTask(taskId: string): Promise<Task | undefined> {
    return this.read(async () => {
      const r = await this.pool.query<TaskRowWithMemory>(`${SQL.selectTask} WHERE t."id" = $1`, [taskId]);
      const row = r.rows[0];
      return row ? rowToTask(row) : undefined;
    });
  }

  /** Tasks matching the filter, oldest first (by `createdAt`, then id). */
  listTasks(filter: TaskFilter = {}): Promise<Task[]> {
    return this.read(async () => {
      const conds: string[] = [];
      const params: unknown[] = [];
      const add = (cond: (n: string) => string, v: unknown) => {
        params.push(v);
        conds.push(cond(`$${params.length}`));
      };
      if (filter.status !== undefined) add((n) => `t."status" = ANY(${n}::text[])`, [filter.status].flat());
      if (filter.kind !== undefined) add((n) => `t."kind" = ${n}`, filter.kind);
      if (filter.clientId !== undefined) add((n) => `t."client_id" = ${n}`, filter.clientId);
      if (filter.updatedSince !== undefined) add((n) => `t."updated_at" >= ${n}`, filter.updatedSince);
      let text = SQL.selectTask;
      if (conds.length > 0) text += ` WHERE ${conds.join(' AND ')}`;
      text += ' ORDER BY t."created_at", t."id"';
      if (filter.limit !== undefined) {
        params.push(Math.max(0, Math.floor(filter.limit)));
        text += ` LIMIT $${params.length}`;
      }
      const r = await this.pool.query<TaskRowWithMemory>(text, params);
      return r.rows.map(rowToTask);
    });
  }

  getHistory(taskId: string): Promise<HistoryEntry[]> {
    return this.read(async () => {
      const r = await this.pool.query<typeof schema.history.$inferSelect>(SQL.selectHistory, [taskId]);
      return r.rows.map(rowToHistory);
    });
  }

  /** Step log of a task in `seq` order, or one page of it: a range scan of the primary key `(task_id, seq)`. */
  getSteps(taskId: string, query?: StepQuery): Promise<StoredStep[]> {
    return this.read(async () => {
      const { afterSeq, limit } = normalizeStepQuery(query);
      const r = await this.pool.query<typeof schema.steps.$inferSelect>(SQL.selectSteps, [
        taskId,
        afterSeq,
        limit ?? null,
      ]);
      return this.rowsToSteps(r.rows);
    });
  }

  getCommandCall(callId: string): Promise<CommandCallRecord | undefined> {
    return this.read(async () => {
      const r = await this.pool.query<CallRow>(SQL.selectCall, [callId]);
      const row = r.rows[0];
      return row ? rowToCall(row) : undefined;
    });
  }

  /** Record the client a pending call is sent to (first binding holds); committed when this resolves. */
  bindCall(callId: string, clientId: string): Promise<CommandCallRecord> {
    const badClient = bindClientRefusal(clientId);
    if (badClient) return Promise.reject(badClient);
    // Both statements at once; a refusal changed nothing (the UPDATE matched no row), as `Sent` requires.
    return this.write((c) => {
      const update = c.query(named('bind_call', SQL.bindCall, [clientId, callId]));
      const select = c.query<CallRow>(named('select_call', SQL.selectCall, [callId]));
      return new Sent(Promise.all([update, select]).then(([u, s]) => this.boundCall(callId, u, s)));
    });
  }

  /** The call after a bind: the first binding holds; an unknown or closed call is refused. */
  private boundCall(
    callId: string,
    update: pg.QueryResult,
    select: pg.QueryResult<CallRow>,
  ): CommandCallRecord {
    const row = select.rows[0];
    const refused = bindingRefusal(callId, update.rowCount === 1, row?.status);
    if (refused) throw refused;
    return rowToCall(row as CallRow);
  }

  /** Command calls matching the filter, in creation order. */
  listCommandCalls(filter: CommandCallFilter = {}): Promise<CommandCallRecord[]> {
    return this.read(async () => {
      const conds: string[] = [];
      const params: unknown[] = [];
      if (filter.taskId !== undefined) {
        params.push(filter.taskId);
        conds.push(`"task_id" = $${params.length}`);
      }
      if (filter.status !== undefined) {
        params.push([filter.status].flat());
        conds.push(`"status" = ANY($${params.length}::text[])`);
      }
      const where = conds.length > 0 ? ` WHERE ${conds.join(' AND ')}` : '';
      const r = await this.pool.query<CallRow>(
        `${SQL.selectCalls}${where} ORDER BY "created_at", "ord"`,
        params,
      );
      return r.rows.map(rowToCall);
    });
  }

  getQuestion(questionId: string): Promise<QuestionRecord | undefined> {
    return this.read(async () => {
      const r = await this.pool.query<QuestionRow>(`${SQL.selectQuestion} WHERE "question_id" = $1`, [
        questionId,
      ]);
      const row = r.rows[0];
      return row ? rowToQuestion(row) : undefined;
    });
  }

  /** Questions of a task in the order they were asked. */
  listQuestions(taskId: string): Promise<QuestionRecord[]> {
    return this.read(async () => {
      const r = await this.pool.query<QuestionRow>(
        `${SQL.selectQuestion} WHERE "task_id" = $1 ORDER BY "asked_at", "ord"`,
        [taskId],
      );
      return r.rows.map(rowToQuestion);
    });
  }

  /** Commit whatever is queued, then close every connection. Idempotent. */
  async close(): Promise<void> {
    if (this.closed) return;
    this.closed = true;
    try {
      await this.writes.close();
    } finally {
      await this.pool.end().catch(() => undefined);
    }
  }

  // ------------------------------------------------------------------ queries for the orchestrator and the CLI

  /** One page of tasks (newest first by default) and the total matching the query. */
  listTasksPage(q: TaskPageQuery = {}): Promise<TaskPage> {
    let limit: number;
    let offset: number;
    try {
      ({ limit, offset } = pageOf(q));
    } catch (err) {
      return Promise.reject(err);
    }
    return this.readStore(async () => {
      const where = taskWhere(q);
      const dir = q.order === 'oldest' ? asc : desc;
      const { tasks, taskMemory } = schema;
      const rows = await this.orm
        .select({ ...tasksColumns(), memory: taskMemory.memory })
        .from(tasks)
        .leftJoin(taskMemory, eq(taskMemory.taskId, tasks.id))
        .where(where)
        .orderBy(dir(tasks.createdAt), dir(tasks.id))
        .limit(limit)
        .offset(offset);
      const total = (await this.orm.select({ n: count() }).from(tasks).where(where))[0]?.n ?? 0;
      return { tasks: rows.map(rowToTask), total };
    });
  }

  /** The latest `updatedAt` of any task (epoch ms), or undefined when there is none. */
  lastTaskUpdateAt(): Promise<number | undefined> {
    return this.readStore(async () => {
      const r = await this.pool.query<{ m: number | null }>('SELECT max("updated_at") AS m FROM "tasks"');
      return r.rows[0]?.m ?? undefined;
    });
  }

  /** Record a client's hello (or any sighting): commands, connection state, version. Creates it if new. */
  upsertClient(c: ClientUpsert): Promise<void> {
    try {
      validateClientUpsert(c);
    } catch (err) {
      return Promise.reject(err);
    }
    const commands = JSON.stringify(c.commands);
    return this.writeStore(async (db) => {
      await db.query(
        `INSERT INTO "clients" ("client_id", "commands", "connected", "client_version", "connected_with", "first_seen_at", "last_seen_at")
         VALUES ($1, $2, $3, $4, $6, $5, $5)
         ON CONFLICT ("client_id") DO UPDATE SET "commands" = excluded."commands", "connected" = excluded."connected",
           "last_seen_at" = excluded."last_seen_at",
           "client_version" = coalesce(excluded."client_version", "clients"."client_version"),
           "connected_with" = coalesce(excluded."connected_with", "clients"."connected_with")`,
        [c.clientId, commands, c.connected, c.clientVersion ?? null, c.seenAt, c.connectedWith ?? null],
      );
    });
  }

  /** Mark a known client connected or disconnected at `at`. `StoreError('client_not_found')` for an unknown id. */
  setClientConnected(clientId: string, connected: boolean, at: number): Promise<void> {
    try {
      requireId(clientId, 'clientId');
      requireTime(at, 'at');
    } catch (err) {
      return Promise.reject(err);
    }
    return this.writeStore(async (db) => {
      const r = await db.query(
        'UPDATE "clients" SET "connected" = $2, "last_seen_at" = $3 WHERE "client_id" = $1',
        [clientId, connected, at],
      );
      if (r.rowCount === 0) throw clientNotFound(clientId);
    });
  }

  /** Every client seen, by id. */
  listClients(): Promise<ClientRecord[]> {
    return this.readStore(async () =>
      (await this.orm.select().from(schema.clients).orderBy(asc(schema.clients.clientId))).map(rowToClient),
    );
  }

  /** Replace a client's model-written tools with what it just reported (`tools_update`), atomically. */
  replaceClientTools(clientId: string, tools: ModelToolInfo[], at: number): Promise<void> {
    try {
      validateTools(clientId, tools, at);
    } catch (err) {
      return Promise.reject(err);
    }
    return this.writeStore(async (db) => {
      const known = await db.query('SELECT 1 FROM "clients" WHERE "client_id" = $1', [clientId]);
      if (known.rowCount === 0) throw clientNotFound(clientId);
      await db.query('DELETE FROM "model_tools" WHERE "client_id" = $1', [clientId]);
      for (const t of tools) {
        await db.query(
          `INSERT INTO "model_tools" ("client_id", "name", "status", "version", "description", "file", "updated_at", "recorded_at")
           VALUES ($1, $2, $3, $4, $5, $6, $7, $8)`,
          [
            clientId,
            t.name,
            t.status,
            t.version,
            t.description ?? null,
            t.file ?? null,
            t.updatedAt ?? null,
            at,
          ],
        );
      }
    });
  }

  /** Model-written tools, by client then name. */
  listTools(filter: ToolFilter = {}): Promise<ModelToolRecord[]> {
    return this.readStore(async () => {
      const conds: DrizzleSQL[] = [];
      if (filter.clientId !== undefined) conds.push(eq(schema.modelTools.clientId, filter.clientId));
      if (filter.status !== undefined) conds.push(eq(schema.modelTools.status, filter.status));
      const rows = await this.orm
        .select()
        .from(schema.modelTools)
        .where(and(...conds))
        .orderBy(asc(schema.modelTools.clientId), asc(schema.modelTools.name));
      return rows.map(rowToTool);
    });
  }

  /** What is known without a query: closed, or the last write batch failed for a storage reason (or was fenced). */
  checkHealth(): StoreHealth {
    if (this.closed) return { ok: false, error: 'store is closed', code: 'closed' };
    const w = this.writeState;
    return w.ok ? { ok: true } : { ok: false, error: w.error, code: w.code };
  }

  /**
   * `/health`: the database answers a query (bounded by the connect timeout), then {@link checkHealth} (a storage
   * failure of the last write batch stands until a write succeeds).
   */
  async probeHealth(): Promise<StoreHealth> {
    if (this.closed) return this.checkHealth();
    try {
      await this.pool.query('SELECT 1 FROM "tasks" LIMIT 1');
    } catch (err) {
      const e = toStoreError(err);
      return { ok: false, error: e.message, code: e.code };
    }
    // The server answers again: a lost connection is over (a full disk or a fence is not cleared by a read).
    if (!this.writeState.ok && this.writeState.code === 'io_error') {
      this.logger.info({ database: this.path }, 'store: the database answers again');
      this.writeState = { ok: true };
    }
    return this.checkHealth();
  }

  // ------------------------------------------------------------------ internals

  /** A commit whose task head is not known: read it (locking the row), then as {@link sendCommit}. */
  private async applyCommit(c: pg.ClientBase, change: TaskCommit): Promise<CommitResult> {
    this.rows.flush(c); // the head is read from the rows: the batch's own go first
    const head = await this.head(c, change.task.id);
    const sent = this.sendCommit(change, head);
    this.rows.flush(c); // this write waits for its answer
    return sent;
  }

  /**
   * Check `change` against the task's `head` (`undefined`: no such task), then add its rows to the batch's grouped
   * statements (see `RowGroups`) and stage what it leaves; the promise settles with the statements' answers.
   * Everything that can refuse the commit throws before the first row is added (see `Sent`).
   */
  private sendCommit(change: TaskCommit, head: TaskHead | undefined): Promise<CommitResult> {
    const task = change.task;
    const id = task.id;
    if (change.create) {
      if (head !== undefined) throw new EngineError('task_exists', `task ${id} already exists`);
    } else {
      if (head === undefined) throw new EngineError('task_not_found', `task ${id} not found`);
      const actual = head.status;
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
    }
    if (change.commandCall && change.commandCall.taskId !== id) {
      throw new EngineError(
        'invalid_input',
        `command call ${change.commandCall.callId} belongs to another task`,
      );
    }
    if (change.question && change.question.taskId !== id) {
      throw new EngineError(
        'invalid_input',
        `question ${change.question.questionId} belongs to another task`,
      );
    }
    const row = taskToRow(task, encodeJson);
    const rows = this.rows;
    const answers: Array<Promise<unknown>> = [];
    if (change.create) {
      answers.push(rows.add('insertTasks', valuesOf(row, SQL.rows.insertTasks.keys)));
      answers.push(rows.add('insertMemory', [id, memoryJson(task.memory)]));
    } else {
      answers.push(rows.add('updateTasks', valuesOf(row, SQL.rows.updateTasks.keys), id));
      // The memory row only when the memory changed (most commits carry the object the last one wrote).
      if (this.memories.get(id) !== task.memory) {
        answers.push(rows.add('upsertMemory', [id, memoryJson(task.memory)], id));
      }
    }
    if (isTerminalStatus(task.status)) this.memories.forget(id);
    else this.memories.set(id, task.memory);
    const result: CommitResult = { history: [], steps: [] };
    let lastHistory = head?.history ?? 0;
    let lastStep = head?.steps ?? 0;
    if (change.history && change.history.length > 0) {
      let seq = lastHistory + 1;
      const entries = change.history.map((h) => historyToRow(id, seq++, h));
      for (const e of entries)
        answers.push(rows.add('insertHistory', valuesOf(e, SQL.rows.insertHistory.keys)));
      result.history = entries.map(rowToHistory);
      lastHistory = seq - 1;
    }
    if (change.steps && change.steps.length > 0) {
      const first = lastStep + 1;
      answers.push(this.insertSteps(id, first, change.steps));
      result.steps = change.steps.map((s, i) => recordToStep(id, first + i, s));
      lastStep = first + change.steps.length - 1;
    }
    if (change.commandCall) {
      const call = change.commandCall;
      answers.push(
        rows.add('upsertCalls', valuesOf(callToRow(call), SQL.rows.upsertCalls.keys), call.callId),
      );
    }
    if (change.question) {
      const q = change.question;
      answers.push(
        rows.add('upsertQuestions', valuesOf(questionToRow(q), SQL.rows.upsertQuestions.keys), q.questionId),
      );
    }
    this.keepHead(id, { status: task.status, history: lastHistory, steps: lastStep });
    const done = Promise.all(answers).then(() => result);
    // A create sent without reading the row first: an id that exists fails the INSERT (its first statement, so the
    // first answer to fail), which aborts the transaction; the write alone is then refused as `task_exists`.
    return !change.create
      ? done
      : done.catch((err: unknown) => {
          const e = err as { code?: unknown; constraint?: unknown } | null;
          if (e?.code === '23505' && e.constraint === 'tasks_pkey') {
            throw new EngineError('task_exists', `task ${id} already exists`);
          }
          throw err;
        });
  }

  /** The task's status and last seqs: remembered, else read (`undefined`: no such task). */
  private async head(c: pg.ClientBase, id: string): Promise<TaskHead | undefined> {
    const known = this.heads.get(id);
    if (known !== undefined) return known;
    const r = await c.query<TaskHead>(named('task_head', SQL.taskHead, [id]));
    return r.rows[0];
  }

  /** The running write left the task so (terminal tasks are forgotten: they are rarely written again). */
  private keepHead(id: string, head: TaskHead): void {
    if (isTerminalStatus(head.status)) this.heads.forget(id);
    else this.heads.set(id, head);
  }

  /**
   * Insert step rows from `first` on: a packed model input's new messages and chunks first (skipping the ones known
   * to be stored; `ON CONFLICT DO NOTHING` for the rest), so a step never references a row its transaction did not
   * see. Packing is `@ccagent/store`'s, so both stores hold the same step-log shape.
   */
  private insertSteps(
    taskId: string,
    first: number,
    records: ReadonlyArray<StepRecord & { step: number; at: number }>,
  ): Promise<unknown> {
    const answers: Array<Promise<unknown>> = [];
    for (let i = 0; i < records.length; i++) {
      const { row, messages } = packedStepToRow(
        taskId,
        first + i,
        records[i] as StepRecord & { step: number; at: number },
        this.messageHashes.hash,
      );
      for (const m of messages) {
        if (this.storedMessages.has(m.hash)) continue;
        // Its group precedes the steps' in the flush: a step never references a row its transaction did not see.
        answers.push(this.rows.add('insertMessages', [m.hash, m.body], m.hash));
        this.stagedMessages.push(m.hash);
      }
      answers.push(this.rows.add('insertSteps', valuesOf(row, SQL.rows.insertSteps.keys)));
    }
    return Promise.all(answers);
  }

  private rememberMessage(hash: string): void {
    this.storedMessages.add(hash);
    if (this.storedMessages.size > STORED_MESSAGES_CAP) {
      const oldest = this.storedMessages.values().next();
      if (!oldest.done) this.storedMessages.delete(oldest.value);
    }
  }

  /** Stored steps of step rows, packed inputs rebuilt with two queries per page (chunks, then their messages). */
  private async rowsToSteps(rows: Array<typeof schema.steps.$inferSelect>): Promise<StoredStep[]> {
    let chunks: Set<string> | undefined;
    for (const r of rows) {
      if (r.input === null && r.inputPacked !== null) {
        chunks ??= new Set();
        for (const h of packedHashes(r.inputPacked)) chunks.add(h);
      }
    }
    if (chunks === undefined) return rows.map((r) => rowToStep(r));
    const bodies = new Map<string, string>();
    await this.readMessages(chunks, bodies);
    const messages = new Set<string>();
    for (const h of chunks) {
      const body = bodies.get(h);
      if (body === undefined) continue; // missing: rowToStep names the step
      for (const m of chunkHashes(body)) if (!bodies.has(m)) messages.add(m);
    }
    if (messages.size > 0) await this.readMessages(messages, bodies);
    return rows.map((r) => rowToStep(r, bodies));
  }

  private async readMessages(hashes: Set<string>, into: Map<string, string>): Promise<void> {
    const r = await this.pool.query<{ hash: string; body: string }>(SQL.selectMessages, [[...hashes]]);
    for (const m of r.rows) into.set(m.hash, m.body);
  }

  /**
   * Start a write transaction (see `PgWriteQueue`'s `begin`): `BEGIN`, and when fenced (see {@link fenceWith}) the
   * lease check right behind it, both sent without waiting. The writes and the COMMIT follow before its answer is
   * read, so the check fails in the database: a token other than this process's aborts the transaction there, and
   * the COMMIT behind it rolls back. Holding no token refuses the batch before anything is sent.
   */
  private begin(c: pg.ClientBase): Promise<unknown> {
    const fence = this.fence;
    if (fence === undefined) return c.query('BEGIN');
    const mine = fence.token;
    const fenced = (current: number | undefined) =>
      new StoreError(
        'fenced',
        `this orchestrator no longer holds the lease "${fence.name}" (token ${mine ?? 'none'}, the database has ${current ?? 'none'}): another one took over; nothing was written`,
        { details: { lease: fence.name, token: mine, current } },
      );
    if (mine === undefined) throw fenced(undefined);
    const begun = c.query('BEGIN');
    const checked = c.query<{ token: number }>(named('fence_check', SQL.fenceCheck, [fence.name, mine])).then(
      (r) => {
        // The statement fails on any other token; an answer that still is not ours is refused all the same.
        const current = r.rows[0]?.token;
        if (current !== mine) throw fenced(current);
      },
      (err: unknown) => {
        const current = fencedToken(err);
        throw current === null ? err : fenced(current);
      },
    );
    return Promise.all([begun, checked]);
  }

  private noteOutcome(o: BatchOutcome): void {
    const errors = o.ok ? o.writeErrors : [o.error];
    for (const err of errors) {
      const fenced = isStoreError(err, 'fenced');
      const failure = fenced
        ? { code: 'fenced' as const, message: (err as Error).message }
        : storageFailureOf(toStoreError(err));
      if (failure === undefined) continue;
      if (this.writeState.ok || this.writeState.code !== failure.code) {
        this.logger.error(
          { database: this.path, code: failure.code, err },
          `store: writes fail: ${failure.message}`,
        );
      }
      this.writeState = { ok: false, code: failure.code, error: failure.message };
      return;
    }
    if (o.ok && !this.writeState.ok && this.writeState.code !== 'fenced') {
      this.logger.info({ database: this.path }, 'store: writes succeed again');
      this.writeState = { ok: true };
    }
  }

  /**
   * A port write: EngineError on failure (the engine branches on its codes). Unless `grouped` (it adds rows to the
   * batch's groups, or flushes them itself before it reads or sends a statement), the rows the batch's earlier writes
   * grouped are sent first, so its statements see them.
   */
  private write<T>(run: Work<T>, grouped = false): Promise<T> {
    if (this.closed) return Promise.reject(new EngineError('store_failure', 'store is closed'));
    if (this.readonly) return Promise.reject(new StoreError('readonly', `${this.path} is open read-only`));
    return this.writes.enqueue(grouped ? run : this.afterRows(run));
  }

  /** `run`, after the rows grouped so far in the batch were sent. */
  private afterRows<T>(run: Work<T>): Work<T> {
    return (c) => {
      this.rows.flush(c);
      return run(c);
    };
  }

  /** A store-specific write: StoreError on failure. */
  private writeStore<T>(run: (c: pg.ClientBase) => Promise<T>): Promise<T> {
    if (this.closed) return Promise.reject(new StoreError('closed', 'store is closed'));
    if (this.readonly) return Promise.reject(new StoreError('readonly', `${this.path} is open read-only`));
    return this.writes.enqueue(this.afterRows(run)).catch((err: unknown) => {
      if (isStoreError(err)) throw err;
      if (isEngineError(err) && isStoreError(err.cause)) throw err.cause;
      throw toStoreError(err);
    });
  }

  /** A port read: EngineError on failure. */
  private async read<T>(run: () => Promise<T>): Promise<T> {
    if (this.closed) throw new EngineError('store_failure', 'store is closed');
    try {
      return await run();
    } catch (err) {
      this.logger.debug({ err }, 'store: read failed');
      throw isStoreError(err) || isEngineError(err) ? err : toPortError(err);
    }
  }

  /** A store-specific read: StoreError on failure. */
  private async readStore<T>(run: () => Promise<T>): Promise<T> {
    if (this.closed) throw new StoreError('closed', 'store is closed');
    try {
      return await run();
    } catch (err) {
      throw isStoreError(err) ? err : toStoreError(err);
    }
  }
}

type CallRow = typeof schema.commandCalls.$inferSelect;

/**
 * The token the database holds when `err` is the refusal of `SQL.fenceCheck` (`undefined`: no lease row), or `null`
 * when `err` is something else.
 */
function fencedToken(err: unknown): number | undefined | null {
  const e = err as { code?: unknown; message?: unknown } | null;
  if (e?.code !== '22P02' || typeof e.message !== 'string') return null;
  const m = /ccagent-fenced:(\d+|none)/.exec(e.message);
  if (!m) return null;
  return m[1] === 'none' ? undefined : Number(m[1]);
}
/** What a commit needs of a task's stored rows: its status and the last seq of its history and steps. */
interface TaskHead {
  status: TaskStatus;
  history: number;
  steps: number;
}

/**
 * A prepared statement of the writer connection: parsed and planned once per connection, not once per use (most of
 * the server's work for these one-row statements). `name` must stand for this `text` only.
 */
function named(name: string, text: string, values: unknown[]): pg.QueryConfig {
  return { name, text, values };
}

type QuestionRow = typeof schema.questions.$inferSelect;

/** JSON text of a task's JSON columns, reused for the same object (the engine's `memoryJson`). */
const encodeJson = (value: JsonValue | undefined): string => memoryJson(value);

/** Every `tasks` column, for Drizzle selects joined with the memory. */
function tasksColumns() {
  const t = schema.tasks;
  return {
    id: t.id,
    kind: t.kind,
    status: t.status,
    clientId: t.clientId,
    prompt: t.prompt,
    context: t.context,
    allowedCommands: t.allowedCommands,
    metadata: t.metadata,
    budgets: t.budgets,
    stepsCount: t.stepsCount,
    toolCallsCount: t.toolCallsCount,
    questionsCount: t.questionsCount,
    result: t.result,
    error: t.error,
    progress: t.progress,
    progressMessage: t.progressMessage,
    wakeAt: t.wakeAt,
    createdAt: t.createdAt,
    updatedAt: t.updatedAt,
  };
}

function taskWhere(f: {
  status?: TaskStatus | TaskStatus[];
  kind?: string;
  clientId?: string;
  search?: string;
}): DrizzleSQL | undefined {
  const conds: DrizzleSQL[] = [];
  if (f.search !== undefined && f.search !== '') {
    // As the SQLite store: the id starts with the text, or the prompt contains it, letters in any case. strpos, not
    // LIKE, so `%` and `_` in the text are themselves; a scan of the prompts, as there.
    conds.push(
      sql`(left(${schema.tasks.id}, ${f.search.length}) = ${f.search} OR strpos(lower(${schema.tasks.prompt}), ${f.search.toLowerCase()}) > 0)`,
    );
  }
  if (f.status !== undefined) conds.push(inArray(schema.tasks.status, [f.status].flat()));
  if (f.kind !== undefined) conds.push(eq(schema.tasks.kind, f.kind));
  if (f.clientId !== undefined) conds.push(eq(schema.tasks.clientId, f.clientId));
  return conds.length > 0 ? and(...conds) : sql`true`;
}
