#!/usr/bin/env node
// PostgreSQL store write path (not part of `npm test`; `npx nx run store-postgres:build` first):
//   eval "$(tools/postgres-test-server.sh --export)"
//   node tools/bench/store-postgres/run.mjs [--tasks 1000] [--seconds 5] [--rounds 3] [--compare DIR]
//
// The store alone, no orchestrator: `tasks` tasks committing back to back at once, each commit what a command round
// trip writes (the task row, a history entry, a step record of ~1 KB, the call row), through PostgresStore's write
// queue (group commit, one pipelined round trip per batch). Raw `pg` baselines on the same server and run, into a
// fresh database with the store's schema, of the same step rows: one autocommitted INSERT per row; transactions of
// 256 single-row INSERTs (each its own round trip); one 256-row INSERT per transaction. And one task committing alone
// (its commit latency) against one autocommitted INSERT (a round trip plus a WAL flush). Prints a table and writes
// tools/bench/results/store-postgres.json.
//
// --rounds N repeats the whole set N times (baselines and store runs taking turns) and reports each figure's median
// and the median of the per-round ratios. --compare DIR also runs another build of @ccagent/store-postgres (DIR holds
// its dist/index.js, e.g. a copy built from an older commit) in every round, right after this one, so a change is
// measured against the build before it on the same machine and load.
import os from 'node:os';
import { parseArgs } from 'node:util';
import pg from 'pg';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { openPostgresStore } from '@ccagent/store-postgres';
import { machineInfo, writeResults } from '../lib/results.mjs';
import { fmt, printTable, summarize } from '../lib/stats.mjs';

const { values: flags } = parseArgs({
  options: {
    tasks: { type: 'string', default: '1000' },
    seconds: { type: 'string', default: '5' },
    rounds: { type: 'string', default: '1' },
    compare: { type: 'string' },
  },
});
const ROUNDS = Math.max(1, Number.parseInt(flags.rounds, 10) || 1);
const other = flags.compare
  ? await import(pathToFileURL(path.resolve(flags.compare, 'dist', 'index.js')).href)
  : undefined;
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
async function storeRun(n, open = openPostgresStore) {
  const store = await open({ url: await freshDatabase(`store${n}`) });
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

const median = (xs) => {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
};

const results = {
  benchmark: 'store-postgres',
  date: new Date().toISOString(),
  machine: machineInfo(),
  tasks: TASKS,
  seconds: SECONDS,
  compare: flags.compare,
  rounds: [],
};
try {
  for (let r = 0; r < ROUNDS; r++) {
    const round = {};
    // The order alternates, so no run always goes first on a machine whose load drifts.
    const runs = [
      async () => (round.raw = await rawRuns()),
      async () => (round.one = await storeRun(1)),
      async () => (round.many = await storeRun(TASKS)),
      ...(other
        ? [
            async () => (round.otherOne = await storeRun(1, other.openPostgresStore)),
            async () => (round.otherMany = await storeRun(TASKS, other.openPostgresStore)),
          ]
        : []),
    ];
    for (const run of r % 2 === 0 ? runs : runs.reverse()) await run();
    round.ratioVsTxn256 = round.many.stepRowsPerSec / round.raw.txn256.rowsPerSec;
    round.ratioVsMultiRow = round.many.stepRowsPerSec / round.raw.multiRow256.rowsPerSec;
    if (round.otherMany) {
      round.otherRatioVsTxn256 = round.otherMany.stepRowsPerSec / round.raw.txn256.rowsPerSec;
      round.ratioVsOther = round.many.stepRowsPerSec / round.otherMany.stepRowsPerSec;
    }
    results.rounds.push(round);
    console.error(`[bench] round ${r + 1}/${ROUNDS} done (load ${os.loadavg()[0].toFixed(1)})`);
  }
} finally {
  for (const db of databases) await admin(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
}
const rs = results.rounds;
const med = (f) => median(rs.map(f));
const fig = (f) => ({
  rowsPerSec: med((r) => f(r).rowsPerSec ?? f(r).stepRowsPerSec),
  p50: med((r) => f(r).latency.p50),
  p99: med((r) => f(r).latency.p99),
});
const raw = {
  autocommit: fig((r) => r.raw.autocommit),
  txn256: fig((r) => r.raw.txn256),
  multiRow256: fig((r) => r.raw.multiRow256),
};
const one = fig((r) => r.one);
const many = fig((r) => r.many);
const otherMany = other ? fig((r) => r.otherMany) : undefined;
const otherOne = other ? fig((r) => r.otherOne) : undefined;
const per = (f) => rs.map((r) => fmt(f(r), 2)).join(' ');
results.medians = {
  raw,
  one,
  many,
  otherMany,
  otherOne,
  oneP50VsAutocommit: med((r) => r.one.latency.p50 / r.raw.autocommit.latency.p50),
  ratioVsTxn256: med((r) => r.ratioVsTxn256),
  ratioVsMultiRow: med((r) => r.ratioVsMultiRow),
  otherRatioVsTxn256: other ? med((r) => r.otherRatioVsTxn256) : undefined,
  ratioVsOther: other ? med((r) => r.ratioVsOther) : undefined,
};
const m = results.medians;
console.log(`\n# PostgreSQL store writes vs raw pg, same server and run (medians of ${ROUNDS} round(s))\n`);
printTable(
  ['what', 'rows/s (step rows)', 'p50 ms', 'p99 ms', 'ratio (median)', 'ratio per round'],
  [
    [
      'raw: 1 autocommitted INSERT per row',
      fmt(raw.autocommit.rowsPerSec, 0),
      fmt(raw.autocommit.p50, 2),
      fmt(raw.autocommit.p99, 2),
      '',
      '',
    ],
    [
      'raw: txn of 256 single-row INSERTs',
      fmt(raw.txn256.rowsPerSec, 0),
      fmt(raw.txn256.p50, 2),
      fmt(raw.txn256.p99, 2),
      '',
      '',
    ],
    [
      'raw: one 256-row INSERT per txn',
      fmt(raw.multiRow256.rowsPerSec, 0),
      fmt(raw.multiRow256.p50, 2),
      fmt(raw.multiRow256.p99, 2),
      '',
      '',
    ],
    [
      'store: 1 task committing',
      fmt(one.rowsPerSec, 0),
      fmt(one.p50, 2),
      fmt(one.p99, 2),
      `p50 ${fmt(m.oneP50VsAutocommit, 2)}× raw autocommit`,
      per((r) => r.one.latency.p50 / r.raw.autocommit.latency.p50),
    ],
    [
      `store: ${TASKS} tasks committing`,
      fmt(many.rowsPerSec, 0),
      fmt(many.p50, 1),
      fmt(many.p99, 1),
      `${fmt(m.ratioVsTxn256, 2)}× txn/256, ${fmt(m.ratioVsMultiRow, 2)}× 256-row`,
      per((r) => r.ratioVsTxn256),
    ],
    ...(otherMany
      ? [
          [
            `other build: 1 task committing`,
            fmt(otherOne.rowsPerSec, 0),
            fmt(otherOne.p50, 2),
            fmt(otherOne.p99, 2),
            `p50 ${fmt(
              med((r) => r.otherOne.latency.p50 / r.raw.autocommit.latency.p50),
              2,
            )}× raw autocommit`,
            per((r) => r.otherOne.latency.p50 / r.raw.autocommit.latency.p50),
          ],
          [
            `other build (${flags.compare}): ${TASKS} tasks`,
            fmt(otherMany.rowsPerSec, 0),
            fmt(otherMany.p50, 1),
            fmt(otherMany.p99, 1),
            `${fmt(m.otherRatioVsTxn256, 2)}× txn/256; this build ${fmt(m.ratioVsOther, 2)}× it`,
            per((r) => r.ratioVsOther),
          ],
        ]
      : []),
  ],
);
console.log(
  `\n(each store commit also writes its task row, a history row and the call row: 4 rows per step row)`,
);
writeResults('store-postgres', results);
