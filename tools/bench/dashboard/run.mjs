#!/usr/bin/env node
// The web dashboard in a real browser (not part of `npm test`): Debian's Chromium driven by playwright-core (headless,
// fresh profile, no network but loopback) against the BUILT `cc-orchestrator serve` on 127.0.0.1. Run
// `npm run build` first.
//
//   node tools/bench/dashboard/run.mjs [--quick] [--tasks N] [--steps N] [--live N] [--loads N] [--baseline REF]
//                                      [--paint-only | --live-only]
//
// Defaults: 10,000 tasks, a task of 5,000 step-log records, 200 live records, 5 page loads per measure (`--quick`:
// 1,000 / 500 / 100 / 3). The database is seeded through @ccagent/store before the server starts (seed.mjs).
//
// What it measures:
// - First meaningful paint (ms after navigation start, cache emptied before each load): of the task list (the first
//   row with a task in it painted) and of a task page (its status and the first timeline rows painted — or, in the
//   conversation view, the task's default view, its first replies), for the large task and a small one; and the time
//   until the large task's whole timeline, and its whole conversation, is loaded. "Painted" is the start of the
//   animation frame after the element entered the DOM (a MutationObserver installed before the page's own script,
//   then requestAnimationFrame). Raw baseline of the same load: the same requests the page made before that paint,
//   replayed one after the other from Node over loopback (bytes on the wire, no parsing, no rendering).
// - The longest main-thread task (Long Tasks API) during each load: what a click would wait for at worst.
// - Jumping to the far end: the list scrolled to its last row (the oldest task, its page fetched) and the large
//   task's timeline scrolled to its first record, until the row is painted.
// - Live: a task runs (scripted fake model, a simulated computer on a real WebSocket) with its page open; for each new
//   step-log record, the time from its `at` (the engine's clock as it commits the record) to the frame that paints its
//   row, p50/p95 over `--live` records. Raw baselines of the same records: the same record's `step` event arriving
//   over GET /api/events in the same browser (an EventSource, nothing rendered) and in Node.
// - The shipped bundle: every file of dist/dashboard, raw and gzip (level 9, as the server sends it), and what is left
//   of its budget (bundle.mjs prints the same alone, in a second, and where the bytes come from with `--modules`).
// - `--baseline REF` (e.g. `main`): an A/B of first paint in the same run. The dashboard of git REF is built and served
//   by a copy of the same built orchestrator over a copy of the same seeded database (baseline.mjs); each round loads
//   every page on both, interleaved (the order alternates), and the report gives both medians and their ratio.
// - `--pages list,conversation,…` loads only those pages (keys of PAGES below) in the paint measure.
// - `--paint-only` skips the jumps and the live run; `--live-only` runs only the live run.
// - `--profile-live FILE`: a CPU profile of the live page's renderer (CDP Profiler) over the live run, written to FILE
//   (summarise it with tools/bench/lib/cpuprofile-top.mjs).
// Writes tools/bench/results/dashboard.json.
import { copyFileSync, existsSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startFakeOllama } from '@ccagent/testkit';
import { chromium } from 'playwright-core';
import { SimulatedComputer } from '../lib/bench-clients.mjs';
import { ORCHESTRATOR_BIN, startOrchestrator } from '../lib/procs.mjs';
import { machineInfo, writeResults } from '../lib/results.mjs';
import { fmt, percentile, printTable, sleep } from '../lib/stats.mjs';
import { prepareBaseline } from './baseline.mjs';
import { BUDGET, bundleOf, total } from './bundle.mjs';
import { seedDashboardDb } from './seed.mjs';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    tasks: { type: 'string' },
    steps: { type: 'string' },
    live: { type: 'string' },
    loads: { type: 'string' },
    baseline: { type: 'string' },
    'paint-only': { type: 'boolean', default: false },
    'live-only': { type: 'boolean', default: false },
    'profile-live': { type: 'string' },
    pages: { type: 'string' },
  },
});
const QUICK = flags.quick;
const TASKS = Number(flags.tasks ?? (QUICK ? 1000 : 10_000));
const STEPS = Number(flags.steps ?? (QUICK ? 500 : 5000));
const LIVE = Number(flags.live ?? (QUICK ? 100 : 200));
const LOADS = Number(flags.loads ?? (QUICK ? 3 : 5));
for (const [k, v] of Object.entries({ TASKS, STEPS, LIVE, LOADS }))
  if (!Number.isInteger(v) || v < 1) throw new Error(`--${k.toLowerCase()} is a positive integer`);
const PAINT = !flags['live-only'];
const LIVE_RUN = !flags['paint-only'];
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const MODEL = 'qwen3:8b';
const MODEL_LATENCY_MS = 80;

// ------------------------------------------------------------------------------------------ the bundle

const dashDir = path.join(path.dirname(ORCHESTRATOR_BIN), 'dashboard');
const bundle = bundleOf(dashDir);
const bundleTotal = total(bundle);

// ------------------------------------------------------------------------------------------ seed and serve

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ccagent-bench-dash-'));
const db = path.join(tmp, 'dash.db');
console.error(`[dashboard] seeding ${TASKS} tasks and one of ${STEPS} records…`);
const seeded = await seedDashboardDb(db, { tasks: TASKS, steps: STEPS });
console.error(`[dashboard] seeded in ${(seeded.ms / 1000).toFixed(1)} s`);
const SMALL_ID = 'seed-00001';

const live = { go: false, finishing: false, turns: 0 };
const fake = await startFakeOllama({ installed: [MODEL], recordRequests: false });
fake.script(MODEL, () => {
  if (live.finishing) return { content: 'All done.', fault: { latencyMs: MODEL_LATENCY_MS } };
  live.turns++;
  return {
    content: live.turns % 5 === 0 ? `Turn ${live.turns}: the next block.` : '',
    toolCalls: [{ name: 'noop', arguments: { turn: live.turns } }],
    fault: { latencyMs: MODEL_LATENCY_MS },
  };
});
const BIG = 1_000_000_000;
const serverConfig = {
  models: { native: { name: MODEL, timeoutMs: 60_000 } },
  taskKinds: {
    general_agent: {
      maxIterations: BIG,
      budgets: { maxSteps: BIG, maxToolCalls: BIG, deadlineMs: 3_600_000 },
    },
  },
  server: { rateLimit: { messagesPerSecond: 1_000_000, burst: 1_000_000 } },
};
// The baseline server (--baseline) gets its own copy of the seeded file, taken before either server opens one.
let baseline;
let baseServer;
if (flags.baseline !== undefined) {
  console.error(`[dashboard] building the dashboard of ${flags.baseline} for the A/B…`);
  baseline = await prepareBaseline(flags.baseline);
  baseline.files = bundleOf(baseline.dashboardDir);
  const dbB = path.join(tmp, 'dash-baseline.db');
  for (const ext of ['', '-wal', '-shm']) if (existsSync(db + ext)) copyFileSync(db + ext, dbB + ext);
  baseServer = await startOrchestrator({
    db: dbB,
    config: serverConfig,
    ollamaUrl: fake.url,
    bin: baseline.bin,
  });
}
const server = await startOrchestrator({ db, config: serverConfig, ollamaUrl: fake.url });
const stopAll = async () => {
  await server.stop();
  await baseServer?.stop();
  baseline?.cleanup();
  await fake.close();
};

/** The CC computer of the live run: holds the task's first command until `release()`, then answers each at once. */
class LiveComputer extends SimulatedComputer {
  constructor(url) {
    super(url, 'bench-pc');
    this.held = [];
    this.released = false;
    this.taskId = new Promise((resolve) => (this.gotTask = resolve));
    this.done = new Promise((resolve) => (this.finish = resolve));
  }
  createTask() {
    this.send({
      type: 'create_task',
      request_id: 'dash-live',
      task_kind: 'general_agent',
      client_id: this.clientId,
      prompt: 'Work through the blocks one noop at a time.',
      allowed_commands: [],
    });
  }
  answer(m) {
    this.send({
      type: 'command_result',
      task_id: m.task_id,
      call_id: m.call_id,
      ok: true,
      result: { ok: true },
    });
  }
  release() {
    this.released = true;
    for (const m of this.held.splice(0)) this.answer(m);
  }
  onServerMessage(m) {
    if (m.type === 'command_call') {
      this.gotTask(m.task_id);
      if (this.released) this.answer(m);
      else this.held.push(m);
    } else if (m.type === 'task_completed' || m.type === 'task_failed') this.finish(m);
  }
  onClosed() {
    this.finish({ type: 'connection_closed' });
  }
}

/** A Node reader of GET /api/events: every `step` record's arrival time (Date.now()) by seq, for one task. */
function nodeEvents(url, taskId) {
  const ctl = new AbortController();
  const arrivals = new Map();
  const ready = (async () => {
    const res = await fetch(`${url}/api/events?task=${encodeURIComponent(taskId)}`, {
      headers: { accept: 'text/event-stream' },
      signal: ctl.signal,
    });
    const reader = res.body.pipeThrough(new TextDecoderStream()).getReader();
    let buf = '';
    void (async () => {
      try {
        for (;;) {
          const { value, done } = await reader.read();
          if (done) return;
          const now = Date.now();
          buf += value;
          let cut;
          while ((cut = buf.indexOf('\n\n')) >= 0) {
            const rec = buf.slice(0, cut);
            buf = buf.slice(cut + 2);
            if (!/^event: step$/m.test(rec)) continue;
            const data = JSON.parse(/^data: (.*)$/m.exec(rec)[1]);
            if (data.task_id === taskId && !arrivals.has(data.seq))
              arrivals.set(data.seq, { at: data.at, now, kind: data.kind });
          }
        }
      } catch {
        // aborted at the end
      }
    })();
  })();
  return { arrivals, ready, close: () => ctl.abort() };
}

// ------------------------------------------------------------------------------------------ the browser

/** Installed before the page's own script: paint marks, long tasks, and the live rows' first paint. */
function instrument() {
  const b = {
    marks: {},
    longTasks: [],
    track: false,
    minSeq: 0,
    rows: new Map(),
    sse: new Map(),
    fetches: [],
    total: undefined,
  };
  window.__bench = b;
  try {
    new PerformanceObserver((l) => {
      for (const e of l.getEntries()) b.longTasks.push(e.duration);
    }).observe({ type: 'longtask', buffered: true });
  } catch {
    // no Long Tasks API
  }
  // The timeline's reads of new records (wall-clock start and end), to split the dashboard's part of the live delay.
  new PerformanceObserver((l) => {
    for (const e of l.getEntries()) {
      const m = /\/steps\?.*after_seq=(\d+)/.exec(e.name);
      if (m)
        b.fetches.push({
          after: Number(m[1]),
          start: performance.timeOrigin + e.startTime,
          end: performance.timeOrigin + e.responseEnd,
        });
    }
  }).observe({ type: 'resource', buffered: true });
  const paint = (name) => {
    b.marks[name] = null;
    requestAnimationFrame(() => (b.marks[name] = performance.now()));
  };
  const check = () => {
    if (b.marks.list === undefined && document.querySelector('.task-row[data-task-id]')) paint('list');
    // A task page is painted when its status and the first rows of its view are: timeline rows, or the replies of
    // the conversation (the default view).
    if (
      b.marks.task === undefined &&
      document.querySelector('[data-testid="task-status"]') &&
      document.querySelector('.step-row, .msg.reply')
    )
      paint('task');
    if (b.total !== undefined && b.marks.all === undefined) {
      const h = document.getElementById('timeline-h')?.textContent ?? '';
      if (h.includes(`(${b.total.toLocaleString('en-US')} records)`)) paint('all');
      if (document.querySelector('.conversation[data-loaded="true"]')) paint('all');
    }
    if (b.waitFor !== undefined && b.marks.found === undefined && document.querySelector(b.waitFor))
      paint('found');
    if (b.track) {
      const fresh = [];
      for (const el of document.querySelectorAll('.step-row[data-seq]')) {
        const seq = Number(el.getAttribute('data-seq'));
        if (seq > b.minSeq && !b.rows.has(seq)) {
          b.rows.set(seq, null);
          fresh.push([seq, Number(el.getAttribute('data-at')), el]);
        }
      }
      if (fresh.length > 0)
        requestAnimationFrame(() => {
          const now = Date.now();
          for (const [seq, at, el] of fresh) {
            const r = el.getBoundingClientRect();
            b.rows.set(seq, { at, now, inView: r.top >= 0 && r.bottom <= window.innerHeight });
          }
        });
    }
  };
  new MutationObserver(check).observe(document, {
    subtree: true,
    childList: true,
    characterData: true,
    attributes: true,
    attributeFilter: ['data-seq', 'data-task-id'],
  });
}

const profile = mkdtempSync(path.join(os.tmpdir(), 'ccagent-bench-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: [
    '--no-sandbox',
    '--disable-background-networking',
    '--disable-component-update',
    '--disable-gpu',
    '--disable-sync',
    '--no-first-run',
  ],
  viewport: { width: 1280, height: 900 },
});
await context.addInitScript(instrument);

/** Replay `urls` from Node one after the other (gzip accepted, bodies read): the raw cost of the same bytes. */
async function replay(urls) {
  const t0 = performance.now();
  for (const u of urls) {
    const res = await fetch(u, { headers: { 'accept-encoding': 'gzip' } });
    await res.arrayBuffer();
  }
  return performance.now() - t0;
}

/**
 * Load `hash` in a new page with the cache emptied, wait for mark `mark` (and `extra` marks), and return the marks,
 * the longest main-thread task and the raw replay of the requests the page made before the mark.
 */
async function load(hash, mark, { total, extra = [], base = server.url } = {}) {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.clearBrowserCache');
  await cdp.send('Performance.enable', { timeDomain: 'threadTicks' });
  const requests = [];
  page.on('request', (r) => requests.push({ url: r.url(), wall: Date.now() }));
  await page.goto(`${base}/#${hash}`, { waitUntil: 'commit' });
  if (total !== undefined) await page.evaluate((n) => (window.__bench.total = n), total);
  await page.waitForFunction((k) => typeof window.__bench.marks[k] === 'number', mark, { timeout: 120_000 });
  // The renderer's main-thread CPU until the mark (read just after it): script, style recalculation, layout.
  const metrics = Object.fromEntries(
    (await cdp.send('Performance.getMetrics')).metrics.map((m) => [m.name, m.value * 1000]),
  );
  const cpu = {
    script: metrics.ScriptDuration,
    style: metrics.RecalcStyleDuration,
    layout: metrics.LayoutDuration,
    task: metrics.TaskDuration,
  };
  for (const m of extra)
    await page.waitForFunction((k) => typeof window.__bench.marks[k] === 'number', m, { timeout: 120_000 });
  const r = await page.evaluate(() => ({
    marks: window.__bench.marks,
    origin: performance.timeOrigin,
    longest: Math.max(0, ...window.__bench.longTasks),
    fcp: performance.getEntriesByName('first-contentful-paint')[0]?.startTime,
  }));
  const paintWall = r.origin + r.marks[mark];
  const before = requests
    .filter((q) => q.wall <= paintWall && !q.url.includes('/api/events') && !q.url.includes('/screen/stream'))
    .map((q) => q.url);
  const raw = await replay(before);
  await cdp.detach();
  return { page, ...r, raw, requests: before.length, cpu };
}

const sum = (xs) => ({
  median: percentile(xs, 50),
  min: Math.min(...xs),
  max: Math.max(...xs),
});

const PAGES = [
  { key: 'list', hash: '/tasks', mark: 'list' },
  // The conversation view (the default task view) of the large task and of a small one.
  { key: 'conversation', hash: `/tasks/${seeded.bigId}`, mark: 'task', total: STEPS, extra: ['all'] },
  { key: 'smallConversation', hash: `/tasks/${SMALL_ID}`, mark: 'task' },
  { key: 'large', hash: `/tasks/${seeded.bigId}/timeline`, mark: 'task', total: STEPS, extra: ['all'] },
  { key: 'small', hash: `/tasks/${SMALL_ID}/timeline`, mark: 'task' },
];
const wanted = flags.pages?.split(',');
const variants = [{ name: 'new', url: server.url }];
if (baseServer) variants.push({ name: 'old', url: baseServer.url });
const emptyLoads = () => Object.fromEntries(PAGES.map((p) => [p.key, []]));
const loadsOf = Object.fromEntries(variants.map((v) => [v.name, emptyLoads()]));
const loads = loadsOf.new;
try {
  if (PAINT) {
    // Warm each server's own caches and JIT once (not counted).
    for (const v of variants) (await load('/tasks', 'list', { base: v.url })).page.close();
    for (let i = 0; i < LOADS; i++) {
      for (const [n, p] of PAGES.entries()) {
        if (wanted !== undefined && !wanted.includes(p.key)) continue;
        // Interleaved: the two builds load the same page back to back, first one then the other in turn.
        const order = (i + n) % 2 === 0 ? variants : [...variants].reverse();
        for (const v of order) {
          const l = await load(p.hash, p.mark, { total: p.total, extra: p.extra, base: v.url });
          loadsOf[v.name][p.key].push({
            ms: l.marks[p.mark],
            all: l.marks.all,
            raw: l.raw,
            longest: l.longest,
            fcp: l.fcp,
            requests: l.requests,
            cpu: l.cpu,
          });
          await l.page.close();
        }
      }
    }
  }
} catch (err) {
  await context.close();
  await stopAll();
  throw err;
}

// Jump to the far end of both lists.
const jumps = {};
if (PAINT && LIVE_RUN) {
  const oldest = `seed-${String(0).padStart(5, '0')}`;
  const l = await load('/tasks', 'list');
  await l.page.evaluate((id) => {
    window.__bench.waitFor = `.task-row[data-task-id="${id}"]`;
    window.__bench.marks.found = undefined;
    window.__bench.jumpAt = performance.now();
    const el = document.getElementById('task-list');
    el.scrollTop = el.scrollHeight;
  }, oldest);
  await l.page.waitForFunction(() => typeof window.__bench.marks.found === 'number', null, {
    timeout: 60_000,
  });
  jumps.listEnd = await l.page.evaluate(() => window.__bench.marks.found - window.__bench.jumpAt);
  await l.page.close();
  const t = await load(`/tasks/${seeded.bigId}/timeline`, 'task', { total: STEPS, extra: ['all'] });
  await t.page.evaluate(() => {
    window.__bench.waitFor = '.step-row[data-seq="1"]';
    window.__bench.marks.found = undefined;
    window.__bench.jumpAt = performance.now();
    document.getElementById('timeline').scrollTop = 0;
  });
  await t.page.waitForFunction(() => typeof window.__bench.marks.found === 'number', null, {
    timeout: 60_000,
  });
  jumps.timelineStart = await t.page.evaluate(() => window.__bench.marks.found - window.__bench.jumpAt);
  await t.page.close();
}

// ------------------------------------------------------------------------------------------ live

/** The live run (see the header): a task runs with its timeline open; each new record's way to its painted row. */
async function runLive() {
  const computer = new LiveComputer(server.url);
  await computer.connect();
  computer.createTask();
  const liveId = await computer.taskId;
  const nodeSse = nodeEvents(server.url, liveId);
  await nodeSse.ready;
  const page = await context.newPage();
  await page.goto(`${server.url}/#/tasks/${encodeURIComponent(liveId)}/timeline`);
  await page.waitForSelector('[data-testid="live-state"]:text("live")');
  await page.waitForSelector('.step-row');
  // The timeline's end on screen (the page scrolls when the task's header is tall).
  await page.evaluate(() => document.getElementById('timeline').scrollIntoView({ block: 'end' }));
  const before = await page.evaluate(() => {
    const seqs = [...document.querySelectorAll('.step-row[data-seq]')].map((e) =>
      Number(e.getAttribute('data-seq')),
    );
    return Math.max(0, ...seqs);
  });
  await page.evaluate(
    ({ minSeq, id }) => {
      const b = window.__bench;
      b.minSeq = minSeq;
      b.track = true;
      const es = new EventSource(`/api/events?task=${encodeURIComponent(id)}`);
      es.addEventListener('step', (e) => {
        const now = Date.now();
        const d = JSON.parse(e.data);
        if (d.task_id === id && !b.sse.has(d.seq)) b.sse.set(d.seq, { at: d.at, now });
      });
      window.__benchEs = es;
      return new Promise((resolve) => es.addEventListener('open', resolve, { once: true }));
    },
    { minSeq: before, id: liveId },
  );
  let profiler;
  if (flags['profile-live'] !== undefined) {
    profiler = await context.newCDPSession(page);
    await profiler.send('Profiler.enable');
    await profiler.send('Profiler.setSamplingInterval', { interval: 200 });
    await profiler.send('Profiler.start');
  }
  const liveT0 = Date.now();
  computer.release();
  for (;;) {
    const fresh = [...nodeSse.arrivals].filter(([s, a]) => s > before && a.kind !== 'model_request').length;
    if (fresh >= LIVE) break;
    if (Date.now() - liveT0 > 180_000) throw new Error(`live run: only ${fresh} records in 3 min`);
    await sleep(50);
  }
  live.finishing = true;
  const outcome = await Promise.race([computer.done, sleep(60_000).then(() => ({ type: 'timeout' }))]);
  await sleep(1000);
  const seen = await page.evaluate(() => ({
    rows: [...window.__bench.rows].filter(([, v]) => v !== null),
    sse: [...window.__bench.sse],
    fetches: window.__bench.fetches,
    longest: Math.max(0, ...window.__bench.longTasks),
  }));
  if (profiler) {
    const { profile: cpu } = await profiler.send('Profiler.stop');
    writeFileSync(flags['profile-live'], JSON.stringify(cpu));
    await profiler.detach();
  }
  nodeSse.close();
  computer.terminate();
  await page.close();

  // Only the records committed after the page was tracking and before the task ended: those the Node reader saw.
  const shown = new Map(seen.rows);
  const inPage = new Map(seen.sse);
  const lat = {
    shown: [],
    browserSse: [],
    nodeSse: [],
    overhead: [],
    fetchWait: [],
    fetch: [],
    render: [],
    fetchesPerRecord: [],
  };
  const fetches = [...seen.fetches].sort((x, y) => x.start - y.start);
  let missing = 0;
  let outOfView = 0;
  let requests = 0;
  for (const [seq, a] of nodeSse.arrivals) {
    if (seq <= before) continue;
    // A model_request record is hidden once its call's record is there (like tasks show): not a row to wait for.
    if (a.kind === 'model_request') {
      requests++;
      continue;
    }
    lat.nodeSse.push(a.now - a.at);
    const b = inPage.get(seq);
    if (b) lat.browserSse.push(b.now - b.at);
    const s = shown.get(seq);
    if (s) lat.shown.push(s.now - s.at);
    else missing++;
    if (s && !s.inView) outOfView++;
    if (s && b) lat.overhead.push(s.now - b.now);
    // The read that brought the record: the first read of records after an earlier seq that started once the record
    // was committed. Its wait (from the browser's event), its own time, and the time from its end to the paint.
    const f = fetches.find((x) => x.after < seq && x.start >= a.at);
    if (s && b && f) {
      lat.fetchWait.push(f.start - b.now);
      lat.fetch.push(f.end - f.start);
      lat.render.push(s.now - f.end);
    }
  }
  const liveFetches = fetches.filter((x) => x.after >= before);
  lat.fetchesPerRecord = liveFetches.length / Math.max(1, lat.nodeSse.length);
  const q = (xs) => ({
    n: xs.length,
    p50: percentile(xs, 50),
    p95: percentile(xs, 95),
    max: Math.max(...xs),
  });
  const liveStats = {
    records: lat.nodeSse.length,
    seconds: (Date.now() - liveT0) / 1000,
    outcome: outcome.type,
    modelLatencyMs: MODEL_LATENCY_MS,
    shown: q(lat.shown),
    browserSse: q(lat.browserSse),
    nodeSse: q(lat.nodeSse),
    overhead: q(lat.overhead),
    fetchWait: q(lat.fetchWait),
    fetch: q(lat.fetch),
    render: q(lat.render),
    reads: liveFetches.length,
    notShown: missing,
    paintedOutOfView: outOfView,
    modelRequestsSkipped: requests,
    longestTaskMs: seen.longest,
  };
  return { liveStats, missing, outOfView, requests, outcome };
}

let liveRun;
try {
  if (LIVE_RUN) liveRun = await runLive();
} finally {
  await context.close();
  rmSync(profile, { recursive: true, force: true });
  await stopAll();
  rmSync(tmp, { recursive: true, force: true });
}

// ------------------------------------------------------------------------------------------ report

const paint = (name, xs, key = 'ms') => {
  const ms = sum(xs.map((x) => x[key]));
  const raw = sum(xs.map((x) => x.raw));
  return {
    name,
    ms,
    raw,
    ratio: ms.median / raw.median,
    longestTask: sum(xs.map((x) => x.longest)),
    fcp: sum(xs.map((x) => x.fcp)),
    requests: xs[0]?.requests,
    cpu: Object.fromEntries(
      ['script', 'style', 'layout', 'task'].map((k) => [
        k,
        percentile(
          xs.map((x) => x.cpu?.[k] ?? NaN),
          50,
        ),
      ]),
    ),
  };
};
const paintsOf = (l) => [
  paint(`task list, ${TASKS.toLocaleString('en-US')} tasks`, l.list),
  paint(`task page (timeline), ${STEPS.toLocaleString('en-US')} records`, l.large),
  paint('task page (timeline), 3 records', l.small),
  paint(`task page (conversation), ${STEPS.toLocaleString('en-US')} records`, l.conversation),
  paint('task page (conversation), 3 records', l.smallConversation),
];
const PAINT_KEYS = ['list', 'large', 'small', 'conversation', 'smallConversation'];
const paints = paintsOf(loads);
const allLoaded = sum(loads.large.map((x) => x.all));
const conversationLoaded = sum(loads.conversation.map((x) => x.all));
const RATIO_LIMIT = 1.2;
let ab;
if (baseline) {
  const old = paintsOf(loadsOf.old);
  ab = {
    baseline: { ref: flags.baseline, sha: baseline.sha, bundle: total(baseline.files) },
    limit: RATIO_LIMIT,
    pages: paints.map((p, i) => ({
      name: p.name,
      old: old[i].ms,
      new: p.ms,
      ratio: p.ms.median / old[i].ms.median,
      // Each round's two loads of the page ran back to back: the median of their ratios drifts less with the load.
      pairedRatio: percentile(
        loadsOf.new[PAINT_KEYS[i]].map((x, r) => x.ms / loadsOf.old[PAINT_KEYS[i]][r].ms),
        50,
      ),
      oldLongestTask: old[i].longestTask.median,
      newLongestTask: p.longestTask.median,
      oldCpu: old[i].cpu,
      newCpu: p.cpu,
    })),
    allLoaded: { old: sum(loadsOf.old.large.map((x) => x.all)), new: allLoaded },
    conversationLoaded: { old: sum(loadsOf.old.conversation.map((x) => x.all)), new: conversationLoaded },
  };
}

if (PAINT) {
  console.log(
    `\nDashboard in Chromium (${CHROMIUM}, headless) against the built orchestrator on loopback: ` +
      `${TASKS.toLocaleString('en-US')} tasks, a task of ${STEPS.toLocaleString('en-US')} records, ${LOADS} loads each (cache emptied)\n`,
  );
  printTable(
    [
      'first meaningful paint (ms)',
      'median',
      'min',
      'max',
      'raw replay median',
      'ratio',
      'FCP',
      'longest task',
    ],
    paints.map((p) => [
      p.name,
      fmt(p.ms.median, 0),
      fmt(p.ms.min, 0),
      fmt(p.ms.max, 0),
      `${fmt(p.raw.median, 1)} (${p.requests} requests)`,
      fmt(p.ratio, 1),
      fmt(p.fcp.median, 0),
      fmt(p.longestTask.median, 0),
    ]),
  );
  console.log(
    `\nwhole timeline of ${STEPS.toLocaleString('en-US')} records loaded: ${fmt(allLoaded.median, 0)} ms median (min ${fmt(allLoaded.min, 0)}, max ${fmt(allLoaded.max, 0)})`,
  );
  console.log(
    `whole conversation of ${STEPS.toLocaleString('en-US')} records loaded: ${fmt(conversationLoaded.median, 0)} ms median (min ${fmt(conversationLoaded.min, 0)}, max ${fmt(conversationLoaded.max, 0)})`,
  );
  if (ab) {
    console.log(
      `\nA/B in the same run, interleaved: old = the dashboard of ${ab.baseline.ref} (${ab.baseline.sha.slice(0, 10)}, ` +
        `${ab.baseline.bundle.gzip} B gzip), new = this build (${bundleTotal.gzip} B gzip); ${LOADS} loads each\n`,
    );
    printTable(
      [
        'first meaningful paint (ms)',
        'old median (min–max)',
        'new median (min–max)',
        'new / old',
        'paired',
        `≤ ${RATIO_LIMIT}`,
        'main-thread CPU to the paint, old → new: script / style / layout / all tasks ms (medians)',
      ],
      [
        ...ab.pages.map((p) => [
          p.name,
          `${fmt(p.old.median, 0)} (${fmt(p.old.min, 0)}–${fmt(p.old.max, 0)})`,
          `${fmt(p.new.median, 0)} (${fmt(p.new.min, 0)}–${fmt(p.new.max, 0)})`,
          fmt(p.ratio, 2),
          fmt(p.pairedRatio, 2),
          p.ratio <= RATIO_LIMIT ? 'yes' : 'NO',
          ['script', 'style', 'layout', 'task']
            .map((k) => `${fmt(p.oldCpu[k], 0)} → ${fmt(p.newCpu[k], 0)}`)
            .join(' / '),
        ]),
        ...[
          ['whole timeline loaded', ab.allLoaded],
          ['whole conversation loaded', ab.conversationLoaded],
        ].map(([name, x]) => [
          name,
          `${fmt(x.old.median, 0)} (${fmt(x.old.min, 0)}–${fmt(x.old.max, 0)})`,
          `${fmt(x.new.median, 0)} (${fmt(x.new.min, 0)}–${fmt(x.new.max, 0)})`,
          fmt(x.new.median / x.old.median, 2),
          '',
          '',
          '',
        ]),
      ],
    );
  }
}
if (PAINT && LIVE_RUN)
  console.log(
    `jump to the last of ${TASKS.toLocaleString('en-US')} tasks: ${fmt(jumps.listEnd, 0)} ms; to the first of ${STEPS.toLocaleString('en-US')} records: ${fmt(jumps.timelineStart, 0)} ms\n`,
  );
let liveRatio;
if (liveRun) {
  const { liveStats, missing, outOfView, requests, outcome } = liveRun;
  printTable(
    ['live: record committed → ', 'n', 'p50 ms', 'p95 ms', 'max ms'],
    [
      [
        'row painted in the dashboard',
        ...['n', 'p50', 'p95', 'max'].map((k) => fmt(liveStats.shown[k], k === 'n' ? 0 : 1)),
      ],
      [
        'step event in the browser (EventSource, raw)',
        ...['n', 'p50', 'p95', 'max'].map((k) => fmt(liveStats.browserSse[k], k === 'n' ? 0 : 1)),
      ],
      [
        'step event in Node (raw)',
        ...['n', 'p50', 'p95', 'max'].map((k) => fmt(liveStats.nodeSse[k], k === 'n' ? 0 : 1)),
      ],
      [
        "the dashboard's own part (event in browser → row painted)",
        ...['n', 'p50', 'p95', 'max'].map((k) => fmt(liveStats.overhead[k], k === 'n' ? 0 : 1)),
      ],
      ...[
        ['  of which: event in browser → its read of new records starts', liveStats.fetchWait],
        ['  of which: the read (GET …/steps?after_seq, request → last byte)', liveStats.fetch],
        ['  of which: read done → row painted (parse, render, frame)', liveStats.render],
      ].map(([name, x]) => [name, ...['n', 'p50', 'p95', 'max'].map((k) => fmt(x[k], k === 'n' ? 0 : 1))]),
    ],
  );
  liveRatio = liveStats.shown.p95 / liveStats.browserSse.p95;
  console.log(
    `\nratio painted / browser event: p50 ${fmt(liveStats.shown.p50 / liveStats.browserSse.p50, 1)}, p95 ${fmt(liveRatio, 1)}; ` +
      `records never painted: ${missing}; painted outside the window: ${outOfView}; ` +
      `model_request records not counted (hidden once answered): ${requests}; ${fmt(liveStats.records / liveStats.seconds, 0)} records/s; ${liveStats.reads} reads of new records; ` +
      `longest main-thread task ${fmt(liveStats.longestTaskMs, 0)} ms; task ${outcome.type}; ` +
      `target p95 < 100 ms: ${liveStats.shown.p95 < 100 ? 'met' : 'NOT met'}\n`,
  );
}
printTable(
  ['shipped file', 'bytes', 'gzip'],
  [
    ...bundle.map((f) => [f.file, String(f.raw), String(f.gzip)]),
    ['total', String(bundleTotal.raw), String(bundleTotal.gzip)],
    ['left of the budget', '', String(BUDGET - bundleTotal.gzip)],
  ],
);

writeResults('dashboard', {
  benchmark: 'dashboard',
  date: new Date().toISOString(),
  machine: { ...machineInfo(), load: os.loadavg() },
  quick: QUICK,
  tasks: TASKS,
  steps: STEPS,
  loads: LOADS,
  seedMs: seeded.ms,
  paints,
  ab,
  rawLoads: loadsOf,
  allLoaded,
  conversationLoaded,
  jumps,
  live: liveRun?.liveStats,
  liveRatioP95: liveRatio,
  bundle: { files: bundle, ...bundleTotal },
});
process.exitCode =
  liveRun === undefined || (liveRun.missing === 0 && liveRun.outcome.type === 'task_completed') ? 0 : 1;
