#!/usr/bin/env node
// Model pool on two REAL Ollama servers (not part of `npm test`; `npm run build` first):
//   node tools/bench/model-pool/real.mjs [--tasks 4] [--calls 3] [--ports 56434,56435] [--json]
// run.mjs measures the pool on fake servers with a modelled GPU; this one runs the same kind of workload on two real
// Ollama processes of tools/ollama-test-server.sh (Ollama built from source, SmolLM2-135M-Instruct Q4_1: a tiny
// model on the CPU), one per port, sharing the cached build and models dir, each with its own pid and log file.
// Servers this run starts are stopped at the end (one already answering on a port is used and left running).
//
// Runs, in the same process and run: one server (the baseline); the pool over both (cache affinity, least-loaded
// placement); round-robin over both without affinity; the pool over both with the second server stopped mid-run
// (last, as it leaves that server down until the end). Each server takes one call at a time (the script's
// OLLAMA_NUM_PARALLEL=1). Reported: makespan, p95 queue wait, cache reuse (tokens each server took from its cache
// ÷ prompt tokens, from the servers' debug logs: "loading cache slot … prompt=N used=U"), prompt-eval seconds the
// servers report, tasks done and failovers.
//
// Mind the machine: both servers run on the same CPU cores, so two servers cannot halve the makespan the way two
// GPU boxes would; what carries over is the placement, the cache reuse and the failover.
import { spawnSync } from 'node:child_process';
import { readFileSync, statSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { ModelPool, OllamaChatModel } from '@ccagent/models';
import { machineInfo, writeResults } from '../lib/results.mjs';

const { values: flags } = parseArgs({
  options: {
    tasks: { type: 'string', default: '4' },
    calls: { type: 'string', default: '3' },
    ports: { type: 'string', default: '56434,56435' },
    json: { type: 'boolean', default: false },
  },
});
const TASKS = Number(flags.tasks);
const CALLS = Number(flags.calls);
const PORTS = flags.ports.split(',').map(Number);
if (PORTS.length !== 2) throw new Error('--ports takes two ports');
const SCRIPT = path.join(path.dirname(fileURLToPath(import.meta.url)), '../../ollama-test-server.sh');
const CACHE = path.join(process.env.XDG_CACHE_HOME ?? path.join(os.homedir(), '.cache'), 'ccagent/ollama');
const logOf = (port) => path.join(CACHE, port === 56434 ? 'server.log' : `server-${port}.log`);

async function answers(url) {
  try {
    return (await fetch(`${url}/api/version`, { signal: AbortSignal.timeout(1000) })).ok;
  } catch {
    return false;
  }
}

/** Start (or find) the server on `port` with the script; `started` says whether this run must stop it. */
async function server(port) {
  const url = `http://127.0.0.1:${port}`;
  const already = await answers(url);
  const r = spawnSync('bash', [SCRIPT, '--export'], {
    encoding: 'utf8',
    stdio: ['ignore', 'pipe', 'inherit'],
    env: { ...process.env, CCAGENT_OLLAMA_PORT: String(port) },
  });
  const model = /CCAGENT_TEST_OLLAMA_MODEL=(\S+)/.exec(r.stdout ?? '')?.[1];
  const version = /CCAGENT_TEST_OLLAMA_VERSION=(\S+)/.exec(r.stdout ?? '')?.[1];
  if (r.status !== 0 || !model) throw new Error(`tools/ollama-test-server.sh failed for port ${port}`);
  return { port, url, model, version, started: !already, log: logOf(port) };
}

function stop(s) {
  spawnSync('bash', [SCRIPT, '--stop'], {
    stdio: 'inherit',
    env: { ...process.env, CCAGENT_OLLAMA_PORT: String(s.port) },
  });
}

/** Prompt and cached tokens the server logged since `offset`. */
function cacheSince(log, offset) {
  const text = readFileSync(log, 'utf8').slice(offset);
  let prompt = 0;
  let used = 0;
  for (const m of text.matchAll(/loading cache slot.*?prompt=(\d+) used=(\d+)/g)) {
    prompt += Number(m[1]);
    used += Number(m[2]);
  }
  return { prompt, used };
}

// A shared system prompt (~2,000 characters), a request per task, then per call the reply and a tool result.
const SYSTEM = Array.from(
  { length: 24 },
  (_, i) => `Rule ${i}: keep the computer safe and explain each step you take.`,
).join('\n');
const toolResult = (task, call) => `output ${task}.${call}: ${'line of program output 12345 '.repeat(8)}`;

async function run(label, servers, poolOptions, kill) {
  const offsets = servers.map((s) => statSync(s.log).size);
  const enqueued = new WeakMap();
  const waits = [];
  let promptEvalNs = 0;
  const pool = new ModelPool({
    servers: servers.map((s) => {
      const adapter = new OllamaChatModel({ host: s.url, retry: { retries: 0 }, timeoutMs: 300_000 });
      return {
        name: s.url,
        concurrency: 1,
        model: {
          provider: adapter.provider,
          chat: async (request) => {
            const t0 = enqueued.get(request.messages);
            if (t0 !== undefined) waits.push(performance.now() - t0);
            const answer = await adapter.chat(request);
            promptEvalNs += answer.usage?.promptEvalDurationNs ?? 0;
            return answer;
          },
          checkModels: (names, o) => adapter.checkModels(names, o),
        },
      };
    }),
    models: [servers[0].model],
    probeIntervalMs: 0,
    probeBackoffMs: 60_000,
    ...poolOptions,
  });
  let finished = 0;
  let failedCalls = 0;
  const started = performance.now();
  const task = async (t) => {
    const messages = [
      { role: 'system', content: SYSTEM },
      {
        role: 'user',
        content: `Task ${t}: write program ${t}.lua that prints its own number, then test it.`,
      },
    ];
    for (let c = 0; c < CALLS; c += 1) {
      const request = {
        model: servers[0].model,
        messages: [...messages],
        options: { temperature: 0, numPredict: 16, numCtx: 8192 },
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
      messages.push({ role: 'assistant', content: answer.message.content });
      messages.push({ role: 'user', content: toolResult(t, c) });
    }
    finished += 1;
  };
  let killTimer;
  if (kill) killTimer = setTimeout(() => stop(servers[1]), kill.afterMs);
  await Promise.all(Array.from({ length: TASKS }, (_, t) => task(t)));
  clearTimeout(killTimer);
  const makespanS = (performance.now() - started) / 1000;
  const snap = pool.snapshot();
  pool.close();
  const cache = servers.map((s, i) => cacheSince(s.log, offsets[i]));
  const prompt = cache.reduce((a, x) => a + x.prompt, 0);
  const used = cache.reduce((a, x) => a + x.used, 0);
  waits.sort((a, b) => a - b);
  return {
    label,
    servers: servers.length,
    makespanS,
    p95WaitMs: waits[Math.min(waits.length - 1, Math.floor(waits.length * 0.95))] ?? 0,
    cacheReuse: prompt === 0 ? 0 : used / prompt,
    promptTokens: prompt,
    promptEvalS: promptEvalNs / 1e9,
    finished,
    failedCalls,
    failovers: snap.servers.reduce((a, x) => a + x.failovers, 0),
    callsPerServer: snap.servers.map((x) => x.calls),
  };
}

const servers = [];
const rows = [];
try {
  for (const port of PORTS) servers.push(await server(port));
  const [a, b] = servers;
  if (a.model !== b.model) throw new Error(`the servers serve different models (${a.model}, ${b.model})`);
  // Load the model on both (not timed).
  for (const s of servers) {
    await new OllamaChatModel({ host: s.url, timeoutMs: 600_000 }).chat({
      model: s.model,
      messages: [{ role: 'user', content: 'hi' }],
      options: { numPredict: 1 },
    });
  }
  const one = await run('one server (baseline)', [a], {});
  rows.push(one);
  rows.push(await run('2 servers, pool (affinity)', [a, b], {}));
  rows.push(
    await run('2 servers, round-robin, no affinity', [a, b], { affinity: false, placement: 'round-robin' }),
  );
  // Last: the second server is stopped a third of the way in and stays down.
  rows.push(
    await run(
      '2 servers, pool, server 2 stopped mid-run',
      [a, b],
      {},
      { afterMs: (rows[1].makespanS * 1000) / 3 },
    ),
  );
  const fmt = (r) => ({
    run: r.label,
    'makespan s': r.makespanS.toFixed(2),
    '× one server': (r.makespanS / one.makespanS).toFixed(2),
    'p95 queue wait ms': Math.round(r.p95WaitMs),
    'cache reuse': r.cacheReuse.toFixed(3),
    'prompt eval s': r.promptEvalS.toFixed(2),
    'calls per server': r.callsPerServer.join('/'),
    'tasks done': `${r.finished}/${TASKS}`,
    failovers: r.failovers,
  });
  const info = { model: a.model, version: a.version, ports: PORTS, tasks: TASKS, calls: CALLS };
  if (flags.json) console.log(JSON.stringify({ ...info, rows, machine: machineInfo() }, null, 2));
  else {
    console.log(
      `model pool on two real Ollama ${a.version} servers (${a.model}, a tiny model on the CPU): ${TASKS} tasks × ${CALLS} calls, 1 call per server at a time`,
    );
    console.table(rows.map(fmt));
  }
  writeResults('model-pool-real', { ...info, rows, machine: machineInfo() });
} finally {
  for (const s of servers) if (s.started) stop(s);
}
