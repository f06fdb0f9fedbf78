// Test-only helpers (not exported from index.ts).
import { mkdtempSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { CommandCallRecord, JsonValue, Task } from '@ccagent/engine';
import Database from 'better-sqlite3';
import { expect } from 'vitest';
import { callToRow, taskToRow } from '@ccagent/store-core';
import { APPLICATION_ID, SCHEMA_VERSION, migrationsFolder } from '../../src/migrate.js';
import { openSqliteStore, type SqliteStore } from '../../src/sqlite-store.js';

/** A fresh temp dir and its cleanup. */
export function tempDir(prefix = 'ccagent-store-'): { dir: string; cleanup: () => void } {
  const dir = mkdtempSync(path.join(tmpdir(), prefix));
  return { dir, cleanup: () => rmSync(dir, { recursive: true, force: true }) };
}

/** A queued task with defaults. */
export function newTask(id: string, overrides: Partial<Task> = {}): Task {
  return {
    id,
    kind: 'demo',
    status: 'queued',
    clientId: null,
    prompt: `prompt ${id}`,
    allowedCommands: [],
    memory: null,
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 1,
    updatedAt: 1,
    ...overrides,
  };
}

/**
 * A command call of another task ('other'): a commit carrying it for a task of a different id is refused by the store
 * after that write's task row, history and steps were written, so the write's own rollback is exercised for real.
 */
export const foreignCall: CommandCallRecord = {
  callId: 'x',
  taskId: 'other',
  command: 'noop',
  args: {},
  timeoutMs: 1000,
  status: 'pending',
  dispatchCount: 0,
  createdAt: 1,
};

/** Inserts one row into `table`; camelCase keys name snake_case columns. */
export type InsertRow = (table: string, row: Record<string, unknown>) => void;

/**
 * The rows of an old file: a function inserting them, or tasks (as schema version 2 and later store them, see
 * {@link insertTask}) and their command calls.
 */
export type OldRows = ((insert: InsertRow) => void) | { tasks: Task[]; calls: CommandCallRecord[] };

/**
 * Writes a database file as a build of schema `version` left it: the first `version` checked-in migrations, drizzle's
 * bookkeeping rows (`v1`..`v<version>`), the stamps (application id, `user_version = version`), and `rows`. An
 * upgrade test opens it with the current store and checks what the newer migrations did.
 */
export function writeOldSchemaFile(file: string, version: number, rows: OldRows): void {
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  const names = readdirSync(migrationsFolder())
    .filter((n) => n.endsWith('.sql'))
    .sort()
    .slice(0, version);
  expect(names).toHaveLength(version);
  for (const name of names) {
    const text = readFileSync(path.join(migrationsFolder(), name), 'utf8');
    for (const stmt of text.split('--> statement-breakpoint')) if (stmt.trim()) db.exec(stmt);
  }
  db.exec(
    'CREATE TABLE "__drizzle_migrations" (id INTEGER PRIMARY KEY, hash text NOT NULL, created_at numeric)',
  );
  const record = db.prepare('INSERT INTO "__drizzle_migrations" (hash, created_at) VALUES (?, ?)');
  for (let v = 1; v <= version; v++) record.run(`v${v}`, v);
  const snake = (k: string) => k.replace(/[A-Z]/g, (ch) => `_${ch.toLowerCase()}`);
  const fill = typeof rows === 'function' ? rows : tasksAndCalls(rows.tasks, rows.calls);
  fill((table, row) => {
    const keys = Object.keys(row);
    db.prepare(
      `INSERT INTO ${table} (${keys.map(snake).join(', ')}) VALUES (${keys.map((k) => `@${k}`).join(', ')})`,
    ).run(row);
  });
  db.pragma(`application_id = ${APPLICATION_ID}`);
  db.pragma(`user_version = ${version}`);
  db.close();
}

/** Inserts a task as schema version 2 and later store it: its row in `tasks`, its memory in `task_memory`. */
export function insertTask(insert: InsertRow, t: Task): void {
  insert('tasks', taskToRow(t));
  insert('task_memory', { taskId: t.id, memory: JSON.stringify(t.memory) });
}

/** Inserts the tasks (as version 2 and later store them), then the command calls. */
function tasksAndCalls(tasks: Task[], calls: CommandCallRecord[]): (insert: InsertRow) => void {
  return (insert) => {
    for (const t of tasks) insertTask(insert, t);
    for (const c of calls) insert('command_calls', callToRow(c));
  };
}

/**
 * A command call of `command` made at `createdAt` (args `{ n: createdAt }`, dispatched once); unless pending, it
 * closed one ms later with the outcome `{ ok: true, result }`.
 */
export function callAt(
  callId: string,
  taskId: string,
  status: CommandCallRecord['status'],
  createdAt: number,
  command: string,
  result: JsonValue,
): CommandCallRecord {
  const c: CommandCallRecord = {
    callId,
    taskId,
    command,
    args: { n: createdAt },
    timeoutMs: 5000,
    status,
    dispatchCount: 1,
    createdAt,
  };
  if (status !== 'pending') {
    c.outcome = { ok: true, result };
    c.completedAt = createdAt + 1;
  }
  return c;
}

/**
 * Writes `v<version>.db` in `dir` as a build of that schema version left it (see {@link writeOldSchemaFile}) and opens
 * it with the current store, which migrates it.
 */
export function openOldFile(
  dir: string,
  version: number,
  rows: OldRows,
): { file: string; store: SqliteStore } {
  const file = path.join(dir, `v${version}.db`);
  writeOldSchemaFile(file, version, rows);
  return { file, store: openSqliteStore({ path: file }) };
}

/** Asserts that every task and command call reads back from `store` strictly equal to the record written. */
export async function expectReadBack(
  store: SqliteStore,
  tasks: Task[],
  calls: CommandCallRecord[] = [],
): Promise<void> {
  for (const c of calls) expect(await store.getCommandCall(c.callId), c.callId).toStrictEqual(c);
  for (const t of tasks) expect(await store.getTask(t.id), t.id).toStrictEqual(t);
}

/**
 * Opens an upgraded `file` read-only and asserts it is at the current schema version with every migration recorded,
 * passes SQLite's integrity and foreign-key checks, and meets the test's own checks in `more` (run before closing).
 */
export function expectUpgradedFile(file: string, more: (db: Database.Database) => void): void {
  const db = new Database(file, { readonly: true });
  try {
    expect(db.pragma('user_version', { simple: true })).toBe(SCHEMA_VERSION);
    expect(db.prepare('SELECT count(*) AS n FROM __drizzle_migrations').get()).toEqual({ n: SCHEMA_VERSION });
    more(db);
    expect(db.pragma('integrity_check', { simple: true })).toBe('ok');
    expect(db.pragma('foreign_key_check')).toEqual([]);
  } finally {
    db.close();
  }
}
