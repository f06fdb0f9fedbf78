// `npm start`: install if needed, build the orchestrator (with the dashboard), the CLI and the fake model server,
// link their commands (`npx ccagent`, `npx cc-orchestrator`, `npx fake-ollama`), then `cc-orchestrator serve` on its
// embedded SQLite default. Extra args pass through: `npm start -- --port 9000`. `npm start -- --demo` runs a whole
// scripted task instead (tools/demo.mjs); `npm start -- --demo --real` runs it with a real small model. The build's own output is shown only when it fails.
import { spawnSync } from 'node:child_process';
import { ensureInstalled, root, run } from './ensure-installed.mjs';

const args = process.argv.slice(2);
const demo = args.includes('--demo');
// `--demo --real`: the same task with the real small model of tools/ollama-test-server.sh instead of the double.
const real = args.includes('--real');
const serveArgs = args.filter((a) => a !== '--demo' && a !== '--real');

ensureInstalled();
process.stdout.write(
  '[ccagent] building the orchestrator, dashboard and CLI (the first build takes a minute)…\n',
);
const nxEnv = { ...process.env, NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false' };
const build = spawnSync(
  'npx',
  ['nx', 'run-many', '-t', 'build', '-p', 'orchestrator', 'cli', 'testkit', '--output-style=static'],
  { cwd: root, env: nxEnv, encoding: 'utf8', maxBuffer: 64 * 1024 * 1024 },
);
if (build.status !== 0) {
  process.stdout.write(build.stdout ?? '');
  process.stderr.write(build.stderr ?? '');
  process.stderr.write('[ccagent] the build failed (output above)\n');
  process.exit(1);
}
// npm links a workspace's command only when its file exists, and a fresh clone's `npm ci` runs before any build:
// link them now, so the README's `npx ccagent tasks list` finds the local CLI instead of asking the registry.
const link = spawnSync(
  'npm',
  [
    'rebuild',
    '--ignore-scripts',
    '--no-audit',
    '--no-fund',
    'cc-orchestrator',
    '@ccagent/cli',
    '@ccagent/testkit',
  ],
  { cwd: root, encoding: 'utf8' },
);
if (link.status !== 0) process.stderr.write(`[ccagent] could not link the commands: ${link.stderr}\n`);

if (demo) {
  const { runDemo } = await import('./demo.mjs');
  await runDemo(serveArgs, { real });
} else {
  process.exit(run(process.execPath, [`${root}/apps/orchestrator/dist/main.js`, 'serve', ...serveArgs]));
}
