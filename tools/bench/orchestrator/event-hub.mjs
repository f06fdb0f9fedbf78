#!/usr/bin/env node
// The event hub behind GET /api/events (apps/orchestrator/src/http/event-hub.ts), alone, in this process (not part of
// `npm test`). Run `npm run build` first (the hub's imports, @ccagent/protocol and @ccagent/engine, come from dist).
//
//   node tools/bench/orchestrator/event-hub.mjs [--quick] [--records N] [--rounds N] [--subscribers N] [--src FILE]
//
// What it measures: the cost of publishing one `task`-sized record, per record (ns), p50 over `--rounds` rounds of
// `--records` records (default 200,000 × 7; `--quick` 20,000 × 3), with no subscriber and with `--subscribers` (default 1) readers on real
// loopback sockets that read everything. Raw baseline of the same round: the same records pushed on a bare array
// trimmed to the same 4,096 entries by a ring index (no formatting), and — for the case with readers — the same
// records' JSON written to the same number of sockets by hand (JSON.stringify + res.write, no buffer, no ids). The
// report gives each measure and its ratio to its baseline; rounds alternate hub and baseline.
// `--src` names the hub's source (default the working tree's), e.g. a copy of another revision's, for an A/B.
// Writes tools/bench/results/event-hub.json.
import { mkdirSync, rmSync } from 'node:fs';
import { createServer } from 'node:http';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { pathToFileURL } from 'node:url';
import { build } from 'esbuild';
import { machineInfo, RESULTS_DIR, writeResults } from '../lib/results.mjs';
import { fmt, percentile, printTable } from '../lib/stats.mjs';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    records: { type: 'string' },
    rounds: { type: 'string' },
    subscribers: { type: 'string', default: '1' },
    src: { type: 'string' },
  },
});
const RECORDS = Number(flags.records ?? (flags.quick ? 20_000 : 200_000));
const ROUNDS = Number(flags.rounds ?? (flags.quick ? 3 : 7));
const SUBS = Number(flags.subscribers);
const root = path.resolve(path.dirname(new URL(import.meta.url).pathname), '../../..');
const src = path.resolve(flags.src ?? path.join(root, 'apps/orchestrator/src/http/event-hub.ts'));

// The hub's TypeScript, bundled with its relative imports; packages stay imports of the built workspace packages
// (so the bundle is written inside the repository, where they resolve).
mkdirSync(RESULTS_DIR, { recursive: true });
const out = path.join(RESULTS_DIR, `.event-hub-${process.pid}.mjs`);
await build({
  entryPoints: [src],
  bundle: true,
  platform: 'node',
  format: 'esm',
  packages: 'external',
  outfile: out,
  logLevel: 'error',
});
const { EventHub } = await import(pathToFileURL(out).href);
rmSync(out);

/** A `task` record as the engine publishes it (the list's columns). */
function record(i) {
  return {
    id: `task-${i % 1000}`,
    kind: 'general',
    status: 'running',
    client_id: `computer-${i % 50}`,
    prompt: 'dig a 3x3 tunnel forward 20 blocks and come back',
    prompt_truncated: false,
    counters: { steps: i % 97, tool_calls: i % 31, questions: 0 },
    created_at: 1_700_000_000_000,
    updated_at: 1_700_000_000_000 + i,
  };
}
const data = Array.from({ length: 4096 }, (_, i) => record(i));

/** `n` readers of a server whose handler is `onReq`, reading and discarding everything. */
async function readers(n, onReq) {
  const server = createServer(onReq);
  await new Promise((r) => server.listen(0, '127.0.0.1', r));
  const port = server.address().port;
  const ctls = [];
  const bytes = { n: 0 };
  for (let i = 0; i < n; i++) {
    const ctl = new AbortController();
    ctls.push(ctl);
    const res = await fetch(`http://127.0.0.1:${port}/`, { signal: ctl.signal });
    void (async () => {
      try {
        for await (const chunk of res.body) bytes.n += chunk.length;
      } catch {
        // aborted at the end
      }
    })();
  }
  return {
    bytes,
    close: async () => {
      for (const c of ctls) c.abort();
      server.closeAllConnections();
      await new Promise((r) => server.close(r));
    },
  };
}

/** ns per record of `fn(i)` over RECORDS records; yields to the event loop every 1,000 so sockets drain. */
async function time(fn) {
  let busy = 0n;
  for (let i = 0; i < RECORDS; i += 1000) {
    const s = process.hrtime.bigint();
    const end = Math.min(RECORDS, i + 1000);
    for (let j = i; j < end; j++) fn(j);
    busy += process.hrtime.bigint() - s;
    await new Promise((r) => setImmediate(r));
  }
  return Number(busy) / RECORDS;
}

async function hubRound(subscribers) {
  const hub = new EventHub(Date.now(), 3_600_000);
  const r = subscribers > 0 ? await readers(subscribers, (req, res) => hub.subscribe(res)) : undefined;
  const ns = await time((i) => hub.publish('task', data[i & 4095], data[i & 4095].id));
  hub.close();
  await r?.close();
  return ns;
}

async function rawRound(subscribers) {
  const ring = new Array(4096);
  let head = 0;
  const socks = [];
  const r =
    subscribers > 0
      ? await readers(subscribers, (req, res) => {
          res.writeHead(200, { 'content-type': 'text/event-stream' });
          res.write(': open\n\n');
          socks.push(res);
        })
      : undefined;
  while (socks.length < subscribers) await new Promise((x) => setImmediate(x));
  const ns = await time((i) => {
    const d = data[i & 4095];
    ring[head] = d;
    head = (head + 1) & 4095;
    if (socks.length > 0) {
      const text = `data: ${JSON.stringify(d)}\n\n`;
      for (const s of socks) s.write(text);
    }
  });
  for (const s of socks) s.end();
  await r?.close();
  return ns;
}

const results = { none: { hub: [], raw: [] }, readers: { hub: [], raw: [] } };
// A warm-up round of each, not counted.
await hubRound(0);
await rawRound(0);
for (let k = 0; k < ROUNDS; k++) {
  const order = k % 2 === 0 ? ['hub', 'raw'] : ['raw', 'hub'];
  for (const which of order) {
    results.none[which].push(await (which === 'hub' ? hubRound(0) : rawRound(0)));
    results.readers[which].push(await (which === 'hub' ? hubRound(SUBS) : rawRound(SUBS)));
  }
}
const rows = [];
const report = {};
for (const [key, label] of [
  ['none', 'no subscriber'],
  ['readers', `${SUBS} subscriber(s) on loopback`],
]) {
  const hub = percentile(results[key].hub, 50);
  const raw = percentile(results[key].raw, 50);
  const ratios = results[key].hub.map((h, i) => h / results[key].raw[i]);
  report[key] = { hub_ns: hub, raw_ns: raw, ratio_median: percentile(ratios, 50), rounds: results[key] };
  rows.push([label, fmt(hub, 0), fmt(raw, 0), fmt(hub / raw, 2), fmt(percentile(ratios, 50), 2)]);
}
console.log(
  `event hub: ns per published record, p50 of ${ROUNDS} rounds of ${RECORDS.toLocaleString('en-US')}`,
);
printTable(['case', 'hub ns', 'raw ns', 'ratio', 'median paired ratio'], rows);
writeResults('event-hub', {
  machine: machineInfo(),
  records: RECORDS,
  rounds: ROUNDS,
  subscribers: SUBS,
  src: path.relative(root, src),
  ...report,
});
