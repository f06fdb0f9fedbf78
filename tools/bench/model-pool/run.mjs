#!/usr/bin/env node
// Model pool bench (not part of `npm test`; run `npm run build` first, then
// `node tools/bench/model-pool/run.mjs [--tasks 50] [--calls 8] [--scale 0.1] [--json]`).
//
// Many players, a few GPUs: 50 tasks at once, each a conversation of `--calls` model calls (a shared system prompt,
// its own request, then per call a reply and a tool result appended, as the native loop does), a short pause for the
// tool between calls. The servers are fake Ollamas of @ccagent/testkit: each models Ollama's prompt cache (64 KV
// slots, longest common prefix) and prices every call on the reference GPU, and with `timeScale` holds each reply
// for its modelled seconds × `--scale` in real time, so queueing and cache reuse show in wall time. The pool sends
// each server 2 calls at once (its GPU's parallelism); the 64 cache slots stand for a server that keeps more
// conversations' prefixes than it generates at once (llama.cpp `--cache-reuse`/`--slot-save-path`, Ollama with
// OLLAMA_NUM_PARALLEL slots).
//
// Runs, in the same process and run: one server (the raw baseline); 2 and 4 servers with the pool (cache affinity,
// least-loaded placement, fair queueing); 2 and 4 servers round-robin without affinity (the naive pool); and 4
// servers with one killed mid-run. Reported: makespan, p95 queue wait (from the call to the request leaving for a
// server), cache reuse (cached ÷ prompt tokens over all servers), modelled GPU seconds, tasks finished.
import { parseArgs } from 'node:util';
import { ModelPool, OllamaChatModel } from '@ccagent/models';
import { REFERENCE_GPU, startFakeOllama } from '@ccagent/testkit';
import { machineInfo, writeResults } from '../lib/results.mjs';

const { values: flags } = parseArgs({
  options: {
    tasks: { type: 'string', default: '50' },
    calls: { type: 'string', default: '8' },
    scale: { type: 'string', default: '0.1' },
    json: { type: 'boolean', default: false },
  },
});
const TASKS = Number(flags.tasks);
const CALLS = Number(flags.calls);
const SCALE = Number(flags.scale);
const MODEL = 'qwen2.5:7b';
const CONCURRENCY = 2;
const TOOL_PAUSE_MS = 20;

// Text of the size a native task sends: a 6,000-character system prompt shared by every task, a request, then per
// call a reply of ~400 characters and a tool result of ~1,200 (4 characters a token: the fake's estimate).
const SYSTEM = Array.from(
  { length: 60 },
  (_, i) => `Rule ${i}: ${'keep the computer safe and explain each step. '.repeat(2)}`,
).join('\n');
const reply = (task, call) =>
  `Step ${call} of task ${task}: ${'I will read the file, change it and run it. '.repeat(9)}`;
const toolResult = (task, call) =>
  `output ${task}.${call}: ${'line of program output with numbers 12345 '.repeat(28)}`;

/** Start `n` fake servers with the time model on. */
async function startServers(n) {
  const fakes = await Promise.all(
    Array.from({ length: n }, () =>
      startFakeOllama({
        timeScale: SCALE,
        recordRequests: false,
        server: { numParallel: 64, multiUserCache: true },
      }),
    ),
  );
  // The reply a model writes at this point of the conversation: ~400 characters, like a native loop's reasoning.
  for (const f of fakes) {
    f.script(
      MODEL,
      (req) => {
        const messages = req.body.messages;
        const t = /Task (\d+):/.exec(messages[1]?.content ?? '')?.[1] ?? '?';
        return { content: reply(t, (messages.length - 2) / 2), evalCount: 100 };
      },
      { repeat: true },
    );
  }
  return fakes;
}

/** Run the workload over `servers` fake servers with the pool options; `kill` closes server 0 at that fraction. */
async function run(label, n, poolOptions, kill) {
  const fakes = await startServers(n);
  const enqueued = new WeakMap();
  const waits = [];
  const pool = new ModelPool({
    servers: fakes.map((f) => {
      const adapter = new OllamaChatModel({ host: f.url, retry: { retries: 0 }, timeoutMs: 600_000 });
      // The queue wait of each attempt: from the task's call to the attempt leaving for a server.
      const timed = {
        provider: adapter.provider,
        chat: (request) => {
          const t0 = enqueued.get(request.messages);
          if (t0 !== undefined) waits.push(performance.now() - t0);
          return adapter.chat(request);
        },
        checkModels: (names, o) => adapter.checkModels(names, o),
      };
      return { name: f.url, model: timed, concurrency: CONCURRENCY };
    }),
    models: [MODEL],
    probeIntervalMs: 0,
    probeBackoffMs: 60_000,
    ...poolOptions,
  });
  let finished = 0;
  let failedCalls = 0;
  const started = performance.now();
  let killTimer;
  const task = async (t) => {
    const messages = [
      { role: 'system', content: SYSTEM },
      { role: 'user', content: `Task ${t}: make program ${t}.lua print its own number, then test it.` },
    ];
    for (let c = 0; c < CALLS; c += 1) {
      const request = {
        model: MODEL,
        messages: [...messages],
        options: { numCtx: 16384 },
        affinityKey: `task-${t}`,
        stream: false,
      };
      enqueued.set(request.messages, performance.now());
      let answer;
      try {
        answer = await pool.chat(request);
      } catch {
        failedCalls += 1;
        return;
      }
      // The reply as the server wrote it goes back into the conversation: its tokens are in that server's cache.
      messages.push({ role: 'assistant', content: answer.message.content });
      messages.push({ role: 'user', content: toolResult(t, c) });
      await new Promise((r) => setTimeout(r, TOOL_PAUSE_MS));
    }
    finished += 1;
  };
  const all = Array.from({ length: TASKS }, (_, t) => task(t));
  if (kill !== undefined) {
    killTimer = setTimeout(() => void fakes[0].close(), kill.afterMs);
  }
  await Promise.all(all);
  const makespanS = (performance.now() - started) / 1000;
  clearTimeout(killTimer);
  const stats = fakes.map((f) => f.modelStats());
  const prompt = stats.reduce((s, x) => s + x.promptTokens, 0);
  const cached = stats.reduce((s, x) => s + x.cachedTokens, 0);
  const seconds = stats.reduce((s, x) => s + x.seconds, 0);
  const snap = pool.snapshot();
  pool.close();
  await Promise.all(fakes.map((f) => f.close().catch(() => {})));
  waits.sort((a, b) => a - b);
  const p95 = waits[Math.min(waits.length - 1, Math.floor(waits.length * 0.95))] ?? 0;
  return {
    label,
    servers: n,
    makespanS,
    p95WaitMs: p95,
    cacheReuse: prompt === 0 ? 0 : cached / prompt,
    modelSeconds: seconds,
    finished,
    failedCalls,
    failovers: snap.servers.reduce((s, x) => s + x.failovers, 0),
  };
}

const rows = [];
const one = await run('one server (raw baseline)', 1, {});
rows.push(one);
for (const n of [2, 4]) {
  rows.push(await run(`${n} servers, pool (affinity)`, n, {}));
  rows.push(
    await run(`${n} servers, round-robin, no affinity`, n, { affinity: false, placement: 'round-robin' }),
  );
}
const four = rows.find((r) => r.label === '4 servers, pool (affinity)');
rows.push(await run('4 servers, pool, server 0 killed mid-run', 4, {}, { afterMs: four.makespanS * 400 }));

const fmt = (r) => ({
  run: r.label,
  'makespan s': r.makespanS.toFixed(2),
  '× one server': (r.makespanS / one.makespanS).toFixed(2),
  'p95 queue wait ms': Math.round(r.p95WaitMs),
  'cache reuse': r.cacheReuse.toFixed(3),
  'model s': r.modelSeconds.toFixed(0),
  'tasks done': `${r.finished}/${TASKS}`,
  failovers: r.failovers,
});
if (flags.json) {
  console.log(JSON.stringify({ rows, machine: machineInfo() }, null, 2));
} else {
  console.log(
    `model pool: ${TASKS} tasks × ${CALLS} calls, ${CONCURRENCY} calls per server, time scale ${SCALE} (${REFERENCE_GPU.name})`,
  );
  console.table(rows.map(fmt));
  const rr4 = rows.find((r) => r.label === '4 servers, round-robin, no affinity');
  const killed = rows.at(-1);
  console.log(
    `goals: 4 servers makespan ${(four.makespanS / one.makespanS).toFixed(2)}× one server (≤ 0.30); cache reuse ${four.cacheReuse.toFixed(3)} vs ${one.cacheReuse.toFixed(3)} single (within 0.02; round-robin ${rr4.cacheReuse.toFixed(3)}); killed server: ${killed.finished}/${TASKS} tasks done, ${killed.failedCalls} calls failed`,
  );
}
writeResults('model-pool', { rows, machine: machineInfo() });
