import path from 'node:path';
import type { JsonValue, StepRecord, StoredStep } from '@ccagent/engine';
import Database from 'better-sqlite3';
import { afterEach, beforeEach, describe, expect, it, vi } from 'vitest';
import {
  isStoreError,
  messageHash,
  MessageHashMemo,
  PACK_MIN_MESSAGES_CHARS,
  packedStepToRow,
  packStepInput,
  recordToStep,
  rowToStep,
  stepToRow,
} from '@ccagent/store-core';
import { openSqliteStore, type SqliteStore } from './sqlite-store.js';
import { newTask, tempDir } from '../test/support/test-helpers.js';

let dir: string;
let cleanup: () => void;
let store: SqliteStore;
beforeEach(() => {
  ({ dir, cleanup } = tempDir());
  store = openSqliteStore({ path: path.join(dir, 'm.db') });
});
afterEach(async () => {
  await store.close();
  cleanup();
});

type Rec = StepRecord & { step: number; at: number };
type Message = { role: string; content: string; tool_calls?: JsonValue[] };

const SYSTEM = `You are a careful agent on a ComputerCraft computer. ${'Rules and tool docs. '.repeat(200)}`;

/** What a native loop's model steps send: the system prompt, the task, then the turns so far (each prompt extends the last). */
function modelSteps(n: number, turns: (i: number) => Message[] = defaultTurn): Rec[] {
  const history: Message[] = [
    { role: 'system', content: SYSTEM },
    { role: 'user', content: 'Dig a 3x3 tunnel, 40 blocks long.' },
  ];
  const out: Rec[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      kind: 'native',
      step: i + 1,
      at: 100 + i,
      model: 'qwen3:8b',
      input: {
        messages: [...history],
        options: { temperature: 0, num_ctx: 16384 },
        tools: [{ name: 'dig' }],
      },
      output: { content: '', toolCalls: [{ name: 'dig', arguments: { n: i } }] },
      startedAt: 100 + i,
      durationMs: 3,
    } as Rec);
    history.push(...turns(i));
  }
  return out;
}

function defaultTurn(i: number): Message[] {
  return [
    { role: 'assistant', content: '', tool_calls: [{ function: { name: 'dig', arguments: { n: i } } }] },
    { role: 'tool', content: JSON.stringify({ ok: true, result: { dug: i, note: 'block '.repeat(i % 7) } }) },
  ];
}

/** What reading the record's JSON back gives (the value and the exact text the step log stored before packing). */
function asStored(taskId: string, seq: number, r: Rec): StoredStep {
  return rowToStep(stepToRow(taskId, seq, r));
}

function raw(file: string): Database.Database {
  return new Database(file, { readonly: true });
}

async function writeSteps(taskId: string, records: Rec[]): Promise<void> {
  await store.commit({ task: newTask(taskId), create: true });
  // Half through commits (several steps at once), half through appendStep: both write paths pack.
  const half = Math.floor(records.length / 2);
  await store.commit({ task: newTask(taskId, { status: 'running' }), steps: records.slice(0, half) });
  for (const r of records.slice(half)) await store.appendStep(taskId, r);
}

describe('packStepInput', () => {
  it('stores small inputs, inputs without messages and messages without JSON text whole (guards against packing that costs more than it saves, or cannot round-trip)', () => {
    expect(packStepInput(undefined)).toBeUndefined();
    expect(packStepInput({ prompt: 'x'.repeat(5000) })).toBeUndefined();
    expect(packStepInput({ messages: [] })).toBeUndefined();
    expect(packStepInput({ messages: 'x'.repeat(5000) })).toBeUndefined();
    expect(packStepInput([{ role: 'user', content: 'x'.repeat(5000) }])).toBeUndefined();
    expect(packStepInput({ messages: [{ role: 'user', content: 'hi' }] })).toBeUndefined();
    const holed = [{ role: 'user', content: 'x'.repeat(5000) }, undefined] as unknown as JsonValue[];
    expect(packStepInput({ messages: holed })).toBeUndefined();
    const big = packStepInput({ messages: [{ role: 'user', content: 'x'.repeat(PACK_MIN_MESSAGES_CHARS) }] });
    expect(big?.messages).toHaveLength(2); // the message and its chunk
  });

  it('keeps the input key order, lists each distinct message and chunk once, and the chunks list the messages in order (guards against a packed text that reads back reordered)', () => {
    const m = { role: 'user', content: 'y'.repeat(2000) };
    const z = { role: 'assistant', content: 'z' };
    const p = packStepInput({ model: 'a', messages: [m, m, z], options: {} });
    const h = messageHash(JSON.stringify(m));
    const hz = messageHash(JSON.stringify(z));
    expect(h).toMatch(/^[A-Za-z0-9_-]{43}$/);
    const rows = new Map(p?.messages.map((r) => [r.hash, r.body]));
    expect(rows.size).toBe(p?.messages.length);
    expect(rows.get(h)).toBe(JSON.stringify(m));
    expect(rows.get(hz)).toBe(JSON.stringify(z));
    const packed = JSON.parse(p?.packed ?? '') as { messages: string[] };
    expect(Object.keys(packed)).toEqual(['model', 'messages', 'options']);
    expect(packed.messages.flatMap((c) => JSON.parse(rows.get(c) ?? 'null') as string[])).toEqual([h, h, hz]);
  });

  it('two prompts sharing a run of messages at different indexes share its chunks: the later one adds its new messages and a few chunks (guards against the window move of the native loop storing the whole hash list again)', () => {
    const turn = (i: number) => ({
      role: i % 2 ? 'tool' : 'assistant',
      content: `turn ${i} ${'x'.repeat(i % 50)}`,
    });
    const first = Array.from({ length: 300 }, (_, i) => turn(i));
    const second = [first[0], ...first.slice(17), ...Array.from({ length: 6 }, (_, i) => turn(300 + i))];
    const a = packStepInput({ messages: first as JsonValue[] });
    const b = packStepInput({ messages: second as JsonValue[] });
    const known = new Set(a?.messages.map((r) => r.hash));
    const added = (b?.messages ?? []).filter((r) => !known.has(r.hash));
    const newMessages = added.filter((r) => r.body.startsWith('{'));
    expect(newMessages).toHaveLength(6);
    expect(added.length - newMessages.length).toBeLessThanOrEqual(4); // new chunks: at the start, the cut, the end
    expect((JSON.parse(b?.packed ?? '') as { messages: string[] }).messages.length).toBeLessThan(300 / 6);
  });
});

describe('MessageHashMemo', () => {
  it('gives the SHA-256 of each text and keeps at most its cap of text, oldest out first (guards against a memo that grows all night or returns a stale hash)', () => {
    const memo = new MessageHashMemo(1000);
    const texts = Array.from({ length: 50 }, (_, i) => `${i}`.padEnd(100, 'x'));
    for (const t of texts) expect(memo.hash(t)).toBe(messageHash(t));
    expect(memo.size).toBe(10);
    for (const t of texts) expect(memo.hash(t)).toBe(messageHash(t)); // evicted ones hashed again, still right
    expect(memo.size).toBe(10);
    expect(memo.hash('y'.repeat(5000))).toBe(messageHash('y'.repeat(5000))); // larger than the cap: not kept
    expect(memo.size).toBe(10);
  });
});

describe('codec', () => {
  it('a packed row reads back as the record reads back stored whole, and as the commit result (guards against getSteps and commit results disagreeing)', () => {
    for (const [i, r] of modelSteps(5).entries()) {
      const { row, messages } = packedStepToRow('t', i + 1, r);
      expect(row.input).toBeNull();
      expect(row.inputPacked).not.toBeNull();
      const bodies = new Map(messages.map((m) => [m.hash, m.body]));
      expect(rowToStep(row, bodies)).toStrictEqual(asStored('t', i + 1, r));
      expect(recordToStep('t', i + 1, r)).toStrictEqual(rowToStep(row, bodies));
    }
  });

  it('a packed row whose message is missing is a clear error, not a wrong input (guards against silently showing the user another prompt)', () => {
    const { row, messages } = packedStepToRow('t', 3, modelSteps(1)[0] as Rec);
    const bodies = new Map(messages.slice(1).map((m) => [m.hash, m.body]));
    let err: unknown;
    try {
      rowToStep(row, bodies);
    } catch (e) {
      err = e;
    }
    expect(isStoreError(err, 'sqlite_error')).toBe(true);
    expect((err as Error).message).toMatch(/step 3 of task t references model-input message .* missing/);
  });
});

describe('the SQLite step log packs model inputs', () => {
  it('reads every step back deep-equal and JSON-text-equal to what was written, through getSteps, pages split mid-way, commit results and a read-only reader (guards against a user seeing a prompt the model did not see)', async () => {
    const records: Rec[] = [
      ...modelSteps(12),
      { kind: 'native', step: 20, at: 300, model: 'm', input: { messages: [], options: {} } }, // no messages
      { kind: 'tool_result', step: 20, at: 301, toolCall: { callId: 'c', command: 'dig', args: {} } }, // no input
      { kind: 'native', step: 21, at: 302, input: { messages: [{ role: 'user', content: 'short' }] } }, // small
      { kind: 'planner', step: 22, at: 303, input: { prompt: { name: 'p', version: 1 }, format: {} } }, // no messages
      {
        kind: 'native',
        step: 23,
        at: 304,
        input: {
          messages: [
            { role: 'system', content: SYSTEM },
            { role: 'user', content: `Grüße, ツルハシ 🪓 — ${'ä€𝄞'.repeat(400)} \u2028 "quoted" \\ back` },
            { role: 'tool', content: 'lone \ud800 surrogate and \u0000 nul' },
            { role: 'system', content: SYSTEM }, // a message repeated inside one input
          ],
          options: { temperature: 0.7, seed: 1e21, stop: ['\n\n'] },
        },
      },
    ];
    await store.commit({ task: newTask('t'), create: true });
    const result = await store.commit({
      task: newTask('t', { status: 'running' }),
      steps: records.slice(0, 6),
    });
    const appended: StoredStep[] = [];
    for (const r of records.slice(6)) appended.push(await store.appendStep('t', r));
    const expected = records.map((r, i) => asStored('t', i + 1, r));
    expect([...result.steps, ...appended]).toStrictEqual(expected);

    const all = await store.getSteps('t');
    expect(all).toStrictEqual(expected);
    for (const [i, s] of all.entries()) {
      expect(JSON.stringify(s.input), `step ${i + 1}`).toBe(JSON.stringify(records[i]?.input));
    }
    // Pages of 5 split the packed steps mid-way, and the last page holds the unpacked ones too.
    const paged: StoredStep[] = [];
    for (let after = 0; ;) {
      const page = await store.getSteps('t', { afterSeq: after, limit: 5 });
      if (page.length === 0) break;
      paged.push(...page);
      after = page[page.length - 1]!.seq;
    }
    expect(paged).toStrictEqual(expected);
    expect(await store.getSteps('t', { afterSeq: 7, limit: 3 })).toStrictEqual(expected.slice(7, 10));

    const reader = openSqliteStore({ path: store.path, readonly: true });
    expect(await reader.getSteps('t')).toStrictEqual(expected);
    expect(await reader.getSteps('t', { afterSeq: 11, limit: 2 })).toStrictEqual(expected.slice(11, 13));
    await reader.close();

    // The model steps went to input_packed, everything else stays whole.
    const db = raw(store.path);
    const rows = db
      .prepare(
        'SELECT seq, input IS NOT NULL AS whole, input_packed IS NOT NULL AS packed FROM steps ORDER BY seq',
      )
      .all();
    db.close();
    const packedSeqs = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 17];
    expect(rows).toEqual(
      records.map((r, i) => ({
        seq: i + 1,
        whole: r.input !== undefined && !packedSeqs.includes(i + 1) ? 1 : 0,
        packed: packedSeqs.includes(i + 1) ? 1 : 0,
      })),
    );
  });

  it('stores a message shared by many steps once: 40 steps with a 4 KB system prompt hold it in one row, and the log is a small fraction of the inputs (guards against the step log growing by the whole prompt per model call)', async () => {
    const records = modelSteps(40);
    await writeSteps('a', records);
    const db = raw(store.path);
    const count = (sql: string) => (db.prepare(sql).get() as { n: number }).n;
    const distinct = new Set(
      records.flatMap((r) => (r.input as { messages: JsonValue[] }).messages.map((m) => JSON.stringify(m))),
    );
    expect(count(`SELECT count(*) AS n FROM step_messages WHERE body LIKE '{%'`)).toBe(distinct.size);
    expect(
      count(
        `SELECT count(*) AS n FROM step_messages WHERE body = '${JSON.stringify({ role: 'system', content: SYSTEM }).replace(/'/g, "''")}'`,
      ),
    ).toBe(1);
    const stored =
      count('SELECT sum(length(input_packed)) AS n FROM steps') +
      count('SELECT sum(length(body)) AS n FROM step_messages');
    const whole = records.reduce((n, r) => n + JSON.stringify(r.input).length, 0);
    expect(whole).toBeGreaterThan(200_000);
    expect(stored).toBeLessThan(whole / 5);
    db.close();
    expect(await store.getSteps('a')).toStrictEqual(records.map((r, i) => asStored('a', i + 1, r)));

    // The same records written whole (as schema version 4 did) take several times the pages (SQLite's dbstat).
    const wholeFile = path.join(dir, 'whole.db');
    const w = new Database(wholeFile);
    w.exec(`CREATE TABLE steps (task_id TEXT, seq INTEGER, input TEXT, PRIMARY KEY (task_id, seq))`);
    const ins = w.prepare('INSERT INTO steps VALUES (?, ?, ?)');
    for (const [i, r] of records.entries()) ins.run('a', i + 1, stepToRow('a', i + 1, r).input);
    const pages = (d: Database.Database, names: string[]) =>
      (
        d
          .prepare(`SELECT sum(pgsize) AS n FROM dbstat WHERE name IN (${names.map(() => '?').join(', ')})`)
          .get(...names) as { n: number }
      ).n;
    const wholeBytes = pages(w, ['steps', 'sqlite_autoindex_steps_1']);
    w.close();
    const p = raw(store.path);
    const packedBytes = pages(p, [
      'steps',
      'sqlite_autoindex_steps_1',
      'step_messages',
      'sqlite_autoindex_step_messages_1',
    ]);
    p.close();
    expect(wholeBytes).toBeGreaterThan(300_000);
    expect(packedBytes * 3).toBeLessThan(wholeBytes);
  });

  it('two tasks share the messages they have in common; deleting one keeps the rows the other reads (guards against a cascade or cleanup breaking another task)', async () => {
    await writeSteps('a', modelSteps(6));
    await writeSteps('b', modelSteps(6));
    const db = raw(store.path);
    const messagesBefore = (db.prepare('SELECT count(*) AS n FROM step_messages').get() as { n: number }).n;
    // system, task, then 2 new messages per step but the last
    expect(db.prepare(`SELECT count(*) AS n FROM step_messages WHERE body LIKE '{%'`).get()).toEqual({
      n: 2 + 2 * 5,
    });
    db.close();
    const rw = new Database(store.path);
    rw.pragma('foreign_keys = ON');
    rw.prepare('DELETE FROM tasks WHERE id = ?').run('a');
    expect(rw.prepare('SELECT count(*) AS n FROM steps WHERE task_id = ?').get('a')).toEqual({ n: 0 });
    // Documented: shared messages are kept (the other task references every one of them here).
    expect(rw.prepare('SELECT count(*) AS n FROM step_messages').get()).toEqual({ n: messagesBefore });
    rw.close();
    expect(await store.getSteps('b')).toStrictEqual(modelSteps(6).map((r, i) => asStored('b', i + 1, r)));
  });

  it('reads the messages of a page in two queries (chunks, then messages), not one per step or message (guards against a slow tasks show / HTTP steps page)', async () => {
    await writeSteps('p', modelSteps(30));
    const reads = (store as unknown as { r: { getMessages: { all: (...a: unknown[]) => unknown } } }).r;
    const spy = vi.spyOn(reads.getMessages, 'all');
    expect(await store.getSteps('p', { afterSeq: 3, limit: 20 })).toHaveLength(20);
    expect(spy).toHaveBeenCalledTimes(2); // the chunks of the page, then their messages
    expect(await store.getSteps('p')).toHaveLength(30);
    expect(spy).toHaveBeenCalledTimes(4);
    spy.mockRestore();
    // And SQLite answers it from the primary key of step_messages.
    const db = raw(store.path);
    const plan = (
      db
        .prepare(
          'EXPLAIN QUERY PLAN SELECT "hash", "body" FROM "step_messages" WHERE "hash" IN (SELECT "value" FROM json_each(?))',
        )
        .all('[]') as Array<{ detail: string }>
    )
      .map((r) => r.detail)
      .join('\n');
    db.close();
    expect(plan).toMatch(/SEARCH step_messages USING INDEX sqlite_autoindex_step_messages_1 \(hash=\?\)/);
  });
});
