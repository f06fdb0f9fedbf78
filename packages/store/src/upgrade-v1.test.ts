import { readFileSync } from 'node:fs';
import path from 'node:path';
import type { Task } from '@ccagent/engine';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { enc, isStoreError, taskToRow } from '@ccagent/store-core';
import { SCHEMA_VERSION } from './migrate.js';
import { openSqliteStore } from './sqlite-store.js';
import {
  expectReadBack,
  expectUpgradedFile,
  newTask,
  tempDir,
  writeOldSchemaFile,
} from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir()));
afterEach(() => cleanup());

/** Tasks at several statuses with memories of every shape, as a version-1 build left them. */
const tasks: Task[] = [
  newTask('queued', { memory: null, createdAt: 1 }),
  newTask('running', {
    status: 'running',
    clientId: 'pc-1',
    memory: { turns: [{ role: 'assistant', content: 'é ✓ "quoted"' }], pad: 'p'.repeat(20_000) },
    counters: { steps: 7, toolCalls: 3, questions: 0 },
    createdAt: 2,
    updatedAt: 9,
  }),
  newTask('waiting', { status: 'waiting_for_command', memory: [1, 2.5, 'x', false], createdAt: 3 }),
  newTask('asking', { status: 'waiting_for_user', memory: 'plain text', createdAt: 4 }),
  newTask('done', { status: 'completed', memory: { final: true }, result: { sum: 20 }, createdAt: 5 }),
  newTask('broken', {
    status: 'failed',
    memory: 0,
    error: { code: 'budget_exhausted', message: 'out of steps' },
    createdAt: 6,
  }),
];

/**
 * A database file exactly as a version-1 build made it: the checked-in first migration, drizzle's bookkeeping row,
 * the stamps, and task rows with the memory in `tasks.memory`.
 */
function writeV1File(file: string): void {
  writeOldSchemaFile(file, 1, (insert) => {
    for (const t of tasks) insert('tasks', { ...taskToRow(t), memory: enc(t.memory) });
  });
}

describe('a version-1 file (memory in tasks.memory)', () => {
  it('is migrated on open: every task reads back identical, the memory moved to task_memory, user_version current (guards against a migration that loses or mangles memories)', async () => {
    const file = path.join(dir, 'v1.db');
    writeV1File(file);
    const store = openSqliteStore({ path: file });
    expect(SCHEMA_VERSION).toBe(11);
    await expectReadBack(store, tasks);
    expect(await store.listTasks()).toStrictEqual(tasks);
    expect((await store.listTasks({ status: 'running' }))[0]?.memory).toEqual(tasks[1]?.memory);
    // It keeps working: a memory change of a migrated task is written and read back.
    const running = tasks[1] as Task;
    await store.commit({ task: { ...running, memory: { moved: true }, updatedAt: 10 } });
    await store.close();

    expectUpgradedFile(file, (db) => {
      const taskCols = (db.prepare('PRAGMA table_info(tasks)').all() as Array<{ name: string }>).map(
        (c) => c.name,
      );
      expect(taskCols).not.toContain('memory');
      expect(db.prepare('SELECT count(*) AS n FROM task_memory').get()).toEqual({ n: tasks.length });
    });
    const reader = openSqliteStore({ path: file, readonly: true });
    expect((await reader.getTask('running'))?.memory).toEqual({ moved: true });
    expect((await reader.getTask('done'))?.memory).toEqual({ final: true });
    await reader.close();
  });

  it('opened read-only before any migration is schema_outdated and left untouched (guards against the CLI reading a file it cannot understand)', () => {
    const file = path.join(dir, 'v1.db');
    writeV1File(file);
    const before = readFileSync(file);
    let err: unknown;
    try {
      openSqliteStore({ path: file, readonly: true });
    } catch (e) {
      err = e;
    }
    expect(isStoreError(err, 'schema_outdated')).toBe(true);
    expect((err as Error).message).toContain('schema version 1');
    expect((err as Error).message).toContain('start the orchestrator once');
    expect(readFileSync(file).equals(before)).toBe(true);
  });
});
