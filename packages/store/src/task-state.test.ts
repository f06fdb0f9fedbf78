import path from 'node:path';
import { isEngineError, type Task } from '@ccagent/engine';
import type Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from './sqlite-store.js';
import { storageFailureOf } from '@ccagent/store-core';
import { foreignCall, newTask, tempDir } from '../test/support/test-helpers.js';

let cleanup: () => void;
let store: SqliteStore;
beforeEach(() => {
  let dir: string;
  ({ dir, cleanup } = tempDir());
  store = openSqliteStore({ path: path.join(dir, 'ccagent.db') });
});
afterEach(async () => {
  await store.close();
  cleanup();
});

const tracker = () =>
  (store as unknown as { taskState: { size: number; remembers(id: string): boolean } }).taskState;

function next(t: Task, changes: Partial<Task> = {}): Task {
  return { ...t, updatedAt: t.updatedAt + 1, ...changes };
}

const note = (text: string, step = 1) => ({ type: 'note' as const, text, step, at: 1 });

async function seqs(id: string) {
  return {
    history: (await store.getHistory(id)).map((h) => h.seq),
    steps: (await store.getSteps(id)).map((s) => s.seq),
  };
}

describe('task state kept beside the database (status, last history and step seq)', () => {
  it('is remembered once committed and used for the next seq; terminal tasks are forgotten (guards against a max(seq) read per commit and unbounded growth)', async () => {
    let t = newTask('t', { status: 'running' });
    await store.commit({ task: t, create: true, history: [note('a')] });
    expect(tracker().remembers('t')).toBe(true);
    const r = await store.commit({
      task: (t = next(t)),
      history: [note('b'), note('c')],
      steps: [{ kind: 'note', step: 1, at: 1 }],
    });
    expect(r.history.map((h) => h.seq)).toEqual([2, 3]);
    expect(r.steps.map((s) => s.seq)).toEqual([1]);
    expect((await store.appendStep('t', { kind: 'note', step: 2, at: 2 })).seq).toBe(2);
    // Two commits in one transaction: the second continues from the first's staged seqs.
    const [a, b] = await Promise.all([
      store.commit({ task: (t = next(t)), history: [note('d')], steps: [{ kind: 'n', step: 3, at: 3 }] }),
      store.commit({ task: (t = next(t)), history: [note('e')], steps: [{ kind: 'n', step: 3, at: 3 }] }),
    ]);
    expect([a.history[0]?.seq, b.history[0]?.seq, a.steps[0]?.seq, b.steps[0]?.seq]).toEqual([4, 5, 3, 4]);
    expect(await seqs('t')).toEqual({ history: [1, 2, 3, 4, 5], steps: [1, 2, 3, 4] });
    await store.commit({ task: next(t, { status: 'completed', result: 'ok' }), history: [note('f')] });
    expect(tracker().remembers('t')).toBe(false);
    expect(tracker().size).toBe(0);
    // A forgotten task reads its seqs again.
    expect((await store.appendStep('t', { kind: 'note', step: 4, at: 4 })).seq).toBe(5);
  });

  it('a write rolled back alone (its savepoint) leaves the status and seqs as they were (guards against a cache updated before the write is kept: a gap in seq, a conflict on the real status)', async () => {
    const t = newTask('t');
    await store.commit({
      task: t,
      create: true,
      history: [note('a')],
      steps: [{ kind: 'n', step: 1, at: 1 }],
    });
    const [refused, kept] = await Promise.allSettled([
      // queued -> running, history 2, step 2 ... then refused: all of it is undone.
      store.commit({
        task: next(t, { status: 'running' }),
        expectedStatus: 'queued',
        history: [note('b')],
        steps: [{ kind: 'n', step: 1, at: 2 }],
        commandCall: foreignCall,
      }),
      // Same transaction, after it: sees the task as it really is.
      store.commit({ task: next(t, { status: 'running' }), expectedStatus: 'queued', history: [note('c')] }),
    ]);
    expect(refused.status === 'rejected' && isEngineError(refused.reason, 'invalid_input')).toBe(true);
    expect(kept.status === 'fulfilled' && kept.value.history.map((h) => h.seq)).toEqual([2]);
    // And in a later transaction: step seq 2 is free, the status is running.
    expect((await store.appendStep('t', { kind: 'n', step: 2, at: 3 })).seq).toBe(2);
    const late = await store
      .commit({ task: next(t, { status: 'running' }), expectedStatus: 'queued' })
      .catch((e: unknown) => e);
    expect(isEngineError(late, 'conflict')).toBe(true);
    expect(await seqs('t')).toEqual({ history: [1, 2], steps: [1, 2] });
    expect((await store.getHistory('t')).map((h) => h.type === 'note' && h.text)).toEqual(['a', 'c']);
  });

  it('a transaction SQLite rolls back (disk full) forgets what it staged: the writes run again get the same seqs (guards against a stale cache after a lost batch)', async () => {
    const t = newTask('t', { status: 'running' });
    await store.commit({ task: t, create: true, history: [note('a')] });
    const db = (store as unknown as { db: Database.Database }).db;
    db.pragma(`max_page_count = ${(db.pragma('page_count', { simple: true }) as number) + 2}`);
    const big = 'x'.repeat(200_000);
    let settled: Array<PromiseSettledResult<unknown>>;
    try {
      settled = await Promise.allSettled([
        store.commit({ task: next(t), history: [note('b')], steps: [{ kind: 'n', step: 1, at: 1 }] }),
        store.appendStep('t', { kind: 'n', step: 1, at: 2, output: big }),
        store.commit({ task: next(next(t)), history: [note('c')] }),
      ]);
    } finally {
      db.pragma('max_page_count = 1073741823');
    }
    const [first, lost, third] = settled;
    expect(lost?.status === 'rejected' && storageFailureOf(lost.reason)?.code).toBe('disk_full');
    expect(
      first?.status === 'fulfilled' && (first.value as { history: Array<{ seq: number }> }).history[0]?.seq,
    ).toBe(2);
    expect(
      third?.status === 'fulfilled' && (third.value as { history: Array<{ seq: number }> }).history[0]?.seq,
    ).toBe(3);
    expect((await store.appendStep('t', { kind: 'n', step: 2, at: 3 })).seq).toBe(2);
    expect(await seqs('t')).toEqual({ history: [1, 2, 3], steps: [1, 2] });
  });
});
