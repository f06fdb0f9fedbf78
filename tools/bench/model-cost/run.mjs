#!/usr/bin/env node
// Model cost bench (not part of `npm test`; run `npm run build` first, then
// `node tools/bench/model-cost/run.mjs [--json] [--only todo|synthetic|native]`).
//
// With a local model almost all of a task's wall time is the GPU: evaluating the prompt tokens that are not in the
// server's cache, and generating. This bench runs real tasks — the real Engine, the built @ccagent/agent strategies,
// the real `ollama` client, Lua 5.2 running the programs — against the fake Ollama server of @ccagent/testkit, which
// models Ollama's prompt cache (per slot, longest common prefix, reloads), counts tokens with the real Qwen
// tokenizer, and prices each call on a reference GPU (REFERENCE_GPU: a 7–8B Q4_K_M model on a 12 GB card). One
// model serves every role (planner, executor, native), with Ollama's defaults: one slot, 5 min keep-alive.
//
// Sessions: the TODO.lua acceptance run, a synthetic 60-step planner session (an 80-line file rewritten every 4th
// step, runs with output, failures with tracebacks) and a 200-call native tool-calling task. Each runs twice in the
// same bench run: as the layout is configured today, and as the raw baseline — the seed's naive design (planner
// memory in the design order with STATE near the top, so the prompt changes near its start every step; every
// directive translated by the executor model; the native window moving every call).
import { parseArgs } from 'node:util';
import { createNativeToolStrategy, createPlannerExecutorStrategy, parseDirective } from '@ccagent/agent';
import { REFERENCE_GPU } from '@ccagent/testkit';
import {
  BROKEN,
  COMPLETION,
  EXECUTOR_REPLIES,
  PLANNER_REPLIES,
  PROMPT,
} from '../../../packages/agent/test/fixtures/todo/scenario.mjs';
import { removeRoot, runTask, startModels } from '../../../packages/agent/test/support/harness.mjs';
import { machineInfo, writeResults } from '../lib/results.mjs';

const { values: flags } = parseArgs({
  options: { only: { type: 'string' }, json: { type: 'boolean', default: false } },
});
const MODEL = 'qwen2.5-coder:7b';

// ---------------------------------------------------------------- the sessions

/** The seed's design: memory order with STATE right after TASK, every directive through the executor model. */
const NAIVE_PLANNER = { mode: 'model', policy: { memory: { order: 'design' } } };

async function todoRun(models, variant) {
  models.fake.script(MODEL, (req) => reply(req));
  let planner = 0;
  let executor = 0;
  const reply = (req) => {
    const system = String(req.body.messages?.[0]?.content ?? '');
    if (system.startsWith('You are the EXECUTOR')) return EXECUTOR_REPLIES[executor++] ?? '';
    return PLANNER_REPLIES[planner++] ?? '';
  };
  const strategy = createPlannerExecutorStrategy({
    planner: models.role(MODEL),
    executor: models.role(MODEL),
    completion: COMPLETION,
    ...(variant === 'naive' ? NAIVE_PLANNER : {}),
  });
  return runTask(strategy, { prompt: PROMPT, kind: 'code' }, { files: { 'TODO.lua': BROKEN } });
}

/** quarry.lua as the synthetic session writes it at `step`: 80 numbered lines, then the subcommands. */
function quarrySource(step) {
  const lines = Array.from({ length: 80 }, (_, i) => `local v${i} = ${step * 100 + i} -- line ${i}`);
  lines.push(
    'local cmd, n = ...',
    'if cmd == "dig" then error("attempt to compare nil with number") end',
    'print("Mined " .. tostring(n) .. " blocks")',
    'print("Fuel left: " .. tostring(1000 - (tonumber(n) or 0)))',
    'print("Position: " .. tostring(n) .. ",64,-" .. tostring(n))',
  );
  return lines.join('\n');
}

/** The planner's directive for synthetic step `n` (1-based planner call). */
function syntheticDirective(n) {
  if (n > 60) {
    return 'DONE\nSUMMARY: quarry.lua digs, moves and reports.\nNOTES: tested report on every pass.';
  }
  if (n % 4 === 1) {
    return [
      n === 1 ? 'PLAN:\n1. write quarry.lua\n2. test dig, move, report\n3. fix\n' : '',
      'WRITE_FILE',
      'PATH: quarry.lua',
      'LANGUAGE: lua',
      'CONTENT:',
      '```lua',
      quarrySource(n),
      '```',
    ].join('\n');
  }
  if (n % 7 === 0) return `RUN\nPATH: quarry.lua\nARGS: dig ${n}\nEXPECT: digging`;
  return `RUN\nPATH: quarry.lua\nARGS: report ${n}\nEXPECT: a report`;
}

/** What the executor model answers for a directive (in `model` mode): the matching tool call, as a 7B model does. */
function executorFor(directiveText) {
  const parsed = parseDirective(directiveText);
  if (!parsed.ok) return '{}';
  const d = parsed.value.directive;
  const tool = (name, parameters) =>
    JSON.stringify({ kind: 'tool', explanation: 'as directed', tool: name, parameters });
  if (d.kind === 'RUN') return tool('cc_run_program', { path: d.path, args: d.args });
  if (d.kind === 'WRITE_FILE') {
    return d.then.length > 0
      ? tool('cc_write_and_run', { path: d.path, content: d.content, runs: d.then })
      : tool('cc_write', { path: d.path, content: d.content });
  }
  return JSON.stringify({
    kind: 'final',
    explanation: 'done',
    result: { success: true, message: 'done', details: '' },
  });
}

async function syntheticRun(models, variant) {
  let planner = 0;
  models.fake.script(MODEL, (req) => {
    const messages = req.body.messages ?? [];
    const system = String(messages[0]?.content ?? '');
    if (system.startsWith('You are the EXECUTOR')) return executorFor(String(messages.at(-1)?.content ?? ''));
    planner += 1;
    return syntheticDirective(planner);
  });
  const budgets = { maxSteps: 200, maxToolCalls: 200 };
  const strategy = createPlannerExecutorStrategy({
    planner: models.role(MODEL),
    executor: models.role(MODEL),
    ...(variant === 'naive'
      ? { ...NAIVE_PLANNER, policy: { ...NAIVE_PLANNER.policy, ...budgets, gatherFiles: false } }
      : { policy: { ...budgets, gatherFiles: false } }),
  });
  return runTask(
    strategy,
    {
      prompt: 'Write and debug a 3x3 quarry program for a mining turtle; test every subcommand.',
      kind: 'code',
      budgets,
    },
    { timeoutMs: 120_000 },
  );
}

const NATIVE_CALLS = 200;

async function nativeRun(models, variant) {
  let call = 0;
  models.fake.script(MODEL, () => {
    call += 1;
    if (call > NATIVE_CALLS) return `All ${NATIVE_CALLS} sectors are surveyed.`;
    return {
      content: '',
      toolCalls: [{ name: 'run_program', arguments: { path: 'survey.lua', args: [String(call)] } }],
    };
  });
  const strategy = createNativeToolStrategy({
    model: models.role(MODEL),
    maxIterations: NATIVE_CALLS + 10,
    ...(variant === 'naive' ? { windowChunkTurns: 1 } : {}),
  });
  return runTask(
    strategy,
    {
      prompt: `Survey sectors 1 to ${NATIVE_CALLS} with survey.lua, one sector per call, and report.`,
      kind: 'native',
      budgets: { maxSteps: 1000, maxToolCalls: 1000 },
    },
    {
      files: {
        'survey.lua':
          'local n = tonumber((...)) or 0\nprint("sector " .. n .. ": " .. (n * 7 % 13) .. " ore, " .. (n * 3 % 5) .. " mobs")',
      },
      timeoutMs: 300_000,
    },
  );
}

// ---------------------------------------------------------------- measuring

/** Figures of one run from the fake server's records: every model call, priced on the reference GPU. */
function figures(run, fake) {
  const calls = fake
    .chatRequests(MODEL)
    .map((r) => r.modelCall)
    .filter(Boolean);
  const sum = (f) => calls.reduce((s, c) => s + f(c), 0);
  const prompt = sum((c) => c.promptTokens);
  const evaluated = sum((c) => c.evaluatedTokens);
  const steps = run.task.counters.steps;
  const compacting = new Set(
    run.steps.filter((s) => s.kind === 'planner' && (s.input?.memory?.compacted ?? false)).map((s) => s.step),
  );
  return {
    status: run.task.status,
    steps,
    calls: calls.length,
    callsPerStep: calls.length / steps,
    promptPerCall: prompt / calls.length,
    evaluatedPerCall: evaluated / calls.length,
    evaluatedPerStep: evaluated / steps,
    reuse: 1 - evaluated / prompt,
    outputTokens: sum((c) => c.outputTokens),
    loads: calls.filter((c) => c.load !== undefined).length,
    reloads: calls.filter((c) => c.load !== undefined && c.load !== 'cold').length,
    overflows: calls.filter((c) => c.overflow).length,
    compactingSteps: compacting.size,
    seconds: sum((c) => c.seconds.total),
  };
}

const SESSIONS = [
  { id: 'todo', name: 'TODO.lua acceptance run', run: todoRun },
  { id: 'synthetic', name: 'synthetic 60-step session', run: syntheticRun },
  { id: 'native', name: `native task, ${NATIVE_CALLS} tool calls`, run: nativeRun },
];

const results = [];
for (const session of SESSIONS) {
  if (flags.only && session.id !== flags.only) continue;
  for (const variant of ['naive', 'today']) {
    const models = await startModels({ tokenizer: 'auto' });
    try {
      const run = await session.run(models, variant);
      await removeRoot(run.root);
      results.push({ session: session.id, name: session.name, variant, ...figures(run, models.fake) });
    } finally {
      await models.close();
    }
  }
}

// ---------------------------------------------------------------- report
const pad = (s, n) => String(s).padEnd(n);
const f = (x, d = 0) => x.toFixed(d);
console.log(`\n# Model cost per task on the reference GPU (${REFERENCE_GPU.name})`);
console.log("# raw baseline: the seed's naive design of the same session in the same run\n");
const head = [
  ['session', 30],
  ['design', 7],
  ['status', 10],
  ['steps', 6],
  ['calls/step', 11],
  ['prompt tok/call', 16],
  ['evaluated/call', 15],
  ['evaluated/step', 15],
  ['reuse', 6],
  ['output tok', 11],
  ['loads', 6],
  ['model s', 8],
];
console.log(head.map(([h, n]) => pad(h, n)).join(' '));
for (const r of results) {
  console.log(
    [
      pad(r.name, 30),
      pad(r.variant, 7),
      pad(r.status, 10),
      pad(r.steps, 6),
      pad(f(r.callsPerStep, 2), 11),
      pad(f(r.promptPerCall), 16),
      pad(f(r.evaluatedPerCall), 15),
      pad(f(r.evaluatedPerStep), 15),
      pad(f(r.reuse, 3), 6),
      pad(r.outputTokens, 11),
      pad(r.loads, 6),
      pad(f(r.seconds, 1), 8),
    ].join(' '),
  );
}
console.log('\nratios today / naive (same run):');
for (const s of SESSIONS) {
  const naive = results.find((r) => r.session === s.id && r.variant === 'naive');
  const today = results.find((r) => r.session === s.id && r.variant === 'today');
  if (!naive || !today) continue;
  console.log(
    `  ${pad(s.name, 30)} evaluated tokens/step ${f(today.evaluatedPerStep / naive.evaluatedPerStep, 2)}, ` +
      `model seconds ${f(today.seconds / naive.seconds, 2)}, calls/step ${f(today.callsPerStep / naive.callsPerStep, 2)}`,
  );
}
console.log(`\nsources of the time model: ${REFERENCE_GPU.sources.join('; ')}`);

writeResults('model-cost', { machine: machineInfo(), timeModel: REFERENCE_GPU.name, results });
if (flags.json) console.log(JSON.stringify({ results }));
process.exitCode = results.every((r) => r.status === 'completed') ? 0 : 1;
