import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import { StoreError } from '@ccagent/store-core';
import { readMigrationFiles, type MigrationMeta } from 'drizzle-orm/migrator';
import type pg from 'pg';

/** Schema version this build writes and reads: the number of drizzle-kit migrations in `../drizzle`. */
export const PG_SCHEMA_VERSION = 7;

/** Key of the transaction-level advisory lock held while migrating (two orchestrators starting at once). */
const MIGRATE_LOCK_KEY = 0x63634167; // "ccAg", the SQLite store's application id

/** Folder of the checked-in migrations, shipped in the package next to `dist/` (and `src/`). */
export function pgMigrationsFolder(): string {
  return fileURLToPath(new URL('../drizzle', import.meta.url));
}

function loadMigrations(folder: string): MigrationMeta[] {
  if (!existsSync(folder)) {
    throw new StoreError('migrations_missing', `migrations folder ${folder} is missing (broken install)`, {
      details: { folder },
    });
  }
  const migrations = readMigrationFiles({ migrationsFolder: folder });
  if (migrations.length !== PG_SCHEMA_VERSION) {
    throw new StoreError(
      'migrations_missing',
      `${folder} holds ${migrations.length} migrations but this build expects ${PG_SCHEMA_VERSION}`,
      { details: { folder, found: migrations.length, expected: PG_SCHEMA_VERSION } },
    );
  }
  return migrations;
}

/** What the database says about its ccagent schema (no writes). */
export async function readPgSchemaVersion(
  client: pg.ClientBase,
): Promise<{ version: number; foreignTables: boolean }> {
  const r = await client.query<{ stamped: boolean; tasks: boolean }>(
    `SELECT to_regclass('ccagent_schema') IS NOT NULL AS stamped, to_regclass('tasks') IS NOT NULL AS tasks`,
  );
  const row = r.rows[0] as { stamped: boolean; tasks: boolean };
  if (!row.stamped) return { version: 0, foreignTables: row.tasks };
  const v = await client.query<{ v: number | null }>('SELECT max(version) AS v FROM ccagent_schema');
  return { version: v.rows[0]?.v ?? 0, foreignTables: false };
}

/** Throws unless this build can use a database at `version` (read-only users also need the current one). */
export function checkPgSchema(
  info: { version: number; foreignTables: boolean },
  where: string,
  readonly: boolean,
): void {
  if (info.foreignTables) {
    throw new StoreError('not_a_ccagent_db', `${where} has a "tasks" table that ccagent did not create`, {
      details: { database: where },
    });
  }
  if (info.version > PG_SCHEMA_VERSION) {
    throw new StoreError(
      'schema_too_new',
      `${where} has ccagent schema version ${info.version}, but this ccagent only knows versions up to ` +
        `${PG_SCHEMA_VERSION}; it was written by a newer ccagent — upgrade ccagent`,
      { details: { database: where, fileVersion: info.version, knownVersion: PG_SCHEMA_VERSION } },
    );
  }
  if (readonly && info.version < PG_SCHEMA_VERSION) {
    throw new StoreError(
      'schema_outdated',
      `${where} has ccagent schema version ${info.version}, this ccagent reads version ${PG_SCHEMA_VERSION}; ` +
        'start the orchestrator once (it migrates the database) and try again',
      { details: { database: where, fileVersion: info.version, knownVersion: PG_SCHEMA_VERSION } },
    );
  }
}

/**
 * Bring the database to {@link PG_SCHEMA_VERSION}: the missing drizzle-kit migrations in one transaction under an
 * advisory lock (two orchestrators starting together: one migrates, the other then finds it done), each recorded in
 * `ccagent_schema`. Returns the versions applied.
 */
export async function migratePg(
  client: pg.ClientBase,
  where: string,
  folder = pgMigrationsFolder(),
): Promise<number[]> {
  const migrations = loadMigrations(folder);
  const applied: number[] = [];
  await client.query('BEGIN');
  try {
    await client.query('SELECT pg_advisory_xact_lock($1)', [MIGRATE_LOCK_KEY]);
    const info = await readPgSchemaVersion(client);
    checkPgSchema(info, where, false);
    if (info.version < PG_SCHEMA_VERSION) {
      await client.query(
        'CREATE TABLE IF NOT EXISTS ccagent_schema (version integer PRIMARY KEY, hash text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())',
      );
      for (let v = info.version; v < PG_SCHEMA_VERSION; v++) {
        const m = migrations[v] as MigrationMeta;
        for (const stmt of m.sql) if (stmt.trim()) await client.query(stmt);
        await client.query('INSERT INTO ccagent_schema (version, hash) VALUES ($1, $2)', [v + 1, m.hash]);
        applied.push(v + 1);
      }
    }
    await client.query('COMMIT');
  } catch (err) {
    await client.query('ROLLBACK').catch(() => undefined);
    throw err;
  }
  return applied;
}
