import { describe, expect, it } from 'vitest';
import { parseDirective } from './directive-parser.js';
import { checkCommands, directiveToToolCall, planToolCall, toolsFor } from './tools.js';

describe('tool mapping', () => {
  it('maps cc_write_and_run to fs_write followed by the runs', () => {
    expect(
      planToolCall({
        tool: 'cc_write_and_run',
        parameters: { path: 'a.lua', content: 'x', runs: [{ path: 'a.lua', args: ['1'] }] },
      }),
    ).toEqual({
      kind: 'commands',
      calls: [
        { command: 'fs_write', args: { path: 'a.lua', content: 'x' } },
        { command: 'run_program', args: { path: 'a.lua', args: ['1'] } },
      ],
    });
    expect(planToolCall({ tool: 'cc_shell', parameters: { command: 'ls' } })).toEqual({
      kind: 'commands',
      calls: [{ command: 'shell_exec', args: { command: 'ls' } }],
    });
    expect(planToolCall({ tool: 'ask_user', parameters: { question: 'q', why: 'w' } })).toEqual({
      kind: 'ask',
      question: 'q',
      why: 'w',
    });
  });

  it('translates directives deterministically (parser mode)', () => {
    const d = parseDirective('WRITE_FILE\nPATH: a.lua\nCONTENT:\n```\nx\n```\nTHEN:\n- a.lua go');
    if (!d.ok) throw new Error(d.error.message);
    expect(directiveToToolCall(d.value.directive)).toEqual({
      tool: 'cc_write_and_run',
      parameters: { path: 'a.lua', content: 'x\n', runs: [{ path: 'a.lua', args: ['go'] }] },
    });
    const done = parseDirective('DONE\nSUMMARY: s');
    if (done.ok) expect(directiveToToolCall(done.value.directive)).toBeNull();
  });

  it('offers only tools whose commands are available', () => {
    expect(toolsFor(['fs_write'])).toEqual(['cc_write', 'ask_user']);
    expect(toolsFor(['fs_write', 'run_program', 'shell_exec'])).toHaveLength(5);
  });

  it('refuses commands outside allowed_commands or not provided by any client', () => {
    const calls = [{ command: 'shell_exec', args: { command: 'rm -rf /' } }];
    expect(checkCommands(calls, ['fs_write'], ['fs_write', 'shell_exec'])).toMatchObject({
      ok: false,
      error: { code: 'not_allowed', command: 'shell_exec' },
    });
    expect(checkCommands(calls, ['shell_exec'], ['fs_write'])).toMatchObject({
      ok: false,
      error: { code: 'not_available' },
    });
    expect(checkCommands(calls, ['shell_exec'], ['shell_exec'])).toEqual({ ok: true, value: undefined });
  });
});
