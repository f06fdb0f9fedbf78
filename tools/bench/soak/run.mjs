#!/usr/bin/env node
// Night-long task soak (not part of `npm test`): ONE `general_agent` task (native tool calling) runs for tens of
// thousands of tool calls against the BUILT `cc-orchestrator serve` (child process, temp SQLite file), the fake
// Ollama server from @ccagent/testkit and one simulated CC computer on a real `ws` socket that answers every
// command_call at once. Run `npm run build` first.
//
//   node tools/bench/soak/run.mjs [--quick] [--steps N] [--max-minutes M] [--durability full|normal]
//                                 [--cpu-prof DIR] [--heap-snapshots DIR] [--seed S]
//
// Defaults: 20,000 tool calls (`--quick`: 3,000), durability `full`, a wall-clock cap of 20 minutes (`--quick`: 3):
// when the cap is hit the model is told to finish, and the table says how far the task got.
// The scripted model replies with one tool call about half of the time, with 2-8 otherwise; about one call in 40
// asks the client for a 4-16 KiB result. The task is `general_agent` with its budgets and `maxIterations` raised
// through a config file passed to `serve` (nothing else changed).
//
// What it measures, by decile of the task's life (tool calls done):
// - round trip (ms) of a step with no model call in it: command_call → instant command_result → next command_call;
// - round trip of a model step: the last call of a reply → result → the model is asked again → next command_call;
// - bytes of the prompt the fake model received (JSON length of the request's `messages`, max per decile);
// - the server's RSS (MiB, /proc/<pid>/status VmRSS, and its private part RssAnon), its V8 heap used/total and
//   external memory (from its /metrics, read at the end of each decile of the target), and the SQLite file + WAL
//   size at the end of the decile.
// Then the drift ratios: last decile p50 / first decile p50 (target ≈ 1.0, flagged above 1.5; also against the fastest
// decile, as the first one includes JIT warm-up), RSS last / first, prompt bytes last / first, SQLite MiB per 1,000
// calls. A task that is O(history) per step shows up as a p50 growing decile by decile.
// --cpu-prof DIR runs the server under `node --cpu-prof` (stopped with SIGTERM so the profile is written; summarise it
// with tools/bench/lib/cpuprofile-top.mjs). --heap-snapshots DIR writes a heap snapshot of the server (SIGUSR2,
// `--heapsnapshot-signal`) at the end of the 1st and the 9th decile (open both in Chrome DevTools, "Comparison").
// Writes tools/bench/results/soak.json.
import { mkdirSync, mkdtempSync, readFileSync, readdirSync, rmSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { performance } from 'node:perf_hooks';
import { parseArgs } from 'node:util';
import { startFakeOllama } from '@ccagent/testkit';
import { SimulatedComputer } from '../lib/bench-clients.mjs';
import { startOrchestrator } from '../lib/procs.mjs';
import { machineInfo, writeResults } from '../lib/results.mjs';
import { fmt, printTable, sleep, summarize } from '../lib/stats.mjs';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    steps: { type: 'string' },
    'max-minutes': { type: 'string' },
    durability: { type: 'string', default: 'full' },
    'cpu-prof': { type: 'string' },
    'heap-snapshots': { type: 'string' },
    seed: { type: 'string', default: '1' },
  },
});
const QUICK = flags.quick;
const TARGET_STEPS = flags.steps ? Number(flags.steps) : QUICK ? 3000 : 20_000;
const CAP_MS = (flags['max-minutes'] ? Number(flags['max-minutes']) : QUICK ? 3 : 20) * 60_000;
const DURABILITY = flags.durability;
if (!['full', 'normal'].includes(DURABILITY)) throw new Error('--durability is full or normal');
if (!Number.isInteger(TARGET_STEPS) || TARGET_STEPS < 100) throw new Error('--steps is an integer ≥ 100');
const CPU_PROF = flags['cpu-prof'] ? path.resolve(flags['cpu-prof']) : undefined;
const HEAP_DIR = flags['heap-snapshots'] ? path.resolve(flags['heap-snapshots']) : undefined;
const MODEL = 'qwen3:8b';
const DECILES = 10;

/** Small deterministic PRNG (mulberry32), so two runs script the same conversation. */
function prng(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const rand = prng(Number(flags.seed));

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ccagent-bench-soak-'));
const db = path.join(tmp, 'soak.db');
const BIG = 1_000_000_000;
const config = {
  models: { native: { name: MODEL, timeoutMs: 120_000 } },
  taskKinds: {
    general_agent: {
      maxIterations: BIG,
      budgets: { maxSteps: BIG, maxToolCalls: BIG, deadlineMs: 24 * 3_600_000 },
    },
  },
  server: { rateLimit: { messagesPerSecond: 1_000_000, burst: 1_000_000 } },
};

// ------------------------------------------------------------------------------------------ scripted model

const state = {
  scripted: 0, // tool calls the model has asked for so far
  replies: 0,
  finishing: false, // the cap was hit (or the target reached): the next reply ends the task
  promptBytes: [], // [toolCallsDoneWhenAsked, bytes]
  modelRequests: 0,
};
// The recorded requests would keep every prompt for the whole night in this process; not needed here.
const fake = await startFakeOllama({ installed: [MODEL], recordRequests: false });
fake.script(MODEL, (req) => {
  state.modelRequests++;
  state.promptBytes.push([client?.calls ?? 0, JSON.stringify(req.body.messages ?? []).length]);
  if (state.finishing || state.scripted >= TARGET_STEPS) {
    state.finishing = true;
    return 'All done.';
  }
  const n = rand() < 0.5 ? 1 : 2 + Math.floor(rand() * 7);
  const count = Math.min(n, TARGET_STEPS - state.scripted);
  const turn = state.replies++;
  const toolCalls = Array.from({ length: count }, (_, i) => {
    const big = rand() < 1 / 40 ? 4096 + Math.floor(rand() * 12_289) : 0;
    return { name: 'noop', arguments: { i, turn, ...(big ? { bytes: big } : {}) } };
  });
  state.scripted += count;
  return { content: turn % 7 === 0 ? `Step ${turn}: checking the next block.` : '', toolCalls };
});

// ------------------------------------------------------------------------------------------ the CC computer

/**
 * One simulated computer: creates the task, answers every command_call at once (a `bytes` argument asks for a
 * result of that size) and timestamps each step. `calls` counts command_calls received (the task's tool calls).
 */
class SoakClient extends SimulatedComputer {
  constructor(url) {
    super(url, 'soak-1');
    this.calls = 0;
    this.lastAt = undefined;
    this.samples = []; // [callIndex, ms, isModelStep]
    this.onCall = undefined;
    this.done = new Promise((resolve) => (this.finish = resolve));
    this.filler = 'abcdefghijklmnopqrstuvwxyz0123456789 '.repeat(600);
  }

  createTask() {
    this.send({
      type: 'create_task',
      request_id: 'soak-task',
      task_kind: 'general_agent',
      client_id: this.clientId,
      prompt: 'Keep working through the blocks; call noop for each one and report when all are done.',
      allowed_commands: [],
    });
  }

  onServerMessage(m, now) {
    switch (m.type) {
      case 'command_call': {
        if (this.lastAt !== undefined) this.samples.push([this.calls, now - this.lastAt, m.args?.i === 0]);
        this.lastAt = now;
        this.calls++;
        const bytes = typeof m.args?.bytes === 'number' ? m.args.bytes : 0;
        const result = bytes
          ? { ok: true, data: this.filler.repeat(Math.ceil(bytes / this.filler.length)).slice(0, bytes) }
          : { ok: true, block: m.args?.turn ?? 0 };
        this.send({ type: 'command_result', task_id: m.task_id, call_id: m.call_id, ok: true, result });
        this.onCall?.(this.calls);
        return;
      }
      case 'task_completed':
      case 'task_failed':
        this.finish(m);
        return;
      case 'error':
        console.error(`[soak] server error: ${JSON.stringify(m)}`);
        return;
      default:
    }
  }

  /** A connection lost mid-task ends the run with that outcome instead of waiting for the wall-clock cap. */
  onClosed() {
    this.finish({ type: 'connection_closed' });
  }
}

// ------------------------------------------------------------------------------------------ run

const fileSize = (f) => {
  try {
    return statSync(f).size;
  } catch {
    return 0;
  }
};
const mib = (bytes) => bytes / 2 ** 20;
/** RssAnon / RssFile of a process in KiB (what part of the RSS is private memory, what part mapped files). */
function rssParts(pid) {
  try {
    const t = readFileSync(`/proc/${pid}/status`, 'utf8');
    const kib = (k) => Number(new RegExp(`${k}:\\s+(\\d+) kB`).exec(t)?.[1] ?? NaN);
    return { anonKiB: kib('RssAnon'), fileKiB: kib('RssFile') };
  } catch {
    return { anonKiB: NaN, fileKiB: NaN };
  }
}
/** The server's V8 heap and external memory from its Prometheus `/metrics` (prom-client's default metrics). */
async function heapStats(url) {
  try {
    const text = await (await fetch(`${url}/metrics`)).text();
    const get = (name) => Number(new RegExp(`^${name}(?:\\{[^}]*\\})? (\\S+)$`, 'm').exec(text)?.[1] ?? NaN);
    return {
      heapUsedMiB: +mib(get('nodejs_heap_size_used_bytes')).toFixed(1),
      heapTotalMiB: +mib(get('nodejs_heap_size_total_bytes')).toFixed(1),
      externalMiB: +mib(get('nodejs_external_memory_bytes')).toFixed(1),
    };
  } catch {
    return undefined;
  }
}

if (CPU_PROF) mkdirSync(CPU_PROF, { recursive: true });
if (HEAP_DIR) mkdirSync(HEAP_DIR, { recursive: true });
const nodeArgs = [
  ...(CPU_PROF ? ['--cpu-prof', '--cpu-prof-dir', CPU_PROF] : []),
  ...(HEAP_DIR ? ['--heapsnapshot-signal=SIGUSR2', `--diagnostic-dir=${HEAP_DIR}`] : []),
];
const server = await startOrchestrator({
  db,
  config,
  ollamaUrl: fake.url,
  args: ['--durability', DURABILITY],
  nodeArgs,
});
let client;
const snapshots = []; // { calls, atMs, rssKiB, anonKiB, fileKiB, dbBytes, walBytes }
const heapAt = []; // { calls, heapUsedMiB, heapTotalMiB, externalMiB } every 10 % of the target
const rssMaxKiB = { v: 0 };
let outcome;
let capped = false;
const t0 = performance.now();
try {
  client = new SoakClient(server.url);
  await client.connect();
  // A resource snapshot every 1 % of the target; each decile of the table reads the first one at or after its end.
  const every = Math.max(1, Math.ceil(TARGET_STEPS / 100));
  let nextSnap = every;
  let heapShots = 0;
  const snapshot = () => ({
    calls: client.calls,
    atMs: performance.now() - t0,
    rssKiB: server.rssKiB(),
    ...rssParts(server.pid),
    dbBytes: fileSize(db),
    walBytes: fileSize(`${db}-wal`),
  });
  snapshots.push(snapshot());
  client.onCall = (calls) => {
    if (calls < nextSnap) return;
    nextSnap += every;
    snapshots.push(snapshot());
    if (calls % (every * 10) === 0 || calls === TARGET_STEPS) {
      void heapStats(server.url).then((h) => h && heapAt.push({ calls, ...h }));
      console.error(
        `[soak] ${calls} calls, ${((performance.now() - t0) / 1000).toFixed(0)} s, RSS ${fmt(mib(server.rssKiB() * 1024), 0)} MiB`,
      );
    }
    // Heap snapshots at the end of the first and the ninth decile, while the task runs (a finished task's cached
    // history is let go).
    if (HEAP_DIR && heapShots < 2 && calls >= every * (heapShots === 0 ? 10 : 90)) {
      heapShots++;
      server.proc.kill('SIGUSR2');
    }
  };
  const rssTimer = setInterval(() => {
    rssMaxKiB.v = Math.max(rssMaxKiB.v, server.rssKiB());
  }, 500);
  const capTimer = setTimeout(() => {
    capped = true;
    state.finishing = true;
    console.error(`[soak] wall-clock cap of ${CAP_MS / 60_000} min hit at ${client.calls} calls: finishing`);
  }, CAP_MS);
  client.createTask();
  // A stuck task must not hang the bench: give up a minute after the cap.
  let giveUp;
  outcome = await Promise.race([
    client.done,
    new Promise((resolve) => {
      giveUp = setTimeout(() => resolve({ type: 'timeout' }), CAP_MS + 60_000);
    }),
  ]);
  clearTimeout(giveUp);
  clearTimeout(capTimer);
  clearInterval(rssTimer);
  snapshots.push(snapshot());
  if (HEAP_DIR) await sleep(5000); // let a snapshot being written finish
} finally {
  client?.terminate();
  await server.stop();
  await fake.close();
}
const wallMs = performance.now() - t0;

// ------------------------------------------------------------------------------------------ report

const callsDone = client.calls;
const deciles = [];
for (let k = 0; k < DECILES; k++) {
  const from = Math.floor((k * callsDone) / DECILES);
  const to = Math.floor(((k + 1) * callsDone) / DECILES);
  const plain = [];
  const model = [];
  for (const [i, ms, isModel] of client.samples) {
    if (i < from || i >= to) continue;
    (isModel ? model : plain).push(ms);
  }
  let promptMax = 0;
  for (const [i, bytes] of state.promptBytes) if (i >= from && i < to) promptMax = Math.max(promptMax, bytes);
  // The resource snapshot taken when the task reached the end of this decile (or the last one taken).
  const snap = snapshots.find((s) => s.calls >= to) ?? snapshots[snapshots.length - 1];
  deciles.push({
    decile: k + 1,
    callsFrom: from,
    callsTo: to,
    noModel: summarize(plain),
    modelStep: summarize(model),
    promptBytesMax: promptMax,
    rssMiB: +mib(snap.rssKiB * 1024).toFixed(1),
    rssAnonMiB: +mib(snap.anonKiB * 1024).toFixed(1),
    heap: heapAt.find((h) => h.calls >= to) ?? heapAt[heapAt.length - 1],
    dbMiB: +mib(snap.dbBytes).toFixed(2),
    walMiB: +mib(snap.walBytes).toFixed(2),
    atSeconds: +(snap.atMs / 1000).toFixed(1),
  });
}
const first = deciles[0];
const last = deciles[deciles.length - 1];
const ratio = (a, b) => (Number.isFinite(a) && Number.isFinite(b) && b > 0 ? a / b : NaN);
const drift = {
  noModelP50: ratio(last.noModel.p50, first.noModel.p50),
  modelStepP50: ratio(last.modelStep.p50, first.modelStep.p50),
  rss: ratio(last.rssMiB, first.rssMiB),
  promptBytes: ratio(last.promptBytesMax, first.promptBytesMax),
  // The first decile includes JIT warm-up: the last decile against the fastest one shows growth the first hides.
  noModelP50VsBest: ratio(
    last.noModel.p50,
    Math.min(...deciles.map((d) => d.noModel.p50).filter(Number.isFinite)),
  ),
  dbMiBPer1000Calls: +((last.dbMiB / Math.max(1, callsDone)) * 1000).toFixed(1),
};
const flag = (x) => (Number.isFinite(x) && x > 1.5 ? ' **GROWS**' : '');

console.log(
  `\n# Night-long task (soak): one general_agent task, ${callsDone.toLocaleString('en-US')} tool calls in ${state.replies.toLocaleString('en-US')} model replies, durability ${DURABILITY}${capped ? ` — CAPPED at ${CAP_MS / 60_000} min (target ${TARGET_STEPS.toLocaleString('en-US')})` : ''}\n`,
);
printTable(
  [
    'decile',
    'tool calls',
    'no-model p50',
    'no-model p99',
    'model p50',
    'model p99',
    'prompt bytes max',
    'RSS MiB',
    'anon MiB',
    'heap used/total MiB',
    'external MiB',
    'DB MiB',
    'WAL MiB',
    'at s',
  ],
  deciles.map((d) => [
    String(d.decile),
    `${d.callsFrom}-${d.callsTo}`,
    fmt(d.noModel.p50, 3),
    fmt(d.noModel.p99, 3),
    fmt(d.modelStep.p50, 2),
    fmt(d.modelStep.p99, 2),
    String(d.promptBytesMax),
    fmt(d.rssMiB, 1),
    fmt(d.rssAnonMiB, 1),
    d.heap ? `${fmt(d.heap.heapUsedMiB, 1)}/${fmt(d.heap.heapTotalMiB, 1)}` : '-',
    d.heap ? fmt(d.heap.externalMiB, 1) : '-',
    fmt(d.dbMiB, 1),
    fmt(d.walMiB, 1),
    fmt(d.atSeconds, 0),
  ]),
);
console.log('');
printTable(
  ['drift (last decile / first decile)', 'ratio', 'target'],
  [
    ['no-model step p50', `${fmt(drift.noModelP50, 2)}${flag(drift.noModelP50)}`, '≈ 1.0 (flag > 1.5)'],
    [
      'no-model step p50, last / fastest decile',
      `${fmt(drift.noModelP50VsBest, 2)}${flag(drift.noModelP50VsBest)}`,
      '≈ 1.0 (flag > 1.5)',
    ],
    ['model step p50', `${fmt(drift.modelStepP50, 2)}${flag(drift.modelStepP50)}`, '≈ 1.0 (flag > 1.5)'],
    ['prompt bytes (max)', `${fmt(drift.promptBytes, 2)}${flag(drift.promptBytes)}`, 'bounded'],
    ['server RSS', `${fmt(drift.rss, 2)}${flag(drift.rss)}`, '≈ 1.0'],
    ['SQLite file MiB per 1,000 tool calls (the step log)', fmt(drift.dbMiBPer1000Calls, 1), ''],
  ],
);
console.log(
  `\ntask ${outcome?.type ?? 'unknown'}${outcome?.type === 'task_failed' ? ` (${JSON.stringify(outcome.error ?? outcome)})` : ''}; wall ${(wallMs / 1000).toFixed(0)} s; ${state.modelRequests} model requests; server RSS max ${fmt(mib(rssMaxKiB.v * 1024), 0)} MiB`,
);
/** The paths of the files in `dir` whose names end with `ext`, comma-separated. */
const filesIn = (dir, ext) =>
  readdirSync(dir)
    .filter((f) => f.endsWith(ext))
    .map((f) => path.join(dir, f))
    .join(', ');
if (CPU_PROF) console.log(`cpu profile: ${filesIn(CPU_PROF, '.cpuprofile')}`);
if (HEAP_DIR) console.log(`heap snapshots: ${filesIn(HEAP_DIR, '.heapsnapshot')}`);

const results = {
  benchmark: 'soak',
  date: new Date().toISOString(),
  quick: QUICK,
  machine: machineInfo(),
  durability: DURABILITY,
  targetToolCalls: TARGET_STEPS,
  toolCalls: callsDone,
  modelReplies: state.replies,
  capped,
  capMinutes: CAP_MS / 60_000,
  wallSeconds: +(wallMs / 1000).toFixed(1),
  outcome: outcome?.type,
  rssMaxMiB: +mib(rssMaxKiB.v * 1024).toFixed(1),
  deciles,
  drift,
};
rmSync(tmp, { recursive: true, force: true });
writeResults('soak', results);
process.exitCode = outcome?.type === 'task_completed' ? 0 : 1;
