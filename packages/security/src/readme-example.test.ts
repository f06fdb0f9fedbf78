/** Runs the README's example exactly as printed, against the built package. */
import { execFileSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const readme = readFileSync(fileURLToPath(new URL('../README.md', import.meta.url)), 'utf8');

describe('README example', () => {
  it('runs as printed (guards against a README that does not work)', () => {
    const code = /```js\n(\/\/ example: security-readme\.mjs[\s\S]*?)```/.exec(readme)?.[1];
    expect(code).toBeDefined();
    // Inside the package so that the workspace packages resolve.
    const dir = mkdtempSync(path.join(fileURLToPath(new URL('.', import.meta.url)), '..', '.example-'));
    try {
      writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
      writeFileSync(path.join(dir, 'example.mjs'), code as string);
      const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
      delete env.FORCE_COLOR;
      const out = execFileSync(process.execPath, ['example.mjs'], {
        cwd: dir,
        encoding: 'utf8',
        env,
        timeout: 20_000,
      });
      expect(out.trim().split('\n')).toEqual(['true', 'code_used']);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });
});
