// `npm test` for lua-client: both tiers, always both (a failing unit tier must not hide the CraftOS results).
//   1. the Lua unit tier under lua5.2       → .test-results/lua-client.json
//   2. the CraftOS tier (vitest, real CC)   → .test-results/lua-client.craftos.json (skipped without CraftOS-PC)
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args) => spawnSync(cmd, args, { cwd: pkgRoot, stdio: 'inherit' }).status ?? 1;
const unit = run(process.execPath, ['test/run-lua-tests.mjs']);
const vitestPkg = createRequire(import.meta.url).resolve('vitest/package.json');
const vitest = path.join(path.dirname(vitestPkg), 'vitest.mjs');
const craftos = run(process.execPath, [vitest, 'run']);
process.exit(unit === 0 && craftos === 0 ? 0 : 1);
