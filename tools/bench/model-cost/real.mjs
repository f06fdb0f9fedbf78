#!/usr/bin/env node
// Model cost on a REAL server (not part of `npm test`; `npm run build` first):
//   node tools/bench/model-cost/real.mjs [--json]
// The modelled bench (run.mjs) prices each call of a task with the fake server's cache and time model. This one
// measures the same calls on a real Ollama on this machine's CPU, so the model is checked against the thing it models.
//
// How: the TODO.lua acceptance run (today's conversation layout) runs exactly as in run.mjs, against the scripted
// double, which records each request and what it modelled (prompt, cached and evaluated tokens). Each recorded request
// is then sent, in order, to the real Ollama (tools/ollama-test-server.sh: Ollama 0.17.4, SmolLM2-135M-Instruct, CPU)
// with the scripted reply appended as the assistant's message and `num_predict: 1`, so the real server evaluates
// prompt + reply as the model server would have after generating that reply, and keeps exactly that in its cache for
// the next call. The real figures come from the server itself: `prompt_eval_count` and `prompt_eval_duration` of each
// reply, and its debug log's per-request "loading cache slot … prompt=N used=U remaining=R" (how many tokens it took
// from the cache). The two tokenizers differ (the modelled run counts Qwen tokens, SmolLM2 has its own), so the
// comparison is on fractions: reuse = cached ÷ prompt, per call and over the task.
import { readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { createPlannerExecutorStrategy } from '@ccagent/agent';
import { removeRoot, runTask, startModels, todo } from '@ccagent/agent/testing';
import { machineInfo, writeResults } from '../lib/results.mjs';
import { realModelServer } from '../../real-model-server.mjs';

const { values: flags } = parseArgs({ options: { json: { type: 'boolean', default: false } } });
const MODEL = 'qwen3:8b'; // the modelled run's name (Qwen tokenizer), as in run.mjs

// ---------------------------------------------------------------- the real server
function realServer() {
  const env = realModelServer();
  if (!env) throw new Error('no real model server: tools/ollama-test-server.sh failed (see above)');
  const log = path.join(
    process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'),
    'ccagent/ollama/server.log',
  );
  return { ...env, log };
}

/** Lines the server logged since `offset` saying how much of a prompt came from the cache. */
function cacheLines(log, offset) {
  const text = readFileSync(log, 'utf8').slice(offset);
  return [...text.matchAll(/loading cache slot.*?prompt=(\d+) used=(\d+) remaining=(\d+)/g)].map((m) => ({
    prompt: Number(m[1]),
    used: Number(m[2]),
    remaining: Number(m[3]),
  }));
}

// ---------------------------------------------------------------- the modelled run (as run.mjs's `todo`)
async function modelledRun() {
  const { BROKEN, COMPLETION, EXECUTOR_REPLIES, PLANNER_REPLIES, PROMPT } = todo;
  const models = await startModels({ tokenizer: 'auto' });
  const options = {
    planner: { temperature: 0.2, numCtx: 16384 },
    executor: { temperature: 0, numCtx: 8192 },
  };
  const strategy = createPlannerExecutorStrategy({
    planner: models.role(MODEL, { options: options.planner }),
    executor: models.role(MODEL, { options: options.executor }),
    completion: COMPLETION,
  });
  let planner = 0;
  let executor = 0;
  models.fake.script(MODEL, (req) => {
    const system = String(req.body.messages?.[0]?.content ?? '');
    if (system.startsWith('You are the EXECUTOR')) return EXECUTOR_REPLIES[executor++] ?? '';
    return PLANNER_REPLIES[planner++] ?? '';
  });
  const run = await runTask(strategy, { prompt: PROMPT, kind: 'code' }, { files: { 'TODO.lua': BROKEN } });
  await removeRoot(run.root);
  const calls = models.fake
    .chatRequests(MODEL)
    .filter((r) => r.modelCall)
    .map((r) => ({ body: r.body, reply: '', modelled: r.modelCall }));
  // The reply each request got: the next request of the same role carries it as its assistant turn; the scripted
  // queues are the authority, in order.
  let p = 0;
  let e = 0;
  for (const c of calls) {
    const system = String(c.body.messages?.[0]?.content ?? '');
    const reply = system.startsWith('You are the EXECUTOR') ? EXECUTOR_REPLIES[e++] : PLANNER_REPLIES[p++];
    c.reply = typeof reply === 'string' ? reply : (reply?.content ?? JSON.stringify(reply?.json ?? ''));
  }
  await models.close();
  return { status: run.task.status, steps: run.task.counters.steps, calls };
}

// ---------------------------------------------------------------- replay on the real server
async function replay(server, calls) {
  const out = [];
  for (const c of calls) {
    const offset = statSync(server.log).size;
    const body = {
      ...c.body,
      model: server.model,
      stream: false,
      messages: [...c.body.messages, { role: 'assistant', content: c.reply }],
      options: { ...(c.body.options ?? {}), num_predict: 1, temperature: 0, num_ctx: 8192 },
    };
    delete body.format; // the reply is given, not generated: no grammar to apply
    const started = Date.now();
    const res = await fetch(`${server.url}/api/chat`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    if (!res.ok) throw new Error(`real server: HTTP ${res.status} ${await res.text()}`);
    const r = await res.json();
    // The runner logs its line before it answers; give the log writer a moment to flush.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const [line] = cacheLines(server.log, offset);
    out.push({
      promptTokens: r.prompt_eval_count,
      cachedTokens: line ? line.used : undefined,
      evaluatedTokens: line ? line.remaining : undefined,
      promptSeconds: r.prompt_eval_duration / 1e9,
      wallSeconds: (Date.now() - started) / 1000,
      loadSeconds: r.load_duration / 1e9,
    });
  }
  return out;
}

const server = realServer();
const modelled = await modelledRun();
if (modelled.status !== 'completed') throw new Error(`the modelled TODO.lua run ended ${modelled.status}`);
// A cold start for the measured task, as the modelled run's server was: unload the model first.
await fetch(`${server.url}/api/chat`, {
  method: 'POST',
  body: JSON.stringify({ model: server.model, messages: [], keep_alive: 0 }),
});
await new Promise((resolve) => setTimeout(resolve, 1000));
const real = await replay(server, modelled.calls);
if (real.some((r) => r.evaluatedTokens === undefined)) {
  throw new Error(
    `the server log (${server.log}) has no "loading cache slot" lines: start the server with OLLAMA_DEBUG=1 ` +
      '(tools/ollama-test-server.sh --stop, then again)',
  );
}

// ---------------------------------------------------------------- report
const sum = (list, f) => list.reduce((n, x) => n + f(x), 0);
const rows = modelled.calls.map((c, i) => {
  const m = c.modelled;
  // The modelled server generated the reply; the real one evaluated it as part of the prompt: compare like with like.
  const mPrompt = m.promptTokens + m.outputTokens;
  const mEval = m.evaluatedTokens + m.outputTokens;
  const r = real[i];
  return {
    call: i + 1,
    role: String(c.body.messages?.[0]?.content ?? '').startsWith('You are the EXECUTOR')
      ? 'executor'
      : 'planner',
    modelledPrompt: mPrompt,
    modelledEvaluated: mEval,
    modelledReuse: 1 - mEval / mPrompt,
    realPrompt: r.promptTokens,
    realEvaluated: r.evaluatedTokens,
    realReuse: 1 - r.evaluatedTokens / r.promptTokens,
    realPromptSeconds: r.promptSeconds,
    realWallSeconds: r.wallSeconds,
  };
});
const total = {
  modelledReuse: 1 - sum(rows, (r) => r.modelledEvaluated) / sum(rows, (r) => r.modelledPrompt),
  realReuse: 1 - sum(rows, (r) => r.realEvaluated) / sum(rows, (r) => r.realPrompt),
  realEvaluatedPerStep: sum(rows, (r) => r.realEvaluated) / modelled.steps,
  modelledEvaluatedPerStep: sum(rows, (r) => r.modelledEvaluated) / modelled.steps,
  realPromptSecondsPerStep: sum(rows, (r) => r.realPromptSeconds) / modelled.steps,
  realWallSeconds: sum(rows, (r) => r.realWallSeconds),
};
const pad = (s, n) => String(s).padEnd(n);
const f = (x, d = 0) => Number(x).toFixed(d);
console.log(
  `\n# Model cost, modelled vs measured: TODO.lua acceptance run (${modelled.steps} steps, ${rows.length} calls)`,
);
console.log(
  `# real: Ollama ${server.version} at ${server.url}, ${server.model} (${server.weights}), CPU: ${os.cpus()[0]?.model} x${os.cpus().length}`,
);
console.log(
  `# load average at start: ${os
    .loadavg()
    .map((x) => x.toFixed(1))
    .join(' ')}\n`,
);
console.log(
  [
    'call',
    'role',
    'modelled prompt',
    'modelled eval',
    'modelled reuse',
    'real prompt',
    'real eval',
    'real reuse',
    'real prompt s',
  ]
    .map((h, i) => pad(h, [5, 9, 16, 14, 15, 12, 10, 11, 13][i]))
    .join(' '),
);
for (const r of rows) {
  console.log(
    [
      pad(r.call, 5),
      pad(r.role, 9),
      pad(r.modelledPrompt, 16),
      pad(r.modelledEvaluated, 14),
      pad(f(r.modelledReuse, 3), 15),
      pad(r.realPrompt, 12),
      pad(r.realEvaluated, 10),
      pad(f(r.realReuse, 3), 11),
      pad(f(r.realPromptSeconds, 2), 13),
    ].join(' '),
  );
}
console.log(
  `\ntask: reuse modelled ${f(total.modelledReuse, 3)}, measured ${f(total.realReuse, 3)} ` +
    `(off by ${f(total.modelledReuse - total.realReuse, 3)}); evaluated tokens/step modelled ${f(total.modelledEvaluatedPerStep)} ` +
    `(Qwen tokens), measured ${f(total.realEvaluatedPerStep)} (SmolLM2 tokens); real prompt evaluation ` +
    `${f(total.realPromptSecondsPerStep, 2)} s/step, ${f(total.realWallSeconds, 1)} s wall for the task's calls`,
);
writeResults('model-cost-real', {
  machine: machineInfo(),
  server: { ...server, log: undefined },
  rows,
  total,
});
if (flags.json) console.log(JSON.stringify({ rows, total }));
