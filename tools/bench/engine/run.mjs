#!/usr/bin/env node
// Engine + SQLite store benchmark (not part of `npm test`). Needs the built packages: `npx nx run store:build`.
//
//   node tools/bench/engine/run.mjs [--quick]
//
// 1. Steps persisted per second through SqliteStore.appendStep, against a raw better-sqlite3 INSERT loop on the same
//    schema, pragmas and row contents in the same run: one durable transaction per step (awaited one by one), and
//    grouped (many steps in flight at once, which SqliteStore group-commits; raw: explicit transactions of 256 rows).
// 2. A full engine step cycle (decide → commit of counters, history, decision record) per second.
// 3. Resume after kill -9: a child process drives 1,000 tasks in flight (mid-step, waiting for a command, waiting for
//    a person), is SIGKILLed, and a fresh process measures open + Engine.start() until every task is re-engaged
//    (its step repeated or its call_id re-sent), against a raw better-sqlite3 read of the same 1,000 task rows.
// Prints a table and writes tools/bench/results/engine.json.
import { spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { performance } from 'node:perf_hooks';
import Database from 'better-sqlite3';
import { Engine } from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';

const here = path.dirname(fileURLToPath(import.meta.url));
const QUICK = process.argv.includes('--quick');
const RESUME_TASKS = 1000;

// ------------------------------------------------------------------ child modes (resume benchmark)

const mode = process.env.BENCH_ENGINE_MODE;
if (mode === 'prepare') await prepareInFlight(process.env.BENCH_DB);
else if (mode === 'resume') await resumeAndMeasure(process.env.BENCH_DB);
else await main();

/** A realistic step record: a planner call with its full prompt and reply. */
function stepRecord(i) {
  const messages = [
    { role: 'system', content: 'You are the planner of a ComputerCraft agent. '.repeat(12) },
    {
      role: 'user',
      content: `TASK: build a wheat farm\nSTATE: step ${i}\nHISTORY:\n${'- moved forward, ok\n'.repeat(30)}`,
    },
  ];
  return {
    kind: 'planner',
    model: 'qwen2.5:7b',
    input: { messages, options: { temperature: 0.2, num_ctx: 8192 } },
    output: `I will call fs_write to create farm.lua with the planting loop (attempt ${i}).`,
    directive: { tool: 'fs_write', path: 'farm.lua' },
    startedAt: 1_700_000_000_000 + i,
    durationMs: 1234,
    usage: { promptTokens: 812, completionTokens: 64, totalDurationMs: 1200 },
    step: i,
    at: 1_700_000_000_000 + i,
  };
}

function newTask(id) {
  return {
    id,
    kind: 'bench',
    status: 'running',
    clientId: 'pc-1',
    prompt: 'build a wheat farm',
    allowedCommands: [],
    memory: null,
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 1,
    updatedAt: 1,
  };
}

/** Raw better-sqlite3 on a file with the same pragmas and schema as SqliteStore (migrated by it, then closed). */
function rawDb(file) {
  openSqliteStore({ path: file })
    .close()
    .catch(() => {});
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma('synchronous = FULL');
  db.pragma('foreign_keys = ON');
  db.prepare(
    `INSERT INTO tasks (id, kind, status, client_id, prompt, allowed_commands, metadata, budgets, created_at, updated_at)
     VALUES ('raw', 'bench', 'running', 'pc-1', 'p', '[]', '{}', '{}', 1, 1)`,
  ).run();
  db.prepare(`INSERT INTO task_memory (task_id, memory) VALUES ('raw', 'null')`).run();
  const insert = db.prepare(
    `INSERT INTO steps (task_id, seq, step, at, kind, model, input, output, directive, started_at, duration_ms,
       prompt_tokens, completion_tokens, total_duration_ms)
     VALUES (@taskId, @seq, @step, @at, @kind, @model, @input, @output, @directive, @startedAt, @durationMs,
       @promptTokens, @completionTokens, @totalDurationMs)`,
  );
  const row = (seq) => {
    const r = stepRecord(seq);
    return {
      taskId: 'raw',
      seq,
      step: r.step,
      at: r.at,
      kind: r.kind,
      model: r.model,
      input: JSON.stringify(r.input),
      output: JSON.stringify(r.output),
      directive: JSON.stringify(r.directive),
      startedAt: r.startedAt,
      durationMs: r.durationMs,
      promptTokens: r.usage.promptTokens,
      completionTokens: r.usage.completionTokens,
      totalDurationMs: r.usage.totalDurationMs,
    };
  };
  return { db, insert, row };
}

/** Median of `rounds` runs of `fn(round)`, by `key`; raw and store alternate inside each run. */
async function median(rounds, fn) {
  const runs = [];
  for (let i = 0; i < rounds; i++) runs.push(await fn(i));
  const pick = (key) => runs.map((r) => r[key]).sort((a, b) => a - b)[Math.floor(rounds / 2)];
  return { ...runs[0], rawPerSec: pick('rawPerSec'), storePerSec: pick('storePerSec'), rounds };
}

async function benchSequential(dir, n, round) {
  const raw = rawDb(path.join(dir, `raw-seq-${round}.db`));
  let t = performance.now();
  for (let i = 1; i <= n; i++) raw.insert.run(raw.row(i)); // autocommit: one durable transaction per row
  const rawMs = performance.now() - t;
  raw.db.close();

  const store = openSqliteStore({ path: path.join(dir, `store-seq-${round}.db`) });
  await store.commit({ task: newTask('t'), create: true });
  t = performance.now();
  for (let i = 1; i <= n; i++) await store.appendStep('t', stepRecord(i));
  const storeMs = performance.now() - t;
  await store.close();
  return { n, rawPerSec: (n / rawMs) * 1000, storePerSec: (n / storeMs) * 1000 };
}

async function benchGrouped(dir, tasks, perTask, round) {
  const n = tasks * perTask;
  const raw = rawDb(path.join(dir, `raw-batch-${round}.db`));
  const batch = raw.db.transaction((from, to) => {
    for (let i = from; i < to; i++) raw.insert.run(raw.row(i));
  });
  let t = performance.now();
  for (let i = 1; i <= n; i += 256) batch(i, Math.min(n + 1, i + 256));
  const rawMs = performance.now() - t;
  raw.db.close();

  const store = openSqliteStore({ path: path.join(dir, `store-batch-${round}.db`) });
  for (let k = 0; k < tasks; k++) await store.commit({ task: newTask(`t${k}`), create: true });
  t = performance.now();
  await Promise.all(
    Array.from({ length: tasks }, async (_, k) => {
      const pending = [];
      for (let i = 1; i <= perTask; i++) pending.push(store.appendStep(`t${k}`, stepRecord(i)));
      await Promise.all(pending);
    }),
  );
  const storeMs = performance.now() - t;
  await store.close();
  return { n, rawPerSec: (n / rawMs) * 1000, storePerSec: (n / storeMs) * 1000 };
}

async function benchEngineCycle(dir, tasks, steps) {
  const store = openSqliteStore({ path: path.join(dir, 'engine-cycle.db') });
  const strategy = {
    decide: (task) =>
      Promise.resolve(
        task.counters.steps + 1 >= steps
          ? { type: 'complete', result: task.counters.steps + 1 }
          : { type: 'continue', note: `step ${task.counters.steps + 1}` },
      ),
  };
  const engine = new Engine({ store, strategies: { bench: strategy }, tickIntervalMs: 0 });
  let done = 0;
  const finished = new Promise((resolve) =>
    engine.on('taskCompleted', () => {
      if (++done === tasks) resolve();
    }),
  );
  await engine.start();
  const t = performance.now();
  for (let k = 0; k < tasks; k++) await engine.createTask({ id: `e${k}`, kind: 'bench', prompt: 'p' });
  await finished;
  const ms = performance.now() - t;
  await engine.stop();
  await store.close();
  return { n: tasks * steps, perSec: ((tasks * steps) / ms) * 1000 };
}

// ------------------------------------------------------------------ resume after kill -9

/** Child: put RESUME_TASKS tasks in flight, print READY, then wait to be killed. */
async function prepareInFlight(file) {
  const store = openSqliteStore({ path: file });
  const never = () => new Promise(() => {});
  const engine = new Engine({
    store,
    tickIntervalMs: 0,
    strategies: {
      stuck: {
        async decide(_task, _history, ctx) {
          await ctx.logStep(stepRecord(ctx.step));
          return never();
        },
      },
      call: { decide: () => Promise.resolve({ type: 'tool_call', command: 'dig', args: { depth: 3 } }) },
      ask: { decide: () => Promise.resolve({ type: 'ask_user', question: 'which chest?' }) },
    },
    executor: { execute: never },
  });
  await engine.start();
  const kinds = ['stuck', 'call', 'ask'];
  await Promise.all(
    Array.from({ length: RESUME_TASKS }, (_, i) =>
      engine.createTask({ id: `r${i}`, kind: kinds[i % 3], prompt: 'p', clientId: 'pc-1' }),
    ),
  );
  const stuck = Math.ceil(RESUME_TASKS / 3);
  for (;;) {
    const waiting = await store.listTasks({ status: ['waiting_for_command', 'waiting_for_user'] });
    if (waiting.length === RESUME_TASKS - stuck && (await countLogged(store)) === stuck) break;
    await new Promise((r) => setTimeout(r, 20));
  }
  process.stdout.write('READY\n');
  await never();
}

async function countLogged(store) {
  let n = 0;
  for (const t of await store.listTasks({ status: 'running' }))
    if ((await store.getSteps(t.id)).length > 0) n++;
  return n;
}

/** Child: raw read of the in-flight rows, then a real resume; prints JSON timings. */
async function resumeAndMeasure(file) {
  let t = performance.now();
  const db = new Database(file, { readonly: true });
  const rows = db
    .prepare(
      `SELECT tasks.*, task_memory.memory FROM tasks LEFT JOIN task_memory ON task_memory.task_id = tasks.id
       WHERE status IN ('queued','running','waiting_for_command','waiting_for_user')`,
    )
    .all();
  for (const r of rows)
    for (const c of ['memory', 'metadata', 'budgets', 'allowed_commands']) JSON.parse(r[c]);
  db.close();
  const rawMs = performance.now() - t;

  t = performance.now();
  const store = openSqliteStore({ path: file });
  const openMs = performance.now() - t;
  let engaged = 0;
  let resolveAll;
  const all = new Promise((r) => (resolveAll = r));
  const expected = RESUME_TASKS - Math.floor(RESUME_TASKS / 3); // the 'ask' third keeps waiting for a person
  const engage = () => {
    if (++engaged === expected) resolveAll();
  };
  const never = () => new Promise(() => {});
  const engine = new Engine({
    store,
    tickIntervalMs: 0,
    strategies: {
      stuck: { decide: () => (engage(), never()) },
      call: { decide: never },
      ask: { decide: never },
    },
    executor: { execute: (call) => (call.attempt > 1 && engage(), never()) },
  });
  await engine.start();
  const startMs = performance.now() - t;
  await all;
  const allMs = performance.now() - t;
  const waitingForUser = (await store.listTasks({ status: 'waiting_for_user' })).length;
  process.stdout.write(
    `${JSON.stringify({ tasks: rows.length, rawMs, openMs, startMs, allMs, engaged, waitingForUser })}\n`,
  );
  process.exit(0);
}

function child(env, onLine) {
  return new Promise((resolve, reject) => {
    const p = spawn(process.execPath, [fileURLToPath(import.meta.url)], {
      env: { ...process.env, ...env },
      stdio: ['ignore', 'pipe', 'inherit'],
    });
    let out = '';
    p.stdout.on('data', (d) => {
      out += d.toString();
      for (const line of out.split('\n').slice(0, -1)) onLine?.(line, p);
    });
    p.on('error', reject);
    p.on('exit', (code, signal) => resolve({ out, code, signal }));
  });
}

async function benchResume(dir) {
  const file = path.join(dir, 'resume.db');
  const prep = await child({ BENCH_ENGINE_MODE: 'prepare', BENCH_DB: file }, (line, p) => {
    if (line === 'READY') p.kill('SIGKILL');
  });
  if (prep.signal !== 'SIGKILL') throw new Error(`prepare child did not reach READY: ${prep.out}`);
  const t = performance.now();
  const res = await child({ BENCH_ENGINE_MODE: 'resume', BENCH_DB: file });
  const processMs = performance.now() - t;
  if (res.code !== 0) throw new Error(`resume child failed: ${res.out}`);
  return { ...JSON.parse(res.out.trim().split('\n').at(-1)), processMs };
}

// ------------------------------------------------------------------ main

async function main() {
  const dir = mkdtempSync(path.join(os.tmpdir(), 'ccagent-bench-engine-'));
  try {
    const rounds = QUICK ? 1 : 5;
    const seq = await median(rounds, (i) => benchSequential(dir, QUICK ? 200 : 1000, i));
    const grouped = await median(rounds, (i) => benchGrouped(dir, 50, QUICK ? 20 : 100, i));
    const cycle = await benchEngineCycle(dir, 20, QUICK ? 10 : 50);
    const resume = await benchResume(dir);

    const f = (x) => (x >= 100 ? Math.round(x).toLocaleString('en-US') : x.toFixed(1));
    const rows = [
      [
        `steps/s, one durable txn each (median of ${rounds})`,
        f(seq.storePerSec),
        f(seq.rawPerSec),
        (seq.storePerSec / seq.rawPerSec).toFixed(2),
      ],
      [
        `steps/s, 50 tasks in flight (raw: txns of 256)`,
        f(grouped.storePerSec),
        f(grouped.rawPerSec),
        (grouped.storePerSec / grouped.rawPerSec).toFixed(2),
      ],
      [
        'engine step cycles/s, 20 tasks (raw: 1 txn/row)',
        f(cycle.perSec),
        f(seq.rawPerSec),
        (cycle.perSec / seq.rawPerSec).toFixed(2),
      ],
      [
        `resume ${resume.tasks} in-flight tasks, ms (open+start+all re-engaged)`,
        f(resume.allMs),
        f(resume.rawMs),
        (resume.allMs / resume.rawMs).toFixed(1),
      ],
    ];
    const header = ['measure', 'ccagent', 'raw better-sqlite3', 'ratio'];
    const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i]).length)));
    const line = (r) =>
      r.map((c, i) => (i === 0 ? String(c).padEnd(widths[i]) : String(c).padStart(widths[i]))).join('  ');
    console.log(
      `\nengine + store benchmark (${os.cpus().length} CPUs, node ${process.version}, ${os.platform()}, db in ${os.tmpdir()})`,
    );
    console.log(line(header));
    console.log(widths.map((w) => '-'.repeat(w)).join('  '));
    for (const r of rows) console.log(line(r));
    console.log(
      `\nresume detail: open ${resume.openMs.toFixed(1)} ms, Engine.start() ${resume.startMs.toFixed(1)} ms, ` +
        `all ${resume.engaged} re-engaged ${resume.allMs.toFixed(1)} ms, ${resume.waitingForUser} still waiting for a person; ` +
        `whole process incl. node startup ${resume.processMs.toFixed(0)} ms`,
    );

    const results = {
      benchmark: 'engine',
      date: new Date().toISOString(),
      quick: QUICK,
      machine: { cpus: os.cpus().length, node: process.version, platform: os.platform() },
      stepsSequential: seq,
      stepsGrouped: grouped,
      engineCycle: cycle,
      resume,
      ratios: {
        sequential: seq.storePerSec / seq.rawPerSec,
        grouped: grouped.storePerSec / grouped.rawPerSec,
        resumeVsRawRead: resume.allMs / resume.rawMs,
      },
    };
    const outDir = path.join(here, '..', 'results');
    mkdirSync(outDir, { recursive: true });
    writeFileSync(path.join(outDir, 'engine.json'), `${JSON.stringify(results, null, 2)}\n`);
    console.log(`\nwrote ${path.relative(process.cwd(), path.join(outDir, 'engine.json'))}`);
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}
