/** Runs the README's example exactly as printed, against the built package and a fresh database. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { createTestDatabase, TEST_PG_URL } from '../test/support/test-database.js';

const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');

describe.skipIf(TEST_PG_URL === undefined)('README example', () => {
  it('runs as printed and keeps its tasks across runs (guards against a README that does not work)', async () => {
    const code = /```js\n(\/\/ example: store-postgres-readme\.mjs[\s\S]*?)```/.exec(readme)?.[1];
    expect(code).toBeDefined();
    const db = await createTestDatabase();
    // Inside the package so that the workspace packages resolve.
    const dir = mkdtempSync(path.join(fileURLToPath(new URL('.', import.meta.url)), '..', '.example-'));
    try {
      writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
      writeFileSync(path.join(dir, 'example.mjs'), code as string);
      const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1', CCAGENT_TEST_PG_URL: db.url };
      delete env.FORCE_COLOR;
      const run = () =>
        execFileSync(process.execPath, ['example.mjs'], { cwd: dir, encoding: 'utf8', env, timeout: 20_000 });
      const label = `postgres://postgres@127.0.0.1:${new URL(db.url).port}/${db.name}`;
      expect(run().trim()).toBe(`hi 1 completed task(s) in ${label}`);
      expect(run().trim()).toBe(`hi 2 completed task(s) in ${label}`);
    } finally {
      rmSync(dir, { recursive: true, force: true });
      await db.drop();
    }
  });
});
