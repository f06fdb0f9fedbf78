/**
 * The checker's program runs on a real CraftOS-PC computer: the way the agent host's run_program runs them
 * (arguments, `require` from the program's folder, output captured, errors with their message), one after the other
 * in one boot with the disk's state carried over, and a program that never ends costs only its own timeout.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { checkContext, createComputer, runPrograms } from '../src/index.js';
import { ORCHESTRATOR, craftos, outDir } from './support.js';

const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe.skipIf(!craftos)('checker runs on CraftOS-PC', () => {
  it('runs programs with arguments, modules and state, reports errors, and times out a program that never ends', async () => {
    const dir = outDir();
    dirs.push(dir);
    const computer = createComputer(craftos!, dir, {
      '/args.lua': 'print(#arg, table.concat(arg, ","))\n',
      '/lib/m.lua': 'return { twice = function(x) return x * 2 end }\n',
      '/lib/use.lua': 'print(require("m").twice(21))\n',
      '/count.lua':
        'local f = fs.open("n.txt", "r") local n = f and tonumber(f.readAll()) or 0 if f then f.close() end\n' +
        'n = n + 1 f = fs.open("n.txt", "w") f.write(tostring(n)) f.close() print(n)\n',
      '/boom.lua': 'print("before")\nerror("boom at the end")\n',
      '/forever.lua': 'while true do sleep(0) end\n',
    });
    const c = checkContext(computer, craftos!, ORCHESTRATOR.luaDir);
    const outs = await c.runs([
      { program: 'args.lua', args: ['a b', 'c'] },
      { program: '/lib/use.lua' },
      { program: 'count' },
      { program: 'count.lua' },
      { program: 'boom.lua' },
      { program: 'missing.lua' },
    ]);
    expect(outs.map((o) => [o.ok, o.output])).toEqual([
      [true, '2\ta b,c'],
      [true, '42'],
      [true, '1'],
      [true, '2'],
      [false, 'before'],
      [false, ''],
    ]);
    expect(outs[4]?.error).toContain('boom at the end');
    expect(outs[5]?.error).toBe('no such program: /missing.lua');
    expect(c.read('/n.txt')).toBe('2');
    expect(c.list('/lib')).toEqual(['m.lua', 'use.lua']);

    const started = Date.now();
    const slow = await runPrograms(
      craftos!,
      computer,
      [{ program: 'args.lua' }, { program: 'forever.lua' }, { program: 'args.lua' }],
      {
        luaDir: ORCHESTRATOR.luaDir,
        timeoutMs: 4000,
      },
    );
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(slow[0]).toEqual({ ok: true, output: '0' });
    expect(slow[1]).toMatchObject({
      ok: false,
      error: expect.stringContaining('timed out: forever.lua') as string,
    });
    expect(slow[2]).toEqual({ ok: false, output: '', error: 'not run: forever.lua before it timed out' });
  });
});
