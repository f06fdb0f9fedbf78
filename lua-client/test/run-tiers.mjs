// `npm test` for lua-client: every tier, always all of them (a failing tier must not hide the others' results).
//   1. the Lua unit tier under lua5.2                 → .test-results/lua-client.json
//   2. the CraftOS tier (vitest, real CC, fake server) → .test-results/lua-client.craftos.json
//   3. the end-to-end tier (vitest, real CC, the built orchestrator, fake models)
//                                                      → .test-results/lua-client.e2e.json
//   4. the real-model tier (vitest, real CC, the built orchestrator, a REAL Ollama with real small weights from
//      tools/ollama-test-server.sh)                   → .test-results/lua-client.real-model.json
// Tiers 2 to 4 are skipped with a printed notice without CraftOS-PC; tier 4 also without CCAGENT_TEST_OLLAMA_URL,
// except in CI, where a missing real model server fails it.
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const pkgRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const run = (cmd, args) => spawnSync(cmd, args, { cwd: pkgRoot, stdio: 'inherit' }).status ?? 1;
const vitestPkg = createRequire(import.meta.url).resolve('vitest/package.json');
const vitest = path.join(path.dirname(vitestPkg), 'vitest.mjs');
const codes = [
  run(process.execPath, ['test/run-lua-tests.mjs']),
  run(process.execPath, [vitest, 'run']),
  run(process.execPath, [vitest, 'run', '-c', 'vitest.e2e.config.ts']),
  run(process.execPath, [vitest, 'run', '-c', 'vitest.real-model.config.ts']),
];
process.exit(codes.every((c) => c === 0) ? 0 : 1);
