import path from 'node:path';
import { isEngineError, type JsonValue, type Task } from '@ccagent/engine';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from './sqlite-store.js';
import { storageFailureOf } from '@ccagent/store-core';
import { foreignCall, newTask, tempDir } from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
let file: string;
let store: SqliteStore;
let counter: Database.Database;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  file = path.join(dir, 'ccagent.db');
  store = openSqliteStore({ path: file });
  // A second connection adds triggers that count every write of a task_memory row (test database only).
  counter = new Database(file);
  counter.exec(`
    CREATE TABLE memory_writes (task_id TEXT, op TEXT);
    CREATE TRIGGER count_memory_updates AFTER UPDATE ON task_memory
      BEGIN INSERT INTO memory_writes VALUES (new.task_id, 'update'); END;
    CREATE TRIGGER count_memory_inserts AFTER INSERT ON task_memory
      BEGIN INSERT INTO memory_writes VALUES (new.task_id, 'insert'); END;`);
});
afterEach(async () => {
  counter.close();
  await store.close();
  cleanup();
});

/** Writes of the task_memory row of `taskId` since the last call, as the triggers saw them. */
function memoryWrites(taskId: string): string[] {
  const ops = (
    counter.prepare('SELECT op FROM memory_writes WHERE task_id = ? ORDER BY rowid').all(taskId) as Array<{
      op: string;
    }>
  ).map((r) => r.op);
  counter.prepare('DELETE FROM memory_writes WHERE task_id = ?').run(taskId);
  return ops;
}

/** The memory on disk, read by another connection (not through the store's own state). */
function memoryOnDisk(taskId: string): JsonValue | undefined {
  const row = counter.prepare('SELECT memory FROM task_memory WHERE task_id = ?').get(taskId) as
    { memory: string } | undefined;
  return row === undefined ? undefined : (JSON.parse(row.memory) as JsonValue);
}

const pad = 'm'.repeat(4000);

/** The next state of a task (a new object each time, as the engine commits). */
function next(t: Task, changes: Partial<Task> = {}): Task {
  return {
    ...t,
    updatedAt: t.updatedAt + 1,
    counters: { ...t.counters, steps: t.counters.steps + 1 },
    ...changes,
  };
}

describe('task memory is written only when it changes', () => {
  it('create writes the row; a commit with the same memory object does not rewrite it, another object does (guards against the 3-14 KB memory rewritten on every commit)', async () => {
    let t = newTask('t', { memory: { turns: [1], pad } });
    await store.commit({ task: t, create: true });
    expect(memoryWrites('t')).toEqual(['insert']);

    t = next(t, { status: 'running' });
    await store.commit({ task: t, expectedStatus: 'queued' });
    expect(memoryWrites('t')).toEqual([]);
    expect((await store.getTask('t'))?.status).toBe('running'); // the task row itself was written

    const changed = { turns: [1, 2], pad };
    t = next(t, { memory: changed });
    await store.commit({ task: t });
    expect(memoryWrites('t')).toEqual(['update']);
    expect(memoryOnDisk('t')).toEqual(changed);

    // A different object (even with equal JSON) is written once, then known by identity.
    const copy = JSON.parse(JSON.stringify(changed)) as JsonValue;
    t = next(t, { memory: copy });
    await store.commit({ task: t });
    expect(memoryWrites('t')).toEqual(['update']);
    await store.commit({ task: next(t) });
    expect(memoryWrites('t')).toEqual([]);
    expect((await store.getTask('t'))?.counters.steps).toBe(4);
  });

  it('a round trip in one transaction (result with the old memory, then the decision with a new one) writes the row once (guards against two memory writes per round trip)', async () => {
    let t = newTask('t', { status: 'running', memory: { calls: ['queued'], pad } });
    await store.commit({ task: t, create: true });
    memoryWrites('t');
    for (let i = 0; i < 3; i++) {
      const result = next(t);
      const decision = next(result, { memory: { calls: [`dispatched ${i}`], pad } });
      // Same turn of the event loop: one group-committed transaction, one savepoint each.
      await Promise.all([store.commit({ task: result }), store.commit({ task: decision })]);
      expect(memoryWrites('t'), `round trip ${i}`).toEqual(['update']);
      t = decision;
    }
    expect(memoryOnDisk('t')).toEqual({ calls: ['dispatched 2'], pad });
  });

  it('a write rolled back alone after changing the memory is not taken as written: the next commit with that memory object writes it (guards against the memory lost after a failed write)', async () => {
    let t = newTask('t', { status: 'running', memory: { v: 0 } });
    await store.commit({ task: t, create: true });
    const m1 = { v: 1 };
    t = next(t, { memory: m1 });
    // The task row and memory are written, then the call (of another task) is refused: the savepoint rolls back.
    const err = await store.commit({ task: t, commandCall: foreignCall }).catch((e: unknown) => e);
    expect(isEngineError(err, 'invalid_input')).toBe(true);
    expect(memoryOnDisk('t')).toEqual({ v: 0 });
    await store.commit({ task: next(t) }); // same memory object m1
    expect(memoryOnDisk('t')).toEqual(m1);
    expect((await store.getTask('t'))?.memory).toEqual(m1);
  });

  it('a transaction SQLite rolls back (disk full) forgets what it wrote: the same memory object is written again (guards against a stale "last written" after a lost batch)', async () => {
    let t = newTask('t', { status: 'running', memory: { v: 0 } });
    await store.commit({ task: t, create: true });
    const db = (store as unknown as { db: Database.Database }).db;
    const big = 'x'.repeat(200_000);
    /** The file may hardly grow while `p` runs: what a full disk does to SQLite (it rolls the transaction back). */
    const diskFull = async <T>(p: () => Promise<T>): Promise<T> => {
      db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 2}`);
      try {
        return await p();
      } finally {
        db.pragma('max_page_count = 1073741823');
      }
    };
    // 1. The memory change and a step too big for the disk in ONE write: it fails, the memory stays v0 ...
    const m1 = { v: 1 };
    t = next(t, { memory: m1 });
    const full = await diskFull(() =>
      store
        .commit({ task: t, steps: [{ kind: 'note', step: 1, at: 1, output: big }] })
        .catch((e: unknown) => e),
    );
    expect(storageFailureOf(full)?.code).toBe('disk_full');
    expect(memoryOnDisk('t')).toEqual({ v: 0 });
    // ... and the next commit with that same memory object writes it.
    t = next(t);
    await store.commit({ task: t });
    expect(memoryOnDisk('t')).toEqual(m1);
    // 2. A memory change, then another write of the same batch fills the disk: SQLite rolls the whole transaction
    //    back and the queue runs the memory change again in a fresh one, which must write it again.
    const m2 = { v: 2 };
    t = next(t, { memory: m2 });
    const [ok, lost] = await diskFull(() =>
      Promise.allSettled([
        store.commit({ task: t }),
        store.appendStep('t', { kind: 'note', step: 1, at: 2, output: big }),
      ]),
    );
    expect(ok.status).toBe('fulfilled');
    expect(lost.status).toBe('rejected');
    expect(memoryOnDisk('t')).toEqual(m2);
    // 3. Committed for sure now: the same object again is not rewritten.
    memoryWrites('t');
    await store.commit({ task: next(t) });
    expect(memoryWrites('t')).toEqual([]);
  });

  it('every read that returns a task carries its memory (guards against a read path that misses the task_memory join)', async () => {
    const memories: JsonValue[] = [null, { a: [1, 'é', { b: null }] }, 'text', 42, [true, false]];
    for (const [i, memory] of memories.entries()) {
      await store.commit({
        task: newTask(`t${i}`, { memory, createdAt: i + 1, status: i % 2 ? 'running' : 'queued' }),
        create: true,
      });
    }
    expect((await store.getTask('t1'))?.memory).toEqual(memories[1]);
    expect((await store.listTasks()).map((t) => t.memory)).toEqual(memories);
    expect((await store.listTasks({ status: 'running', limit: 5 })).map((t) => t.memory)).toEqual([
      memories[1],
      memories[3],
    ]);
    const page = await store.listTasksPage({ order: 'oldest', limit: 10 });
    expect(page.tasks.map((t) => t.memory)).toEqual(memories);
    const reader = openSqliteStore({ path: file, readonly: true });
    expect((await reader.listTasks()).map((t) => t.memory)).toEqual(memories);
    await reader.close();
  });

  it('terminal tasks are forgotten (guards against the map growing with every task ever run)', async () => {
    const tracker = (store as unknown as { memoryWrites: { size: number; remembers(id: string): boolean } })
      .memoryWrites;
    let t = newTask('t', { status: 'running', memory: { v: 1 } });
    await store.commit({ task: t, create: true });
    expect(tracker.remembers('t')).toBe(true);
    t = next(t, { status: 'completed', result: 'done' });
    await store.commit({ task: t });
    expect(tracker.remembers('t')).toBe(false);
    expect(tracker.size).toBe(0);
    expect((await store.getTask('t'))?.memory).toEqual({ v: 1 });
  });
});
