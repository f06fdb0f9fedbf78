#!/usr/bin/env node
// Orchestrator benchmark (not part of `npm test`): the BUILT `cc-orchestrator serve` as a child process on
// 127.0.0.1, simulated CC computers on real `ws` sockets in this process, the fake Ollama server from
// @ccagent/testkit. Every figure has a raw baseline measured in the same run. Run `npm run build` first.
//
//   node tools/bench/orchestrator/run.mjs [--quick] [--only roundtrip|idle|recovery] [--durability full|normal|both]
//                                         [--cpu-prof DIR] [--store sqlite|postgres|both] [--clients 1,1000]
//                                         [--warmup-ms 1500] [--rounds 1]
//
// --store postgres runs the round-trip and step-log sections on PostgreSQL (`--db postgres://…`, a fresh database per
// server on the server named by CCAGENT_BENCH_PG_URL or CCAGENT_TEST_PG_URL, e.g. from
// `eval "$(tools/postgres-test-server.sh --export)"`), the step-log baseline being a raw `pg` INSERT loop of the same
// rows into a fresh database with the store's schema; results go to results/orchestrator-postgres.json.
// --store both runs the round-trip section on PostgreSQL and on SQLite (`--durability`, default `full` here) in the
// same run; with --rounds N every client count is measured N times, the stores taking turns (the order alternates
// from one round to the next, so neither always runs first on a machine whose load drifts), and the summary gives
// each figure's median over the rounds and the median of the per-round PostgreSQL ÷ SQLite ratios.
//
// --cpu-prof DIR runs each round-trip server under `node --cpu-prof` and stops it with SIGTERM (not kill -9) so that
// its .cpuprofile lands in DIR (open it in Chrome DevTools or summarise it with tools/bench/lib/cpuprofile-top.mjs).
// CCAGENT_BENCH_ORCHESTRATOR=<path to dist/main.js> benches another build of the server (e.g. a copy taken before
// a change, to compare two builds back to back).
//
// 1. Command round trip at 1, 100 and 1,000 connected clients. The task kind `bench_loop` (native tool calling)
//    gets 50 tool calls per model reply, so 49 of 50 steps run with no model in the way: a client answers each
//    command_call at once and we time command_call → command_result → next command_call on the client (and the
//    result → command_ack part). Two load shapes: one client active while the others idle (heartbeats only), and
//    every client active. Raw baseline: the same message round trip over a bare `ws` echo server (child process)
//    with the same number of clients and active ones. Run once per server `--durability` (full: fsync per commit,
//    the default; normal: survives kill -9, not power loss). Also raw better-sqlite3 commit latency (one small row;
//    one transaction with the writes of one round trip, rows sampled from the orchestrator's file) at FULL and NORMAL:
//    the floor a durable round trip cannot go below.
// 2. Step-log writes under load: step rows committed per second by the orchestrator while every client is active
//    (counted in its SQLite file), against a raw better-sqlite3 INSERT loop of the same rows into the same schema
//    (one durable transaction per row, and transactions of 256).
// 3. Idle connections: welcomed clients one orchestrator holds (target 10,000) and RSS per connection, against the
//    bare ws server holding as many.
// 4. Recovery: 1,000 tasks in flight (⅔ waiting for a command, ⅓ mid model call), kill -9, restart: time from the
//    spawn of the new process to every call re-sent to its reconnected client and every model call re-issued.
//    Raw baseline: spawning a bare Node HTTP server until it listens, plus a raw SELECT + JSON.parse of the same rows.
// Prints tables and writes tools/bench/results/orchestrator.json.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import pg from 'pg';
import { openSqliteStore } from '@ccagent/store';
import { openPostgresStore } from '@ccagent/store-postgres';
import { startFakeOllama } from '@ccagent/testkit';
import { BenchClient, connectAll, EchoClient } from '../lib/bench-clients.mjs';
import { openFilesLimit, spawnNode, startEcho, startOrchestrator } from '../lib/procs.mjs';
import { machineInfo, writeResults } from '../lib/results.mjs';
import { fmt, printTable, sleep, summarize } from '../lib/stats.mjs';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    only: { type: 'string' },
    // The server's --durability: `full` (fsync per commit, the default), `normal` (survives kill -9, not power loss).
    durability: { type: 'string', default: 'both' },
    'cpu-prof': { type: 'string' },
    store: { type: 'string', default: 'sqlite' },
    // Connected-client counts of the round-trip section (default 1,100,1000; --quick 1,100).
    clients: { type: 'string' },
    // Time every active client's task gets before the window opens (ms, default 1500): 1,000 tasks starting on
    // PostgreSQL need more than that to reach their command loop.
    'warmup-ms': { type: 'string' },
    // Rounds of the round-trip section (each client count, each store); the summary reports medians.
    rounds: { type: 'string', default: '1' },
  },
});
const BOTH = flags.store === 'both';
const POSTGRES = flags.store === 'postgres' || BOTH;
const PG_SERVER = process.env.CCAGENT_BENCH_PG_URL || process.env.CCAGENT_TEST_PG_URL;
if (POSTGRES && !PG_SERVER) {
  console.error(
    '--store postgres needs CCAGENT_BENCH_PG_URL or CCAGENT_TEST_PG_URL (a PostgreSQL server URL)',
  );
  process.exit(2);
}
const pgDatabases = [];
/** A fresh database on the bench's PostgreSQL server; dropped at the end. */
async function freshPgDatabase(name) {
  const db = `ccagent_bench_${name}_${Date.now().toString(36)}`.replace(/[^a-z0-9_]/g, '_');
  const c = new pg.Client({ connectionString: PG_SERVER });
  await c.connect();
  await c.query(`CREATE DATABASE ${db}`);
  await c.end();
  pgDatabases.push(db);
  const u = new URL(PG_SERVER);
  u.pathname = `/${db}`;
  return u.toString();
}
async function dropPgDatabases() {
  const c = new pg.Client({ connectionString: PG_SERVER });
  await c.connect();
  for (const db of pgDatabases) await c.query(`DROP DATABASE IF EXISTS ${db} WITH (FORCE)`).catch(() => {});
  await c.end();
}
const CPU_PROF = flags['cpu-prof'] ? path.resolve(flags['cpu-prof']) : undefined;
const QUICK = flags.quick;
const CLIENT_COUNTS = flags.clients
  ? flags.clients.split(',').map((n) => Number.parseInt(n, 10))
  : QUICK
    ? [1, 100]
    : [1, 100, 1000];
// PostgreSQL has one durability: acknowledged after COMMIT with synchronous_commit on (its default).
const SQLITE_DURABILITIES =
  flags.durability === 'both' ? (BOTH ? ['full'] : ['full', 'normal']) : [flags.durability];
/** The servers of the round-trip section: `postgres`, and/or SQLite at each durability. */
const DURABILITIES = BOTH
  ? ['postgres', ...SQLITE_DURABILITIES]
  : POSTGRES
    ? ['postgres']
    : SQLITE_DURABILITIES;
const ROUNDS = Math.max(1, Number.parseInt(flags.rounds, 10) || 1);
const IDLE_TARGET = QUICK ? 2000 : 10_000;
const RECOVERY_TASKS = QUICK ? 300 : 1000;
const WARMUP_MS = flags['warmup-ms'] ? Number(flags['warmup-ms']) : 1500;
const WINDOW_MS = QUICK ? 2000 : 4000;
const CALLS_PER_REPLY = 50;
const REPLIES_PER_TASK = 4;
const MODEL = 'qwen3:8b';

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ccagent-bench-orch-'));
const results = {
  benchmark: 'orchestrator',
  date: new Date().toISOString(),
  quick: QUICK,
  machine: { ...machineInfo(), openFiles: openFilesLimit() },
};

const config = (server = {}) => ({
  models: {
    native: { name: MODEL, timeoutMs: 120_000 },
    planner: { name: MODEL },
    executor: { name: MODEL },
  },
  taskKinds: {
    bench_loop: {
      description: 'benchmark: tool calls back to back',
      strategy: 'native',
      maxIterations: 1000,
      budgets: { maxSteps: 1_000_000, maxToolCalls: 1_000_000, deadlineMs: 3_600_000 },
    },
  },
  server: {
    rateLimit: { messagesPerSecond: 1_000_000, burst: 1_000_000 },
    modelConcurrency: 64,
    maxConnections: 20_000,
    // Every bench client connects from 127.0.0.1, up to 10,000 at once: lift the per-address caps with the rest.
    maxConnectionsPerAddress: 20_000,
    maxUnauthenticatedPerAddress: 20_000,
    ...server,
  },
});

const assistantTurns = (req) => (req.body.messages ?? []).filter((m) => m.role === 'assistant').length;
const promptOf = (req) => (req.body.messages ?? []).find((m) => m.role === 'user')?.content ?? '';

const fake = await startFakeOllama({ installed: [MODEL] });
let recoveryPhase = 'prepare';
const stallArrivals = [];
fake.script(MODEL, (req) => {
  const prompt = promptOf(req);
  if (prompt === 'stall') {
    if (recoveryPhase === 'prepare') return { content: '', fault: { latencyMs: 600_000 } };
    stallArrivals.push(performance.now());
    return { toolCalls: [{ name: 'noop', arguments: { i: 0 } }] };
  }
  if (prompt === 'hold') return { toolCalls: [{ name: 'noop', arguments: { i: 0 } }] };
  const turn = assistantTurns(req);
  if (turn >= REPLIES_PER_TASK) return 'done';
  return {
    toolCalls: Array.from({ length: CALLS_PER_REPLY }, (_, i) => ({ name: 'noop', arguments: { i, turn } })),
  };
});

const sections = flags.only ? [flags.only] : POSTGRES ? ['roundtrip'] : ['roundtrip', 'idle', 'recovery'];
if (POSTGRES) results.store = BOTH ? 'postgres+sqlite' : 'postgres';
try {
  if (sections.includes('roundtrip')) await roundTrips();
  if (sections.includes('idle')) await idleConnections();
  if (sections.includes('recovery')) await recovery();
} finally {
  await fake.close();
  if (POSTGRES) await dropPgDatabases();
  rmSync(tmp, { recursive: true, force: true });
}

writeResults(BOTH ? 'orchestrator-stores' : POSTGRES ? 'orchestrator-postgres' : 'orchestrator', results);

// ------------------------------------------------------------------------------------------------ 1 + 2

async function measureWindow(shared) {
  await sleep(WARMUP_MS);
  const from = Date.now();
  shared.measuring = true;
  await sleep(WINDOW_MS);
  shared.measuring = false;
  return { from, to: Date.now() };
}

/** Wait (at most 120 s) until every client got a command_call of its task; the time it took (ms). */
async function untilLooping(clients) {
  const t0 = performance.now();
  while (clients.some((c) => c.lastCall === undefined) && performance.now() - t0 < 120_000) await sleep(50);
  return performance.now() - t0;
}

async function roundTrips() {
  const rows = [];
  const stepRows = [];
  results.roundTrip = [];
  results.stepLog = [];
  for (const n of CLIENT_COUNTS) {
    for (let round = 0; round < ROUNDS; round++) {
      // Raw baseline first: the same clients against a bare ws echo server (shared by the servers of the round).
      const echo = await echoBaseline(n);
      const order = round % 2 === 0 ? DURABILITIES : [...DURABILITIES].reverse();
      for (const durability of order) {
        const pgServer = durability === 'postgres';
        const db = pgServer
          ? await freshPgDatabase(`rt${n}`)
          : path.join(tmp, `rt-${n}-${durability}-${round}.db`);
        const server = await startOrchestrator({
          db,
          configFile: path.join(tmp, `rt-${n}-${durability}.config.json`),
          config: config(),
          ollamaUrl: fake.url,
          args: pgServer ? [] : ['--durability', durability],
          nodeArgs: CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : [],
        });
        const shared = { measuring: false, samples: { cycle: [], modelCycle: [], ack: [] } };
        const clients = Array.from(
          { length: n },
          (_, i) => new BenchClient(server.url, `bench-${i}`, shared),
        );
        await connectAll(clients);
        const out = { clients: n, durability, round, loadAverage: os.loadavg()[0] };

        // A: one client active, the others connected and idle.
        clients[0].startLoop();
        await measureWindow(shared);
        clients[0].stop();
        out.oneActive = {
          cycle: summarize(shared.samples.cycle),
          ack: summarize(shared.samples.ack),
          modelCycle: summarize(shared.samples.modelCycle),
        };
        await sleep(300);

        // B: every client active.
        shared.samples = { cycle: [], modelCycle: [], ack: [] };
        for (const c of clients) c.startLoop();
        // The window opens once every task reached its command loop (1,000 tasks starting take seconds under load;
        // a fixed warm-up alone measured a window with most tasks still starting), then after the warm-up.
        const loopingAfterMs = await untilLooping(clients);
        const window = await measureWindow(shared);
        for (const c of clients) c.stop();
        out.allActive = {
          cycle: summarize(shared.samples.cycle),
          ack: summarize(shared.samples.ack),
          modelCycle: summarize(shared.samples.modelCycle),
          cyclesPerSec: (shared.samples.cycle.length + shared.samples.modelCycle.length) / (WINDOW_MS / 1000),
          failedTasks: shared.failed ?? 0,
          loopingAfterMs,
        };
        out.rssMiB = +(server.rssKiB() / 1024).toFixed(1);
        // A profiled server must exit on its own to write its profile.
        await (CPU_PROF ? server.stop() : server.kill9());
        for (const c of clients) c.terminate();

        // Step-log rows the orchestrator committed in the window, against a raw insert loop of the same rows.
        if (n > 1) {
          const steps = pgServer
            ? await pgStepThroughput(db, window)
            : stepThroughput(db, window, durability);
          out.stepLog = steps;
          results.stepLog.push({ clients: n, durability, round, ...steps });
          stepRows.push([
            `${n} clients active, ${durability}`,
            fmt(steps.orchestratorStepsPerSec, 0),
            fmt(steps.rawAutocommitPerSec, 0),
            fmt(steps.rawBatchedPerSec, 0),
            fmt(steps.ratioVsAutocommit, 2),
            fmt(steps.ratioVsBatched, 2),
            steps.rawMultiRowPerSec === undefined ? '' : fmt(steps.rawMultiRowPerSec, 0),
            steps.ratioVsMultiRow === undefined ? '' : fmt(steps.ratioVsMultiRow, 2),
            fmt(steps.avgRowBytes, 0),
          ]);
        }
        // The floor one durable cycle sits on: raw better-sqlite3 commits of the rows a cycle writes.
        if (n === 1 && !results.rawCommit && !pgServer) results.rawCommit = rawCycleCommits(db);

        out.echo = echo;
        results.roundTrip.push(out);
        const r = (shape, o, e) => [
          `${n} connected, ${shape}, ${durability}`,
          fmt(o.cycle.p50, 3),
          fmt(o.cycle.p99, 3),
          fmt(o.ack.p50, 3),
          fmt(o.ack.p99, 3),
          fmt(e.p50, 3),
          fmt(e.p99, 3),
          fmt(o.cycle.p50 / e.p50, 1),
          fmt(o.cycle.p99 / e.p99, 1),
          String(o.cycle.n),
          n > 1 && shape === 'all active' ? fmt(o.cyclesPerSec, 0) : '',
        ];
        rows.push(r('1 active', out.oneActive, echo.oneActive));
        if (n > 1) rows.push(r('all active', out.allActive, echo.allActive));
        console.error(
          `[bench] round trip with ${n} clients (${durability}, round ${round + 1}/${ROUNDS}) done`,
        );
      }
    }
  }
  console.log(
    '\n# Command round trip (ms): orchestrator command_call → result → next command_call, vs a bare ws echo round trip\n',
  );
  printTable(
    [
      'clients',
      'cycle p50',
      'cycle p99',
      'ack p50',
      'ack p99',
      'echo p50',
      'echo p99',
      'p50 ×echo',
      'p99 ×echo',
      'samples',
      'cycles/s',
    ],
    rows,
  );
  const rc = results.rawCommit;
  if (rc) {
    console.log(
      '\n# Raw better-sqlite3 commit latency (ms), same machine and run: the floor under one durable round trip\n',
    );
    printTable(
      ['transaction', 'synchronous', 'p50', 'p99', 'commits'],
      rc.rows.map((x) => [x.what, x.synchronous, fmt(x.p50, 3), fmt(x.p99, 3), String(x.n)]),
    );
  }
  console.log(
    `\n# Step-log writes under load (rows/s): orchestrator vs raw ${BOTH ? 'pg / better-sqlite3' : POSTGRES ? 'pg' : 'better-sqlite3'} INSERT of the same rows\n`,
  );
  printTable(
    [
      'load',
      'orchestrator',
      'raw 1 txn/row',
      'raw txn/256',
      'ratio',
      'ratio vs batched',
      'raw 256-row INSERT',
      'ratio vs 256-row',
      'row bytes',
    ],
    stepRows,
  );
  if (ROUNDS > 1 || BOTH) roundMedians();
}

// Declarations (hoisted): the sections run from the top-level await above this point.
function median(xs) {
  const v = xs.filter(Number.isFinite).sort((a, b) => a - b);
  if (v.length === 0) return NaN;
  const m = Math.floor(v.length / 2);
  return v.length % 2 ? v[m] : (v[m - 1] + v[m]) / 2;
}
function range(xs) {
  const v = xs.filter(Number.isFinite);
  return v.length === 0 ? '' : `${fmt(Math.min(...v), 2)}–${fmt(Math.max(...v), 2)}`;
}

/**
 * Medians over the rounds, per client count and server, and (with `--store both`) the median of the per-round
 * PostgreSQL ÷ SQLite ratios: one noisy round on a shared machine moves a median little, and a ratio taken within a
 * round compares two servers that ran minutes apart at most.
 */
function roundMedians() {
  const rows = [];
  const summary = [];
  for (const n of CLIENT_COUNTS) {
    for (const d of DURABILITIES) {
      const rs = results.roundTrip.filter((r) => r.clients === n && r.durability === d);
      const m = {
        clients: n,
        durability: d,
        rounds: rs.length,
        oneActiveP50: median(rs.map((r) => r.oneActive.cycle.p50)),
        oneActiveP99: median(rs.map((r) => r.oneActive.cycle.p99)),
        allActiveP50: n > 1 ? median(rs.map((r) => r.allActive.cycle.p50)) : NaN,
        cyclesPerSec: n > 1 ? median(rs.map((r) => r.allActive.cyclesPerSec)) : NaN,
        stepRowsPerSec: median(rs.map((r) => r.stepLog?.orchestratorStepsPerSec ?? NaN)),
        ratioVsBatched: median(rs.map((r) => r.stepLog?.ratioVsBatched ?? NaN)),
        ratioVsBatchedRange: range(rs.map((r) => r.stepLog?.ratioVsBatched ?? NaN)),
      };
      summary.push(m);
      rows.push([
        `${n} connected, ${d}`,
        String(m.rounds),
        fmt(m.oneActiveP50, 3),
        fmt(m.oneActiveP99, 3),
        fmt(m.allActiveP50, 1),
        fmt(m.cyclesPerSec, 0),
        fmt(m.stepRowsPerSec, 0),
        fmt(m.ratioVsBatched, 2),
        m.ratioVsBatchedRange,
      ]);
    }
  }
  console.log(`\n# Medians over ${ROUNDS} round(s), the servers taking turns\n`);
  printTable(
    [
      'clients, server',
      'rounds',
      '1 active p50',
      '1 active p99',
      'all active p50',
      'cycles/s',
      'step rows/s',
      '÷ raw txn/256',
      'range',
    ],
    rows,
  );
  results.medians = summary;
  if (!BOTH) return;
  const sqlite = SQLITE_DURABILITIES[0];
  const ratios = [];
  const ratioRows = [];
  for (const n of CLIENT_COUNTS) {
    const per = [];
    for (let round = 0; round < ROUNDS; round++) {
      const at = (d) =>
        results.roundTrip.find((r) => r.clients === n && r.round === round && r.durability === d);
      const p = at('postgres');
      const q = at(sqlite);
      if (p && q) per.push(p.oneActive.cycle.p50 / q.oneActive.cycle.p50);
    }
    ratios.push({ clients: n, perRound: per, median: median(per) });
    ratioRows.push([`${n} connected, 1 active`, per.map((x) => fmt(x, 2)).join(' '), fmt(median(per), 2)]);
  }
  console.log(`\n# PostgreSQL ÷ SQLite \`${sqlite}\` round trip p50, per round and median\n`);
  printTable(['load', 'per round', 'median'], ratioRows);
  results.postgresVsSqlite = { sqlite, ratios };
}

async function echoBaseline(n) {
  const echo = await startEcho();
  const payload = JSON.stringify({
    type: 'command_result',
    task_id: '0f6c5b2e-8f5d-4c1e-9d1a-2b7f3c9e4a10',
    call_id: '0f6c5b2e-8f5d-4c1e-9d1a-2b7f3c9e4a10:call:17',
    ok: true,
    result: { ok: true },
  });
  const shared = { measuring: false, samples: [] };
  const clients = Array.from({ length: n }, () => new EchoClient(echo.url, shared, payload));
  await connectAll(clients);
  clients[0].start();
  await measureWindow(shared);
  clients[0].stop();
  const oneActive = summarize(shared.samples);
  await sleep(100);
  shared.samples = [];
  for (const c of clients) c.start();
  await measureWindow(shared);
  for (const c of clients) c.stop();
  const allActive = summarize(shared.samples);
  const rssMiB = +(echo.rssKiB() / 1024).toFixed(1);
  await echo.kill9();
  for (const c of clients) c.terminate();
  return { oneActive, allActive, rssMiB };
}

/** A fresh file with the store's schema and pragmas (WAL, the given synchronous level). */
function rawFile(name, synchronous) {
  const file = path.join(tmp, `${name}-${Date.now()}-${Math.random().toString(36).slice(2)}.db`);
  openSqliteStore({ path: file })
    .close()
    .catch(() => {});
  const raw = new Database(file);
  raw.pragma('journal_mode = WAL');
  raw.pragma(`synchronous = ${synchronous}`);
  return raw;
}

/** `INSERT INTO table (cols…) VALUES (?…)`. */
function insertSql(table, cols) {
  return `INSERT INTO ${table} (${cols.join(',')}) VALUES (${cols.map(() => '?').join(',')})`;
}

/**
 * Raw commit latency with better-sqlite3, no orchestrator: (1) one small row per transaction, (2) one transaction
 * with exactly the writes of one command round trip — the task row (sampled from the orchestrator's file) rewritten
 * twice, two history rows, two step rows (a tool_result and a decision), the call row updated and the next call row
 * inserted, and the task's memory row (its real memory) on one round trip in CALLS_PER_REPLY, as the server writes
 * it only when the memory changes (the native strategy changes it when a model reply arrives) — at synchronous FULL
 * and NORMAL. 2 s each.
 */
function rawCycleCommits(db) {
  const src = new Database(db, { readonly: true });
  const task = src.prepare('SELECT * FROM tasks ORDER BY updated_at DESC LIMIT 1').get();
  const memory = task
    ? src.prepare('SELECT memory FROM task_memory WHERE task_id = ?').get(task.id)?.memory
    : undefined;
  const hist = src.prepare("SELECT * FROM history WHERE type = 'tool_result' LIMIT 1").get();
  const histCall = src.prepare("SELECT * FROM history WHERE type = 'tool_call' LIMIT 1").get();
  const stepResult = src.prepare("SELECT * FROM steps WHERE kind = 'tool_result' LIMIT 1").get();
  const stepDecision = src.prepare("SELECT * FROM steps WHERE kind = 'decision' LIMIT 1").get();
  const call = src.prepare('SELECT * FROM command_calls LIMIT 1').get();
  src.close();
  const out = { rows: [] };
  if (!task || memory === undefined || !hist || !histCall || !stepResult || !stepDecision || !call)
    return out;
  for (const synchronous of ['FULL', 'NORMAL']) {
    const raw = rawFile('raw-commit', synchronous);
    const taskCols = Object.keys(task);
    raw.prepare(insertSql('tasks', taskCols)).run(...taskCols.map((c) => task[c]));
    raw.prepare('INSERT INTO task_memory (task_id, memory) VALUES (?, ?)').run(task.id, memory);
    const updateMemory = raw.prepare('UPDATE task_memory SET memory = ? WHERE task_id = ?');
    const setCols = taskCols.filter((c) => c !== 'id');
    const updateTask = raw.prepare(
      `UPDATE tasks SET ${setCols.map((c) => `${c} = ?`).join(', ')} WHERE id = ?`,
    );
    const hCols = Object.keys(hist);
    const insertHist = raw.prepare(insertSql('history', hCols));
    const sCols = Object.keys(stepResult);
    const insertStep = raw.prepare(insertSql('steps', sCols));
    const cCols = Object.keys(call);
    const upsertCall = raw.prepare(
      `${insertSql('command_calls', cCols)} ON CONFLICT(call_id) DO UPDATE SET ${cCols
        .filter((c) => c !== 'call_id')
        .map((c) => `${c} = excluded.${c}`)
        .join(', ')}`,
    );
    const begin = raw.prepare('BEGIN IMMEDIATE');
    const commit = raw.prepare('COMMIT');
    const small = raw.prepare('INSERT INTO steps (task_id, seq, step, at, kind) VALUES (?, ?, 1, 0, ?)');
    let seq = 1;
    let k = 0;
    const row = (r, cols, over) => cols.map((c) => (c in over ? over[c] : r[c]));
    const timeLoop = (fn) => {
      const xs = [];
      const t0 = performance.now();
      while (performance.now() - t0 < 2000) {
        const a = performance.now();
        fn();
        xs.push(performance.now() - a);
      }
      return summarize(xs);
    };
    const one = timeLoop(() => small.run(task.id, seq++, 'note'));
    const cycle = timeLoop(() => {
      k++;
      begin.run();
      updateTask.run(...row(task, setCols, { status: 'running', updated_at: k }), task.id);
      insertHist.run(...row(hist, hCols, { task_id: task.id, seq: seq++ }));
      insertStep.run(...row(stepResult, sCols, { task_id: task.id, seq: seq++ }));
      upsertCall.run(...row(call, cCols, { task_id: task.id, call_id: `c-${k}`, status: 'succeeded' }));
      updateTask.run(...row(task, setCols, { status: 'waiting_for_command', updated_at: k }), task.id);
      insertStep.run(...row(stepDecision, sCols, { task_id: task.id, seq: seq++ }));
      insertHist.run(...row(histCall, hCols, { task_id: task.id, seq: seq++ }));
      upsertCall.run(...row(call, cCols, { task_id: task.id, call_id: `c-${k + 1}`, status: 'pending' }));
      if (k % CALLS_PER_REPLY === 0) updateMemory.run(`${memory} `, task.id);
      commit.run();
    });
    raw.close();
    out.rows.push({ what: 'one small row (autocommit)', synchronous, ...one });
    out.rows.push({ what: 'the writes of one round trip', synchronous, ...cycle });
  }
  out.taskRowBytes = Object.values(task).reduce((a, v) => a + (typeof v === 'string' ? v.length : 8), 0);
  return out;
}

function stepThroughput(db, window, durability = 'full') {
  const src = new Database(db, { readonly: true });
  const count = src
    .prepare('SELECT count(*) AS n FROM steps WHERE at >= ? AND at < ?')
    .get(window.from, window.to).n;
  const byKind = src
    .prepare('SELECT kind, count(*) AS n FROM steps WHERE at >= ? AND at < ? GROUP BY kind')
    .all(window.from, window.to);
  const sample = src
    .prepare('SELECT * FROM steps WHERE at >= ? AND at < ? LIMIT 2000')
    .all(window.from, window.to);
  const task = src.prepare('SELECT * FROM tasks LIMIT 1').get();
  src.close();
  const orchestratorStepsPerSec = count / ((window.to - window.from) / 1000);
  const avgRowBytes =
    sample.reduce(
      (s, r) => s + Object.values(r).reduce((a, v) => a + (typeof v === 'string' ? v.length : 8), 0),
      0,
    ) / Math.max(1, sample.length);

  // Raw: the same rows into a fresh file with the store's schema and pragmas (WAL, the same synchronous level).
  const raw = rawFile('raw-steps', durability === 'normal' ? 'NORMAL' : 'FULL');
  const cols = Object.keys(task);
  raw.prepare(insertSql('tasks', cols)).run(...cols.map((c) => task[c]));
  const stepCols = Object.keys(sample[0] ?? { task_id: 1 });
  const insert = raw.prepare(insertSql('steps', stepCols));
  let seq = 1;
  const row = (i) => {
    const r = sample[i % sample.length];
    return stepCols.map((c) => (c === 'task_id' ? task.id : c === 'seq' ? seq++ : r[c]));
  };
  const loop = (batch) => {
    const t0 = performance.now();
    let rows = 0;
    while (performance.now() - t0 < 2000) {
      if (batch === 1) insert.run(...row(rows));
      else {
        raw.exec('BEGIN');
        for (let k = 0; k < batch; k++) insert.run(...row(rows + k));
        raw.exec('COMMIT');
      }
      rows += batch;
    }
    return rows / ((performance.now() - t0) / 1000);
  };
  const rawAutocommitPerSec = sample.length > 0 ? loop(1) : NaN;
  const rawBatchedPerSec = sample.length > 0 ? loop(256) : NaN;
  raw.close();
  return {
    windowMs: window.to - window.from,
    steps: count,
    byKind: Object.fromEntries(byKind.map((k) => [k.kind, k.n])),
    orchestratorStepsPerSec,
    rawAutocommitPerSec,
    rawBatchedPerSec,
    ratioVsAutocommit: orchestratorStepsPerSec / rawAutocommitPerSec,
    ratioVsBatched: orchestratorStepsPerSec / rawBatchedPerSec,
    avgRowBytes,
  };
}

/**
 * `stepThroughput` on PostgreSQL: the step rows the orchestrator committed in the window, against a raw `pg` INSERT
 * loop of the same rows (one autocommitted INSERT per row, and transactions of 256) into a fresh database with the
 * store's schema, on the same server.
 */
async function pgStepThroughput(url, window) {
  const src = new pg.Client({ connectionString: url });
  await src.connect();
  const count = Number(
    (await src.query('SELECT count(*) AS n FROM steps WHERE at >= $1 AND at < $2', [window.from, window.to]))
      .rows[0].n,
  );
  const byKind = (
    await src.query('SELECT kind, count(*) AS n FROM steps WHERE at >= $1 AND at < $2 GROUP BY kind', [
      window.from,
      window.to,
    ])
  ).rows;
  const sample = (
    await src.query('SELECT * FROM steps WHERE at >= $1 AND at < $2 LIMIT 2000', [window.from, window.to])
  ).rows;
  const task = (await src.query('SELECT * FROM tasks LIMIT 1')).rows[0];
  await src.end();
  const orchestratorStepsPerSec = count / ((window.to - window.from) / 1000);
  const avgRowBytes =
    sample.reduce(
      (s, r) => s + Object.values(r).reduce((a, v) => a + (typeof v === 'string' ? v.length : 8), 0),
      0,
    ) / Math.max(1, sample.length);

  const rawUrl = await freshPgDatabase('raw');
  await (await openPostgresStore({ url: rawUrl })).close(); // the store's schema
  const raw = new pg.Client({ connectionString: rawUrl });
  await raw.connect();
  const cols = Object.keys(task);
  await raw.query(
    `INSERT INTO tasks (${cols.join(',')}) VALUES (${cols.map((_, i) => `$${i + 1}`).join(',')})`,
    cols.map((c) => task[c]),
  );
  const stepCols = Object.keys(sample[0] ?? { task_id: 1 });
  const insert = `INSERT INTO steps (${stepCols.join(',')}) VALUES (${stepCols.map((_, i) => `$${i + 1}`).join(',')})`;
  let seq = 1;
  const row = (i) => {
    const r = sample[i % sample.length];
    return stepCols.map((c) => (c === 'task_id' ? task.id : c === 'seq' ? seq++ : r[c]));
  };
  const loop = async (batch) => {
    const t0 = performance.now();
    let rows = 0;
    while (performance.now() - t0 < 2000) {
      if (batch === 1) await raw.query(insert, row(rows));
      else {
        await raw.query('BEGIN');
        for (let k = 0; k < batch; k++) await raw.query(insert, row(rows + k));
        await raw.query('COMMIT');
      }
      rows += batch;
    }
    return rows / ((performance.now() - t0) / 1000);
  };
  // One multi-row INSERT of 256 rows per (autocommitted) transaction: one round trip and one WAL flush per 256 rows.
  const multiRow = async () => {
    const n = stepCols.length;
    const text = `INSERT INTO steps (${stepCols.join(',')}) VALUES ${Array.from(
      { length: 256 },
      (_, r) => `(${stepCols.map((_, k) => `$${r * n + k + 1}`).join(',')})`,
    ).join(',')}`;
    const t0 = performance.now();
    let rows = 0;
    while (performance.now() - t0 < 2000) {
      await raw.query(text, Array.from({ length: 256 }, (_, k) => row(rows + k)).flat());
      rows += 256;
    }
    return rows / ((performance.now() - t0) / 1000);
  };
  const rawAutocommitPerSec = sample.length > 0 ? await loop(1) : NaN;
  const rawBatchedPerSec = sample.length > 0 ? await loop(256) : NaN;
  const rawMultiRowPerSec = sample.length > 0 ? await multiRow() : NaN;
  await raw.end();
  return {
    windowMs: window.to - window.from,
    steps: count,
    byKind: Object.fromEntries(byKind.map((k) => [k.kind, Number(k.n)])),
    orchestratorStepsPerSec,
    rawAutocommitPerSec,
    rawBatchedPerSec,
    ratioVsAutocommit: orchestratorStepsPerSec / rawAutocommitPerSec,
    ratioVsBatched: orchestratorStepsPerSec / rawBatchedPerSec,
    rawMultiRowPerSec,
    ratioVsMultiRow: orchestratorStepsPerSec / rawMultiRowPerSec,
    avgRowBytes,
  };
}

// ------------------------------------------------------------------------------------------------ 3

async function idleConnections() {
  const limit = openFilesLimit();
  // This process holds one fd per client; leave room for everything else.
  const cap = limit && Number.isFinite(limit.soft) ? limit.soft - 500 : IDLE_TARGET;
  const target = Math.min(IDLE_TARGET, cap);
  const cappedBy = target < IDLE_TARGET ? `ulimit -n ${limit?.soft} (hard ${limit?.hard})` : undefined;
  if (cappedBy) console.error(`[bench] idle connections capped at ${target} by ${cappedBy}`);

  const server = await startOrchestrator({
    db: path.join(tmp, 'idle.db'),
    config: config(),
    ollamaUrl: fake.url,
  });
  await sleep(1000);
  const before = server.rssKiB();
  const shared = { measuring: false, samples: {} };
  const clients = Array.from({ length: target }, (_, i) => new BenchClient(server.url, `idle-${i}`, shared));
  const t0 = performance.now();
  let held = 0;
  let error;
  try {
    for (let i = 0; i < clients.length; i += 500) {
      await Promise.all(clients.slice(i, i + 500).map((c) => c.connect()));
      held = Math.min(clients.length, i + 500);
    }
  } catch (err) {
    error = String(err);
  }
  const connectMs = performance.now() - t0;
  await sleep(2000);
  const after = server.rssKiB();
  const metrics = await (await fetch(`${server.url}/metrics`)).text();
  const gauge = Number(/^ccagent_connected_clients (\d+)/m.exec(metrics)?.[1] ?? NaN);
  const h0 = performance.now();
  const health = await fetch(`${server.url}/health`);
  const healthMs = performance.now() - h0;
  await server.kill9();
  for (const c of clients) c.terminate();
  await sleep(500);

  const echo = await startEcho();
  await sleep(1000);
  const echoBefore = echo.rssKiB();
  const echoClients = Array.from({ length: held }, () => new EchoClient(echo.url, { samples: [] }, '{}'));
  await connectAll(echoClients, 500);
  await sleep(2000);
  const echoAfter = echo.rssKiB();
  await echo.kill9();
  for (const c of echoClients) c.terminate();

  const out = {
    target: IDLE_TARGET,
    attempted: target,
    held,
    connectedGauge: gauge,
    cappedBy,
    error,
    connectSeconds: +(connectMs / 1000).toFixed(1),
    healthStatus: health.status,
    healthMs: +healthMs.toFixed(1),
    rssBeforeMiB: +(before / 1024).toFixed(1),
    rssAfterMiB: +(after / 1024).toFixed(1),
    kibPerConnection: (after - before) / Math.max(1, held),
    echo: {
      rssBeforeMiB: +(echoBefore / 1024).toFixed(1),
      rssAfterMiB: +(echoAfter / 1024).toFixed(1),
      kibPerConnection: (echoAfter - echoBefore) / Math.max(1, held),
    },
  };
  out.ratio = out.kibPerConnection / out.echo.kibPerConnection;
  results.idle = out;
  console.log(
    '\n# Idle connections (welcomed clients answering heartbeats) vs a bare ws server holding as many\n',
  );
  printTable(
    ['server', 'held', 'RSS before MiB', 'RSS after MiB', 'KiB/connection', 'ratio', 'notes'],
    [
      [
        'orchestrator',
        `${held}/${IDLE_TARGET}`,
        fmt(out.rssBeforeMiB, 1),
        fmt(out.rssAfterMiB, 1),
        fmt(out.kibPerConnection, 1),
        fmt(out.ratio, 1),
        `gauge ${gauge}; /health ${health.status} in ${fmt(healthMs, 1)} ms; connect ${out.connectSeconds} s${cappedBy ? `; capped by ${cappedBy}` : ''}${error ? `; ${error}` : ''}`,
      ],
      [
        'bare ws echo',
        `${held}`,
        fmt(out.echo.rssBeforeMiB, 1),
        fmt(out.echo.rssAfterMiB, 1),
        fmt(out.echo.kibPerConnection, 1),
        '1.0',
        '',
      ],
    ],
  );
}

// ------------------------------------------------------------------------------------------------ 4

async function recovery() {
  const db = path.join(tmp, 'recovery.db');
  const cfg = config({ modelConcurrency: 2048, reconnectGraceMs: 120_000 });
  let server = await startOrchestrator({ db, config: cfg, ollamaUrl: fake.url });
  const port = server.port;
  const CLIENTS = 10;
  const perClient = RECOVERY_TASKS / CLIENTS;
  const holdCount = Math.round((RECOVERY_TASKS * 2) / 3);
  const shared = { measuring: false, samples: {} };
  let clients = Array.from({ length: CLIENTS }, (_, i) => new BenchClient(server.url, `rec-${i}`, shared));
  await connectAll(clients);
  recoveryPhase = 'prepare';
  let made = 0;
  for (const c of clients) {
    c.mode = 'hold';
    for (let k = 0; k < perClient; k++) c.createTask(made++ < holdCount ? 'hold' : 'stall');
  }
  const stallCount = RECOVERY_TASKS - holdCount;
  const callIds = () => new Set(clients.flatMap((c) => [...c.calls.keys()]));
  const t0 = performance.now();
  for (;;) {
    const pendingStalls = fake.chatRequests(MODEL).filter((r) => r.outcome === 'pending').length;
    if (callIds().size >= holdCount && pendingStalls >= stallCount) break;
    if (performance.now() - t0 > 120_000)
      throw new Error(`recovery setup stuck: ${callIds().size} calls, ${pendingStalls} stalls`);
    await sleep(50);
  }
  const setupSeconds = (performance.now() - t0) / 1000;
  const expected = new Map();
  for (const c of clients) for (const id of c.calls.keys()) expected.set(id, c.clientId);

  await server.kill9();
  for (const c of clients) c.terminate();
  recoveryPhase = 'resume';
  stallArrivals.length = 0;

  // Restart: spawn → listening → clients reconnect → every call re-sent, every interrupted model call re-issued.
  const spawnAt = performance.now();
  server = await startOrchestrator({ db, config: cfg, ollamaUrl: fake.url, port });
  const listeningAt = performance.now();
  let callsDoneAt;
  let stallsDoneAt;
  const resent = new Set();
  const shared2 = {
    measuring: false,
    samples: {},
    onHoldCall: (_c, m) => {
      if (expected.has(m.call_id)) resent.add(m.call_id);
      if (resent.size === expected.size && callsDoneAt === undefined) callsDoneAt = performance.now();
    },
  };
  clients = Array.from({ length: CLIENTS }, (_, i) => new BenchClient(server.url, `rec-${i}`, shared2));
  for (const c of clients) c.mode = 'hold';
  await connectAll(clients);
  const end = performance.now() + 120_000;
  while ((callsDoneAt === undefined || stallArrivals.length < stallCount) && performance.now() < end)
    await sleep(5);
  stallsDoneAt = stallArrivals[stallCount - 1];
  const resumedLine = /\((\d+) unfinished tasks resumed\)/.exec(server.stdout())?.[1];
  const missing = [...expected.keys()].filter((id) => !resent.has(id));
  const missingDiagnosis = [];
  for (const id of missing.slice(0, 3)) {
    const taskId = id.split(':call:')[0];
    const d = await (await fetch(`${server.url}/api/tasks/${taskId}`)).json();
    missingDiagnosis.push({
      callId: id,
      client: expected.get(id),
      task: { status: d.task?.status, client_id: d.task?.client_id },
      calls: d.command_calls?.map((c) => ({
        id: c.call_id,
        status: c.status,
        dispatch_count: c.dispatch_count,
      })),
    });
  }
  if (missing.length > 0) {
    console.error(`[bench] ${missing.length} pending calls were not re-sent after the restart:`);
    console.error(JSON.stringify(missingDiagnosis, null, 2));
    console.error(server.stderr().slice(-3000));
  }
  await server.kill9();
  for (const c of clients) c.terminate();

  // Raw baselines: a bare Node HTTP server from spawn to listening; a raw read of the same task rows.
  const b0 = performance.now();
  const bare = await spawnNode(
    [
      '-e',
      "require('http').createServer().listen(0,'127.0.0.1',function(){console.log('listening on http://127.0.0.1:'+this.address().port)})",
    ],
    { ready: /listening on (http:\/\/\S+)/ },
  );
  const bareSpawnMs = performance.now() - b0;
  await bare.kill9();
  const r0 = performance.now();
  const raw = new Database(db, { readonly: true });
  const rows = raw
    .prepare(
      `SELECT tasks.*, task_memory.memory FROM tasks LEFT JOIN task_memory ON task_memory.task_id = tasks.id
       WHERE status NOT IN ('completed','failed','cancelled')`,
    )
    .all();
  for (const r of rows) {
    JSON.parse(r.memory);
    JSON.parse(r.metadata);
    JSON.parse(r.budgets);
  }
  raw.close();
  const rawReadMs = performance.now() - r0;

  const allMs = Math.max(callsDoneAt ?? NaN, stallsDoneAt ?? NaN) - spawnAt;
  const out = {
    tasks: RECOVERY_TASKS,
    waitingForCommand: holdCount,
    midModelCall: stallCount,
    setupSeconds: +setupSeconds.toFixed(1),
    reportedResumed: Number(resumedLine),
    spawnToListeningMs: listeningAt - spawnAt,
    spawnToAllCallsResentMs: (callsDoneAt ?? NaN) - spawnAt,
    callsResent: resent.size,
    callsNotResent: missing.length,
    missingDiagnosis,
    spawnToAllModelCallsReissuedMs: (stallsDoneAt ?? NaN) - spawnAt,
    modelCallsReissued: Math.min(stallArrivals.length, stallCount),
    spawnToAllResumedMs: allMs,
    raw: { bareNodeSpawnToListeningMs: bareSpawnMs, selectAndParseMs: rawReadMs, rows: rows.length },
  };
  out.ratio = allMs / (bareSpawnMs + rawReadMs);
  results.recovery = out;
  console.log(
    `\n# Recovery after kill -9 with ${RECOVERY_TASKS} tasks in flight (ms from the spawn of the new process)\n`,
  );
  printTable(
    ['measure', 'ms', 'notes'],
    [
      [
        'spawn → listening (store open + engine recovery)',
        fmt(out.spawnToListeningMs, 0),
        `server says ${resumedLine} resumed`,
      ],
      [
        'spawn → every pending call re-sent (same call_id)',
        fmt(out.spawnToAllCallsResentMs, 0),
        `${resent.size}/${holdCount} calls, 10 clients reconnecting`,
      ],
      [
        'spawn → every interrupted model call re-issued',
        fmt(out.spawnToAllModelCallsReissuedMs, 0),
        `${out.modelCallsReissued}/${stallCount}`,
      ],
      ['spawn → all resumed', fmt(allMs, 0), ''],
      ['raw: bare node http server spawn → listening', fmt(bareSpawnMs, 0), ''],
      ['raw: SELECT + JSON.parse of the unfinished rows', fmt(rawReadMs, 1), `${rows.length} rows`],
      ['ratio all resumed / (raw spawn + raw read)', fmt(out.ratio, 1), ''],
    ],
  );
}
