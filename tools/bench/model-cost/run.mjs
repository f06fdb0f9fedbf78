#!/usr/bin/env node
// Model cost bench (not part of `npm test`; run `npm run build` first, then
// `node tools/bench/model-cost/run.mjs [--only todo|synthetic|native] [--layout naive|single|conversation] [--trace]
// [--json]`; --trace prints every model call: prompt, cached, evaluated and output tokens, compactions and loads).
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
// same bench run in three layouts (see VARIANTS): the raw baseline — the seed's naive design —, the single-message
// layout used before the planner conversation, and today's defaults.
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
  options: {
    only: { type: 'string' },
    layout: { type: 'string' },
    trace: { type: 'boolean', default: false },
    json: { type: 'boolean', default: false },
  },
});
// The orchestrator's default roles (apps/orchestrator/src/config.ts): one model for every role, the planner and the
// native loop with a 16k context, the executor asking for 8k.
const MODEL = 'qwen3:8b';
const ROLE_OPTIONS = {
  planner: { temperature: 0.2, numCtx: 16384 },
  executor: { temperature: 0, numCtx: 8192 },
  native: { temperature: 0.2, numCtx: 16384 },
};
const role = (models, name) => models.role(MODEL, { options: ROLE_OPTIONS[name] });

// ---------------------------------------------------------------- the sessions

/**
 * The layouts compared. `naive`: the seed's design — the whole memory rendered into one message in the design order
 * (STATE right after TASK), every directive through the executor model, the native window moving every call.
 * `single`: one rendered message in the prefix-stable order, the native window moving 8 turns when full (the layout
 * before the conversation). `conversation`: today's defaults — an append-only planner conversation, the native window
 * moving far enough to refill half the budget.
 */
const VARIANTS = ['naive', 'single', 'conversation'];
const PLANNER_VARIANT = {
  naive: { mode: 'model', policy: { memory: { order: 'design', conversation: false } } },
  single: { policy: { memory: { conversation: false } } },
  conversation: {},
};
const NATIVE_VARIANT = {
  naive: { windowChunkTurns: 1, windowFill: 1 },
  single: { windowFill: 1 },
  conversation: {},
};
const withPolicy = (variant, policy) => {
  const v = PLANNER_VARIANT[variant];
  return { ...v, policy: { ...v.policy, ...policy, memory: { ...v.policy?.memory, ...policy.memory } } };
};

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
    planner: role(models, 'planner'),
    executor: role(models, 'executor'),
    completion: COMPLETION,
    ...PLANNER_VARIANT[variant],
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

/** The planner's directive for synthetic planner call `n` (1-based): a rewrite (and a test run) every 4th call. */
function syntheticDirective(n) {
  if (n > 60) {
    return 'DONE\nSUMMARY: quarry.lua digs, moves and reports.\nNOTES: tested report on every pass.';
  }
  if (n % 4 === 1) {
    return [
      ...(n === 1 ? ['PLAN:\n1. write quarry.lua\n2. test dig, move, report\n3. fix\n'] : []),
      'WRITE_FILE',
      'PATH: quarry.lua',
      'LANGUAGE: lua',
      'CONTENT:',
      '```lua',
      quarrySource(n),
      '```',
      'THEN:',
      `- quarry.lua report ${n}`,
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
    planner: role(models, 'planner'),
    executor: role(models, 'executor'),
    ...withPolicy(variant, { ...budgets, gatherFiles: false, memory: {} }),
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
    model: role(models, 'native'),
    maxIterations: NATIVE_CALLS + 10,
    ...NATIVE_VARIANT[variant],
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
        // A turtle's scan of one sector: a few lines of blocks and coordinates, like a real survey prints.
        'survey.lua': [
          'local n = tonumber((...)) or 0',
          'print("sector " .. n .. " at x=" .. (n * 16) .. " z=" .. (-n * 16))',
          'for y = 60, 64 do',
          '  print(("y=%d stone=%d coal=%d iron=%d air=%d"):format(y, (n * y) % 97, (n + y) % 7, (n * 3 + y) % 5, (y - n) % 11))',
          'end',
          'print("fuel " .. (5000 - n * 12))',
        ].join('\n'),
      },
      timeoutMs: 300_000,
    },
  );
}

// ---------------------------------------------------------------- measuring

const MODEL_STEPS = new Set(['planner', 'executor', 'executor_repair', 'native']);

/**
 * Figures of one run from the fake server's records: every model call, priced on the reference GPU. The step log's
 * model-call records come in the same order as the requests; their `input.layout` says which calls compacted the
 * prompt (a restarted planner conversation, a moved native window). "Steady" calls are the others that did not load
 * the model: the ones a layout should serve from the cache.
 */
function figures(run, fake) {
  const calls = fake
    .chatRequests(MODEL)
    .map((r) => r.modelCall)
    .filter(Boolean);
  const records = run.steps.filter((s) => MODEL_STEPS.has(s.kind));
  const compacting = calls.map((_, i) => {
    const layout = records[i]?.input?.layout;
    return layout?.compacted === true || layout?.windowMoved === true;
  });
  const sum = (list, f) => list.reduce((n, c) => n + f(c), 0);
  const prompt = sum(calls, (c) => c.promptTokens);
  const evaluated = sum(calls, (c) => c.evaluatedTokens);
  const steady = calls.filter((c, i) => !compacting[i] && c.load === undefined);
  const steps = run.task.counters.steps;
  if (flags.trace) {
    calls.forEach((c, i) => {
      const kind = records[i]?.kind ?? '?';
      const mark = compacting[i] ? ' compacted' : c.load ? ` load:${c.load}` : '';
      console.log(
        `  call ${i + 1} ${kind} step ${records[i]?.step ?? '?'}: prompt ${c.promptTokens}, cached ${c.cachedTokens}, evaluated ${c.evaluatedTokens}, output ${c.outputTokens}${mark}`,
      );
    });
  }
  return {
    status: run.task.status,
    steps,
    calls: calls.length,
    callsPerStep: calls.length / steps,
    promptPerCall: prompt / calls.length,
    evaluatedPerCall: evaluated / calls.length,
    evaluatedPerStep: evaluated / steps,
    reuse: 1 - evaluated / prompt,
    steadyReuse: 1 - sum(steady, (c) => c.evaluatedTokens) / sum(steady, (c) => c.promptTokens),
    compactions: compacting.filter(Boolean).length,
    outputTokens: sum(calls, (c) => c.outputTokens),
    loads: calls.filter((c) => c.load !== undefined).length,
    reloads: calls.filter((c) => c.load !== undefined && c.load !== 'cold').length,
    overflows: calls.filter((c) => c.overflow).length,
    seconds: sum(calls, (c) => c.seconds.total),
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
  for (const variant of VARIANTS) {
    if (flags.layout && variant !== flags.layout) continue;
    const models = await startModels({ tokenizer: 'auto' });
    try {
      const run = await session.run(models, variant);
      await removeRoot(run.root);
      if (run.task.status !== 'completed')
        console.log(
          `${session.name} (${variant}): ${run.task.status} ${JSON.stringify(run.task.error ?? null)}; ` +
            `policy events: ${run.steps
              .filter((s) => s.kind === 'policy' || s.validationErrors)
              .slice(0, 6)
              .map((s) => JSON.stringify(s.error ?? s.validationErrors))
              .join(' | ')}`,
        );
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
  ['layout', 13],
  ['status', 10],
  ['steps', 6],
  ['calls/step', 11],
  ['prompt tok/call', 16],
  ['evaluated/call', 15],
  ['evaluated/step', 15],
  ['reuse', 6],
  ['steady reuse', 13],
  ['compactions', 12],
  ['output tok', 11],
  ['loads', 6],
  ['over ctx', 9],
  ['model s', 8],
];
console.log(head.map(([h, n]) => pad(h, n)).join(' '));
for (const r of results) {
  console.log(
    [
      pad(r.name, 30),
      pad(r.variant, 13),
      pad(r.status, 10),
      pad(r.steps, 6),
      pad(f(r.callsPerStep, 2), 11),
      pad(f(r.promptPerCall), 16),
      pad(f(r.evaluatedPerCall), 15),
      pad(f(r.evaluatedPerStep), 15),
      pad(f(r.reuse, 3), 6),
      pad(f(r.steadyReuse, 3), 13),
      pad(r.compactions, 12),
      pad(r.outputTokens, 11),
      pad(r.loads, 6),
      pad(r.overflows, 9),
      pad(f(r.seconds, 1), 8),
    ].join(' '),
  );
}
console.log('\nratios against the raw baseline (naive) and the single-message layout, same run:');
for (const s of SESSIONS) {
  const by = (v) => results.find((r) => r.session === s.id && r.variant === v);
  const [naive, single, conv] = VARIANTS.map(by);
  if (!naive || !single || !conv) continue;
  console.log(
    `  ${pad(s.name, 30)} evaluated tokens/step ${f(conv.evaluatedPerStep / naive.evaluatedPerStep, 2)} of naive, ` +
      `${f(conv.evaluatedPerStep / single.evaluatedPerStep, 2)} of single; model seconds ` +
      `${f(conv.seconds / naive.seconds, 2)} of naive, ${f(conv.seconds / single.seconds, 2)} of single`,
  );
}
console.log(`\nsources of the time model: ${REFERENCE_GPU.sources.join('; ')}`);

writeResults('model-cost', { machine: machineInfo(), timeModel: REFERENCE_GPU.name, results });
if (flags.json) console.log(JSON.stringify({ results }));
process.exitCode = results.every((r) => r.status === 'completed') ? 0 : 1;
