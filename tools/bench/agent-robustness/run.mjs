#!/usr/bin/env node
// Agent robustness bench (not part of `npm test`; run `npm run build` first, then
// `node tools/bench/agent-robustness/run.mjs [--only <substring>] [--json] [--corpus-only] [--agent <dist/index.js>]`).
//
// 1. The small-model failure corpus (packages/agent/testing/corpus/fixtures) through the built @ccagent/agent:
//    real Engine, real `ollama` client, scripted fake Ollama server, Lua 5.2. Each fixture runs in its executor
//    mode(s) — the issue-19 cases in all three, plus their native-loop form where they have one. Prints one row per
//    run, `handled N/M`, and handled/total per class and per mode; the raw baseline of the same run is the corpus
//    with the policies switched off (no repair, no duplicate stop, no default completion criteria, no question or
//    bounce limits; tolerant parsing stays on). `--agent` runs another build of the package (e.g. an older commit's
//    dist, for a before/after table); `--corpus-only` skips part 2.
// 2. Prompt-cache friendliness of the rendered memory: the shared-prefix fraction of consecutive planner prompts
//    (and the characters Ollama must re-evaluate per call) for the prefix-stable section order, the files-last
//    variant and the original design order as the baseline — on the real acceptance run (fixing TODO.lua) and on a
//    long synthetic session.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { prefixFractions, removeRoot, runCorpus, runTask, startModels, todo } from '@ccagent/agent/testing';

const { BROKEN, COMPLETION, PLANNER_REPLIES, PROMPT } = todo;

const { values: flags } = parseArgs({
  options: {
    only: { type: 'string' },
    json: { type: 'boolean', default: false },
    'corpus-only': { type: 'boolean', default: false },
    agent: { type: 'string' },
  },
});
const { createNativeToolStrategy, createPlannerExecutorStrategy, loadPlannerMemory, renderMemory } =
  flags.agent ? await import(pathToFileURL(path.resolve(flags.agent)).href) : await import('@ccagent/agent');

const pad = (s, n) => String(s).padEnd(n);
const num = (x, d = 3) => x.toFixed(d);

// ---------------------------------------------------------------- 1. failure corpus
const POLICIES_OFF = {
  policy: {
    executorRepairRetries: 0,
    duplicateHardStop: 0,
    maxConsecutiveBounces: 1000,
    maxDoneRejections: 1000,
    maxQuestions: 1000,
  },
  completion: { requireSuccessfulRun: false, requireLastRunOk: false },
};

const started = performance.now();
const corpus = await runCorpus({ createPlannerExecutorStrategy, createNativeToolStrategy, only: flags.only });
const corpusMs = performance.now() - started;
const baseline = await runCorpus({
  createPlannerExecutorStrategy,
  createNativeToolStrategy,
  only: flags.only,
  override: POLICIES_OFF,
});
const runKey = (r) => `${r.name} [${r.mode}]`;
const baseByName = new Map(baseline.results.map((r) => [runKey(r), r]));

console.log('\n# Failure corpus (policies on; raw baseline: the same fixtures with the policies off)\n');
console.log(
  `${pad('fixture [mode]', 62)} ${pad('role', 8)} ${pad('outcome', 28)} ${pad('calls', 5)} ${pad('handled', 8)} ${pad('off', 4)}  events`,
);
for (const r of corpus.results) {
  const outcome = r.errorCode ? `${r.status} (${r.errorCode})` : r.status;
  const off = baseByName.get(runKey(r))?.handled ? 'yes' : 'no';
  console.log(
    `${pad(runKey(r), 62)} ${pad(r.role, 8)} ${pad(outcome, 28)} ${pad(r.modelCalls, 5)} ${pad(r.handled ? 'yes' : 'NO', 8)} ${pad(off, 4)}  ${r.events.join(', ')}`,
  );
  if (!r.handled) for (const p of r.problems) console.log(`    ! ${p}`);
}
console.log(
  `\nhandled ${corpus.handled}/${corpus.total}   (policies off: ${baseline.handled}/${baseline.total})   ` +
    `${Math.round(corpusMs)} ms, ${num(corpusMs / Math.max(1, corpus.total), 0)} ms per run`,
);

// Handled/total per class (rows) and executor mode (columns), and the same with the policies off.
const MODE_COLUMNS = ['parser', 'model', 'parser-then-model', 'native'];
/** @param {Array<{ class: string, mode: string, handled: boolean }>} results */
function byClassAndMode(results) {
  const classes = [...new Set(results.map((r) => r.class))].sort();
  const cell = (rs) => (rs.length === 0 ? '—' : `${rs.filter((r) => r.handled).length}/${rs.length}`);
  const rows = classes.map((c) => [
    c,
    ...MODE_COLUMNS.map((m) => cell(results.filter((r) => r.class === c && r.mode === m))),
    cell(results.filter((r) => r.class === c)),
  ]);
  rows.push(['all', ...MODE_COLUMNS.map((m) => cell(results.filter((r) => r.mode === m))), cell(results)]);
  return rows;
}
const printTable = (title, rows) => {
  console.log(`\n# ${title}\n`);
  console.log(`| class | ${MODE_COLUMNS.join(' | ')} | all |`);
  console.log(`| --- | ${MODE_COLUMNS.map(() => '---').join(' | ')} | --- |`);
  for (const row of rows) console.log(`| ${row.join(' | ')} |`);
};
const classTable = byClassAndMode(corpus.results);
printTable('Handled/total per class and mode', classTable);
printTable('The same with the policies off (raw baseline)', byClassAndMode(baseline.results));

if (flags['corpus-only']) {
  if (flags.json) console.log(JSON.stringify({ corpus, classTable }));
  process.exit(corpus.handled === corpus.total ? 0 : 1);
}

// ---------------------------------------------------------------- 2. prompt-cache friendliness
const ORDERS = ['stable', 'files-last', 'design'];

/** Characters of the previous prompt that the next one does not repeat from its start, averaged per call. */
function reevaluated(texts) {
  let sum = 0;
  for (let i = 1; i < texts.length; i++) {
    const a = texts[i - 1];
    const b = texts[i];
    let n = 0;
    while (n < a.length && n < b.length && a.charCodeAt(n) === b.charCodeAt(n)) n++;
    sum += b.length - n;
  }
  return texts.length > 1 ? sum / (texts.length - 1) : 0;
}

const promptText = (req) => (req.body.messages ?? []).map((m) => `<${m.role}>${m.content}`).join('\n');

const models = await startModels();
const real = [];
try {
  for (const order of ORDERS) {
    const name = `bench-planner-${order}`;
    models.fake.script(name, PLANNER_REPLIES);
    models.fake.script(`bench-executor-${order}`, []);
    const strategy = createPlannerExecutorStrategy({
      planner: models.role(name),
      executor: models.role(`bench-executor-${order}`),
      mode: 'parser',
      completion: COMPLETION,
      policy: { memory: { order } },
    });
    const run = await runTask(strategy, { prompt: PROMPT, kind: 'code' }, { files: { 'TODO.lua': BROKEN } });
    await removeRoot(run.root);
    const reqs = models.fake.chatRequests(name);
    real.push({
      order,
      status: run.task.status,
      calls: reqs.length,
      fraction: prefixFractions(reqs).mean,
      reeval: reevaluated(reqs.map(promptText)),
      chars: reqs.reduce((s, r) => s + promptText(r).length, 0) / Math.max(1, reqs.length),
    });
  }
} finally {
  await models.close();
}

/** A long session: an 80-line file rewritten every 4th step, runs with output, some failures with tracebacks. */
function synthetic(order) {
  const task = {
    id: 'bench',
    kind: 'code',
    status: 'running',
    clientId: null,
    prompt: 'Write and debug a 3x3 quarry program for a mining turtle; test every subcommand.',
    allowedCommands: ['fs_read', 'fs_write', 'run_program', 'shell_exec'],
    memory: null,
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt: 0,
    updatedAt: 0,
  };
  const history = [];
  let seq = 0;
  let call = 0;
  const add = (step, body) => history.push({ ...body, taskId: 'bench', seq: ++seq, step, at: seq });
  let memory = { ...loadPlannerMemory(null), plan: '1. write quarry.lua\n2. test dig, move, report\n3. fix' };
  const texts = [];
  for (let step = 1; step <= 60; step++) {
    const callId = `c${++call}`;
    if (step % 4 === 1) {
      const content = Array.from(
        { length: 80 },
        (_, i) => `local v${i} = ${step * 100 + i} -- line ${i}`,
      ).join('\n');
      add(step, { type: 'tool_call', callId, command: 'fs_write', args: { path: 'quarry.lua', content } });
      add(step, {
        type: 'tool_result',
        callId,
        command: 'fs_write',
        outcome: { ok: true, result: { path: 'quarry.lua', bytes: content.length } },
      });
    } else if (step % 7 === 0) {
      add(step, {
        type: 'tool_call',
        callId,
        command: 'run_program',
        args: { path: 'quarry.lua', args: ['dig', String(step)] },
      });
      add(step, {
        type: 'tool_result',
        callId,
        command: 'run_program',
        outcome: {
          ok: true,
          result: {
            ok: false,
            output: 'Digging...',
            error: `/quarry.lua:${step}: attempt to compare nil with number\nstack traceback:\n\t/quarry.lua:${step}: in function 'dig'\n\t/quarry.lua:80: in main chunk`,
          },
        },
      });
    } else {
      add(step, {
        type: 'tool_call',
        callId,
        command: 'run_program',
        args: { path: 'quarry.lua', args: ['report', String(step)] },
      });
      add(step, {
        type: 'tool_result',
        callId,
        command: 'run_program',
        outcome: {
          ok: true,
          result: {
            ok: true,
            output: `Mined ${step} blocks\nFuel left: ${1000 - step}\nPosition: ${step},64,${-step}`,
          },
        },
      });
    }
    task.counters = { steps: step, toolCalls: call, questions: 0 };
    const r = renderMemory({
      task,
      history,
      memory,
      step: step + 1,
      limits: { maxQuestions: 2 },
      layout: { order },
    });
    memory = r.memory;
    texts.push(r.text);
  }
  const fr = [];
  for (let i = 1; i < texts.length; i++) {
    const a = texts[i - 1];
    const b = texts[i];
    let n = 0;
    while (n < a.length && n < b.length && a.charCodeAt(n) === b.charCodeAt(n)) n++;
    fr.push(n / a.length);
  }
  return {
    order,
    calls: texts.length,
    fraction: fr.reduce((x, y) => x + y, 0) / fr.length,
    reeval: reevaluated(texts),
    chars: texts.reduce((s, t) => s + t.length, 0) / texts.length,
  };
}
const long = ORDERS.map(synthetic);

console.log('\n# Shared-prefix fraction of consecutive planner prompts (raw baseline: the design order)\n');
console.log(
  `${pad('session', 34)} ${pad('order', 11)} ${pad('calls', 6)} ${pad('prefix', 8)} ${pad('re-eval chars/call', 19)} prompt chars/call`,
);
for (const r of real) {
  console.log(
    `${pad(`acceptance run (TODO.lua, ${r.status})`, 34)} ${pad(r.order, 11)} ${pad(r.calls, 6)} ${pad(num(r.fraction), 8)} ${pad(Math.round(r.reeval), 19)} ${Math.round(r.chars)}`,
  );
}
for (const r of long) {
  console.log(
    `${pad('synthetic 60-step session', 34)} ${pad(r.order, 11)} ${pad(r.calls, 6)} ${pad(num(r.fraction), 8)} ${pad(Math.round(r.reeval), 19)} ${Math.round(r.chars)}`,
  );
}
const stableLong = long.find((r) => r.order === 'stable');
const designLong = long.find((r) => r.order === 'design');
console.log(
  `\nshared-prefix fraction (stable order): acceptance ${num(real[0].fraction)}, long session ${num(stableLong.fraction)} ` +
    `(design order: ${num(real[2].fraction)}, ${num(designLong.fraction)})`,
);

if (flags.json)
  console.log(
    JSON.stringify({ corpus, baseline: { handled: baseline.handled, total: baseline.total }, real, long }),
  );
process.exitCode = corpus.handled === corpus.total ? 0 : 1;
