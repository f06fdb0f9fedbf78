// `npm run docs:protocol`: (re)generate docs/protocol.md from @ccagent/protocol's catalog, JSON Schemas and error
// codes. The rendering lives in the package (`renderProtocolDoc`), so its test can detect a stale file; this script
// only builds the package (Nx, cached) and writes the result. `--check` exits 1 instead of writing when stale.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureInstalled, root, run } from './ensure-installed.mjs';

ensureInstalled();
const nxEnv = { NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false' };
if (run('npx', ['nx', 'run', 'protocol:build', '--output-style=static'], nxEnv) !== 0) process.exit(1);

const { renderProtocolDoc } = await import(
  pathToFileURL(path.join(root, 'packages/protocol/dist/index.js')).href
);
const target = path.join(root, 'docs', 'protocol.md');
const fresh = renderProtocolDoc();
const current = existsSync(target) ? readFileSync(target, 'utf8') : '';

if (process.argv.includes('--check')) {
  if (current !== fresh) {
    console.error('docs/protocol.md is stale: run `npm run docs:protocol`');
    process.exit(1);
  }
  console.log('docs/protocol.md is up to date');
} else if (current === fresh) {
  console.log('docs/protocol.md unchanged');
} else {
  writeFileSync(target, fresh);
  console.log(`wrote docs/protocol.md (${fresh.length} characters)`);
}
