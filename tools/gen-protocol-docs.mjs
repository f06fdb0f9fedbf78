// `npm run docs:protocol`: (re)generate docs/protocol.md from @ccagent/protocol's catalog, JSON Schemas and error
// codes, and the generated reference part of docs/http-api.md from its HTTP schemas. The rendering lives in the package (`renderProtocolDoc`), so its test can detect a stale file; this script
// only builds the package (Nx, cached) and writes the result. `--check` exits 1 instead of writing when stale.
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureInstalled, root, run } from './ensure-installed.mjs';

ensureInstalled();
const nxEnv = { NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false' };
if (run('npx', ['nx', 'run', 'protocol:build', '--output-style=static'], nxEnv) !== 0) process.exit(1);

const { renderProtocolDoc, withHttpApiReference } = await import(
  pathToFileURL(path.join(root, 'packages/protocol/dist/index.js')).href
);
const docs = [
  { target: path.join(root, 'docs', 'protocol.md'), render: () => renderProtocolDoc() },
  { target: path.join(root, 'docs', 'http-api.md'), render: (current) => withHttpApiReference(current) },
];
let stale = false;
for (const { target, render } of docs) {
  const name = path.relative(root, target);
  const current = existsSync(target) ? readFileSync(target, 'utf8') : '';
  const fresh = render(current);
  if (process.argv.includes('--check')) {
    if (current !== fresh) {
      console.error(`${name} is stale: run \`npm run docs:protocol\``);
      stale = true;
    } else console.log(`${name} is up to date`);
  } else if (current === fresh) {
    console.log(`${name} unchanged`);
  } else {
    writeFileSync(target, fresh);
    console.log(`wrote ${name} (${fresh.length} characters)`);
  }
}
if (stale) process.exit(1);
