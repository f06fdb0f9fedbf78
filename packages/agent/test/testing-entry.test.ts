// `@ccagent/agent/testing` is how code outside the package reaches the agent's test helpers, corpus and scenarios:
// nothing in tools/ may import a package's (or app's) test folder, which is not published and may change with any
// test; the entry's files must be in the published package.
import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import * as testing from '@ccagent/agent/testing';

const pkgDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const root = path.resolve(pkgDir, '../..');

function sources(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir)) {
    if (name === 'node_modules' || name === 'dist' || name.startsWith('.')) continue;
    const file = path.join(dir, name);
    if (statSync(file).isDirectory()) out.push(...sources(file));
    else if (/\.(mjs|cjs|js|ts|mts)$/.test(name)) out.push(file);
  }
  return out;
}

/** String literals of `file` (its text) that name a path inside a package's or app's `test/` folder. */
function testFolderReferences(file: string, text = readFileSync(file, 'utf8')): string[] {
  const found: string[] = [];
  for (const m of text.matchAll(/(['"`])((?:\.{1,2}\/|[\w@-]+\/)[^'"`\n]*?)\1/g)) {
    const spec = m[2] as string;
    const resolved = spec.startsWith('.') ? path.resolve(path.dirname(file), spec) : path.join(root, spec);
    const rel = path.relative(root, resolved).split(path.sep).join('/');
    if (/^(packages|apps)\/[^/]+\/test(\/|$)/.test(rel)) found.push(`${path.relative(root, file)}: ${spec}`);
  }
  return found;
}

describe('@ccagent/agent/testing', () => {
  it('is the way into the test helpers: nothing in tools/ names a package’s test folder (guards against benches and the demo breaking when a test file moves)', () => {
    const files = sources(path.join(root, 'tools'));
    expect(files.length).toBeGreaterThan(10);
    expect(files.flatMap((f) => testFolderReferences(f))).toEqual([]);
    // The check finds each way such a reference was written before (it would pass vacuously otherwise).
    const bench = path.join(root, 'tools', 'bench', 'x', 'run.mjs');
    const demo = path.join(root, 'tools', 'demo.mjs');
    const bad: Array<[string, string]> = [
      [bench, "import { runTask } from '../../../packages/agent/test/support/harness.mjs';"],
      [demo, "await import('../packages/agent/test/support/lua-tool-executor.mjs');"],
      [demo, "path.join(root, 'packages/agent/test/fixtures/todo/scenario.mjs')"],
      [bench, 'import { serve } from "../../../apps/orchestrator/test/support/spawn.js";'],
    ];
    for (const [file, line] of bad) expect(testFolderReferences(file, line), line).toHaveLength(1);
    expect(testFolderReferences(bench, "import { todo } from '@ccagent/agent/testing';")).toEqual([]);
  });

  it('exports the harness, the Lua executor, the failure corpus and the TODO.lua scenario, all in the published files', () => {
    for (const name of [
      'startModels',
      'runTask',
      'removeRoot',
      'createLuaToolExecutor',
      'runCorpus',
      'loadCorpus',
    ])
      expect(typeof (testing as Record<string, unknown>)[name]).toBe('function');
    expect(testing.todo.BROKEN).toContain('TODO');
    expect(testing.CORE_COMMANDS.map((c) => c.name)).toContain('run_program');
    const pkg = JSON.parse(readFileSync(path.join(pkgDir, 'package.json'), 'utf8')) as {
      files: string[];
      exports: Record<string, unknown>;
    };
    expect(pkg.exports['./testing']).toEqual({
      import: { types: './dist/testing/index.d.mts', default: './testing/index.mjs' },
    });
    expect(pkg.files).toContain('testing');
    expect(statSync(testing.FIXTURES_DIR).isDirectory()).toBe(true);
    expect(path.relative(pkgDir, testing.FIXTURES_DIR).split(path.sep)[0]).toBe('testing');
  });
});
