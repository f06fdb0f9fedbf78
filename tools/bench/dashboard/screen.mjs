#!/usr/bin/env node
// The screen mirror in a real browser (issue 36 item 3; not part of `npm test`): a simulated computer on a real
// WebSocket sends `screen_frame`s at the mirror's budget (10 a second) to the BUILT `cc-orchestrator serve` on
// 127.0.0.1, with the computer's page (`#/computers/<id>`) open in Debian's Chromium (playwright-core, headless).
// Run `npm run build` first.
//
//   node tools/bench/dashboard/screen.mjs [--quick] [--seconds N] [--loads N]
//
// What it measures:
// - First paint of the computer's page: navigation → the screen's grid painted (the frame after it entered the
//   DOM), browser cache emptied before each load.
// - Live: each frame carries a sequence number in the row it changes; from the frame's send (Node's clock) to the
//   animation frame after that text entered the page (the browser's clock; same machine), p50/p95/max. Two shapes:
//   one changed row a frame (a program printing) and all 19 rows a frame (a full redraw every 100 ms, the worst diff).
//   Frames the server coalesced (a newer one arrived before the watcher's next event) are counted, not timed.
// - Bytes on the WebSocket per frame (JSON) for a full 51×19 frame, one changed row, and all rows.
// Writes tools/bench/results/dashboard-screen.json.
import { mkdtempSync, rmSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { parseArgs } from 'node:util';
import { startFakeOllama } from '@ccagent/testkit';
import { chromium } from 'playwright-core';
import { SimulatedComputer } from '../lib/bench-clients.mjs';
import { startOrchestrator } from '../lib/procs.mjs';
import { machineInfo, writeResults } from '../lib/results.mjs';
import { fmt, percentile, printTable, sleep } from '../lib/stats.mjs';

const { values: flags } = parseArgs({
  options: {
    quick: { type: 'boolean', default: false },
    seconds: { type: 'string' },
    loads: { type: 'string' },
  },
});
const SECONDS = Number(flags.seconds ?? (flags.quick ? 5 : 20));
const LOADS = Number(flags.loads ?? (flags.quick ? 3 : 5));
const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';
const W = 51;
const H = 19;
const ID = 'bench-screen';

const dir = mkdtempSync(path.join(os.tmpdir(), 'ccagent-bench-screen-'));
const fake = await startFakeOllama({ installed: ['qwen3:8b'] });
const server = await startOrchestrator({
  db: path.join(dir, 'ccagent.db'),
  config: { models: { native: { name: 'qwen3:8b' } } },
  ollamaUrl: fake.url,
});
const computer = new SimulatedComputer(server.url, ID);
await computer.connect();

const now = () => performance.timeOrigin + performance.now();
const pad = (s) => s.padEnd(W, ' ').slice(0, W);
const line = (y, text, fg = '0', bg = 'f') => ({ y, text: pad(text), fg: fg.repeat(W), bg: bg.repeat(W) });
let seq = 0;
const frame = (full, lines) => ({
  type: 'screen_frame',
  seq: seq++,
  width: W,
  height: H,
  full,
  cursor: { x: 1, y: 1, blink: true, fg: '0' },
  lines,
});
const fullFrame = () =>
  frame(
    true,
    Array.from({ length: H }, (_, i) => line(i + 1, `row ${i + 1}`, (i % 16).toString(16))),
  );
computer.send(fullFrame());
const bytes = {
  full: JSON.stringify(fullFrame()).length,
  oneRow: JSON.stringify(frame(false, [line(3, '#000001 one row changed', 'e')])).length,
  allRows: JSON.stringify(
    frame(
      false,
      Array.from({ length: H }, (_, i) => line(i + 1, `#000001 row ${i}`, 'e')),
    ),
  ).length,
};
seq = 1;

// Painted: the animation frame after a `#NNNNNN` text entered the screen (recorded once per number).
function instrument() {
  const seen = new Map();
  window.__screen = { seen, grid: undefined };
  const scan = () => {
    const grid = document.querySelector('[data-testid="cc-screen"]');
    if (!grid) return;
    const found = [];
    if (window.__screen.grid === undefined) found.push('grid');
    for (const m of grid.textContent.matchAll(/#(\d{6})/g)) if (!seen.has(m[1])) found.push(m[1]);
    if (found.length === 0) return;
    for (const f of found) seen.set(f, -1);
    requestAnimationFrame(() => {
      const t = performance.timeOrigin + performance.now();
      for (const f of found) {
        if (f === 'grid') window.__screen.grid = performance.now();
        else seen.set(f, t);
      }
    });
  };
  new MutationObserver(scan).observe(document, { childList: true, subtree: true, characterData: true });
}

const profile = mkdtempSync(path.join(os.tmpdir(), 'ccagent-bench-chromium-'));
const context = await chromium.launchPersistentContext(profile, {
  executablePath: CHROMIUM,
  headless: true,
  args: ['--no-sandbox', '--disable-background-networking', '--disable-component-update', '--disable-gpu'],
  viewport: { width: 1100, height: 700 },
});
await context.addInitScript(instrument);

// ---------------------------------------------------------------------------------------- first paint
const firstPaint = [];
for (let i = 0; i < LOADS; i++) {
  const page = await context.newPage();
  const cdp = await context.newCDPSession(page);
  await cdp.send('Network.clearBrowserCache');
  await page.goto(`${server.url}/#/computers/${ID}`, { waitUntil: 'commit' });
  await page.waitForFunction(() => window.__screen?.grid !== undefined, undefined, { timeout: 20_000 });
  firstPaint.push(await page.evaluate(() => window.__screen.grid));
  await page.close();
}

// ---------------------------------------------------------------------------------------------- live
const page = await context.newPage();
await page.goto(`${server.url}/#/computers/${ID}`);
await page.waitForSelector('[data-testid="cc-screen"]');

async function live(shape) {
  const sent = new Map();
  const frames = SECONDS * 10;
  const t0 = now();
  for (let i = 0; i < frames; i++) {
    const n = String(seq).padStart(6, '0');
    const lines =
      shape === 'one'
        ? [line((seq % H) + 1, `#${n} printed line`, (seq % 15).toString(16))]
        : Array.from({ length: H }, (_, y) =>
            line(y + 1, y === 0 ? `#${n} redraw` : `${n} row ${y}`, 'e', 'b'),
          );
    sent.set(n, now());
    computer.send(frame(false, lines));
    // 10 a second, on a fixed schedule (no drift)
    const next = t0 + (i + 1) * 100;
    await sleep(Math.max(0, next - now()));
  }
  await sleep(1000);
  const seen = new Map(await page.evaluate(() => [...window.__screen.seen.entries()]));
  const lat = [];
  for (const [n, at] of sent) {
    const p = seen.get(n);
    if (p !== undefined && p > 0) lat.push(p - at);
  }
  lat.sort((a, b) => a - b);
  return { frames, painted: lat.length, p50: percentile(lat, 50), p95: percentile(lat, 95), max: lat.at(-1) };
}
const one = await live('one');
const all = await live('all');

await context.close();
rmSync(profile, { recursive: true, force: true });
computer.ws?.close();
await server.stop();
await fake.close();
rmSync(dir, { recursive: true, force: true });

const sorted = [...firstPaint].sort((a, b) => a - b);
console.log(`\nscreen mirror, ${SECONDS} s at 10 frames/s per shape, ${LOADS} loads`);
printTable(
  ['first paint of the computer page', 'median ms', 'min–max'],
  [['screen grid painted', fmt(percentile(sorted, 50), 0), `${fmt(sorted[0], 0)}–${fmt(sorted.at(-1), 0)}`]],
);
printTable(
  ['live: frame sent → painted', 'frames', 'painted (rest coalesced)', 'p50 ms', 'p95 ms', 'max ms'],
  [
    ['one changed row a frame', one.frames, one.painted, fmt(one.p50, 0), fmt(one.p95, 0), fmt(one.max, 0)],
    ['all 19 rows a frame', all.frames, all.painted, fmt(all.p50, 0), fmt(all.p95, 0), fmt(all.max, 0)],
  ],
);
printTable(
  ['frame', 'bytes (JSON)'],
  [
    ['full 51×19', bytes.full],
    ['one changed row', bytes.oneRow],
    ['all 19 rows (partial)', bytes.allRows],
  ],
);
writeResults('dashboard-screen', {
  machine: machineInfo(),
  loadAverage: os.loadavg(),
  seconds: SECONDS,
  loads: LOADS,
  firstPaintMs: firstPaint,
  live: { oneRow: one, allRows: all },
  bytes,
});
