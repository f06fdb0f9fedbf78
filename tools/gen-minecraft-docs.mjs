// `npm run docs:minecraft`: (re)generate the mod protocol section of docs/minecraft.md (between its markers) from
// @ccagent/minecraft's schemas. The rendering lives in the package (`renderMcProtocolDoc`), so its test detects a
// stale file; this script builds the package (Nx, cached) and rewrites the section. `--check` exits 1 when stale.
import { readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import { ensureInstalled, root, run } from './ensure-installed.mjs';

ensureInstalled();
const nxEnv = { NX_DAEMON: 'false', NX_NO_CLOUD: 'true', NX_TUI: 'false' };
if (run('npx', ['nx', 'run', 'minecraft:build', '--output-style=static'], nxEnv) !== 0) process.exit(1);

const { renderMcProtocolDoc, MC_DOC_START, MC_DOC_END } = await import(
  pathToFileURL(path.join(root, 'packages/minecraft/dist/index.js')).href
);
const target = path.join(root, 'docs', 'minecraft.md');
const current = readFileSync(target, 'utf8');
const start = current.indexOf(MC_DOC_START);
const end = current.indexOf(MC_DOC_END);
if (start < 0 || end < start) {
  console.error(`docs/minecraft.md has no generated section (${MC_DOC_START} … ${MC_DOC_END})`);
  process.exit(1);
}
const fresh = current.slice(0, start) + renderMcProtocolDoc() + current.slice(end + MC_DOC_END.length);
if (process.argv.includes('--check')) {
  if (fresh !== current) {
    console.error('docs/minecraft.md is stale: run `npm run docs:minecraft`');
    process.exit(1);
  }
  console.log('docs/minecraft.md is up to date');
} else if (fresh === current) {
  console.log('docs/minecraft.md unchanged');
} else {
  writeFileSync(target, fresh);
  console.log('wrote the protocol section of docs/minecraft.md');
}
