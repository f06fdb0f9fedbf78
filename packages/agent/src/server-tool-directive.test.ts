import { describe, expect, it } from 'vitest';
import { parseToolDirective, serverToolsOf, withServerToolSection } from './server-tool-directive.js';

describe('the planner’s TOOL directive', () => {
  it('reads NAME and a JSON ARGS, on one line or several, names with underscores kept (guards: "get_time" read as "gettime")', () => {
    expect(parseToolDirective('PLAN:\n1. x\nTOOL\nNAME: get_time\nARGS: {"format": "iso"}')).toEqual({
      ok: true,
      name: 'get_time',
      args: { format: 'iso' },
    });
    expect(
      parseToolDirective(
        '**TOOL**\n- **NAME:** `roll_dice`\nARGS:\n```json\n{"count": 2,\n "sides": 6}\n```',
      ),
    ).toEqual({
      ok: true,
      name: 'roll_dice',
      args: { count: 2, sides: 6 },
    });
    expect(parseToolDirective('TOOL\nNAME: echo')).toEqual({ ok: true, name: 'echo', args: {} });
  });

  it('is not the directive when another comes first, or when TOOL is inside file content (guards: a file line read as a call)', () => {
    expect(parseToolDirective('RUN\nPATH: a.lua\nTOOL\nNAME: echo')).toBeUndefined();
    expect(parseToolDirective('WRITE_FILE\nPATH: a.lua\nCONTENT:\n```lua\n-- TOOL\n```')).toBeUndefined();
    expect(parseToolDirective('Sure, here is my answer.')).toBeUndefined();
  });

  it('a TOOL without a NAME, or with ARGS that are no JSON object, is an error for the planner', () => {
    expect(parseToolDirective('TOOL\nARGS: {}')).toEqual({
      ok: false,
      error: 'TOOL needs a NAME: the server tool to call',
    });
    const bad = parseToolDirective('TOOL\nNAME: echo\nARGS: [1, 2]');
    expect(bad).toMatchObject({ ok: false, name: 'echo' });
    expect(bad?.ok === false && bad.error).toMatch(/^ARGS of TOOL echo must be one JSON object/);
  });

  it('lists only server tools in the planner’s system prompt, and adds nothing without one (guards: every prompt changing)', () => {
    const commands = [
      { name: 'fs_read', description: 'read' },
      {
        name: 'get_time',
        description: 'the time',
        argsSchema: { type: 'object', properties: { format: { type: 'string' } } },
        origin: 'server' as const,
      },
    ];
    expect(serverToolsOf(commands).map((c) => c.name)).toEqual(['get_time']);
    expect(withServerToolSection('SYSTEM', [])).toBe('SYSTEM');
    const s = withServerToolSection('SYSTEM', serverToolsOf(commands));
    expect(s.startsWith('SYSTEM\n\n')).toBe(true);
    expect(s).toContain('- get_time: the time parameters: {"format":{"type":"string"}}');
    expect(s).not.toContain('fs_read');
  });
});
