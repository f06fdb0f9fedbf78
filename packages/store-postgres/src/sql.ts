/**
 * SQL text of the hot paths, built once from the Drizzle schema (so it follows the tables): plain `pg` statements with
 * `$n` parameters, run several times per command round trip, where building each query with Drizzle cost more than
 * running it. Rows come back keyed by the schema's property names, the shape `@ccagent/store`'s row codec maps.
 */
import { getTableColumns, getTableName } from 'drizzle-orm';
import type { PgTable } from 'drizzle-orm/pg-core';
import * as schema from './schema.js';

interface Col {
  key: string;
  name: string;
  /** The column's SQL type (`text`, `integer`, `bigint`, `double precision`…), for the casts of `unnest`. */
  type: string;
}

function cols(table: PgTable, skip: string[] = []): Col[] {
  return Object.entries(getTableColumns(table))
    .filter(([key]) => !skip.includes(key))
    .map(([key, col]) => ({ key, name: `"${col.name}"`, type: col.getSQLType() }));
}

/**
 * A statement over any number of rows of `table` (every column but `skip`): one parameter per column, an array of
 * that column's values (`$n::type[]`), so one prepared statement serves a batch of any size (and no row count meets
 * PostgreSQL's 65,535-parameter limit). `keys` are the property keys in parameter order.
 */
export interface RowsStatement {
  text: string;
  keys: readonly string[];
}

/** `unnest($1::t1[], $2::t2[], …) WITH ORDINALITY AS v(c1, c2, …, "n")`: the rows in the order given. */
function unnestOf(cs: Col[]): string {
  return `unnest(${cs.map((c, i) => `$${i + 1}::${c.type}[]`).join(', ')}) WITH ORDINALITY AS v(${cs
    .map((c) => c.name)
    .join(', ')}, "n")`;
}

/**
 * `INSERT` of the rows (in the order given: identity columns number them so), with `onConflict` (an `ON CONFLICT`
 * clause) when given. The rows must not conflict with each other on a key an `ON CONFLICT DO UPDATE` names.
 */
export function insertRowsOf(table: PgTable, skip: string[] = [], onConflict = ''): RowsStatement {
  const cs = cols(table, skip);
  const names = cs.map((c) => c.name).join(', ');
  return {
    text: `INSERT INTO "${getTableName(table)}" (${names}) SELECT ${cs.map((c) => `v.${c.name}`).join(', ')} FROM ${unnestOf(cs)} ORDER BY v."n"${onConflict ? ` ${onConflict}` : ''}`,
    keys: cs.map((c) => c.key),
  };
}

/** `UPDATE` of every column but the key of each row (`key` first in `keys`); at most one row per key. */
export function updateRowsOf(table: PgTable, key: string): RowsStatement {
  const all = cols(table);
  const k = all.find((c) => c.key === key) as Col;
  const cs = [k, ...all.filter((c) => c.key !== key)];
  return {
    text: `UPDATE "${getTableName(table)}" AS t SET ${cs
      .slice(1)
      .map((c) => `${c.name} = v.${c.name}`)
      .join(', ')} FROM ${unnestOf(cs)} WHERE t.${k.name} = v.${k.name}`,
    keys: cs.map((c) => c.key),
  };
}

/** `"sql_name" AS "propertyKey", …` of `table` (qualified by `alias` when given). */
export function selectList(table: PgTable, alias?: string, skip: string[] = []): string {
  const p = alias ? `${alias}.` : '';
  return cols(table, skip)
    .map((c) => `${p}${c.name} AS "${c.key}"`)
    .join(', ');
}

/** Parameter values of `row` in `keys` order. */
export function valuesOf(row: object, keys: readonly string[]): unknown[] {
  const r = row as Record<string, unknown>;
  return keys.map((k) => r[k] ?? null);
}

const { tasks, taskMemory, history, steps, stepMessages, commandCalls, questions } = schema;

/** Every statement of the store's write path and port reads. */
export const SQL = {
  selectTask: `SELECT ${selectList(tasks, 't')}, m."memory" AS "memory" FROM "tasks" t LEFT JOIN "task_memory" m ON m."task_id" = t."id"`,
  /**
   * The row's head for a commit, locked until the transaction ends (a second writer — a standby turned active, a
   * paused leader — waits instead of interleaving), and the last history and step seqs.
   */
  taskHead: `SELECT t."status", t."kind", t."client_id" AS "clientId", t."created_at" AS "createdAt",
      (SELECT coalesce(max(h."seq"), 0) FROM "history" h WHERE h."task_id" = t."id") AS "history",
      (SELECT coalesce(max(s."seq"), 0) FROM "steps" s WHERE s."task_id" = t."id") AS "steps"
    FROM "tasks" t WHERE t."id" = $1 FOR UPDATE OF t`,
  /**
   * The statements of a write batch's grouped rows (see `RowGroups`): one per table and kind, any number of rows,
   * in this order (a task's row before the rows that reference it).
   */
  rows: {
    insertTasks: insertRowsOf(tasks),
    updateTasks: updateRowsOf(tasks, 'id'),
    insertMemory: insertRowsOf(taskMemory),
    upsertMemory: insertRowsOf(
      taskMemory,
      [],
      'ON CONFLICT ("task_id") DO UPDATE SET "memory" = excluded."memory"',
    ),
    insertHistory: insertRowsOf(history),
    insertMessages: insertRowsOf(stepMessages, [], 'ON CONFLICT ("hash") DO NOTHING'),
    insertSteps: insertRowsOf(steps),
    upsertCalls: insertRowsOf(
      commandCalls,
      ['sentTo', 'ord'],
      `ON CONFLICT ("call_id") DO UPDATE SET ${cols(commandCalls, ['callId', 'sentTo', 'ord'])
        .map((c) => `${c.name} = excluded.${c.name}`)
        .join(', ')}`,
    ),
    upsertQuestions: insertRowsOf(
      questions,
      ['ord'],
      `ON CONFLICT ("question_id") DO UPDATE SET ${cols(questions, ['questionId', 'ord'])
        .map((c) => `${c.name} = excluded.${c.name}`)
        .join(', ')}`,
    ),
  },
  /**
   * The fencing check of a write transaction ($1 lease name, $2 this process's token): a share lock on the lease row
   * until the transaction ends (a takeover waits for it), and an error — which aborts the transaction — unless the
   * row holds $2. The error is a failed cast of `ccagent-fenced:<token the row holds, or none>` (SQLSTATE 22P02): a
   * statement cannot raise an error of its own without a function, and this one needs no migration.
   */
  fenceCheck: `SELECT CASE WHEN f."t" = $2::bigint THEN f."t"
      ELSE CAST('ccagent-fenced:' || coalesce(f."t"::text, 'none') AS bigint) END AS "token"
    FROM (SELECT (SELECT "token" FROM "leases" WHERE "name" = $1 FOR SHARE) AS "t") f`,
  bindCall: `UPDATE "command_calls" SET "sent_to" = $1 WHERE "call_id" = $2 AND "status" = 'pending' AND "sent_to" IS NULL`,
  selectHistory: `SELECT ${selectList(history)} FROM "history" WHERE "task_id" = $1 ORDER BY "seq"`,
  /** One page of the step log: a range scan of the primary key; `LIMIT NULL` is no limit. */
  selectSteps: `SELECT ${selectList(steps)} FROM "steps" WHERE "task_id" = $1 AND "seq" > $2 ORDER BY "seq" LIMIT $3`,
  selectMessages: `SELECT "hash", "body" FROM "step_messages" WHERE "hash" = ANY($1::text[])`,
  selectCall: `SELECT ${selectList(commandCalls, undefined, ['ord'])} FROM "command_calls" WHERE "call_id" = $1`,
  selectCalls: `SELECT ${selectList(commandCalls, undefined, ['ord'])} FROM "command_calls"`,
  selectQuestion: `SELECT ${selectList(questions, undefined, ['ord'])} FROM "questions"`,
} as const;
