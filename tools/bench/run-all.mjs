#!/usr/bin/env node
// `npm run bench` (after `npm run build`): runs every benchmark in tools/bench/ one after the other — each prints
// its own tables — then prints ONE summary table of every headline figure beside its raw baseline, ratio and target,
// and writes tools/bench/results/summary.json (each bench also writes its own results/<name>.json).
//
//   node tools/bench/run-all.mjs [--quick] [--only engine|agent-robustness|model-cost|orchestrator|soak|dashboard]
//
// The orchestrator bench holds 10,000 sockets on each side: it runs with `ulimit -n` raised to the hard limit (POSIX
// sh); when the hard limit is lower, it caps the idle-connection count and says so.
import { spawn } from 'node:child_process';
import { existsSync, mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { fmt, printTable } from './lib/stats.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const resultsDir = path.join(here, 'results');
mkdirSync(resultsDir, { recursive: true });
const { values: flags } = parseArgs({
  options: { quick: { type: 'boolean', default: false }, only: { type: 'string' } },
});
const quick = flags.quick ? ['--quick'] : [];

const BENCHES = [
  { name: 'engine', script: 'engine/run.mjs', args: quick },
  { name: 'agent-robustness', script: 'agent-robustness/run.mjs', args: ['--json'], captureJson: true },
  // Model time per task on a reference GPU, today's prompt layout beside the seed's naive one (about 3 min).
  { name: 'model-cost', script: 'model-cost/run.mjs', args: [] },
  { name: 'orchestrator', script: 'orchestrator/run.mjs', args: quick, raiseFdLimit: true },
  // The event hub behind GET /api/events alone: ns per published record, with and without a reader.
  { name: 'event-hub', script: 'orchestrator/event-hub.mjs', args: quick },
  // One task of 20,000 tool calls (about 75 s on the benchmark machine), 3,000 with --quick.
  { name: 'soak', script: 'soak/run.mjs', args: quick },
  // The web dashboard in Chromium: paint times with 10,000 tasks and a 5,000-record task, live step latency, bundle.
  { name: 'dashboard', script: 'dashboard/run.mjs', args: quick },
  // The computer's screen mirrored to the dashboard: page paint, frame → painted latency at 10 frames a second, bytes.
  { name: 'dashboard-screen', script: 'dashboard/screen.mjs', args: quick },
];

/** Run one bench with its output shown live; resolves with the exit code and (if asked) its stdout. */
function runBench(b) {
  const script = path.join(here, b.script);
  const useSh = b.raiseFdLimit && process.platform !== 'win32' && existsSync('/bin/sh');
  const [cmd, args] = useSh
    ? [
        '/bin/sh',
        ['-c', 'ulimit -n "$(ulimit -Hn)" 2>/dev/null; exec "$0" "$@"', process.execPath, script, ...b.args],
      ]
    : [process.execPath, [script, ...b.args]];
  return new Promise((resolve) => {
    const p = spawn(cmd, args, { stdio: ['ignore', b.captureJson ? 'pipe' : 'inherit', 'inherit'] });
    let out = '';
    p.stdout?.on('data', (d) => {
      const t = d.toString();
      out += t;
      // The JSON line is for us; everything else is the bench's own report.
      for (const line of t.split('\n'))
        if (line !== '' && !line.startsWith('{')) process.stdout.write(`${line}\n`);
    });
    p.on('exit', (code, signal) => resolve({ code: code ?? (signal ? 1 : 0), out }));
  });
}

const started = Date.now();
const status = {};
for (const b of BENCHES) {
  if (flags.only && flags.only !== b.name) continue;
  console.log(`\n======== ${b.name} (${b.script}) ========\n`);
  const t0 = Date.now();
  const { code, out } = await runBench(b);
  status[b.name] = { exitCode: code, seconds: Math.round((Date.now() - t0) / 1000) };
  if (b.captureJson) {
    const line = out
      .trim()
      .split('\n')
      .reverse()
      .find((l) => l.startsWith('{'));
    if (line) {
      writeFileSync(
        path.join(resultsDir, `${b.name}.json`),
        `${JSON.stringify({ benchmark: b.name, date: new Date().toISOString(), ...JSON.parse(line) }, null, 2)}\n`,
      );
    }
  }
}

const read = (name) => {
  try {
    return JSON.parse(readFileSync(path.join(resultsDir, `${name}.json`), 'utf8'));
  } catch {
    return undefined;
  }
};
const rows = [];
const add = (bench, measure, value, raw, ratio, target, met) =>
  rows.push({ bench, measure, value, raw, ratio, target, met });

const engine = read('engine');
if (engine && (!flags.only || flags.only === 'engine')) {
  const e = engine;
  add(
    'engine',
    'steps/s, one durable txn each',
    fmt(e.stepsSequential.storePerSec, 0),
    fmt(e.stepsSequential.rawPerSec, 0),
    fmt(e.ratios.sequential, 2),
    '',
    '',
  );
  add(
    'engine',
    'steps/s, 50 tasks in flight',
    fmt(e.stepsGrouped.storePerSec, 0),
    fmt(e.stepsGrouped.rawPerSec, 0),
    fmt(e.ratios.grouped, 2),
    '',
    '',
  );
  add(
    'engine',
    'engine step cycles/s',
    fmt(e.engineCycle.perSec, 0),
    fmt(e.stepsSequential.rawPerSec, 0),
    fmt(e.engineCycle.perSec / e.stepsSequential.rawPerSec, 2),
    '',
    '',
  );
  add(
    'engine',
    `resume ${e.resume.tasks} in-flight tasks after kill -9 (ms)`,
    fmt(e.resume.allMs, 0),
    fmt(e.resume.rawMs, 1),
    fmt(e.ratios.resumeVsRawRead, 1),
    '',
    '',
  );
}
const agent = read('agent-robustness');
if (agent && (!flags.only || flags.only === 'agent-robustness')) {
  add(
    'agent-robustness',
    'failure corpus handled',
    `${agent.corpus.handled}/${agent.corpus.total}`,
    `${agent.baseline.handled}/${agent.baseline.total} (policies off)`,
    '',
    'all',
    agent.corpus.handled === agent.corpus.total ? 'yes' : 'NO',
  );
  const stable = (list) => list.find((r) => r.order === 'stable')?.fraction;
  const design = (list) => list.find((r) => r.order === 'design')?.fraction;
  add(
    'agent-robustness',
    'shared-prefix fraction, acceptance run',
    fmt(stable(agent.real), 3),
    fmt(design(agent.real), 3),
    '',
    '',
    '',
  );
  add(
    'agent-robustness',
    'shared-prefix fraction, synthetic 60 steps',
    fmt(stable(agent.long), 3),
    fmt(design(agent.long), 3),
    '',
    '',
    '',
  );
}
const cost = read('model-cost');
if (cost && (!flags.only || flags.only === 'model-cost')) {
  for (const r of cost.results.filter((x) => x.variant === 'conversation')) {
    const naive = cost.results.find((x) => x.session === r.session && x.variant === 'naive');
    const single = cost.results.find((x) => x.session === r.session && x.variant === 'single');
    if (!single) continue;
    // The Minecraft task's seed design is its single-message layout: that is its raw baseline.
    const raw = naive ?? single;
    add(
      'model-cost',
      `model s per task, ${r.name}`,
      fmt(r.seconds, 1),
      fmt(raw.seconds, 1),
      fmt(r.seconds / raw.seconds, 2),
      '',
      '',
    );
    add(
      'model-cost',
      `cache reuse on steady calls, ${r.name}`,
      fmt(r.steadyReuse, 3),
      fmt(raw.steadyReuse, 3),
      '',
      '≥ 0.90',
      r.steadyReuse >= 0.9 ? 'yes' : 'NO',
    );
    add(
      'model-cost',
      `evaluated tokens per step, ${r.name} (raw: single-message layout)`,
      fmt(r.evaluatedPerStep, 0),
      fmt(single.evaluatedPerStep, 0),
      fmt(r.evaluatedPerStep / single.evaluatedPerStep, 2),
      '≤ 0.25',
      r.evaluatedPerStep / single.evaluatedPerStep <= 0.25 ? 'yes' : 'NO',
    );
    // The same without the task's first call (its cold load, or what follows the cached system prompt on a warm
    // server), which no layout can make smaller: shown beside the goal's own figure above, not instead of it.
    if (r.laterPerStep !== undefined && single.laterPerStep !== undefined)
      add(
        'model-cost',
        `evaluated tokens per step after the first call, ${r.name} (raw: single-message layout)`,
        fmt(r.laterPerStep, 0),
        fmt(single.laterPerStep, 0),
        fmt(r.laterPerStep / single.laterPerStep, 2),
        '≤ 0.25',
        r.laterPerStep / single.laterPerStep <= 0.25 ? 'yes' : 'NO',
      );
  }
}
const orch = read('orchestrator');
if (orch && (!flags.only || flags.only === 'orchestrator')) {
  for (const r of orch.roundTrip ?? []) {
    const d = r.durability ?? 'full';
    const shapes =
      r.clients > 1
        ? [
            ['1 active', r.oneActive, r.echo.oneActive],
            ['all active', r.allActive, r.echo.allActive],
          ]
        : [['1 active', r.oneActive, r.echo.oneActive]];
    for (const [shape, o, e] of shapes) {
      const ratio = o.cycle.p50 / e.p50;
      add(
        'orchestrator',
        `round trip p50 ms, ${r.clients} connected, ${shape}, ${d}`,
        fmt(o.cycle.p50, 2),
        fmt(e.p50, 3),
        fmt(ratio, 1),
        '≤ 3× echo',
        ratio <= 3 ? 'yes' : 'NO',
      );
      if (r.clients === 1000) {
        add(
          'orchestrator',
          `round trip p99 ms, 1000 connected, ${shape}, ${d}`,
          fmt(o.cycle.p99, 2),
          fmt(e.p99, 3),
          fmt(o.cycle.p99 / e.p99, 1),
          '< 5 ms',
          o.cycle.p99 < 5 ? 'yes' : 'NO',
        );
      }
      if (shape === 'all active') {
        add(
          'orchestrator',
          `round trips/s, ${r.clients} connected, all active, ${d}`,
          fmt(o.cyclesPerSec, 0),
          '',
          '',
          '',
          '',
        );
      }
    }
  }
  for (const x of orch.rawCommit?.rows ?? []) {
    add(
      'orchestrator',
      `raw better-sqlite3 commit p50 ms: ${x.what}, ${x.synchronous}`,
      fmt(x.p50, 3),
      '',
      '',
      '',
      '',
    );
  }
  for (const s of orch.stepLog ?? []) {
    add(
      'orchestrator',
      `step-log rows/s, ${s.clients} clients active, ${s.durability ?? 'full'}`,
      fmt(s.orchestratorStepsPerSec, 0),
      `${fmt(s.rawAutocommitPerSec, 0)} (1 txn/row)`,
      fmt(s.ratioVsAutocommit, 2),
      '≥ 0.5',
      s.ratioVsAutocommit >= 0.5 ? 'yes' : 'NO',
    );
  }
  if (orch.idle) {
    const i = orch.idle;
    add(
      'orchestrator',
      'idle connections held',
      `${i.held}`,
      `${i.held} (bare ws)`,
      '',
      '10,000',
      i.held >= 10_000 ? 'yes' : `NO${i.cappedBy ? ` (capped by ${i.cappedBy})` : ''}`,
    );
    add(
      'orchestrator',
      'RSS per idle connection (KiB)',
      fmt(i.kibPerConnection, 1),
      fmt(i.echo.kibPerConnection, 1),
      fmt(i.ratio, 1),
      '',
      '',
    );
  }
  if (orch.recovery) {
    const r = orch.recovery;
    add(
      'orchestrator',
      `restart → all ${r.tasks} in-flight tasks resumed (ms)`,
      fmt(r.spawnToAllResumedMs, 0),
      fmt(r.raw.bareNodeSpawnToListeningMs + r.raw.selectAndParseMs, 0),
      fmt(r.ratio, 1),
      '',
      r.callsNotResent === 0 ? '' : `NO: ${r.callsNotResent} calls not re-sent`,
    );
  }
}

const soak = read('soak');
if (soak && (!flags.only || flags.only === 'soak')) {
  const s = soak;
  const first = s.deciles[0];
  const last = s.deciles[s.deciles.length - 1];
  const drift = (x) => (Number.isFinite(x) && x <= 1.5 ? 'yes' : 'NO');
  const calls = `${s.toolCalls.toLocaleString('en-US')} calls${s.capped ? ', CAPPED' : ''}`;
  add(
    'soak',
    `no-model step p50 ms, last / first decile (${calls})`,
    fmt(last.noModel.p50, 3),
    fmt(first.noModel.p50, 3),
    fmt(s.drift.noModelP50, 2),
    '≤ 1.5',
    drift(s.drift.noModelP50),
  );
  add(
    'soak',
    'no-model step p50 ms, last / fastest decile',
    fmt(last.noModel.p50, 3),
    fmt(Math.min(...s.deciles.map((d) => d.noModel.p50).filter(Number.isFinite)), 3),
    fmt(s.drift.noModelP50VsBest, 2),
    '≤ 1.5',
    drift(s.drift.noModelP50VsBest),
  );
  add(
    'soak',
    'model step p50 ms, last / first decile',
    fmt(last.modelStep.p50, 2),
    fmt(first.modelStep.p50, 2),
    fmt(s.drift.modelStepP50, 2),
    '≤ 1.5',
    drift(s.drift.modelStepP50),
  );
  add(
    'soak',
    'prompt bytes max, last / first decile',
    String(last.promptBytesMax),
    String(first.promptBytesMax),
    fmt(s.drift.promptBytes, 2),
    '≤ 1.5',
    drift(s.drift.promptBytes),
  );
  add(
    'soak',
    'server RSS MiB, last / first decile',
    fmt(last.rssMiB, 0),
    fmt(first.rssMiB, 0),
    fmt(s.drift.rss, 2),
    '≤ 1.5',
    drift(s.drift.rss),
  );
  add(
    'soak',
    'SQLite file MiB at the end (step log)',
    fmt(last.dbMiB, 0),
    '',
    `${fmt(s.drift.dbMiBPer1000Calls, 1)} / 1,000 calls`,
    '',
    '',
  );
}

const dash = read('dashboard');
if (dash && (!flags.only || flags.only === 'dashboard')) {
  for (const p of dash.paints) {
    add(
      'dashboard',
      `first meaningful paint ms, ${p.name}`,
      fmt(p.ms.median, 0),
      `${fmt(p.raw.median, 1)} (requests replayed)`,
      fmt(p.ratio, 1),
      '',
      '',
    );
  }
  const l = dash.live;
  add(
    'dashboard',
    `step committed → row painted, p95 ms (${l.shown.n} records)`,
    fmt(l.shown.p95, 1),
    `${fmt(l.browserSse.p95, 1)} (event in browser)`,
    fmt(dash.liveRatioP95, 1),
    '< 100 ms',
    l.shown.p95 < 100 && l.notShown === 0 ? 'yes' : 'NO',
  );
  add(
    'dashboard',
    'shipped bundle, gzip bytes',
    String(dash.bundle.gzip),
    `${dash.bundle.raw} (raw)`,
    '',
    '',
    '',
  );
}

console.log('\n======== summary ========\n');
console.log(
  `machine: ${os.cpus().length} × ${os.cpus()[0]?.model ?? 'cpu'}, ${(os.totalmem() / 2 ** 30).toFixed(0)} GiB, node ${process.version}, ${process.platform}${flags.quick ? ' (quick run)' : ''}\n`,
);
printTable(
  ['bench', 'measure', 'ccagent', 'raw baseline', 'ratio', 'target', 'met'],
  rows.map((r) => [r.bench, r.measure, r.value, r.raw, r.ratio, r.target, r.met]),
);
const failed = Object.entries(status).filter(([, s]) => s.exitCode !== 0);
for (const [name, s] of failed) console.log(`bench ${name} exited with ${s.exitCode}`);
writeFileSync(
  path.join(resultsDir, 'summary.json'),
  `${JSON.stringify({ date: new Date().toISOString(), quick: flags.quick, seconds: Math.round((Date.now() - started) / 1000), status, rows }, null, 2)}\n`,
);
console.log(`\nwrote ${path.relative(process.cwd(), path.join(resultsDir, 'summary.json'))}`);
process.exitCode = failed.length > 0 ? 1 : 0;
