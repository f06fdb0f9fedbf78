/**
 * Small JSON settings documents in PostgreSQL (schema version 6, table `minecraft_settings`): the Minecraft side's
 * active instance and action allow/deny lists, which the SQLite deployment keeps in a file beside its database. A
 * save goes through the store's write queue: durable when it resolves, and fenced by the leader lease (a process
 * that lost the lease changes nothing). The document's shape is its owner's (`@ccagent/minecraft` validates it).
 */
import type pg from 'pg';
import type { PgScheduleAccess } from './schedule-tables.js';

/** One settings document of the database, by key. */
export class PgSettingsDocument {
  /** @internal Use `PostgresStore.minecraftSettings`. */
  constructor(
    private readonly a: PgScheduleAccess,
    private readonly key: string,
    private readonly now: () => number = Date.now,
  ) {}

  /** The stored document, or null when none was saved. */
  load(): Promise<unknown> {
    return this.a.read(async (db: pg.Pool) => {
      const r = await db.query<{ value: string }>(
        'SELECT "value" FROM "minecraft_settings" WHERE "key" = $1',
        [this.key],
      );
      const row = r.rows[0];
      return row === undefined ? null : (JSON.parse(row.value) as unknown);
    });
  }

  /** Replace the document; resolves once it is committed. */
  save(doc: unknown): Promise<void> {
    const value = JSON.stringify(doc);
    const at = this.now();
    return this.a.write(async (c) => {
      await c.query(
        `INSERT INTO "minecraft_settings" ("key", "value", "updated_at") VALUES ($1, $2, $3)
         ON CONFLICT ("key") DO UPDATE SET "value" = EXCLUDED."value", "updated_at" = EXCLUDED."updated_at"`,
        [this.key, value, at],
      );
    });
  }
}
