// Build step: copy the built web dashboard (apps/dashboard/dist, built first by Nx: this package depends on
// @ccagent/dashboard) into dist/dashboard, so the published package serves it at / with no second server.
import { cpSync, existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const from = path.resolve(here, '../../dashboard/dist');
const to = path.resolve(here, '../dist/dashboard');
if (!existsSync(path.join(from, 'index.html'))) {
  console.error(`copy-dashboard: ${from}/index.html does not exist (build it: npx nx run dashboard:build)`);
  process.exit(1);
}
rmSync(to, { recursive: true, force: true });
cpSync(from, to, { recursive: true });
console.log(`copy-dashboard: ${path.relative(process.cwd(), from)} -> ${path.relative(process.cwd(), to)}`);
