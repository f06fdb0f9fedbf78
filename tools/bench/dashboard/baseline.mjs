// A second built orchestrator that serves an older dashboard, for an A/B of first paint in ONE bench run
// (`run.mjs --baseline <git ref>`): the two dashboards are loaded interleaved, against identical servers over
// identical copies of the seeded database, so machine load hits both alike.
//
// - The dashboard of `<ref>` (apps/dashboard at that commit, from `git archive`) is built with Vite into
//   tools/bench/results/dashboard-baseline-<sha>/ with that commit's apps/dashboard/vite.config.ts. Its
//   imports resolve from the workspace's node_modules (preact, and @ccagent/protocol as built now: the dashboard's
//   look and code are what is compared, not the protocol package).
// - The built orchestrator (apps/orchestrator/dist) is copied next to itself (dist/.bench-baseline/) with that
//   dashboard in place of its own, so both servers run the same server code; the copy is removed at the end.
import { execFileSync } from 'node:child_process';
import { cpSync, existsSync, mkdirSync, readdirSync, rmSync, symlinkSync } from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';
import { ORCHESTRATOR_BIN } from '../lib/procs.mjs';

const here = path.dirname(fileURLToPath(import.meta.url));
const repo = path.resolve(here, '..', '..', '..');

/** Build the dashboard of `ref` and a server copy that serves it; returns `{ sha, bin, dashboardDir, cleanup }`. */
export async function prepareBaseline(ref) {
  const sha = execFileSync('git', ['rev-parse', '--verify', `${ref}^{commit}`], {
    cwd: repo,
    encoding: 'utf8',
  }).trim();
  const work = path.join(repo, 'tools', 'bench', 'results', `dashboard-baseline-${sha.slice(0, 12)}`);
  const root = path.join(work, 'apps', 'dashboard');
  const out = path.join(work, 'dist');
  if (!existsSync(path.join(out, 'index.html'))) {
    rmSync(work, { recursive: true, force: true });
    mkdirSync(work, { recursive: true });
    const tar = execFileSync(
      'git',
      ['archive', '--format=tar', sha, 'apps/dashboard', 'tsconfig.base.json'],
      {
        cwd: repo,
        maxBuffer: 64 * 1024 * 1024,
      },
    );
    execFileSync('tar', ['-x', '-C', work], { input: tar });
    // Vite is a devDependency of the dashboard (installed under apps/dashboard/node_modules).
    const req = createRequire(path.join(repo, 'apps', 'dashboard', 'package.json'));
    const vite = await import(pathToFileURL(req.resolve('vite')).href);
    const build = {
      outDir: out,
      emptyOutDir: true,
      target: 'es2022',
      sourcemap: false,
      reportCompressedSize: false,
      assetsInlineLimit: 0,
    };
    const config = path.join(root, 'vite.config.ts');
    if (existsSync(config)) {
      // The ref's own build settings (JSX runtime, minifier, preload polyfill): what it shipped. Its config imports
      // `vite`, found through a node_modules of its own holding one link (Vite writes its temporary files there).
      mkdirSync(path.join(root, 'node_modules'), { recursive: true });
      symlinkSync(path.dirname(req.resolve('vite/package.json')), path.join(root, 'node_modules', 'vite'));
      await vite.build({
        root,
        configFile: config,
        logLevel: 'warn',
        build: { outDir: out, emptyOutDir: true, reportCompressedSize: false },
      });
    } else {
      await vite.build({
        root,
        configFile: false,
        logLevel: 'warn',
        base: './',
        oxc: { jsx: { runtime: 'automatic', importSource: 'preact' } },
        build,
      });
    }
  }
  const dist = path.dirname(ORCHESTRATOR_BIN);
  const copy = path.join(dist, '.bench-baseline');
  rmSync(copy, { recursive: true, force: true });
  mkdirSync(copy);
  for (const name of readdirSync(dist)) {
    if (name.startsWith('.') || name === 'dashboard' || name.endsWith('.map')) continue;
    cpSync(path.join(dist, name), path.join(copy, name), { recursive: true });
  }
  cpSync(out, path.join(copy, 'dashboard'), { recursive: true });
  return {
    sha,
    bin: path.join(copy, path.basename(ORCHESTRATOR_BIN)),
    dashboardDir: path.join(copy, 'dashboard'),
    cleanup: () => rmSync(copy, { recursive: true, force: true }),
  };
}
