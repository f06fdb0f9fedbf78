import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type Database from 'better-sqlite3';
import { readMigrationFiles, type MigrationMeta } from 'drizzle-orm/migrator';
import { StoreError } from '@ccagent/store-core';

/**
 * Schema version this build writes and reads: the number of drizzle-kit migrations in `../drizzle` (a test checks
 * they agree). Stamped into the file as `PRAGMA user_version`.
 */
export const SCHEMA_VERSION = 11;

/** `PRAGMA application_id` of a ccagent database ("ccAg"), so a foreign SQLite file is recognised. */
export const APPLICATION_ID = 0x63634167;

/** Folder of the checked-in migrations, shipped in the package next to `dist/` (and `src/` in the repository). */
export function migrationsFolder(): string {
  return fileURLToPath(new URL('../drizzle', import.meta.url));
}

/** What the file says about its own schema. */
export interface FileSchemaInfo {
  version: number;
  applicationId: number;
  userTables: number;
}

/** Read the version stamps of an open database (no writes). */
export function readSchemaInfo(db: Database.Database): FileSchemaInfo {
  const version = db.pragma('user_version', { simple: true }) as number;
  const applicationId = db.pragma('application_id', { simple: true }) as number;
  const row = db
    .prepare("SELECT count(*) AS n FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'")
    .get() as { n: number };
  return { version, applicationId, userTables: row.n };
}

/** Throws unless the file's stamps allow this build to use it (read-only users also need the current version). */
export function checkSchema(info: FileSchemaInfo, path: string, readonly: boolean): void {
  if (info.applicationId !== 0 && info.applicationId !== APPLICATION_ID) {
    throw new StoreError('not_a_ccagent_db', `${path} is an SQLite database of another application`, {
      details: { path, applicationId: info.applicationId },
    });
  }
  if (info.version > SCHEMA_VERSION) {
    throw new StoreError(
      'schema_too_new',
      `${path} has schema version ${info.version}, but this ccagent only knows versions up to ${SCHEMA_VERSION}; ` +
        'it was written by a newer ccagent — upgrade ccagent (or use another --db file)',
      { details: { path, fileVersion: info.version, knownVersion: SCHEMA_VERSION } },
    );
  }
  if (info.version === 0 && info.applicationId !== APPLICATION_ID && info.userTables > 0) {
    throw new StoreError('not_a_ccagent_db', `${path} is an SQLite database that ccagent did not create`, {
      details: { path },
    });
  }
  if (readonly && info.version < SCHEMA_VERSION) {
    throw new StoreError(
      'schema_outdated',
      `${path} has schema version ${info.version}, this ccagent reads version ${SCHEMA_VERSION}; ` +
        'start the orchestrator once (it migrates the file) and try again',
      { details: { path, fileVersion: info.version, knownVersion: SCHEMA_VERSION } },
    );
  }
}

function loadMigrations(folder: string): MigrationMeta[] {
  if (!existsSync(folder)) {
    throw new StoreError('migrations_missing', `migrations folder ${folder} is missing (broken install)`, {
      details: { folder },
    });
  }
  let migrations: MigrationMeta[];
  try {
    migrations = readMigrationFiles({ migrationsFolder: folder });
  } catch (cause) {
    throw new StoreError('migrations_missing', `cannot read migrations in ${folder}`, {
      cause,
      details: { folder },
    });
  }
  if (migrations.length !== SCHEMA_VERSION) {
    throw new StoreError(
      'migrations_missing',
      `${folder} holds ${migrations.length} migrations but this build expects ${SCHEMA_VERSION}`,
      { details: { folder, found: migrations.length, expected: SCHEMA_VERSION } },
    );
  }
  return migrations;
}

/**
 * Bring a writable database to {@link SCHEMA_VERSION}: applies the missing drizzle-kit migrations in one
 * `BEGIN IMMEDIATE` transaction (so two processes opening the same new file cannot both migrate), records them in
 * drizzle's `__drizzle_migrations` table too, and stamps `user_version` / `application_id`. Returns the versions
 * applied.
 */
export function migrate(db: Database.Database, path: string, folder = migrationsFolder()): number[] {
  const migrations = loadMigrations(folder);
  const applied: number[] = [];
  db.transaction(() => {
    // Re-read inside the write lock: another process may have migrated since we looked.
    const info = readSchemaInfo(db);
    checkSchema(info, path, false);
    if (info.version >= SCHEMA_VERSION) return;
    db.exec(
      'CREATE TABLE IF NOT EXISTS "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)',
    );
    const record = db.prepare('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)');
    for (let v = info.version; v < SCHEMA_VERSION; v++) {
      const m = migrations[v] as MigrationMeta;
      for (const stmt of m.sql) if (stmt.trim()) db.exec(stmt);
      record.run(m.hash, m.folderMillis);
      applied.push(v + 1);
    }
    db.pragma(`application_id = ${APPLICATION_ID}`);
    db.pragma(`user_version = ${SCHEMA_VERSION}`);
  }).immediate();
  return applied;
}
