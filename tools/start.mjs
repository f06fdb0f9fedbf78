// `npm start`: install if needed, build the orchestrator and what it depends on, then `cc-orchestrator serve`
// on its embedded SQLite default. Extra args pass through: `npm start -- --port 9000`.
import { ensureInstalled, root, run } from './ensure-installed.mjs';

ensureInstalled();
const nxEnv = { NX_DAEMON: 'false', NX_NO_CLOUD: 'true' };
if (run('npx', ['nx', 'run', 'orchestrator:build', '--output-style=static'], nxEnv) !== 0) process.exit(1);
process.exit(
  run(process.execPath, [`${root}/apps/orchestrator/dist/main.js`, 'serve', ...process.argv.slice(2)]),
);
