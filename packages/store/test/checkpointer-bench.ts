/**
 * Raw better-sqlite3 loop of one orchestrator round trip's writes (context: the `bench_loop` task, native strategy):
 * one transaction with two savepoints — completeCall (task row, history tool_result, step tool_result, call row) and
 * the next dispatch (task row + the strategy memory blob, history tool_call, step decision, new call row) — timed
 * BEGIN..COMMIT on the main thread, at synchronous NORMAL and FULL, with
 *   (a) `auto`: SQLite's auto-checkpoint on the writer (every 1,000 WAL pages, inside the COMMIT that crosses it);
 *   (b) `worker`: wal_autocheckpoint = 0 and the checkpointer's worker thread (nudged after each COMMIT);
 *   (`none`, on request: wal_autocheckpoint = 0 and no checkpoints at all — a reference, the WAL only grows).
 * `--gap-us N` busy-spins N µs between transactions (the rest of the server's work per round trip; 0 = a tight loop,
 * the checkpointer's worst case: the writer holds the lock almost always). Rounds alternate a/b to spread noise.
 *
 *   node --import tsx packages/store/test/checkpointer-bench.ts [--iterations 4000] [--gap-us 0] [--memory-kb 14]
 *     [--rounds 2] [--sync normal,full] [--modes auto,worker,none]
 *
 * Not part of `npm test`. Hold /tmp/ccagent-bench.lock while it runs.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import Database from 'better-sqlite3';
import { startCheckpointer, type CheckpointerStats } from '../src/checkpointer.js';

const { values: args } = parseArgs({
  options: {
    iterations: { type: 'string', default: '4000' },
    'gap-us': { type: 'string', default: '0' },
    'memory-kb': { type: 'string', default: '14' },
    rounds: { type: 'string', default: '2' },
    sync: { type: 'string', default: 'normal,full' },
    modes: { type: 'string', default: 'auto,worker' },
  },
});
const ITERATIONS = Number(args.iterations);
const GAP_US = Number(args['gap-us']);
const MEMORY = JSON.stringify({ calls: 'x'.repeat(Number(args['memory-kb']) * 1024) });
const ROUNDS = Number(args.rounds);
const SYNCS = (args.sync ?? '').split(',') as Array<'normal' | 'full'>;
const MODES = (args.modes ?? '').split(',') as Mode[];
const WARMUP = 300;

/** `none` (a reference, not an option): wal_autocheckpoint = 0 and no checkpointer, the WAL only grows. */
type Mode = 'auto' | 'worker' | 'none';

const SCHEMA = `
CREATE TABLE tasks (id TEXT PRIMARY KEY, kind TEXT NOT NULL, status TEXT NOT NULL, client_id TEXT, prompt TEXT NOT NULL,
  metadata TEXT NOT NULL, budgets TEXT NOT NULL, steps_count INTEGER NOT NULL, tool_calls_count INTEGER NOT NULL,
  updated_at INTEGER NOT NULL, created_at INTEGER NOT NULL);
CREATE INDEX tasks_status ON tasks (status, created_at);
CREATE TABLE task_memory (task_id TEXT PRIMARY KEY, memory TEXT NOT NULL, hash TEXT NOT NULL);
CREATE TABLE history (task_id TEXT NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL, at INTEGER NOT NULL,
  type TEXT NOT NULL, body TEXT NOT NULL, PRIMARY KEY (task_id, seq));
CREATE TABLE steps (task_id TEXT NOT NULL, seq INTEGER NOT NULL, step INTEGER NOT NULL, at INTEGER NOT NULL,
  kind TEXT NOT NULL, tool_call TEXT, tool_result TEXT, directive TEXT, PRIMARY KEY (task_id, seq));
CREATE TABLE command_calls (call_id TEXT PRIMARY KEY, task_id TEXT NOT NULL, command TEXT NOT NULL, args TEXT NOT NULL,
  timeout_ms INTEGER NOT NULL, status TEXT NOT NULL, outcome TEXT, dispatch_count INTEGER NOT NULL,
  created_at INTEGER NOT NULL, completed_at INTEGER);
CREATE INDEX command_calls_task ON command_calls (task_id, status);
`;

interface Result {
  mode: Mode;
  sync: 'normal' | 'full';
  ms: number[];
  maxWalBytes: number;
  stats?: CheckpointerStats;
  /** BEGINs refused (SQLITE_BUSY after the 5 ms busy timeout) and retried. */
  busy: number;
}

function spin(us: number): void {
  if (us <= 0) return;
  const until = performance.now() + us / 1000;
  while (performance.now() < until);
}

async function run(mode: Mode, sync: 'normal' | 'full'): Promise<Result> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-ckpt-bench-'));
  const file = path.join(dir, 'bench.db');
  const db = new Database(file);
  db.pragma('journal_mode = WAL');
  db.pragma(`synchronous = ${sync.toUpperCase()}`);
  db.pragma('busy_timeout = 5');
  db.exec(SCHEMA);
  if (mode === 'none') db.pragma('wal_autocheckpoint = 0');
  const checkpointer =
    mode === 'worker' ? startCheckpointer({ path: file, writer: db, synchronous: sync }) : undefined;
  if (checkpointer && !(await checkpointer.ready)) throw new Error('checkpointer did not start');

  const s = {
    begin: db.prepare('BEGIN IMMEDIATE'),
    commit: db.prepare('COMMIT'),
    sp: db.prepare('SAVEPOINT w'),
    release: db.prepare('RELEASE w'),
    task: db.prepare(
      'UPDATE tasks SET status = ?, steps_count = ?, tool_calls_count = ?, updated_at = ? WHERE id = ?',
    ),
    memory: db.prepare('UPDATE task_memory SET memory = ?, hash = ? WHERE task_id = ?'),
    history: db.prepare('INSERT INTO history (task_id, seq, step, at, type, body) VALUES (?, ?, ?, ?, ?, ?)'),
    step: db.prepare(
      'INSERT INTO steps (task_id, seq, step, at, kind, tool_call, tool_result, directive) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
    callDone: db.prepare(
      'UPDATE command_calls SET status = ?, outcome = ?, completed_at = ? WHERE call_id = ?',
    ),
    callNew: db.prepare(
      'INSERT INTO command_calls (call_id, task_id, command, args, timeout_ms, status, dispatch_count, created_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?)',
    ),
  };
  const task = 'task-0001';
  db.prepare(
    "INSERT INTO tasks VALUES (?, 'bench_loop', 'running', 'client-1', ?, '{}', '{}', 0, 0, 0, 0)",
  ).run(task, 'p'.repeat(200));
  db.prepare('INSERT INTO task_memory VALUES (?, ?, ?)').run(task, MEMORY, 'h');
  db.prepare(
    "INSERT INTO command_calls VALUES ('call-0', ?, 'turtle.forward', '{}', 30000, 'dispatched', NULL, 1, 0, NULL)",
  ).run(task);

  const result = `{"ok":true,"value":{"moved":true,"fuel":${'9'.repeat(40)}},"output":"${'o'.repeat(120)}"}`;
  const call = `{"name":"turtle.forward","arguments":{"distance":1},"reason":"${'r'.repeat(120)}"}`;
  const ms: number[] = [];
  let maxWal = 0;
  let seq = 0;
  let busy = 0;
  for (let i = 0; i < WARMUP + ITERATIONS; i++) {
    const at = Date.now();
    const t0 = performance.now();
    // As the store's write queue: a BEGIN IMMEDIATE refused after the 5 ms busy timeout waits (asynchronously) and
    // tries again; the wait counts in this round trip's time.
    for (;;) {
      try {
        s.begin.run();
        break;
      } catch (err) {
        if ((err as { code?: string }).code !== 'SQLITE_BUSY') throw err;
        busy++;
        await new Promise((r) => setTimeout(r, 1));
      }
    }
    s.sp.run();
    s.task.run('running', i, i, at, task);
    s.history.run(task, ++seq, i, at, 'tool_result', result);
    s.step.run(task, seq, i, at, 'tool_result', null, result, null);
    s.callDone.run('succeeded', result, at, `call-${i}`);
    s.release.run();
    s.sp.run();
    s.task.run('running', i + 1, i + 1, at, task);
    s.memory.run(`${MEMORY.slice(0, -20)}${String(i).padStart(18, '0')}"}`, `h${i}`, task);
    s.history.run(task, ++seq, i + 1, at, 'tool_call', call);
    s.step.run(task, seq, i + 1, at, 'decision', call, null, '{"type":"tool"}');
    s.callNew.run(`call-${i + 1}`, task, 'turtle.forward', '{"distance":1}', 30000, 'dispatched', 1, at);
    s.release.run();
    s.commit.run();
    checkpointer?.nudge();
    const t1 = performance.now();
    if (i >= WARMUP) ms.push(t1 - t0);
    if (i % 50 === 0) maxWal = Math.max(maxWal, statSync(`${file}-wal`).size);
    spin(GAP_US);
    // The server returns to the event loop between round trips; so does this loop, now and then.
    if (i % 100 === 0) await new Promise((r) => setImmediate(r));
  }
  const stats = checkpointer?.stats();
  db.close();
  await checkpointer?.stop();
  rmSync(dir, { recursive: true, force: true });
  return { mode, sync, ms, maxWalBytes: maxWal, stats, busy };
}

function summary(r: Result): Record<string, string | number> {
  const sorted = [...r.ms].sort((a, b) => a - b);
  const q = (p: number): number => sorted[Math.min(sorted.length - 1, Math.floor(p * sorted.length))] ?? NaN;
  const mean = r.ms.reduce((a, b) => a + b, 0) / r.ms.length;
  const f = (v: number): string => v.toFixed(3);
  return {
    sync: r.sync,
    mode: r.mode,
    'p50 ms': f(q(0.5)),
    'p99 ms': f(q(0.99)),
    'p99.9 ms': f(q(0.999)),
    'max ms': f(sorted[sorted.length - 1] ?? NaN),
    'mean ms': f(mean),
    'BEGIN busy': r.busy,
    'max WAL MiB': (r.maxWalBytes / 1048576).toFixed(1),
    checkpoints: r.stats?.checkpoints ?? '-',
    restarts: r.stats?.restarts ?? '-',
    escalations: r.stats?.escalations ?? '-',
    'worker ckpt ms (mean)': r.stats ? f(r.stats.totalCheckpointMs / Math.max(1, r.stats.checkpoints)) : '-',
  };
}

const rows: Array<Record<string, string | number>> = [];
for (const sync of SYNCS) {
  for (let round = 0; round < ROUNDS; round++) {
    for (const mode of round % 2 === 0 ? MODES : [...MODES].reverse()) {
      rows.push({ round: round + 1, ...summary(await run(mode, sync)) });
    }
  }
}
console.log(
  `checkpointer bench: ${ITERATIONS} round-trip transactions per run (after ${WARMUP} warm-up), memory ${MEMORY.length} B, gap ${GAP_US} µs`,
);
console.table(rows);
