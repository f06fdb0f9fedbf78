// Build step: copy the Lua client (lua-client/src/**) into dist/lua so the published package serves it at /lua/*.
import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const from = path.resolve(here, '../../../lua-client/src');
const to = path.resolve(here, '../dist/lua');
if (!existsSync(from)) {
  console.error(`copy-lua: ${from} does not exist`);
  process.exit(1);
}
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true, filter: (src) => !path.basename(src).startsWith('.') });
console.log(`copy-lua: ${path.relative(process.cwd(), from)} -> ${path.relative(process.cwd(), to)}`);
