// `npm test`: every check of every project, then one closing line `N passed, N failed[, N skipped]`.
//   1. install if needed; 2. build + typecheck + lint every project (Nx, cached, dependency order);
//   3. format check; 4. every project's tests (vitest and the Lua suites write .test-results/<project>.json).
// A failed non-test step counts as one failure, and so does a project whose tests crashed before reporting.
import { spawnSync } from 'node:child_process';
import { existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import path from 'node:path';
import { ensureInstalled, root, run } from './ensure-installed.mjs';

ensureInstalled();
const nxEnv = { NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false' };
const resultsDir = path.join(root, '.test-results');
rmSync(resultsDir, { recursive: true, force: true });

const failedSteps = [];
const step = (name, cmd, args) => {
  console.log(`\n[ccagent] === ${name} ===`);
  if (run(cmd, args, nxEnv) !== 0) failedSteps.push(name);
};

step('build, typecheck, lint', 'npx', [
  'nx',
  'run-many',
  '-t',
  'build',
  'typecheck',
  'lint',
  '--output-style=stream',
  '--nxBail=false',
]);
step('format check', 'npx', ['prettier', '--check', '.', '--log-level', 'warn']);
step('tests', 'npx', ['nx', 'run-many', '-t', 'test', '--output-style=stream', '--nxBail=false']);

// Which projects have a test target (each must leave a report).
const show = spawnSync('npx', ['nx', 'show', 'projects', '--with-target', 'test', '--json'], {
  cwd: root,
  encoding: 'utf8',
  env: { ...process.env, ...nxEnv },
});
const projects = JSON.parse(show.stdout || '[]');

let passed = 0;
let failed = 0;
let skipped = 0;
const rows = [];
const reports = existsSync(resultsDir) ? readdirSync(resultsDir).filter((f) => f.endsWith('.json')) : [];
const tally = (label, file) => {
  const r = JSON.parse(readFileSync(path.join(resultsDir, file), 'utf8'));
  const s = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // A suite that failed to load (syntax error, import error) has no failed tests but failed all the same.
  const brokenSuites = (r.testResults ?? []).filter(
    (t) => t.status === 'failed' && (t.assertionResults ?? []).length === 0,
  ).length;
  passed += r.numPassedTests;
  failed += r.numFailedTests + brokenSuites;
  skipped += s;
  rows.push([label, `${r.numPassedTests} passed, ${r.numFailedTests + brokenSuites} failed, ${s} skipped`]);
};
for (const project of projects.sort()) {
  // Each project must leave <project>.json; optional extra tiers write <project>.<tier>.json.
  if (reports.includes(`${project}.json`)) tally(project, `${project}.json`);
  else {
    failed += 1;
    rows.push([project, 'no report (crashed before reporting)']);
  }
  for (const f of reports.filter((f) => f.startsWith(`${project}.`) && f !== `${project}.json`)) {
    tally(f.replace(/\.json$/, ''), f);
  }
}
failed += failedSteps.length;

console.log('\n[ccagent] === summary ===');
for (const [p, s] of rows) console.log(`  ${p.padEnd(20)} ${s}`);
for (const s of failedSteps) console.log(`  step failed: ${s}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
