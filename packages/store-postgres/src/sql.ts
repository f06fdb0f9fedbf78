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
}

function cols(table: PgTable, skip: string[] = []): Col[] {
  return Object.entries(getTableColumns(table))
    .filter(([key]) => !skip.includes(key))
    .map(([key, col]) => ({ key, name: `"${col.name}"` }));
}

/** `"sql_name" AS "propertyKey", …` of `table` (qualified by `alias` when given). */
export function selectList(table: PgTable, alias?: string, skip: string[] = []): string {
  const p = alias ? `${alias}.` : '';
  return cols(table, skip)
    .map((c) => `${p}${c.name} AS "${c.key}"`)
    .join(', ');
}

/** An INSERT of every column of `table` but `skip`, and the property keys in parameter order. */
export function insertOf(table: PgTable, skip: string[] = []): { text: string; keys: string[] } {
  const cs = cols(table, skip);
  return {
    text: `INSERT INTO "${getTableName(table)}" (${cs.map((c) => c.name).join(', ')}) VALUES (${cs.map((_, i) => `$${i + 1}`).join(', ')})`,
    keys: cs.map((c) => c.key),
  };
}

/** Parameter values of `row` in `keys` order. */
export function valuesOf(row: object, keys: readonly string[]): unknown[] {
  const r = row as Record<string, unknown>;
  return keys.map((k) => r[k] ?? null);
}

const { tasks, taskMemory, history, steps, commandCalls, questions } = schema;
const taskCols = cols(tasks);

/** Every statement of the store's write path and port reads. */
export const SQL = {
  selectTask: `SELECT ${selectList(tasks, 't')}, m."memory" AS "memory" FROM "tasks" t LEFT JOIN "task_memory" m ON m."task_id" = t."id"`,
  insertTask: insertOf(tasks),
  /** Every column but the id, by position after the id ($1). */
  updateTask: {
    text: `UPDATE "tasks" SET ${taskCols
      .filter((c) => c.key !== 'id')
      .map((c, i) => `${c.name} = $${i + 2}`)
      .join(', ')} WHERE "id" = $1`,
    keys: ['id', ...taskCols.filter((c) => c.key !== 'id').map((c) => c.key)],
  },
  /**
   * The row's head for a commit, locked until the transaction ends (a second writer — a standby turned active, a
   * paused leader — waits instead of interleaving), and the last history and step seqs.
   */
  taskHead: `SELECT t."status", t."kind", t."client_id" AS "clientId", t."created_at" AS "createdAt",
      (SELECT coalesce(max(h."seq"), 0) FROM "history" h WHERE h."task_id" = t."id") AS "history",
      (SELECT coalesce(max(s."seq"), 0) FROM "steps" s WHERE s."task_id" = t."id") AS "steps"
    FROM "tasks" t WHERE t."id" = $1 FOR UPDATE OF t`,
  insertMemory: `INSERT INTO "${getTableName(taskMemory)}" ("task_id", "memory") VALUES ($1, $2)`,
  upsertMemory: `INSERT INTO "task_memory" ("task_id", "memory") VALUES ($1, $2) ON CONFLICT ("task_id") DO UPDATE SET "memory" = excluded."memory"`,
  insertHistory: insertOf(history),
  insertStep: insertOf(steps),
  insertMessages: `INSERT INTO "step_messages" ("hash", "body") SELECT * FROM unnest($1::text[], $2::text[]) ON CONFLICT ("hash") DO NOTHING`,
  upsertCall: (() => {
    const ins = insertOf(commandCalls, ['sentTo', 'ord']);
    const set = cols(commandCalls, ['callId', 'sentTo', 'ord'])
      .map((c) => `${c.name} = excluded.${c.name}`)
      .join(', ');
    return { text: `${ins.text} ON CONFLICT ("call_id") DO UPDATE SET ${set}`, keys: ins.keys };
  })(),
  upsertQuestion: (() => {
    const ins = insertOf(questions, ['ord']);
    const set = cols(questions, ['questionId', 'ord'])
      .map((c) => `${c.name} = excluded.${c.name}`)
      .join(', ');
    return { text: `${ins.text} ON CONFLICT ("question_id") DO UPDATE SET ${set}`, keys: ins.keys };
  })(),
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
