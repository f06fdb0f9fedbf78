import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it, vi } from 'vitest';
import { VERSION } from './index.js';

const here = path.dirname(fileURLToPath(import.meta.url));
const readme = readFileSync(path.join(here, '..', 'README.md'), 'utf8');
const dir = mkdtempSync(path.join(tmpdir(), 'minecraft-readme-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('README example', () => {
  it('runs against the package and prints exactly the `// →` lines it promises', async () => {
    const code = /```ts\n([\s\S]*?)```/.exec(readme)?.[1] ?? '';
    const expected = [...code.matchAll(/^\/\/ → (.*)$/gm)].map((m) => m[1]);
    expect(expected.length).toBeGreaterThan(0);
    const file = path.join(dir, 'example.ts');
    const entry = path.join(here, 'index.ts').split(path.sep).join('/');
    writeFileSync(file, code.replace("from '@ccagent/minecraft'", `from '${entry}'`));
    const printed: string[] = [];
    const spy = vi.spyOn(console, 'log').mockImplementation((...args: unknown[]) => {
      printed.push(args.map(String).join(' '));
    });
    try {
      await import(file);
    } finally {
      spy.mockRestore();
    }
    expect(printed).toEqual(expected);
  });

  it('VERSION matches package.json', () => {
    const pkg = JSON.parse(readFileSync(path.join(here, '..', 'package.json'), 'utf8')) as {
      version: string;
    };
    expect(VERSION).toBe(pkg.version);
  });
});
