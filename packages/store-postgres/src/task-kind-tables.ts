/**
 * The engine's `TaskKindStore` in PostgreSQL (schema version 5): the same operations and answers as the SQLite
 * store's `SqliteTaskKindTables` (one contract suite runs against both). Writes go through the store's write queue:
 * durable when resolved, and fenced by the leader lease. A write may run twice (the queue re-runs a batch with
 * savepoints after one write failed), so each is a pure function of the database.
 */
import { EngineError, type JsonValue, type TaskKindRevision, type TaskKindStore } from '@ccagent/engine';
import type pg from 'pg';

/** How the table reaches the database: the store's reads and queued (fenced) port writes. @internal */
export interface PgTaskKindAccess {
  read<T>(run: (db: pg.Pool) => Promise<T>): Promise<T>;
  write<T>(run: (c: pg.ClientBase) => Promise<T>): Promise<T>;
}

type Row = Record<string, unknown>;

/** Run-time task kinds of one PostgreSQL database. */
export class PgTaskKindTables implements TaskKindStore {
  /** @internal Use `PostgresStore.taskKinds`. */
  constructor(private readonly a: PgTaskKindAccess) {}

  appendTaskKindRevision(r: TaskKindRevision): Promise<void> {
    return this.a.write(async (db) => {
      const res = await db.query(
        `INSERT INTO "task_kind_revisions" ("name", "revision", "definition", "saved_at", "saved_by")
         VALUES ($1, $2, $3, $4, $5) ON CONFLICT ("name", "revision") DO NOTHING`,
        [
          r.name,
          r.revision,
          r.definition === null ? null : JSON.stringify(r.definition),
          r.savedAt,
          r.savedBy ?? null,
        ],
      );
      if (res.rowCount === 0) {
        throw new EngineError('conflict', `task kind ${r.name} already has revision ${r.revision}`, {
          details: { name: r.name, revision: r.revision },
        });
      }
    });
  }

  listTaskKindRevisions(): Promise<TaskKindRevision[]> {
    return this.a.read(async (db) => {
      // COLLATE "C": the byte order SQLite and the in-memory store sort names by
      const res = await db.query<Row>(
        `SELECT "name", "revision", "definition", "saved_at", "saved_by" FROM "task_kind_revisions"
         ORDER BY "name" COLLATE "C", "revision"`,
      );
      return res.rows.map((row) => {
        const out: TaskKindRevision = {
          name: row['name'] as string,
          revision: Number(row['revision']),
          definition:
            row['definition'] === null ? null : (JSON.parse(row['definition'] as string) as JsonValue),
          savedAt: Number(row['saved_at']),
        };
        if (row['saved_by'] !== null) out.savedBy = row['saved_by'] as string;
        return out;
      });
    });
  }
}
