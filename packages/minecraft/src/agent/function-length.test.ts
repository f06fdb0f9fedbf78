// Issue 34: the minecraft_agent strategy is split into phase modules, and no function of them is over 150 lines
// (tools/check-function-length.mjs, whose own failing case is tested in packages/agent).
import { execFileSync } from 'node:child_process';
import path from 'node:path';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(import.meta.dirname, '../../../..');

describe('minecraft_agent strategy function length', () => {
  it('no function of the strategy modules is over 150 lines', () => {
    let out: string;
    let code = 0;
    try {
      out = execFileSync(
        process.execPath,
        [path.join(ROOT, 'tools/check-function-length.mjs'), '--json', import.meta.dirname],
        { encoding: 'utf8' },
      );
    } catch (err) {
      const e = err as { status: number; stdout: string };
      code = e.status;
      out = e.stdout;
    }
    const over = (
      JSON.parse(out) as { over: Array<{ file: string; line: number; name: string; lines: number }> }
    ).over;
    expect(over.map((f) => `${path.relative(ROOT, f.file)}:${f.line} ${f.name} (${f.lines} lines)`)).toEqual(
      [],
    );
    expect(code).toBe(0);
  });
});
