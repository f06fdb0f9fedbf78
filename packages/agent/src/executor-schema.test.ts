import { describe, expect, it } from 'vitest';
import { executorJsonSchema, validateExecutorOutput } from './executor-schema.js';
import type { Directive } from './directive-parser.js';
import { AGENT_TOOL_NAMES } from './tools.js';

const ALL = AGENT_TOOL_NAMES;

describe('validateExecutorOutput', () => {
  it('accepts a tool call and applies parameter defaults', () => {
    const r = validateExecutorOutput(
      '{"kind":"tool","explanation":"run","tool":"cc_run_program","parameters":{"path":"a.lua"}}',
      ALL,
    );
    expect(r).toEqual({
      ok: true,
      value: {
        output: {
          kind: 'tool',
          explanation: 'run',
          call: { tool: 'cc_run_program', parameters: { path: 'a.lua', args: [] } },
        },
        repairs: [],
      },
    });
  });

  it('accepts a final result from a fenced reply with trailing commas and reports the repairs', () => {
    const r = validateExecutorOutput(
      '```json\n{"kind":"final","explanation":"x","result":{"success":true,"message":"ok","details":"",},}\n```',
      ALL,
    );
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.repairs).toEqual(['code fence removed', 'trailing commas']);
  });

  it('rejects an invented tool with the list of real ones (guards against calling a tool that does not exist)', () => {
    const r = validateExecutorOutput(
      '{"kind":"tool","explanation":"","tool":"write_file","parameters":{"path":"a"}}',
      ['cc_write', 'cc_shell'],
    );
    expect(r).toMatchObject({ ok: false, error: { stage: 'schema' } });
    if (!r.ok) expect(r.error.message).toMatch(/tool.*cc_write.*cc_shell/);
  });

  it('rejects missing fields and bad parameters with their paths', () => {
    const a = validateExecutorOutput('{"kind":"tool","tool":"cc_shell","parameters":{}}', ALL);
    expect(a).toMatchObject({ ok: false, error: { stage: 'schema' } });
    if (!a.ok) expect(a.error.message).toContain('explanation');
    const b = validateExecutorOutput(
      '{"kind":"tool","explanation":"","tool":"cc_shell","parameters":{"cmd":"ls"}}',
      ALL,
    );
    expect(b).toMatchObject({ ok: false, error: { stage: 'parameters' } });
    if (!b.ok) expect(b.error.message).toContain('command');
    const c = validateExecutorOutput('not json at all', ALL);
    expect(c).toMatchObject({ ok: false, error: { stage: 'json' } });
  });
});

describe('executorJsonSchema', () => {
  it('is a JSON Schema with one branch per offered tool and its parameters (what Ollama gets as format)', () => {
    const schema = executorJsonSchema(['cc_write', 'cc_shell']);
    const text = JSON.stringify(schema);
    expect(text).toContain('"const":"cc_write"');
    expect(text).toContain('"const":"cc_shell"');
    expect(text).toContain('"const":"final"');
    expect(text).not.toContain('cc_run_program');
    const branches = schema.anyOf as Array<{ properties: { parameters?: { required?: string[] } } }>;
    expect(branches).toHaveLength(3);
    expect(branches[0]?.properties.parameters?.required).toEqual(['path', 'content']);
  });

  it('leaves out the final branch when the directive is not DONE, and is a single object for one tool', () => {
    const schema = executorJsonSchema(['cc_run_program'], false);
    expect(schema.anyOf).toBeUndefined();
    expect(JSON.stringify(schema)).not.toContain('final');
    expect(schema.required).toEqual(['kind', 'explanation', 'tool', 'parameters']);
  });
});

const RUN_LIST: Directive = { kind: 'RUN', path: 'TODO.lua', args: ['list'], expect: '' };
const SHELL_LS: Directive = { kind: 'SHELL', command: 'ls', expect: '' };
const WRITE: Directive = {
  kind: 'WRITE_FILE',
  path: 'hello.lua',
  language: 'lua',
  content: 'print("hi")\n',
  then: [{ path: 'hello.lua', args: [] }],
};
const tool = (t: string, parameters: unknown) =>
  JSON.stringify({ kind: 'tool', explanation: 'x', tool: t, parameters });
const shell = (command: string) => tool('cc_shell', { command });
const check = (raw: string, d: Directive, strict = false) =>
  validateExecutorOutput(raw, ALL, d.kind === 'DONE', { directive: d, strict });

describe('the executor only translates (a call the directive did not ask for is invalid)', () => {
  it('refuses two JSON objects instead of running the first (guards against rm -rf / riding before the asked ls)', () => {
    const r = check(`${shell('rm -rf /')}\n${shell('ls')}`, SHELL_LS);
    expect(r).toMatchObject({ ok: false, error: { stage: 'json' } });
    if (!r.ok) expect(r.error.message).toMatch(/2 JSON objects; exactly one/);
  });

  it('refuses an array of two calls and two <tool_call> blocks (never "first wins")', () => {
    expect(check(`[${shell('ls')}, ${shell('rm -rf /')}]`, SHELL_LS)).toMatchObject({ ok: false });
    expect(
      check(`<tool_call>\n${shell('ls')}\n</tool_call>\n<tool_call>\n${shell('ls')}\n</tool_call>`, SHELL_LS),
    ).toMatchObject({ ok: false, error: { stage: 'json' } });
  });

  it.each([
    ['another shell command', shell('rm -rf /'), SHELL_LS, /command "rm -rf \/" instead of "ls"/],
    [
      'changed arguments',
      tool('cc_run_program', { path: 'TODO.lua', args: ['remove', '1'] }),
      RUN_LIST,
      /arguments/,
    ],
    [
      'another program',
      tool('cc_run_program', { path: 'other.lua', args: ['list'] }),
      RUN_LIST,
      /path "other.lua"/,
    ],
    [
      'another tool',
      tool('cc_shell', { command: 'TODO.lua list' }),
      RUN_LIST,
      /shell_exec instead of run_program/,
    ],
    [
      'a run the THEN list did not have',
      tool('cc_write_and_run', {
        path: 'hello.lua',
        content: 'print("hi")\n',
        runs: [{ path: 'hello.lua' }, { path: 'rm', args: ['-rf', '/'] }],
      }),
      WRITE,
      /asks for 2 commands/,
    ],
    [
      'a dropped THEN run',
      tool('cc_write', { path: 'hello.lua', content: 'print("hi")\n' }),
      WRITE,
      /asks for 2/,
    ],
    [
      'changed file content',
      tool('cc_write_and_run', {
        path: 'hello.lua',
        content: 'os.shutdown()\n',
        runs: [{ path: 'hello.lua' }],
      }),
      WRITE,
      /content differs/,
    ],
    [
      'an invented parameter',
      tool('cc_run_program', { path: 'TODO.lua', args: ['list'], sudo: true }),
      RUN_LIST,
      /"sudo"/,
    ],
    [
      'a language the directive did not name',
      tool('cc_write_and_run', {
        path: 'hello.lua',
        content: 'print("hi")\n',
        runs: [{ path: 'hello.lua' }],
        language: 'python',
      }),
      WRITE,
      /"language"/,
    ],
  ])('refuses %s', (_what, raw, d, message) => {
    const r = check(raw, d);
    expect(r).toMatchObject({ ok: false, error: { stage: 'derivation' } });
    if (!r.ok) expect(r.error.message).toMatch(message);
  });

  it('refuses a path that climbs above the computer root', () => {
    const d: Directive = { kind: 'RUN', path: '../../etc/passwd', args: [], expect: '' };
    const r = check(tool('cc_run_program', { path: '../../etc/passwd' }), d);
    expect(r).toMatchObject({ ok: false, error: { stage: 'derivation' } });
    if (!r.ok) expect(r.error.message).toMatch(/outside the computer/);
  });

  it('accepts the exact translation, with /path and a trailing newline difference logged', () => {
    const r = check(
      tool('cc_write_and_run', {
        path: '/hello.lua',
        content: 'print("hi")',
        runs: [{ path: 'hello.lua', args: [] }],
      }),
      WRITE,
    );
    expect(r.ok).toBe(true);
    if (r.ok) {
      expect(r.value.repairs).toEqual([
        'path "/hello.lua" is the directive\'s "hello.lua"',
        'file content differs from the directive only in trailing whitespace',
      ]);
    }
  });
});

describe('every tolerated deviation is logged; strict mode refuses them', () => {
  it.each([
    [
      'trailing commas',
      `{"kind":"tool","explanation":"x","tool":"cc_run_program","parameters":{"path":"TODO.lua","args":["list"],},}`,
      'trailing commas',
    ],
    [
      'single quotes',
      `{'kind':'tool','explanation':'x','tool':'cc_run_program','parameters':{'path':'TODO.lua','args':['list']}}`,
      'single-quoted strings',
    ],
    [
      'args as a string',
      tool('cc_run_program', { path: 'TODO.lua', args: 'list' }),
      'args given as a string, split into words',
    ],
    [
      'parameters as a string',
      tool('cc_run_program', JSON.stringify({ path: 'TODO.lua', args: ['list'] })),
      'parameters serialised into a string, decoded',
    ],
    [
      'comments',
      `{"kind":"tool", // run it\n"explanation":"x","tool":"cc_run_program",/* the program */"parameters":{"path":"TODO.lua","args":["list"]}}`,
      'comments',
    ],
    [
      'typographic quotes',
      '{\u201ckind\u201d:\u201ctool\u201d,\u201cexplanation\u201d:\u201cx\u201d,\u201ctool\u201d:\u201ccc_run_program\u201d,\u201cparameters\u201d:{\u201cpath\u201d:\u201cTODO.lua\u201d,\u201cargs\u201d:[\u201clist\u201d]}}',
      'typographic quotes as string delimiters',
    ],
    [
      'a reasoning block',
      `<think>RUN means cc_run_program</think>\n${tool('cc_run_program', { path: 'TODO.lua', args: ['list'] })}`,
      'reasoning block removed',
    ],
    [
      'Qwen tool_call tags and shape',
      `<tool_call>\n${JSON.stringify({ name: 'cc_run_program', arguments: { path: 'TODO.lua', args: ['list'] } })}\n</tool_call>`,
      'tool-call object {name, arguments} read as {kind: "tool", tool, parameters}',
    ],
    [
      'CRLF and a fence',
      `\`\`\`json\r\n${tool('cc_run_program', { path: 'TODO.lua', args: ['list'] })}\r\n\`\`\``,
      'code fence removed',
    ],
  ])('logs %s and refuses it in strict mode', (_what, raw, repair) => {
    const r = check(raw, RUN_LIST);
    expect(r.ok).toBe(true);
    if (r.ok) expect(r.value.repairs).toContain(repair);
    const strict = check(raw, RUN_LIST, true);
    expect(strict).toMatchObject({ ok: false, error: { stage: 'strict' } });
  });

  it('accepts a clean reply in strict mode with nothing logged', () => {
    expect(check(tool('cc_run_program', { path: 'TODO.lua', args: ['list'] }), RUN_LIST, true)).toMatchObject(
      {
        ok: true,
        value: { repairs: [] },
      },
    );
  });
});

describe('final.result.details as the spec shows it', () => {
  it('accepts details as an object without a repair (seed 001 final example)', () => {
    const r = validateExecutorOutput(
      JSON.stringify({
        kind: 'final',
        explanation: 'done',
        result: { success: true, message: 'TODO.lua works', details: { runs: 4, failed: 0 } },
      }),
      [],
      true,
      { strict: true },
    );
    expect(r).toMatchObject({
      ok: true,
      value: { output: { result: { details: { runs: 4, failed: 0 } } }, repairs: [] },
    });
  });
});

describe('executor values read by the directive rules (issue 31)', () => {
  const run: Directive = { kind: 'RUN', path: 'hello.lua', args: ['add', 'Buy milk'], expect: '' };
  const reply = (parameters: unknown) =>
    JSON.stringify({ kind: 'tool', explanation: 'x', tool: 'cc_run_program', parameters });

  it.each([
    '`["add", "Buy milk"]`',
    '**["add", "Buy milk"]**',
    '`add "Buy milk"`',
    "['add', 'Buy milk']",
    '\'["add", "Buy milk"]\'',
  ])('reads "args": %j as ["add", "Buy milk"] (it arrived as one argument holding the brackets)', (args) => {
    const r = validateExecutorOutput(reply({ path: 'hello.lua', args }), ALL, false, { directive: run });
    expect(r.ok && r.value.output.kind === 'tool' && r.value.output.call.parameters).toEqual({
      path: 'hello.lua',
      args: ['add', 'Buy milk'],
    });
    if (r.ok) expect(r.value.repairs).toContain('args given as a string, split into words');
  });

  it.each(['`hello.lua`', '**hello.lua**', '"hello.lua"'])(
    'reads "path": %j as hello.lua, logged',
    (path) => {
      const r = validateExecutorOutput(reply({ path, args: ['add', 'Buy milk'] }), ALL, false, {
        directive: run,
      });
      expect(r.ok).toBe(true);
      if (r.ok) expect(r.value.repairs.join()).toMatch(/path .* read without its decoration/);
    },
  );

  it('refuses an args string that is no list of words, naming the expected form', () => {
    const r = validateExecutorOutput(reply({ path: 'hello.lua', args: '[add, Buy milk]' }), ALL, false, {
      directive: run,
    });
    expect(r).toMatchObject({ ok: false, error: { stage: 'parameters' } });
    if (!r.ok)
      expect(r.error.message).toContain('args must be an array of strings, e.g. ["add", "Buy milk"]');
  });
});
