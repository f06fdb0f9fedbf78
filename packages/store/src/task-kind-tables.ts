/**
 * The engine's `TaskKindStore` in SQLite (schema version 10): run-time task kinds as an append-only list of revisions.
 * Reached through {@link SqliteStore.taskKinds}; writes go through the store's write queue (durable when resolved; a
 * write may run again inside a batch, so each is a pure function of the database).
 */
import { EngineError, type JsonValue, type TaskKindRevision, type TaskKindStore } from '@ccagent/engine';
import { asc } from 'drizzle-orm';
import type { BetterSQLite3Database } from 'drizzle-orm/better-sqlite3';
import * as schema from './schema.js';

/** How the table reaches the database: the store's reads and queued port writes. @internal */
export interface TaskKindTableAccess {
  orm: BetterSQLite3Database<typeof schema>;
  write<T>(run: () => T): Promise<T>;
  read<T>(run: () => T): Promise<T>;
}

/** Run-time task kinds of one SQLite file. */
export class SqliteTaskKindTables implements TaskKindStore {
  /** @internal Use {@link SqliteStore.taskKinds}. */
  constructor(private readonly a: TaskKindTableAccess) {}

  appendTaskKindRevision(r: TaskKindRevision): Promise<void> {
    return this.a.write(() => {
      const inserted = this.a.orm
        .insert(schema.taskKindRevisions)
        .values({
          name: r.name,
          revision: r.revision,
          definition: r.definition === null ? null : JSON.stringify(r.definition),
          savedAt: r.savedAt,
          savedBy: r.savedBy ?? null,
        })
        .onConflictDoNothing()
        .run();
      if (inserted.changes === 0) {
        throw new EngineError('conflict', `task kind ${r.name} already has revision ${r.revision}`, {
          details: { name: r.name, revision: r.revision },
        });
      }
    });
  }

  listTaskKindRevisions(): Promise<TaskKindRevision[]> {
    return this.a.read(() =>
      this.a.orm
        .select()
        .from(schema.taskKindRevisions)
        .orderBy(asc(schema.taskKindRevisions.name), asc(schema.taskKindRevisions.revision))
        .all()
        .map((row) => {
          const out: TaskKindRevision = {
            name: row.name,
            revision: row.revision,
            definition: row.definition === null ? null : (JSON.parse(row.definition) as JsonValue),
            savedAt: row.savedAt,
          };
          if (row.savedBy !== null) out.savedBy = row.savedBy;
          return out;
        }),
    );
  }
}
