#!/usr/bin/env node
// PostgreSQL store write path (not part of `npm test`; `npx nx run store-postgres:build` first):
//   eval "$(tools/postgres-test-server.sh --export)"
//   node tools/bench/store-postgres/run.mjs [--tasks 1000] [--seconds 5]
//
// The store alone, no orchestrator: `tasks` tasks committing back to back at once, each commit what a command round
// trip writes (the task row, a history entry, a step record of ~1 KB, the call row), through PostgresStore's write
// queue (group commit, one pipelined round trip per batch). Raw `pg` baselines on the same server and run, into a
// fresh database with the store's schema, of the same step rows: one autocommitted INSERT per row; transactions of
// 256 single-row INSERTs (each its own round trip); one 256-row INSERT per transaction. And one task committing alone
// (its commit latency) against one autocommitted INSERT (a round trip plus a WAL flush). Prints a table and writes
// tools/bench/results/store-postgres.json.
import { parseArgs } from 'node:util';
import pg from 'pg';
import { openPostgresStore } from '@ccagent/store-postgres';
import { machineInfo, writeResults } from '../lib/results.mjs';
import { fmt, printTable, summarize } from '../lib/stats.mjs';

const { values: flags } = parseArgs({
  options: { tasks: { type: 'string', default: '1000' }, seconds: { type: 'string', default: '5' } },
});
const TASKS = Number(flags.tasks);
const SECONDS = Number(flags.seconds);
const SERVER = process.env.CCAGENT_BENCH_PG_URL || process.env.CCAGENT_TEST_PG_URL;
if (!SERVER) {
  console.error(
    'needs CCAGENT_BENCH_PG_URL or CCAGENT_TEST_PG_URL (eval "$(tools/postgres-test-server.sh --export)")',
  );
  process.exit(2);
}

const databases = [];
async function admin(sql) {
  const c = new pg.Client({ connectionString: SERVER });
  await c.connect();
  try {
    await c.query(sql);
  } finally {
    await c.end();
  }
}
async function freshDatabase(name) {
  const db = `ccagent_bench_${name}_${Date.now().toString(36)}`;
  await admin(`CREATE DATABASE ${db}`);
  databases.push(db);
  const u = new URL(SERVER);
  u.pathname = `/${db}`;
  await (await openPostgresStore({ url: u.toString() })).close(); // the store's schema
  return u.toString();
}

const task = (id, over = {}) => ({
  id,
  kind: 'bench_loop',
  status: 'running',
  clientId: null,
  prompt: 'benchmark: tool calls back to back',
  allowedCommands: [],
  memory: { turn: 0 },
  metadata: {},
  budgets: {},
  counters: { steps: 0, toolCalls: 0, questions: 0 },
  createdAt: 1,
  updatedAt: 1,
  ...over,
});
const OUTPUT = 'line of program output with numbers 12345 '.repeat(22);
const stepRecord = (k) => ({
  kind: 'tool_result',
  step: k,
  at: Date.now(),
  output: { ok: true, result: { stdout: OUTPUT, n: k } },
  durationMs: 1.5,
});

/** `n` tasks committing back to back for SECONDS; commits per second and their latency. */
async function storeRun(n) {
  const store = await openPostgresStore({ url: await freshDatabase(`store${n}`) });
  await Promise.all(Array.from({ length: n }, (_, i) => store.commit({ task: task(`t${i}`), create: true })));
  const lat = [];
  let commits = 0;
  const end = performance.now() + SECONDS * 1000;
  const t0 = performance.now();
  await Promise.all(
    Array.from({ length: n }, async (_, i) => {
      const id = `t${i}`;
      for (let k = 1; performance.now() < end; k++) {
        const a = performance.now();
        await store.commit({
          task: task(id, { updatedAt: Date.now(), counters: { steps: k, toolCalls: k, questions: 0 } }),
          history: [{ type: 'tool_result', step: k, at: Date.now(), callId: `${id}:call:${k}`, ok: true }],
          steps: [stepRecord(k)],
          commandCall: {
            callId: `${id}:call:${k}`,
            taskId: id,
            command: 'noop',
            args: { k },
            timeoutMs: 30_000,
            status: 'succeeded',
            outcome: { ok: true, result: { n: k } },
            dispatchCount: 1,
            createdAt: Date.now(),
            completedAt: Date.now(),
          },
        });
        lat.push(performance.now() - a);
        commits++;
      }
    }),
  );
  const secs = (performance.now() - t0) / 1000;
  await store.close();
  return { tasks: n, commitsPerSec: commits / secs, stepRowsPerSec: commits / secs, latency: summarize(lat) };
}

/** Raw `pg` INSERTs of step rows like the store's (sampled from its database) into a fresh database. */
async function rawRuns() {
  const url = await freshDatabase('raw');
  const store = await openPostgresStore({ url });
  await store.commit({ task: task('r'), create: true });
  await store.appendStep('r', stepRecord(1));
  await store.close();
  const c = new pg.Client({ connectionString: url });
  await c.connect();
  const sample = (await c.query('SELECT * FROM steps LIMIT 1')).rows[0];
  const cols = Object.keys(sample);
  let seq = 10;
  const row = () => cols.map((k) => (k === 'seq' ? seq++ : sample[k]));
  const one = `INSERT INTO steps (${cols.join(',')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(',')})`;
  const many = `INSERT INTO steps (${cols.join(',')}) VALUES ${Array.from(
    { length: 256 },
    (_, r) => `(${cols.map((_, k) => `$${r * cols.length + k + 1}`).join(',')})`,
  ).join(',')}`;
  const timed = async (fn, per) => {
    const lat = [];
    let rows = 0;
    const t0 = performance.now();
    while (performance.now() - t0 < SECONDS * 1000) {
      const a = performance.now();
      await fn();
      lat.push(performance.now() - a);
      rows += per;
    }
    return { rowsPerSec: rows / ((performance.now() - t0) / 1000), latency: summarize(lat) };
  };
  const autocommit = await timed(() => c.query(one, row()), 1);
  const txn256 = await timed(async () => {
    await c.query('BEGIN');
    for (let k = 0; k < 256; k++) await c.query(one, row());
    await c.query('COMMIT');
  }, 256);
  const multiRow256 = await timed(() => c.query(many, Array.from({ length: 256 }, row).flat()), 256);
  await c.end();
  return { autocommit, txn256, multiRow256, rowBytes: JSON.stringify(sample).length };
}

const results = { benchmark: 'store-postgres', date: new Date().toISOString(), machine: machineInfo() };
try {
  results.raw = await rawRuns();
  results.one = await storeRun(1);
  results.many = await storeRun(TASKS);
} finally {
  for (const db of databases) await admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
}
const { raw, one, many } = results;
console.log('\n# PostgreSQL store writes vs raw pg, same server and run\n');
printTable(
  ['what', 'rows/s (step rows)', 'p50 ms', 'p99 ms', 'ratio'],
  [
    [
      'raw: 1 autocommitted INSERT per row',
      fmt(raw.autocommit.rowsPerSec, 0),
      fmt(raw.autocommit.latency.p50, 2),
      fmt(raw.autocommit.latency.p99, 2),
      '',
    ],
    [
      'raw: txn of 256 single-row INSERTs',
      fmt(raw.txn256.rowsPerSec, 0),
      fmt(raw.txn256.latency.p50, 2),
      fmt(raw.txn256.latency.p99, 2),
      '',
    ],
    [
      'raw: one 256-row INSERT per txn',
      fmt(raw.multiRow256.rowsPerSec, 0),
      fmt(raw.multiRow256.latency.p50, 2),
      fmt(raw.multiRow256.latency.p99, 2),
      '',
    ],
    [
      `store: 1 task committing`,
      fmt(one.stepRowsPerSec, 0),
      fmt(one.latency.p50, 2),
      fmt(one.latency.p99, 2),
      `p50 ${fmt(one.latency.p50 / raw.autocommit.latency.p50, 2)}× raw autocommit`,
    ],
    [
      `store: ${many.tasks} tasks committing`,
      fmt(many.stepRowsPerSec, 0),
      fmt(many.latency.p50, 1),
      fmt(many.latency.p99, 1),
      `${fmt(many.stepRowsPerSec / raw.txn256.rowsPerSec, 2)}× txn/256, ${fmt(many.stepRowsPerSec / raw.multiRow256.rowsPerSec, 2)}× 256-row`,
    ],
  ],
);
console.log(
  `\n(each store commit also writes its task row, a history row and the call row: 4 rows per step row)`,
);
writeResults('store-postgres', results);
