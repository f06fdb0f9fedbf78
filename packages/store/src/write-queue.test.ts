import path from 'node:path';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { tempDir } from '../test/support/test-helpers.js';
import { WriteQueue, type TransactionListener } from './write-queue.js';

let cleanup: () => void;
let db: Database.Database;
/** Every statement SQLite ran on the queue's connection (better-sqlite3's `verbose` hook). */
let statements: string[];
let events: string[];
let queue: WriteQueue;
beforeEach(() => {
  let dir: string;
  ({ dir, cleanup } = tempDir());
  statements = [];
  events = [];
  db = new Database(path.join(dir, 'q.db'), { verbose: (sql) => statements.push(String(sql)) });
  db.pragma('journal_mode = WAL');
  // No key: a row inserted twice would show up twice.
  db.exec('CREATE TABLE rows (v INTEGER)');
  const listener: TransactionListener = {
    writeEnded: (kept) => events.push(kept ? 'kept' : 'voided'),
    committed: () => events.push('committed'),
    rolledBack: () => events.push('rolledBack'),
  };
  queue = new WriteQueue(db, {
    mapError: (e) => e,
    lockedError: () => new Error('locked'),
    transactions: listener,
  });
  statements.length = 0;
});
afterEach(() => {
  db.close();
  cleanup();
});

const rows = () =>
  (db.prepare('SELECT v FROM rows ORDER BY rowid').all() as Array<{ v: number }>).map((r) => r.v);

/** A write that inserts `v` (and then throws when `fail`), counting its runs. */
function insert(v: number, runs: Map<number, number>, fail = false) {
  return () => {
    runs.set(v, (runs.get(v) ?? 0) + 1);
    db.prepare('INSERT INTO rows VALUES (?)').run(v);
    if (fail) throw new Error(`write ${v} refused`);
    return v;
  };
}

/** Settle order of `promises`, as `name:ok|err`. */
async function settleOrder(promises: Array<[string, Promise<unknown>]>): Promise<string[]> {
  const order: string[] = [];
  await Promise.allSettled(
    promises.map(([name, p]) =>
      p.then(
        () => order.push(`${name}:ok`),
        () => order.push(`${name}:err`),
      ),
    ),
  );
  return order;
}

describe('WriteQueue batches without savepoints', () => {
  it('a batch of rerunnable writes commits without a savepoint per write (guards against the two extra statements per write coming back)', async () => {
    const runs = new Map<number, number>();
    const values = await Promise.all(
      [1, 2, 3].map((v) => queue.enqueue(insert(v, runs), { rerunnable: true })),
    );
    expect(values).toEqual([1, 2, 3]);
    expect(rows()).toEqual([1, 2, 3]);
    expect([...runs.values()]).toEqual([1, 1, 1]);
    expect(statements.filter((s) => /SAVEPOINT|RELEASE/.test(s))).toEqual([]);
    expect(statements.filter((s) => /BEGIN|COMMIT|ROLLBACK/.test(s))).toEqual(['BEGIN IMMEDIATE', 'COMMIT']);
    expect(events).toEqual(['kept', 'kept', 'kept', 'committed']);
  });

  it('a failing write in an optimistic batch voids only itself: the others are committed exactly once, settle in order, and listeners see the rollback (guards against a lost or doubled write after the re-run)', async () => {
    const runs = new Map<number, number>();
    const p1 = queue.enqueue(insert(1, runs), { rerunnable: true });
    const p2 = queue.enqueue(insert(2, runs, true), { rerunnable: true });
    const p3 = queue.enqueue(insert(3, runs), { rerunnable: true });
    const order = await settleOrder([
      ['1', p1],
      ['2', p2],
      ['3', p3],
    ]);
    expect(order).toEqual(['1:ok', '2:err', '3:ok']);
    await expect(p2).rejects.toThrow('write 2 refused');
    expect(rows()).toEqual([1, 3]);
    // The optimistic run stopped at write 2; the savepoint run ran all three.
    expect(Object.fromEntries(runs)).toEqual({ 1: 2, 2: 2, 3: 1 });
    expect(events).toEqual(['kept', 'rolledBack', 'kept', 'voided', 'kept', 'committed']);
    expect(statements.filter((s) => /BEGIN|COMMIT|ROLLBACK$/.test(s))).toEqual([
      'BEGIN IMMEDIATE',
      'ROLLBACK',
      'BEGIN IMMEDIATE',
      'COMMIT',
    ]);
  });

  it('a write not marked rerunnable makes its batch use savepoints and runs once (guards against re-running a write with effects outside the transaction)', async () => {
    const runs = new Map<number, number>();
    const p1 = queue.enqueue(insert(1, runs));
    const p2 = queue.enqueue(insert(2, runs, true), { rerunnable: true });
    const order = await settleOrder([
      ['1', p1],
      ['2', p2],
    ]);
    expect(order).toEqual(['1:ok', '2:err']);
    expect(rows()).toEqual([1]);
    expect(Object.fromEntries(runs)).toEqual({ 1: 1, 2: 1 });
    expect(statements.filter((s) => s.startsWith('SAVEPOINT'))).toHaveLength(2);
    expect(events).toEqual(['kept', 'voided', 'committed']);
  });
});
