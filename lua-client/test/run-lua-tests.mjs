// Runs the fast Lua unit tier: every lua-client/test/unit/*_spec.lua under Debian's lua5.2 (Lua 5.2 semantics,
// like CC:Tweaked's Cobalt VM). Each spec prints TAP-style lines `ok - name` / `not ok - name: reason`.
// Writes .test-results/lua-client.json in the same shape as vitest's JSON report so `npm test` can sum it.
import { spawnSync } from 'node:child_process';
import { mkdirSync, readdirSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const pkgRoot = path.resolve(here, '..');
const wsRoot = path.resolve(pkgRoot, '..');
const lua = process.env.LUA ?? 'lua5.2';

let passed = 0;
let failed = 0;
let skipped = 0;
const testResults = [];
const probe = spawnSync(lua, ['-v'], { encoding: 'utf8' });
if (probe.error) {
  console.log(`[lua-client] SKIPPED unit tier: '${lua}' not found (apt-get install lua5.2)`);
  skipped += 1;
} else {
  const unitDir = path.join(here, 'unit');
  for (const f of readdirSync(unitDir)
    .filter((n) => n.endsWith('_spec.lua'))
    .sort()) {
    const r = spawnSync(lua, [path.join(unitDir, f)], {
      cwd: pkgRoot,
      encoding: 'utf8',
      env: { ...process.env, LUA_PATH: `${pkgRoot}/src/?.lua;${pkgRoot}/test/?.lua;;` },
    });
    const lines = `${r.stdout}`.split('\n');
    const assertions = [];
    for (const line of lines) {
      const m = /^(not ok|ok) - (.*)$/.exec(line);
      if (!m) continue;
      const ok = m[1] === 'ok';
      assertions.push({ title: m[2], status: ok ? 'passed' : 'failed' });
      if (ok) passed += 1;
      else failed += 1;
      console.log(`  ${ok ? '✓' : '✗'} ${f}: ${m[2]}`);
    }
    if (r.status !== 0 || assertions.length === 0) {
      failed += 1;
      assertions.push({ title: `${f} exited ${r.status}`, status: 'failed' });
      console.log(`  ✗ ${f} exited ${r.status}\n${r.stderr}`);
    }
    testResults.push({
      name: f,
      status: assertions.some((a) => a.status === 'failed') ? 'failed' : 'passed',
      assertionResults: assertions,
    });
  }
}
mkdirSync(path.join(wsRoot, '.test-results'), { recursive: true });
writeFileSync(
  path.join(wsRoot, '.test-results', 'lua-client.json'),
  JSON.stringify({
    numPassedTests: passed,
    numFailedTests: failed,
    numPendingTests: skipped,
    numTodoTests: 0,
    testResults,
  }),
);
console.log(`[lua-client] ${passed} passed, ${failed} failed${skipped ? `, ${skipped} skipped` : ''}`);
process.exit(failed === 0 ? 0 : 1);
