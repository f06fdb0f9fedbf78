// The PostgreSQL store reads back what this store does: task search pages and the packed step log, compared on the
// same input. It lives here, beside the reference, so that @ccagent/store-postgres never imports the SQLite store
// (issue 34: the two share @ccagent/store-core only); it needs the PostgreSQL server of the tests
// (CCAGENT_TEST_PG_URL; `.ci/run` starts one), and is skipped with a notice without it.
import { randomBytes } from 'node:crypto';
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { JsonValue, StepRecord, Task } from '@ccagent/engine';
import { openPostgresStore, type PostgresStore } from '@ccagent/store-postgres';
import pg from 'pg';
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { openSqliteStore, type SqliteStore } from '../src/index.js';

const TEST_PG_URL: string | undefined = process.env.CCAGENT_TEST_PG_URL || undefined;
if (TEST_PG_URL === undefined) {
  console.log('[store] SKIPPED the PostgreSQL parity tests: CCAGENT_TEST_PG_URL is not set');
}

async function adminQuery(sql: string): Promise<void> {
  const c = new pg.Client({ connectionString: TEST_PG_URL });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}

type Rec = StepRecord & { step: number; at: number };

function newTask(id: string, overrides: Partial<Task> = {}): Task {
  return {
    id,
    kind: 'demo',
    status: 'running',
    clientId: null,
    prompt: `prompt of ${id}`,
    allowedCommands: [],
    memory: { n: 1 },
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 1000,
    updatedAt: 1000,
    ...overrides,
  };
}

const SYSTEM = `You are a careful agent on a ComputerCraft computer. ${'Rules and tool docs. '.repeat(120)}`;

/** Model steps of a native loop: each prompt repeats the previous one and adds a turn (packed inputs). */
function modelSteps(n: number): Rec[] {
  const history: JsonValue[] = [
    { role: 'system', content: SYSTEM },
    {
      role: 'user',
      content: 'Dig a tunnel — ünïcödé, emoji 🧱, a lone surrogate \ud800 and a NUL \u0000 in JSON',
    },
  ];
  const out: Rec[] = [];
  for (let i = 0; i < n; i++) {
    out.push({
      kind: 'native',
      step: i + 1,
      at: 100 + i,
      model: 'qwen3:8b',
      input: { messages: [...history], options: { temperature: 0, num_ctx: 16384 }, n: 1e21, f: 0.1 },
      output: { content: '', toolCalls: [{ name: 'dig', arguments: { n: i } }] },
      usage: { promptTokens: 10 + i, totalDurationMs: 1.5 },
      startedAt: 100 + i,
      durationMs: 3.25,
    });
    history.push(
      { role: 'assistant', content: '', tool_calls: [{ function: { name: 'dig', arguments: { n: i } } }] },
      { role: 'tool', content: JSON.stringify({ ok: true, result: { dug: i } }) },
    );
  }
  // A small input (stored whole) and a record without input among them.
  out.push({ kind: 'note', step: n + 1, at: 999, input: { messages: [{ role: 'user', content: 'hi' }] } });
  out.push({ kind: 'decision', step: n + 1, at: 1000, directive: { type: 'continue' } });
  return out;
}

describe.skipIf(TEST_PG_URL === undefined)(
  'the PostgreSQL store reads back what the SQLite store does',
  () => {
    const name = `ccagent_parity_${randomBytes(6).toString('hex')}`;
    let url: string;
    let store: PostgresStore;
    let raw: pg.Client;
    beforeAll(async () => {
      await adminQuery(`CREATE DATABASE ${name}`);
      const u = new URL(TEST_PG_URL as string);
      u.pathname = `/${name}`;
      url = u.toString();
    });
    afterAll(async () => {
      await adminQuery(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    });
    beforeEach(async () => {
      store = await openPostgresStore({ url });
      raw = new pg.Client({ connectionString: url });
      await raw.connect();
      await raw.query('TRUNCATE "tasks", "steps", "step_messages" RESTART IDENTITY CASCADE');
    });
    afterEach(async () => {
      await store.close();
      await raw.end();
    });

    it('searches task pages like the SQLite store: id prefix or prompt words, any case, with filters and the total (guards against a search that returns every task)', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-pg-search-'));
      let sqlite: SqliteStore | undefined;
      try {
        sqlite = openSqliteStore({ path: path.join(dir, 's.db') });
        const tasks = [
          newTask('abc-1', { prompt: 'Fix the Quarry script', createdAt: 1, kind: 'code_job' }),
          newTask('abc-2', { prompt: 'build a house', createdAt: 2, kind: 'build' }),
          newTask('xyz-3', { prompt: 'the quarry is stuck again', createdAt: 3, kind: 'code_job' }),
          newTask('xyz-4', { prompt: 'plant wheat (abc)', createdAt: 4, kind: 'farm', status: 'completed' }),
        ];
        for (const s of [store, sqlite]) for (const t of tasks) await s.commit({ task: t, create: true });
        const queries = [
          { search: 'QUARRY' },
          { search: 'abc' },
          { search: 'abc-2' },
          { search: 'quarry', kind: 'code_job', limit: 1 },
          { search: 'quarry', kind: 'code_job', limit: 1, offset: 1 },
          { search: 'nothing like this' },
          { search: '%' },
          { search: 'abc', status: 'completed' as const },
        ];
        for (const q of queries) {
          const pgPage = await store.listTasksPage(q);
          const sqlitePage = await sqlite.listTasksPage(q);
          expect({ q, ids: pgPage.tasks.map((t) => t.id), total: pgPage.total }).toEqual({
            q,
            ids: sqlitePage.tasks.map((t) => t.id),
            total: sqlitePage.total,
          });
        }
        expect((await store.listTasksPage({ search: 'QUARRY' })).tasks.map((t) => t.id)).toEqual([
          'xyz-3',
          'abc-1',
        ]);
        expect((await store.listTasksPage({ search: 'abc' })).total).toBe(3);
        expect((await store.listTasksPage({ search: '%' })).total).toBe(0);
      } finally {
        await sqlite?.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });

    it('reads back the step log exactly as the SQLite store does, packed the same way (guards against a second store with another step-log shape)', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-pg-parity-'));
      let sqlite: SqliteStore | undefined;
      try {
        sqlite = openSqliteStore({ path: path.join(dir, 'p.db') });
        const records = modelSteps(12);
        for (const s of [store, sqlite]) {
          await s.commit({ task: newTask('t'), create: true });
          // Half in one commit, half appended one by one (both write paths).
          await s.commit({ task: newTask('t', { updatedAt: 2 }), steps: records.slice(0, 6) });
          for (const r of records.slice(6)) await s.appendStep('t', r);
        }
        const fromPg = await store.getSteps('t');
        const fromSqlite = await sqlite.getSteps('t');
        expect(fromPg).toEqual(fromSqlite);
        expect(JSON.stringify(fromPg)).toBe(JSON.stringify(fromSqlite));
        expect(JSON.stringify(fromPg.map((s) => s.input))).toBe(JSON.stringify(records.map((r) => r.input)));
        // Pages split mid-way read back the same records.
        expect(await store.getSteps('t', { afterSeq: 3, limit: 5 })).toEqual(fromSqlite.slice(3, 8));
        // Packed: the model inputs are stored once, as chunk hashes, in both databases (the same rows).
        const pgRows = (
          await raw.query<{ hash: string; body: string }>(
            'SELECT hash, body FROM step_messages ORDER BY hash',
          )
        ).rows;
        const sqliteRows = new (await import('better-sqlite3')).default(path.join(dir, 'p.db'), {
          readonly: true,
        })
          .prepare('SELECT hash, body FROM step_messages ORDER BY hash')
          .all() as Array<{ hash: string; body: string }>;
        expect(pgRows.length).toBeGreaterThan(0);
        expect(new Set(pgRows.map((r) => JSON.stringify(r)))).toEqual(
          new Set(sqliteRows.map((r) => JSON.stringify(r))),
        );
        const packed = await raw.query<{ n: string }>(
          'SELECT count(*) AS n FROM steps WHERE input_packed IS NOT NULL',
        );
        expect(Number(packed.rows[0]?.n)).toBe(12);
      } finally {
        await sqlite?.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
    it('keeps the credential a client last connected with like the SQLite store: set, kept when a sighting omits it, replaced (guards against a computer leaving its key group while offline on one store only)', async () => {
      const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-pg-clients-'));
      let sqlite: SqliteStore | undefined;
      try {
        sqlite = openSqliteStore({ path: path.join(dir, 'c.db') });
        await raw.query('TRUNCATE "clients" CASCADE');
        const seen = [];
        for (const s of [store, sqlite]) {
          await s.upsertClient({
            clientId: 'host',
            commands: [],
            connected: true,
            seenAt: 1,
            connectedWith: 'token',
          });
          await s.upsertClient({
            clientId: 'pocket',
            commands: [],
            connected: true,
            seenAt: 1,
            connectedWith: 'key_a',
          });
          await s.upsertClient({ clientId: 'host', commands: [], connected: false, seenAt: 2 });
          await s.upsertClient({
            clientId: 'pocket',
            commands: [],
            connected: true,
            seenAt: 3,
            connectedWith: 'key_b',
          });
          seen.push((await s.listClients()).map((c) => [c.clientId, c.connectedWith]));
        }
        expect(seen[0]).toEqual([
          ['host', 'token'],
          ['pocket', 'key_b'],
        ]);
        expect(seen[1]).toEqual(seen[0]);
      } finally {
        await sqlite?.close();
        rmSync(dir, { recursive: true, force: true });
      }
    });
  },
);
