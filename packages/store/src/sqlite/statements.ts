/**
 * The SQL statements of the SQLite store, built once per connection from the Drizzle schema (so column names follow
 * the tables): the reads every port call runs (prepared with Drizzle) and the statements of the commit path (plain
 * better-sqlite3 statements: Drizzle's per-call placeholder filling over 20 columns showed in the round-trip profile).
 */
import type Database from 'better-sqlite3';
import { and, asc, eq, getTableColumns, getTableName, gt, gte, inArray, sql, type SQL } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import type { SQLiteTable } from 'drizzle-orm/sqlite-core';
import type { TaskStatus } from '@ccagent/engine';
import type { TaskRowWithMemory } from '@ccagent/store-core';
import * as schema from '../schema.js';

/** A plain prepared statement, typed by a name the declarations of this module can refer to. */
function prep(db: Database.Database, text: string): Database.Statement {
  return db.prepare(text);
}

/** The Drizzle database of a connection. */
export type Orm = BetterSQLite3Database<typeof schema>;
/** A plain better-sqlite3 statement. */
type Stmt = Database.Statement;

/** Prepared reads of a connection (the types spelled out: Drizzle's own name better-sqlite3 internals). */
export interface ReadStatements {
  getTask: { get(params: { id: string }): TaskRowWithMemory | undefined };
  getHistory: { all(params: { taskId: string }): Array<typeof schema.history.$inferSelect> };
  getSteps: {
    all(params: { taskId: string; afterSeq: number; limit: number }): Array<typeof schema.steps.$inferSelect>;
  };
  /** The model-input messages of the given hashes (a JSON array of them): primary-key lookups. */
  getMessages: Stmt;
  getCall: { get(params: { callId: string }): typeof schema.commandCalls.$inferSelect | undefined };
}

/** Prepared writes of a connection. */
export interface WriteStatements {
  insertTask: { run(row: typeof schema.tasks.$inferInsert): unknown };
  /** Every column but the id. */
  updateTask: Stmt;
  /** Every column but the id and the indexed ones a task keeps for life (kind, client, creation time). */
  updateTaskState: Stmt;
  taskHead: Stmt;
  insertMemory: Stmt;
  updateMemory: Stmt;
  historySeq: Stmt;
  stepSeq: Stmt;
  insertHistory: Stmt;
  insertStep: Stmt;
  /** A model-input message of a packed step (already stored: nothing to do). */
  insertMessage: Stmt;
  upsertCall: Stmt;
  /** Bind a pending, not yet bound call (first binding wins); `changes` 0 otherwise. */
  bindCall: Stmt;
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
export function selectTasks(orm: Orm) {
  const { tasks, taskMemory } = schema;
  return orm
    .select({ ...getTableColumns(tasks), memory: taskMemory.memory })
    .from(tasks)
    .leftJoin(taskMemory, eq(taskMemory.taskId, tasks.id));
}

/** The reads of the port, prepared once. */
export function prepareReads(orm: Orm, db: Database.Database): ReadStatements {
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
    getMessages: prep(
      db,
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
export function stepsPageQuery(orm: Orm) {
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
export function prepareWrites(orm: Orm, db: Database.Database): WriteStatements {
  const { tasks, history, steps, commandCalls } = schema;
  const set = (cols: Array<{ name: string; param: string }>) =>
    cols.map((c) => `${c.name} = ${c.param}`).join(', ');
  // A call's binding (`sentTo`) is written by bindCall only: a commit of the call neither sets nor clears it.
  const callCols = columns(commandCalls, ['callId', 'sentTo']);
  return {
    insertTask: orm.insert(tasks).values(placeholders(tasks)).prepare(),
    /** Every column but the id. */
    updateTask: prep(db, `UPDATE "tasks" SET ${set(columns(tasks, ['id']))} WHERE "id" = @id`),
    /** Every column but the id and the indexed ones a task keeps for life (kind, client, creation time). */
    updateTaskState: prep(
      db,
      `UPDATE "tasks" SET ${set(columns(tasks, ['id', 'kind', 'clientId', 'createdAt']))} WHERE "id" = @id`,
    ),
    taskHead: prep(
      db,
      'SELECT "status", "kind", "client_id" AS "clientId", "created_at" AS "createdAt" FROM "tasks" WHERE "id" = ?',
    ),
    insertMemory: prep(db, 'INSERT INTO "task_memory" ("task_id", "memory") VALUES (?, ?)'),
    updateMemory: prep(db, 'UPDATE "task_memory" SET "memory" = ? WHERE "task_id" = ?'),
    historySeq: prep(db, 'SELECT coalesce(max("seq"), 0) AS "m" FROM "history" WHERE "task_id" = ?'),
    stepSeq: prep(db, 'SELECT coalesce(max("seq"), 0) AS "m" FROM "steps" WHERE "task_id" = ?'),
    insertHistory: prep(db, insertSql(history)),
    insertStep: prep(db, insertSql(steps)),
    /** A model-input message of a packed step (already stored: nothing to do). */
    insertMessage: prep(db, 'INSERT OR IGNORE INTO "step_messages" ("hash", "body") VALUES (?, ?)'),
    upsertCall: prep(
      db,
      `${insertSql(commandCalls, ['sentTo'])} ON CONFLICT ("call_id") DO UPDATE SET ${callCols
        .map((c) => `${c.name} = excluded.${c.name}`)
        .join(', ')}`,
    ),
    /** Bind a pending, not yet bound call (first binding wins); `changes` 0 otherwise. */
    bindCall: prep(
      db,
      'UPDATE "command_calls" SET "sent_to" = ? WHERE "call_id" = ? AND "status" = \'pending\' AND "sent_to" IS NULL',
    ),
  };
}

/** The WHERE of a task filter (Drizzle, for the queries built per call). */
export function taskWhere(f: {
  status?: TaskStatus | TaskStatus[];
  kind?: string;
  clientId?: string;
  updatedSince?: number;
  search?: string;
}): SQL | undefined {
  const conds: SQL[] = [];
  if (f.search !== undefined && f.search !== '') {
    // A scan of the prompts (no index can help a substring): fine for the tens of thousands of tasks one file holds.
    conds.push(
      sql`(substr(${schema.tasks.id}, 1, ${f.search.length}) = ${f.search} OR instr(lower(${schema.tasks.prompt}), ${f.search.toLowerCase()}) > 0)`,
    );
  }
  if (f.status !== undefined) conds.push(inArray(schema.tasks.status, [f.status].flat()));
  if (f.kind !== undefined) conds.push(eq(schema.tasks.kind, f.kind));
  if (f.clientId !== undefined) conds.push(eq(schema.tasks.clientId, f.clientId));
  if (f.updatedSince !== undefined) conds.push(gte(schema.tasks.updatedAt, f.updatedSince));
  return and(...conds);
}
