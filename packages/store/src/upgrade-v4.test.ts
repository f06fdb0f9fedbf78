import type { StepRecord, Task } from '@ccagent/engine';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { rowToStep, stepToRow } from '@ccagent/store-core';
import { SCHEMA_VERSION } from './migrate.js';
import { openSqliteStore } from './sqlite-store.js';
import {
  expectUpgradedFile,
  insertTask,
  newTask,
  openOldFile,
  tempDir,
} from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
beforeEach(() => ({ dir, cleanup } = tempDir()));
afterEach(() => cleanup());

type Rec = StepRecord & { step: number; at: number };

const task: Task = newTask('t', { status: 'running', memory: { turns: 3 }, createdAt: 1 });
const SYSTEM = `You drive a turtle. ${'Tool rules. '.repeat(150)}`;

/** Model steps whose prompts extend each other, with a note and a tool result between them. */
function records(from: number, n: number): Rec[] {
  const out: Rec[] = [];
  const messages: Array<{ role: string; content: string }> = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'Mine the ore — «ÿ» 鉱石 ⛏' },
  ];
  for (let i = 0; i < from + n; i++) {
    if (i >= from) {
      out.push({
        kind: 'native',
        step: i + 1,
        at: 10 + i,
        model: 'm',
        input: { messages: [...messages], options: { seed: i } },
      });
      out.push({ kind: 'tool_result', step: i + 1, at: 10 + i, toolResult: { ok: true, result: i } });
    }
    messages.push({ role: 'assistant', content: `call ${i}` }, { role: 'tool', content: `result ${i}` });
  }
  return out;
}

describe('a version-4 file (model inputs stored whole)', () => {
  it('is migrated on open without rewriting its steps: they read back identical (whole, as before), new model steps are packed, and a page mixing both reads back exact on the writer and a read-only reader (guards against a migration that loses or changes what a model saw)', async () => {
    const old = records(0, 6);
    // A file as a version-4 build left it: the first four checked-in migrations, the stamps, a task and its steps.
    const { file, store } = openOldFile(dir, 4, (insert) => {
      insertTask(insert, { ...task, counters: { ...task.counters, steps: old.length } });
      for (const [i, s] of old.entries()) {
        const { inputPacked: _none, ...row } = stepToRow(task.id, i + 1, s); // version 4 has no input_packed
        insert('steps', row);
      }
    });
    expect(SCHEMA_VERSION).toBe(11);
    const expectedOld = old.map((s, i) => rowToStep(stepToRow('t', i + 1, s)));
    expect(await store.getSteps('t')).toStrictEqual(expectedOld);

    const fresh = records(6, 4);
    await store.commit({
      task: { ...task, updatedAt: 50 },
      expectedStatus: 'running',
      steps: fresh.slice(0, 2),
    });
    for (const s of fresh.slice(2)) await store.appendStep('t', s);
    const expected = [...old, ...fresh].map((s, i) => rowToStep(stepToRow('t', i + 1, s)));
    expect(await store.getSteps('t')).toStrictEqual(expected);
    expect(await store.getSteps('t', { afterSeq: 9, limit: 4 })).toStrictEqual(expected.slice(9, 13));
    for (const [i, s] of (await store.getSteps('t')).entries()) {
      expect(JSON.stringify(s.input)).toBe(JSON.stringify([...old, ...fresh][i]?.input));
    }
    await store.close();

    expectUpgradedFile(file, (db) => {
      const rows = db
        .prepare(
          'SELECT seq, kind, input IS NOT NULL AS whole, input_packed IS NOT NULL AS packed FROM steps ORDER BY seq',
        )
        .all() as Array<{ seq: number; kind: string; whole: number; packed: number }>;
      // Old model steps stay whole (no rewrite); the new ones are packed; steps without input have neither.
      expect(rows.filter((r) => r.kind === 'native').map((r) => [r.seq, r.whole, r.packed])).toEqual([
        [1, 1, 0],
        [3, 1, 0],
        [5, 1, 0],
        [7, 1, 0],
        [9, 1, 0],
        [11, 1, 0],
        [13, 0, 1],
        [15, 0, 1],
        [17, 0, 1],
        [19, 0, 1],
      ]);
      expect(rows.filter((r) => r.kind !== 'native').every((r) => r.whole === 0 && r.packed === 0)).toBe(
        true,
      );
      // The system prompt the old steps hold whole is stored once for the new ones.
      expect(
        db
          .prepare('SELECT count(*) AS n FROM step_messages WHERE body = ?')
          .get(JSON.stringify({ role: 'system', content: SYSTEM })),
      ).toEqual({ n: 1 });
    });

    const reader = openSqliteStore({ path: file, readonly: true });
    expect(await reader.getSteps('t')).toStrictEqual(expected);
    await reader.close();
  });
});
