import { existsSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import Database from 'better-sqlite3';
import { getTableConfig, type SQLiteTable } from 'drizzle-orm/sqlite-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { APPLICATION_ID, SCHEMA_VERSION, migrationsFolder } from './migrate.js';
import * as schema from './schema.js';
import { openSqliteStore } from './sqlite-store.js';
import { isStoreError } from '@ccagent/store-core';
import { newTask, tempDir } from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir()));
afterEach(() => cleanup());

function catchSync(fn: () => unknown): unknown {
  try {
    fn();
  } catch (err) {
    return err;
  }
  return undefined;
}

describe('openSqliteStore', () => {
  it('a writer checkpoints the WAL in a worker: no auto-checkpoint on the writer, commits nudge it, close leaves an empty WAL (guards against the checkpointer not being wired in, or left running after close)', async () => {
    const file = path.join(dir, 'ck.db');
    const store = openSqliteStore({ path: file, synchronous: 'normal' });
    const ck = store.checkpointer;
    expect(ck).toBeDefined();
    expect(await ck?.ready).toBe(true);
    expect(ck?.stats().state).toBe('running');
    const writer = (store as unknown as { db: Database.Database }).db;
    expect(writer.pragma('wal_autocheckpoint', { simple: true })).toBe(0);
    for (let i = 0; i < 20; i++) await store.commit({ task: newTask(`t${i}`), create: true });
    expect(ck?.stats().nudges).toBeGreaterThanOrEqual(1);
    await store.close();
    expect(ck?.stats().state).toBe('stopped');
    const wal = `${file}-wal`;
    expect(existsSync(wal) ? readFileSync(wal).length : 0).toBe(0);
    const db = new Database(file, { readonly: true });
    expect((db.prepare('SELECT count(*) AS n FROM tasks').get() as { n: number }).n).toBe(20);
    db.close();
  });

  it("checkpointer: false keeps SQLite's own auto-checkpoint and starts no worker; a read-only store never has one", async () => {
    const file = path.join(dir, 'plain.db');
    const store = openSqliteStore({ path: file, checkpointer: false });
    expect(store.checkpointer).toBeUndefined();
    const writer = (store as unknown as { db: Database.Database }).db;
    expect(writer.pragma('wal_autocheckpoint', { simple: true })).toBe(1000);
    await store.close();
    const ro = openSqliteStore({ path: file, readonly: true });
    expect(ro.checkpointer).toBeUndefined();
    await ro.close();
  });

  it('creates parent dirs and a fresh file with the current schema, WAL, foreign keys and busy timeout (guards against an unmigrated or non-WAL database)', async () => {
    const file = path.join(dir, 'a', 'b', 'ccagent.db');
    const store = openSqliteStore({ path: file, busyTimeoutMs: 1234 });
    expect(store.path).toBe(file);
    expect(store.schemaVersion).toBe(SCHEMA_VERSION);
    expect(store.checkHealth()).toEqual({ ok: true });
    await store.close();

    const db = new Database(file, { readonly: true });
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.pragma('application_id', { simple: true })).toBe(APPLICATION_ID);
    expect(db.pragma('journal_mode', { simple: true })).toBe('wal');
    const tables = (
      db.prepare("SELECT name FROM sqlite_master WHERE type='table' ORDER BY name").all() as Array<{
        name: string;
      }>
    ).map((r) => r.name);
    expect(tables).toEqual([
      '__drizzle_migrations',
      'audit_log',
      'clients',
      'command_calls',
      'credentials',
      'enrollment_codes',
      'history',
      'minecraft_actions',
      'minecraft_logs',
      'model_tools',
      'pairing_requests',
      'questions',
      'schedule_firings',
      'schedules',
      'step_messages',
      'steps',
      'task_kind_revisions',
      'task_memory',
      'tasks',
    ]);
    expect((db.prepare('SELECT count(*) AS n FROM __drizzle_migrations').get() as { n: number }).n).toBe(
      SCHEMA_VERSION,
    );
    db.close();
  });

  it('sets a short busy_timeout and foreign_keys on the writer connection (guards against the event loop blocked for the whole lock wait, and orphan rows)', () => {
    const store = openSqliteStore({ path: path.join(dir, 'x.db'), busyTimeoutMs: 4321 });
    const db = (store as unknown as { db: Database.Database }).db;
    // The writer waits up to busyTimeoutMs for a foreign lock asynchronously (storage-faults.test.ts); one
    // synchronous SQLite wait is capped at a few ms.
    expect(db.pragma('busy_timeout', { simple: true })).toBe(5);
    expect(db.pragma('foreign_keys', { simple: true })).toBe(1);
    expect(db.pragma('synchronous', { simple: true })).toBe(2); // FULL: acknowledged = survives power loss
    void store.close();
    const normal = openSqliteStore({ path: path.join(dir, 'n.db'), synchronous: 'normal' });
    const ndb = (normal as unknown as { db: Database.Database }).db;
    expect(ndb.pragma('synchronous', { simple: true })).toBe(1); // NORMAL: survives a crash, not a power loss
    void normal.close();
  });

  it('the checked-in migrations produce exactly the tables and columns of schema.ts (guards against editing the schema without running db:generate)', async () => {
    const file = path.join(dir, 'cols.db');
    await openSqliteStore({ path: file }).close();
    const db = new Database(file, { readonly: true });
    for (const table of Object.values(schema) as SQLiteTable[]) {
      const cfg = getTableConfig(table);
      const cols = (
        db.prepare(`PRAGMA table_info(${cfg.name})`).all() as Array<{ name: string; notnull: number }>
      )
        .map((c) => `${c.name}:${c.notnull}`)
        .sort();
      expect(cols, cfg.name).toEqual(cfg.columns.map((c) => `${c.name}:${c.notNull ? 1 : 0}`).sort());
      const indexes = (
        db.prepare(`PRAGMA index_list(${cfg.name})`).all() as Array<{ name: string; origin: string }>
      )
        .filter((i) => i.origin === 'c')
        .map((i) => i.name)
        .sort();
      expect(indexes, cfg.name).toEqual(cfg.indexes.map((i) => i.config.name).sort());
    }
    db.close();
  });

  it('SCHEMA_VERSION equals the number of checked-in migrations (guards against a migration added without a version bump)', () => {
    const journal = JSON.parse(
      readFileSync(path.join(migrationsFolder(), 'meta', '_journal.json'), 'utf8'),
    ) as {
      entries: unknown[];
    };
    expect(journal.entries).toHaveLength(SCHEMA_VERSION);
  });

  it('reopening a current file applies nothing and keeps the data (guards against re-running migrations)', async () => {
    const file = path.join(dir, 're.db');
    const logs: unknown[] = [];
    const logger = { debug: () => {}, info: (o: unknown) => logs.push(o), warn: () => {}, error: () => {} };
    const s1 = openSqliteStore({ path: file, logger });
    await s1.commit({ task: newTask('keep'), create: true });
    await s1.close();
    expect(logs).toHaveLength(1);
    const s2 = openSqliteStore({ path: file, logger });
    expect((await s2.getTask('keep'))?.id).toBe('keep');
    await s2.close();
    expect(logs).toHaveLength(1);
  });

  it('refuses a file stamped with a newer schema, saying which versions and to upgrade, and leaves it untouched (guards against an old build corrupting a newer database)', async () => {
    const file = path.join(dir, 'new.db');
    await openSqliteStore({ path: file }).close();
    const db = new Database(file);
    db.pragma(`user_version = ${SCHEMA_VERSION + 1}`);
    db.pragma('journal_mode = DELETE');
    db.close();
    const before = readFileSync(file);
    for (const readonly of [false, true]) {
      const err = catchSync(() => openSqliteStore({ path: file, readonly }));
      expect(isStoreError(err, 'schema_too_new')).toBe(true);
      const message = (err as Error).message;
      expect(message).toContain(`schema version ${SCHEMA_VERSION + 1}`);
      expect(message).toContain(`up to ${SCHEMA_VERSION}`);
      expect(message).toContain('upgrade ccagent');
    }
    expect(readFileSync(file).equals(before)).toBe(true);
    expect(existsSync(`${file}-wal`)).toBe(false);
  });

  it("refuses an SQLite file of another application (guards against adding ccagent's tables to someone else's database)", () => {
    const file = path.join(dir, 'foreign.db');
    const db = new Database(file);
    db.exec('CREATE TABLE notes (x TEXT)');
    db.close();
    expect(
      isStoreError(
        catchSync(() => openSqliteStore({ path: file })),
        'not_a_ccagent_db',
      ),
    ).toBe(true);
    const db2 = new Database(file);
    expect(db2.prepare("SELECT count(*) AS n FROM sqlite_master WHERE name = 'tasks'").get()).toEqual({
      n: 0,
    });
    db2.close();
  });

  it('fails with open_failed (not a crash) when the path is a directory', () => {
    expect(
      isStoreError(
        catchSync(() => openSqliteStore({ path: dir })),
        'open_failed',
      ),
    ).toBe(true);
  });
});

describe('read-only mode', () => {
  it('a missing file is not_found and is not created (guards against the CLI creating an empty database)', () => {
    const file = path.join(dir, 'missing', 'ccagent.db');
    const err = catchSync(() => openSqliteStore({ path: file, readonly: true }));
    expect(isStoreError(err, 'not_found')).toBe(true);
    expect((err as Error).message).toContain(file);
    expect(existsSync(path.dirname(file))).toBe(false);
  });

  it('an un-migrated file is schema_outdated rather than migrated (guards against the reader writing)', () => {
    const file = path.join(dir, 'empty.db');
    writeFileSync(file, '');
    expect(
      isStoreError(
        catchSync(() => openSqliteStore({ path: file, readonly: true })),
        'schema_outdated',
      ),
    ).toBe(true);
    expect(readFileSync(file).length).toBe(0);
  });

  it('reads while the writer runs, sees each acknowledged commit, and never blocks the writer (guards against the CLI stalling the server)', async () => {
    const file = path.join(dir, 'live.db');
    const writer = openSqliteStore({ path: file, busyTimeoutMs: 0 });
    await writer.commit({ task: newTask('t1'), create: true });
    const reader = openSqliteStore({ path: file, readonly: true, busyTimeoutMs: 0 });
    expect((await reader.listTasks()).map((t) => t.id)).toEqual(['t1']);
    // Interleave many writer commits with reader queries; with busy_timeout 0 any lock conflict would throw.
    for (let i = 2; i <= 30; i++) {
      await writer.commit({ task: newTask(`t${i}`, { createdAt: i }), create: true });
      expect((await reader.listTasksPage({ limit: 1 })).total).toBe(i);
    }
    const err = await reader.commit({ task: newTask('nope'), create: true }).catch((e: unknown) => e);
    expect(isStoreError(err, 'readonly')).toBe(true);
    const err2 = await reader
      .upsertClient({ clientId: 'c', commands: [], connected: true, seenAt: 1 })
      .catch((e: unknown) => e);
    expect(isStoreError(err2, 'readonly')).toBe(true);
    expect(await writer.getTask('nope')).toBeUndefined();
    await reader.close();
    await writer.close();
  });

  it('works after the writer has stopped (no -wal file left) (guards against "unable to open" when the server is down)', async () => {
    const file = path.join(dir, 'stopped.db');
    const writer = openSqliteStore({ path: file });
    await writer.commit({ task: newTask('a'), create: true });
    await writer.close();
    expect(readdirSync(dir)).toEqual(['stopped.db']);
    const reader = openSqliteStore({ path: file, readonly: true });
    expect((await reader.getTask('a'))?.id).toBe('a');
    expect(reader.checkHealth()).toEqual({ ok: true });
    await reader.close();
    // and a writer can still open it afterwards
    const again = openSqliteStore({ path: file });
    await again.commit({ task: newTask('b'), create: true });
    await again.close();
  });
});
