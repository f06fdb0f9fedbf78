#!/usr/bin/env node
// Does this dashboard look exactly like REF's? (Not part of `npm test`; for changes meant to leave the look alone,
// such as trimming the bundle.) Run `npm run build` first.
//
//   node tools/bench/dashboard/look-ab.mjs --baseline REF [--out DIR]
//
// The dashboard of REF is built and served as in `run.mjs --baseline` (baseline.mjs: a copy of the same built
// orchestrator over a copy of the same seeded database), this build by the built orchestrator. Each page is opened on
// both with the browser's clock frozen at the same instant (so "3 min ago" reads alike), in the light and the dark
// theme, and the two screenshots are compared pixel by pixel in Chromium. Prints, per page and theme, how many pixels
// differ (0 = identical); writes both screenshots of every page that differs to DIR (default
// tools/bench/results/look-ab/). Exits 1 when any page differs. The Computers page shows each server's port and
// uptime, so it differs by those few characters on any two builds: look at its pair.
import { copyFileSync, existsSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';
import { startFakeOllama } from '@ccagent/testkit';
import { chromium } from 'playwright-core';
import { startOrchestrator } from '../lib/procs.mjs';
import { printTable } from '../lib/stats.mjs';
import { prepareBaseline } from './baseline.mjs';
import { seedDashboardDb } from './seed.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const { values: flags } = parseArgs({ options: { baseline: { type: 'string' }, out: { type: 'string' } } });
if (flags.baseline === undefined) throw new Error('--baseline REF is required (e.g. main)');
const OUT = flags.out ?? path.join(here, '..', 'results', 'look-ab');

const PAGES = {
  tasks: '#/tasks',
  conversation: '#/tasks/seed-large-task',
  timeline: '#/tasks/seed-large-task/timeline',
  small: '#/tasks/seed-00002',
  new: '#/new',
  chat: '#/chat',
  computers: '#/computers',
  kinds: '#/kinds',
  schedules: '#/schedules',
  minecraft: '#/minecraft',
};
const FROZEN = Date.UTC(2026, 10, 28, 12, 0, 0);

const tmp = mkdtempSync(path.join(os.tmpdir(), 'ccagent-look-ab-'));
// The same file name in two folders: the Computers page shows the database path.
mkdirSync(path.join(tmp, 'a'));
mkdirSync(path.join(tmp, 'b'));
const db = path.join(tmp, 'a', 'look.db');
await seedDashboardDb(db, { tasks: 40, steps: 60 });
const dbB = path.join(tmp, 'b', 'look.db');
for (const ext of ['', '-wal', '-shm']) if (existsSync(db + ext)) copyFileSync(db + ext, dbB + ext);
const fake = await startFakeOllama({ installed: ['look-model'], recordRequests: false });
const config = { models: { native: { name: 'look-model' } } };
const baseline = await prepareBaseline(flags.baseline);
const servers = {
  old: await startOrchestrator({ db: dbB, config, ollamaUrl: fake.url, bin: baseline.bin }),
  new: await startOrchestrator({ db, config, ollamaUrl: fake.url }),
};
const browser = await chromium.launch({
  executablePath: process.env.CHROMIUM_PATH ?? '/usr/bin/chromium',
  args: ['--no-sandbox', '--disable-gpu', '--font-render-hinting=none'],
});

/** Both screenshots of one page in one theme, and how many pixels differ. */
async function shoot(url, scheme) {
  const context = await browser.newContext({ viewport: { width: 1280, height: 900 }, colorScheme: scheme });
  const page = await context.newPage();
  const errors = [];
  page.on('pageerror', (e) => errors.push(e.message));
  await page.clock.setFixedTime(FROZEN);
  await page.goto(url);
  // Not `networkidle`: the page holds its event stream open. Until nothing says "Loading…", then a settle.
  await page
    .waitForFunction(() => !/Loading/.test(document.querySelector('main')?.textContent ?? 'Loading'), null, {
      timeout: 15_000,
    })
    .catch(() => undefined);
  await page.waitForTimeout(700);
  const png = await page.screenshot({ fullPage: true, animations: 'disabled' });
  await context.close();
  return { png, errors };
}

const diffPage = await browser.newPage();
async function differing(a, b) {
  return diffPage.evaluate(
    async ([x, y]) => {
      const load = async (b64) => {
        const img = new Image();
        img.src = `data:image/png;base64,${b64}`;
        await img.decode();
        const c = new OffscreenCanvas(img.width, img.height);
        const g = c.getContext('2d');
        g.drawImage(img, 0, 0);
        return { w: img.width, h: img.height, d: g.getImageData(0, 0, img.width, img.height).data };
      };
      const A = await load(x);
      const B = await load(y);
      if (A.w !== B.w || A.h !== B.h) return { px: -1, size: `${A.w}×${A.h} vs ${B.w}×${B.h}` };
      let px = 0;
      for (let p = 0; p < A.d.length; p += 4)
        if (A.d[p] !== B.d[p] || A.d[p + 1] !== B.d[p + 1] || A.d[p + 2] !== B.d[p + 2]) px++;
      return { px, size: `${A.w}×${A.h}` };
    },
    [a.toString('base64'), b.toString('base64')],
  );
}

const rows = [];
let bad = 0;
try {
  for (const [name, hash] of Object.entries(PAGES)) {
    for (const scheme of ['light', 'dark']) {
      const old = await shoot(`${servers.old.url}/${hash}`, scheme);
      const now = await shoot(`${servers.new.url}/${hash}`, scheme);
      const d = await differing(old.png, now.png);
      const errors = [...old.errors.map((e) => `old: ${e}`), ...now.errors.map((e) => `new: ${e}`)];
      if (d.px !== 0 || errors.length > 0) {
        bad++;
        mkdirSync(OUT, { recursive: true });
        writeFileSync(path.join(OUT, `${name}-${scheme}-old.png`), old.png);
        writeFileSync(path.join(OUT, `${name}-${scheme}-new.png`), now.png);
      }
      rows.push([
        name,
        scheme,
        d.size,
        d.px === -1 ? 'sizes differ' : String(d.px),
        errors.join('; ') || '-',
      ]);
    }
  }
} finally {
  await browser.close();
  await servers.new.stop();
  await servers.old.stop();
  baseline.cleanup();
  await fake.close();
  rmSync(tmp, { recursive: true, force: true });
}
console.log(`old = the dashboard of ${flags.baseline} (${baseline.sha.slice(0, 10)}), new = this build\n`);
printTable(['page', 'theme', 'screenshot', 'pixels that differ', 'page errors'], rows);
if (bad > 0) {
  console.log(`\n${bad} screenshots differ or logged errors: both versions are in ${OUT}`);
  process.exitCode = 1;
}
