// A Lua error's stack traceback as the model reads it names only the program's own frames: the host's frames
// (/ccagent/ccagent/host.lua:210 …), which a small model mistakes for the bug, are cut from `error`, and the whole
// traceback is kept beside it (`host_traceback`) for the step log. Real CC:Tweaked computer (CraftOS-PC).
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { HOST_PROGRAM } from './host-program.js';
import { Scenario, craftos } from './scenario.js';

type Obj = Record<string, unknown>;
interface Result {
  ok: boolean;
  result: Obj;
  error: Obj;
}

/** Frames of the traceback that point into the client library (its folder on the computer). */
const hostFrames = (trace: string): string[] =>
  trace.split('\n').filter((l) => /ccagent\/(ccagent|host|client)|ccagent\.lua|capture\.lua/.test(l));

describe.skipIf(!craftos)('tracebacks given back to the model (real CraftOS)', () => {
  let s: Scenario;
  beforeEach(async () => {
    s = await Scenario.start();
  });
  afterEach(async () => {
    expect(await s.end()).toEqual([]);
  });
  const call = async (command: string, args: Obj = {}): Promise<Result> =>
    (await s.server.call(command, args)) as unknown as Result;

  it('run_program: the error keeps the program frames and drops the host frames; the full trace is kept', async () => {
    s.boot(HOST_PROGRAM, {
      args: [s.server.url],
      files: {
        'prog.lua': [
          'local function inner(n)',
          '  error("boom " .. n)',
          'end',
          'local function outer(n) inner(n) end',
          'outer(...)',
        ].join('\n'),
      },
    });
    await s.server.hello();
    const r = await call('run_program', { path: '/prog.lua', args: ['7'] });
    expect(r.ok).toBe(true);
    expect(r.result.ok).toBe(false);
    const error = String(r.result.error);
    expect(error).toContain('prog.lua:2: boom 7');
    expect(error).toContain('stack traceback');
    expect(error).toMatch(/prog\.lua:2: in .*inner/);
    expect(error).toMatch(/prog\.lua:4: in .*outer/);
    expect(error).toContain('prog.lua:5: in main chunk');
    expect(hostFrames(error)).toEqual([]);
    expect(error).not.toContain('xpcall');
    const full = String(r.result.host_traceback);
    expect(hostFrames(full).length).toBeGreaterThan(0);
    expect(full).toContain('prog.lua:2: boom 7');
  });

  it('a program without an error of its own frames (error at top level) still reads as the program', async () => {
    s.boot(HOST_PROGRAM, { args: [s.server.url], files: { 'top.lua': 'error("nope")' } });
    await s.server.hello();
    const r = await call('run_program', { path: '/top.lua' });
    const error = String(r.result.error);
    expect(error).toContain('top.lua:1: nope');
    expect(hostFrames(error)).toEqual([]);
  });

  it('a model-written tool: tool_test and a failing call give the trace without the client frames', async () => {
    s.boot(HOST_PROGRAM, { args: [s.server.url] });
    await s.server.hello();
    const code = [
      'local function check(args) if args.bad then local t = nil return t.x end return { fine = true } end',
      'return function(args) return check(args) end',
    ].join('\n');
    await call('tool_create', { name: 'checker', code });
    const tested = await call('tool_test', { name: 'checker', args: { bad: true } });
    expect(tested.result.ok).toBe(false);
    expect(String(tested.result.error)).toContain('attempt to index');
    expect(String(tested.result.error)).toMatch(/checker\.lua:1: in .*check/);
    expect(hostFrames(String(tested.result.error))).toEqual([]);
    expect(hostFrames(String(tested.result.host_traceback)).length).toBeGreaterThan(0);
    expect((await call('tool_test', { name: 'checker', args: {} })).result.ok).toBe(true);
    await call('tool_set_status', { name: 'checker', status: 'active' });
    const r = await call('checker', { bad: true });
    expect(r.ok).toBe(false);
    expect(String(r.error.traceback)).toMatch(/checker\.lua:1: in .*check/);
    expect(hostFrames(String(r.error.traceback))).toEqual([]);
    expect(hostFrames(String(r.error.host_traceback)).length).toBeGreaterThan(0);
  });
});
