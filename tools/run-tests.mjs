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
  const ok = run(cmd, args, nxEnv) === 0;
  if (!ok) failedSteps.push(name);
  return ok;
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
// The tests step's own exit status is not counted as a step failure: the per-project reports below say what failed,
// and a failing run that no report explains is counted once at the end.
console.log('\n[ccagent] === tests ===');
const testsOk =
  run('npx', ['nx', 'run-many', '-t', 'test', '--output-style=stream', '--nxBail=false'], nxEnv) === 0;

// Which projects have a test target (each must leave a report).
const show = spawnSync('npx', ['nx', 'show', 'projects', '--with-target', 'test', '--json'], {
  cwd: root,
  encoding: 'utf8',
  env: { ...process.env, ...nxEnv },
});
let projects = [];
try {
  projects = JSON.parse(show.stdout);
} catch {
  failedSteps.push('list projects with a test target (nx show projects)');
}

let passed = 0;
let failed = 0;
let skipped = 0;
const rows = [];
const reports = existsSync(resultsDir) ? readdirSync(resultsDir).filter((f) => f.endsWith('.json')) : [];
const tally = (label, file) => {
  let r;
  try {
    r = JSON.parse(readFileSync(path.join(resultsDir, file), 'utf8'));
  } catch {
    failed += 1;
    rows.push([label, 'unreadable report (crashed while writing it)']);
    return;
  }
  const s = (r.numPendingTests ?? 0) + (r.numTodoTests ?? 0);
  // A suite that failed to load (syntax error, import error) has no failed tests but failed all the same.
  const brokenSuites = (r.testResults ?? []).filter(
    (t) => t.status === 'failed' && (t.assertionResults ?? []).length === 0,
  ).length;
  let f = (r.numFailedTests ?? 0) + brokenSuites;
  // Unhandled errors (e.g. a rejection after a test ended) fail the run without failing a test.
  const unhandled = r.success === false && f === 0 ? 1 : 0;
  f += unhandled;
  passed += r.numPassedTests ?? 0;
  failed += f;
  skipped += s;
  rows.push([
    label,
    `${r.numPassedTests ?? 0} passed, ${f} failed, ${s} skipped${unhandled ? ' (run failed: unhandled error)' : ''}`,
  ]);
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
if (!testsOk && failed === 0) failedSteps.push('tests (failed without a failing test in any report)');
failed += failedSteps.length;

console.log('\n[ccagent] === summary ===');
for (const [p, s] of rows) console.log(`  ${p.padEnd(20)} ${s}`);
for (const s of failedSteps) console.log(`  step failed: ${s}`);
console.log(`${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed === 0 && passed > 0 ? 0 : 1);
