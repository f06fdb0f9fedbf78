#!/usr/bin/env node
// The dashboard's shipped bundle, in bytes (not part of `npm test`; no browser, no server, a second or two):
//
//   node tools/bench/dashboard/bundle.mjs [--dir DIR] [--modules]
//
// - Every file the orchestrator serves at `/` (apps/orchestrator/dist/dashboard, or apps/dashboard/dist when the
//   orchestrator is not built; `--dir` names another), raw and gzip level 9 as the server sends it, with the total
//   against the budget (40 KiB, tested in apps/orchestrator/test/dashboard-schedules.test.ts) and what is left.
// - `--modules`: where the bytes come from. The dashboard is built again (apps/dashboard/vite.config.ts, into a
//   temporary folder) and each source module's part of the script is minified and gzipped on its own, each
//   stylesheet likewise. A module alone compresses worse than inside the whole file (gzip finds no repeats across
//   modules), so the column sums to more than the shipped file: read it as shares, not as bytes to subtract.
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { parseArgs } from 'node:util';
import { gzipSync } from 'node:zlib';

export const BUDGET = 40 * 1024;

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..', '..');
const dashboardApp = path.join(repo, 'apps', 'dashboard');

const gzip = (body) => gzipSync(body, { level: 9 }).length;

/** Every file under `dir`, raw and gzip-compressed bytes, by path relative to `dir`. */
export function bundleOf(dir) {
  const files = [];
  const walk = (d) => {
    for (const name of readdirSync(d).sort()) {
      const full = path.join(d, name);
      if (statSync(full).isDirectory()) walk(full);
      else {
        const body = readFileSync(full);
        files.push({ file: path.relative(dir, full), raw: body.length, gzip: gzip(body) });
      }
    }
  };
  walk(dir);
  return files;
}

/** The sums of `bundleOf`'s rows. */
export const total = (files) => ({
  raw: files.reduce((a, b) => a + b.raw, 0),
  gzip: files.reduce((a, b) => a + b.gzip, 0),
});

/** Build the dashboard again and measure each module's share (see the head of this file). */
export async function moduleShares() {
  const req = createRequire(path.join(dashboardApp, 'package.json'));
  const vite = await import(pathToFileURL(req.resolve('vite')).href);
  const { transform } = createRequire(req.resolve('vite'))('lightningcss');
  const out = mkdtempSync(path.join(os.tmpdir(), 'ccagent-dashboard-modules-'));
  const rows = [];
  // Dependencies by package (a workspace package's build splits into chunks: `@ccagent/protocol dist/chunk-….js`).
  const name = (id) =>
    id.includes('node_modules')
      ? id.replace(/.*node_modules\//, '')
      : path
          .relative(repo, id)
          .replace(/^apps\/dashboard\//, '')
          .replace(/^packages\/([^/]+)\//, '@ccagent/$1 ');
  try {
    await vite.build({
      root: dashboardApp,
      configFile: path.join(dashboardApp, 'vite.config.ts'),
      logLevel: 'warn',
      build: { outDir: out, emptyOutDir: true, reportCompressedSize: false, minify: false },
      plugins: [
        {
          name: 'module-shares',
          async generateBundle(_options, output) {
            for (const chunk of Object.values(output)) {
              if (chunk.type !== 'chunk') continue;
              for (const [id, m] of Object.entries(chunk.modules)) {
                if (!m.code) continue;
                // Minified alone: nothing is exported from a module's part of the bundle, so unused code must stay.
                const min = await vite.minify(`${name(id)}.js`, m.code, {
                  module: true,
                  compress: { unused: false },
                  mangle: { toplevel: false },
                });
                rows.push({ module: name(id), kind: 'js', minified: min.code.length, gzip: gzip(min.code) });
              }
            }
          },
        },
      ],
    });
  } finally {
    rmSync(out, { recursive: true, force: true });
  }
  const css = (dir) =>
    readdirSync(dir, { withFileTypes: true }).flatMap((e) =>
      e.isDirectory() ? css(path.join(dir, e.name)) : e.name.endsWith('.css') ? [path.join(dir, e.name)] : [],
    );
  for (const file of css(path.join(dashboardApp, 'src'))) {
    const { code } = transform({ filename: file, code: readFileSync(file), minify: true });
    rows.push({ module: name(file), kind: 'css', minified: code.length, gzip: gzip(code) });
  }
  return rows.sort((a, b) => b.gzip - a.gzip);
}

async function main() {
  const { printTable } = await import('../lib/stats.mjs');
  const { values: flags } = parseArgs({
    options: { dir: { type: 'string' }, modules: { type: 'boolean', default: false } },
  });
  const served = path.join(repo, 'apps', 'orchestrator', 'dist', 'dashboard');
  const dir = flags.dir ?? [served, path.join(dashboardApp, 'dist')].find((d) => existsDir(d));
  if (dir === undefined) throw new Error('no built dashboard: run `npx nx run cc-orchestrator:build` first');
  const files = bundleOf(dir);
  const sum = total(files);
  console.log(`${path.relative(process.cwd(), dir) || '.'}:`);
  printTable(
    ['shipped file', 'bytes', 'gzip -9'],
    [
      ...files.map((f) => [f.file, String(f.raw), String(f.gzip)]),
      ['total', String(sum.raw), String(sum.gzip)],
      ['budget', '', String(BUDGET)],
      ['left', '', String(BUDGET - sum.gzip)],
    ],
  );
  if (flags.modules) {
    const rows = await moduleShares();
    console.log(
      '\neach module minified and gzipped alone (shares; the sum is larger than the shipped files):',
    );
    const js = rows.filter((r) => r.kind === 'js');
    const css = rows.filter((r) => r.kind === 'css');
    printTable(
      ['module', 'minified', 'gzip alone'],
      [
        ...rows.map((r) => [r.module, String(r.minified), String(r.gzip)]),
        ['sum of script modules', String(total2(js, 'minified')), String(total2(js, 'gzip'))],
        ['sum of stylesheets', String(total2(css, 'minified')), String(total2(css, 'gzip'))],
      ],
    );
  }
}

const total2 = (rows, key) => rows.reduce((a, r) => a + r[key], 0);

function existsDir(d) {
  try {
    return statSync(path.join(d, 'index.html')).isFile();
  } catch {
    return false;
  }
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) await main();
