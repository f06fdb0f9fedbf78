// Issue 34: the strategies are split into phase modules, and no function of them is over 150 lines. The check is
// tools/check-function-length.mjs (TypeScript's parser; every function, arrow and method counts, an outer function
// with everything it contains), run here on every source module of the package, and on a generated file to show it
// does fail.
import { execFileSync } from 'node:child_process';
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../..');
const CHECK = path.join(ROOT, 'tools/check-function-length.mjs');
const SRC = path.resolve(import.meta.dirname, '../src');

interface Over {
  file: string;
  name: string;
  line: number;
  lines: number;
}

/** The check's verdict on `paths`: its exit code and the functions it found over the limit. */
function check(paths: string[]): { code: number; over: Over[] } {
  try {
    const out = execFileSync(process.execPath, [CHECK, '--json', ...paths], { encoding: 'utf8' });
    return { code: 0, over: (JSON.parse(out) as { over: Over[] }).over };
  } catch (err) {
    const e = err as { status: number; stdout: string };
    return { code: e.status, over: (JSON.parse(e.stdout) as { over: Over[] }).over };
  }
}

const dir = mkdtempSync(path.join(tmpdir(), 'fn-length-'));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

describe('strategy function length', () => {
  it('no function of the strategies (planner/executor, native, chat, run budget, model call) is over 150 lines', () => {
    const r = check([SRC]);
    expect(
      r.over.map((f) => `${path.relative(ROOT, f.file)}:${f.line} ${f.name} (${f.lines} lines)`),
    ).toEqual([]);
    expect(r.code).toBe(0);
  });

  it('the check fails on a 151-line closure and names it, and passes one of 150 (guards against a check that cannot fail)', () => {
    const body = (n: number): string =>
      Array.from({ length: n - 2 }, (_, i) => `  const v${i} = ${i};`).join('\n');
    const long = path.join(dir, 'long-strategy.ts');
    writeFileSync(long, `export function createLong() {\n${body(151)}\n}\n`);
    const ok = path.join(dir, 'ok-strategy.ts');
    writeFileSync(ok, `export const createOk = () => {\n${body(150)}\n};\n`);
    const r = check([long, ok]);
    expect(r.code).toBe(1);
    expect(r.over).toEqual([{ file: long, name: 'createLong', line: 1, lines: 151 }]);
    expect(check([ok]).code).toBe(0);
  });
});
