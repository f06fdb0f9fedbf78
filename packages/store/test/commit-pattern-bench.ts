/**
 * The store's side of one orchestrator command round trip, in process: two `commit`s queued in the same turn of the
 * event loop (one transaction), as the engine does for `bench_loop` with the native strategy — the result commit
 * (task row, history tool_result, step tool_result, call row completed) and the decision commit (task row, history
 * tool_call, step decision, next call row). The memory object is unchanged (native memory v2 writes it once per
 * model reply), so the task_memory row is not rewritten. Prints per round trip: wall time (mean, p50), main-thread
 * CPU, and WAL frames written (a separate phase with checkpoints off, WAL size / frame size).
 *
 * A/B: `--store <path of a built @ccagent/store dist/index.js>` (default: this checkout's src), alternating rounds
 * when two are given (`--store a.js --store b.js`).
 *
 *   node --import tsx packages/store/test/commit-pattern-bench.ts [--round-trips 5000] [--rounds 3]
 *     [--store /tmp/base/dist/index.js --store packages/store/src/index.ts]
 *
 * Not part of `npm test`. Hold /tmp/ccagent-bench.lock while it runs.
 */
import { mkdtempSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import type { CommandCallRecord, Task, TaskCommit } from '@ccagent/engine';

const { values: args } = parseArgs({
  options: {
    'round-trips': { type: 'string', default: '5000' },
    rounds: { type: 'string', default: '3' },
    store: { type: 'string', multiple: true },
  },
});
const N = Number(args['round-trips']);
const ROUNDS = Number(args.rounds);
const STORES = args.store ?? [path.join(import.meta.dirname, '../src/index.ts')];

interface StoreLike {
  commit(c: TaskCommit): Promise<unknown>;
  close(): Promise<void>;
}
type Open = (o: { path: string; synchronous?: 'normal' | 'full'; checkpointer?: boolean }) => StoreLike;

const memory = {
  v: 2,
  calls: Array.from({ length: 50 }, (_, i) => ({ id: `c${i}`, cmd: 'turtle.forward', args: [i] })),
};

function call(taskId: string, i: number, status: 'pending' | 'succeeded'): CommandCallRecord {
  return {
    callId: `${taskId}-call-${i}`,
    taskId,
    command: 'turtle.forward',
    args: { n: i },
    timeoutMs: 30_000,
    status,
    dispatchCount: 1,
    createdAt: 1000 + i,
    ...(status === 'succeeded'
      ? { outcome: { ok: true, result: { moved: true } }, completedAt: 1001 + i }
      : {}),
  };
}

async function run(
  open: Open,
  measurePages: boolean,
): Promise<{ meanUs: number; p50Us: number; cpuUs: number; pages: number }> {
  const dir = mkdtempSync(path.join(tmpdir(), 'ccagent-commit-bench-'));
  const file = path.join(dir, 'bench.db');
  const store = open({ path: file, synchronous: 'normal', checkpointer: !measurePages });
  try {
    const db = (store as unknown as { db: { pragma(s: string, o?: object): unknown } }).db;
    if (measurePages) db.pragma('wal_autocheckpoint = 0');
    let task: Task = {
      id: 't1',
      kind: 'bench_loop',
      status: 'running',
      clientId: 'c1',
      prompt: 'bench',
      allowedCommands: ['turtle.forward'],
      memory,
      metadata: {},
      budgets: {},
      counters: { steps: 0, toolCalls: 0, questions: 0 },
      createdAt: 1,
      updatedAt: 1,
    };
    await store.commit({ task, create: true, commandCall: call('t1', 0, 'pending') });
    const times: number[] = [];
    const warm = measurePages ? 0 : 300;
    let walStart = 0;
    let cpu0 = process.cpuUsage();
    for (let i = 0; i < warm + N; i++) {
      if (i === warm) {
        cpu0 = process.cpuUsage();
        if (measurePages) walStart = statSync(`${file}-wal`).size;
      }
      const result: Task = {
        ...task,
        updatedAt: task.updatedAt + 1,
        counters: { ...task.counters, toolCalls: task.counters.toolCalls + 1 },
      };
      const decision: Task = {
        ...result,
        counters: { ...result.counters, steps: result.counters.steps + 1 },
      };
      const t0 = performance.now();
      await Promise.all([
        store.commit({
          task: result,
          expectedStatus: 'running',
          history: [
            {
              type: 'tool_result',
              callId: `t1-call-${i}`,
              command: 'turtle.forward',
              outcome: { ok: true, result: { moved: true } },
              step: i,
              at: 2,
            },
          ] as never,
          steps: [{ kind: 'tool_result', step: i, at: 2, toolResult: { ok: true } }],
          commandCall: call('t1', i, 'succeeded'),
        }),
        store.commit({
          task: decision,
          expectedStatus: 'running',
          history: [
            {
              type: 'tool_call',
              callId: `t1-call-${i + 1}`,
              command: 'turtle.forward',
              args: { n: i + 1 },
              step: i + 1,
              at: 3,
            },
          ] as never,
          steps: [
            { kind: 'decision', step: i + 1, at: 3, directive: { type: 'call', command: 'turtle.forward' } },
          ],
          commandCall: call('t1', i + 1, 'pending'),
        }),
      ]);
      if (i >= warm) times.push(performance.now() - t0);
      task = decision;
    }
    const cpu = process.cpuUsage(cpu0);
    const pages = measurePages ? (statSync(`${file}-wal`).size - walStart) / (4096 + 24) / N : NaN;
    times.sort((a, b) => a - b);
    return {
      meanUs: (times.reduce((a, b) => a + b, 0) / times.length) * 1000,
      p50Us: (times[Math.floor(times.length / 2)] as number) * 1000,
      cpuUs: (cpu.user + cpu.system) / N,
      pages,
    };
  } finally {
    await store.close();
    rmSync(dir, { recursive: true, force: true });
  }
}

const opens: Open[] = [];
for (const s of STORES) {
  const mod = (await import(pathToFileURL(path.resolve(s)).href)) as { openSqliteStore: Open };
  opens.push(mod.openSqliteStore);
}
const rows: string[] = [];
for (let r = 0; r < ROUNDS; r++) {
  for (const [i, open] of opens.entries()) {
    const t = await run(open, false);
    const p = r === 0 ? await run(open, true) : undefined;
    rows.push(
      `round ${r} ${STORES[i]}: mean ${t.meanUs.toFixed(1)} us, p50 ${t.p50Us.toFixed(1)} us, cpu ${t.cpuUs.toFixed(1)} us/rt${p ? `, WAL frames ${p.pages.toFixed(2)}/rt` : ''}`,
    );
    console.log(rows[rows.length - 1]);
  }
}
