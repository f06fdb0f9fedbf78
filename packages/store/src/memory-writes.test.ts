import { describe, expect, it } from 'vitest';
import { MemoryWrites } from './memory-writes.js';

/** One transaction of one write that left `memory` in the row of each task. */
function commitOne(
  w: MemoryWrites,
  entries: Array<[string, object]>,
  outcome: 'commit' | 'rollback' = 'commit',
) {
  for (const [id, memory] of entries) w.wrote(id, memory as never, false);
  w.writeEnded(true);
  if (outcome === 'commit') w.committed();
  else w.rolledBack();
}

describe('MemoryWrites', () => {
  it('knows a row only after its transaction committed, and checks the open transaction first (guards against trusting an uncommitted write)', () => {
    const w = new MemoryWrites();
    const m = { a: 1 };
    expect(w.textToWrite('t', m)).toBe('{"a":1}');
    w.wrote('t', m, false);
    expect(w.textToWrite('t', m)).toBeUndefined(); // a later statement of the same write
    w.writeEnded(true);
    expect(w.textToWrite('t', m)).toBeUndefined(); // a later write of the same transaction
    expect(w.remembers('t')).toBe(false);
    w.committed();
    expect(w.remembers('t')).toBe(true);
    expect(w.textToWrite('t', m)).toBeUndefined();
    expect(w.textToWrite('t', { a: 2 })).toBe('{"a":2}');
    // Primitive memories are known by their JSON text.
    commitOne(w, [['p', null as never]]);
    expect(w.textToWrite('p', null)).toBeUndefined();
    expect(w.textToWrite('p', 0)).toBe('0');
  });

  it('a write rolled back alone, or a transaction rolled back, forgets its tasks (guards against a stale entry after a rollback)', () => {
    const w = new MemoryWrites();
    const m0 = { v: 0 };
    const m1 = { v: 1 };
    commitOne(w, [
      ['a', m0],
      ['b', m0],
    ]);
    w.wrote('a', m1, false);
    w.writeEnded(false); // savepoint rolled back
    w.committed();
    expect(w.remembers('a')).toBe(false);
    expect(w.remembers('b')).toBe(true);
    commitOne(w, [['b', m1]], 'rollback');
    expect(w.remembers('b')).toBe(false);
    expect(w.textToWrite('b', m0)).toBe('{"v":0}');
    // A write interrupted mid-way (the transaction lost before writeEnded) is forgotten too.
    commitOne(w, [['c', m0]]);
    w.wrote('c', m1, false);
    w.rolledBack();
    expect(w.remembers('c')).toBe(false);
  });

  it('forgets terminal tasks and, past its cap, the oldest entries (guards against unbounded growth)', () => {
    const w = new MemoryWrites(3);
    for (const id of ['a', 'b', 'c', 'd']) commitOne(w, [[id, { id }]]);
    expect(w.size).toBe(3);
    expect(['a', 'b', 'c', 'd'].map((id) => w.remembers(id))).toEqual([false, true, true, true]);
    w.wrote('c', { id: 'c' }, true);
    w.writeEnded(true);
    w.committed();
    expect(w.remembers('c')).toBe(false);
    expect(w.size).toBe(2);
  });
});
