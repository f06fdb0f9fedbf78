import { describe, expect, it } from 'vitest';
import { formatDirective, parseDirective, type Directive } from './directive-parser.js';
import { parseArgsValue, splitArgs } from './field-values.js';

function ok(reply: string) {
  const r = parseDirective(reply);
  if (!r.ok) throw new Error(`expected a directive, got ${r.error.code}: ${r.error.message}`);
  return r.value;
}

describe('parseDirective', () => {
  it('parses WRITE_FILE with a fenced CONTENT and a THEN list (guards against losing follow-up runs)', () => {
    const v = ok(
      [
        'WRITE_FILE',
        'PATH: TODO.lua',
        'LANGUAGE: lua',
        'CONTENT:',
        '```lua',
        'print("hi")',
        'run',
        '```',
        'THEN:',
        '- TODO.lua add "buy milk"',
        '- TODO.lua list',
      ].join('\n'),
    );
    expect(v.directive).toEqual({
      kind: 'WRITE_FILE',
      path: 'TODO.lua',
      language: 'lua',
      content: 'print("hi")\nrun\n',
      then: [
        { path: 'TODO.lua', args: ['add', 'buy milk'] },
        { path: 'TODO.lua', args: ['list'] },
      ],
    });
    expect(v.ignored).toEqual([]);
  });

  it('tolerates lower case, CRLF, extra whitespace, prose around and a fence without language', () => {
    const v = ok(
      'Sure! Here is what I will do.\r\n```\r\n  run  \r\n  path:   TODO.lua \r\n args: list\r\nexpect: the list\r\n```\r\nThanks.',
    );
    expect(v.directive).toMatchObject({ kind: 'RUN', path: 'TODO.lua', args: ['list'] });
  });

  it('takes the first of several directives and tells the planner (guards against running two actions)', () => {
    const v = ok('RUN\nPATH: a.lua\n\nDONE\nSUMMARY: all good');
    expect(v.directive.kind).toBe('RUN');
    expect(v.ignored).toEqual(['DONE']);
    expect(v.notes[0]).toMatch(/2 directives.*only the first \(RUN\)/);
  });

  it('reads markdown-decorated keywords and the PLAN block', () => {
    const v = ok('PLAN:\n1. run it\n2. fix it\n\n## **SHELL**\n**COMMAND:** `ls`\nEXPECT: files');
    expect(v.directive).toEqual({ kind: 'SHELL', command: 'ls', expect: 'files' });
    expect(v.plan).toBe('1. run it\n2. fix it');
  });

  it('parses ASK_USER and DONE fields', () => {
    expect(ok('ask_user\nQUESTION: Which side?\nWHY: two monitors\nNEXT: write there').directive).toEqual({
      kind: 'ASK_USER',
      question: 'Which side?',
      why: 'two monitors',
      next: 'write there',
    });
    expect(ok('Done:\nSUMMARY: fixed\nNOTES: none').directive).toEqual({
      kind: 'DONE',
      summary: 'fixed',
      notes: 'none',
    });
  });

  it('accepts a whole command line in RUN PATH when ARGS is absent', () => {
    expect(ok('RUN\nPATH: TODO.lua done 1').directive).toMatchObject({
      path: 'TODO.lua',
      args: ['done', '1'],
    });
  });

  it('does not treat a keyword line inside the file content as a directive', () => {
    const v = ok('WRITE_FILE\nPATH: x.txt\nCONTENT:\n```\nDONE\nRUN\n```\n');
    expect(v.ignored).toEqual([]);
    expect(v.directive).toMatchObject({ kind: 'WRITE_FILE', content: 'DONE\nRUN\n', then: [] });
  });

  it('reports truncated file content instead of writing half a file', () => {
    const r = parseDirective('WRITE_FILE\nPATH: a.lua\nCONTENT:\n```lua\nlocal x = 1\nfor i=1');
    expect(r).toMatchObject({ ok: false, error: { code: 'unclosed_content' } });
  });

  it('gives actionable errors for empty replies, prose only and missing fields', () => {
    expect(parseDirective('  \n ')).toMatchObject({ ok: false, error: { code: 'empty' } });
    const none = parseDirective('I think we should look at the file first.');
    expect(none).toMatchObject({ ok: false, error: { code: 'no_directive' } });
    if (!none.ok) expect(none.error.message).toContain('WRITE_FILE');
    const miss = parseDirective('SHELL\nEXPECT: something');
    expect(miss).toMatchObject({ ok: false, error: { code: 'missing_field' } });
    if (!miss.ok) expect(miss.error.message).toContain('COMMAND:');
  });
});

describe('splitArgs', () => {
  it('splits words with quotes and JSON arrays', () => {
    expect(splitArgs(`add "buy milk" 'x y' z`)).toEqual(['add', 'buy milk', 'x y', 'z']);
    expect(parseArgsValue('["add", "a b"]')).toEqual({ ok: true, value: ['add', 'a b'] });
    expect(splitArgs('  ')).toEqual([]);
    expect(splitArgs('""')).toEqual(['']);
  });
});

describe("the spec's own directive forms all parse the same", () => {
  const canonical = { kind: 'RUN', path: 'TODO.lua', args: ['add', 'Buy milk'], expect: 'Added' };

  it('does not read a THEN item numbered "1 " (no dot) as a program named "1" (seed 001 example)', () => {
    const v = ok(
      'WRITE_FILE\nPATH: /TODO.lua\nLANGUAGE: lua\nCONTENT:\n```lua\nprint(1)\n```\nTHEN:\n1 RUN /TODO.lua list\n2 RUN /TODO.lua add milk',
    );
    expect(v.directive).toMatchObject({
      then: [
        { path: '/TODO.lua', args: ['list'] },
        { path: '/TODO.lua', args: ['add', 'milk'] },
      ],
    });
  });

  it.each([
    '1 TODO.lua list',
    '1. TODO.lua list',
    '1) TODO.lua list',
    '- TODO.lua list',
    '* `TODO.lua list`',
    '1: RUN TODO.lua list',
  ])('reads the THEN item %j as TODO.lua list', (item) => {
    const v = ok(
      `WRITE_FILE\nPATH: TODO.lua\nLANGUAGE: lua\nCONTENT:\n\`\`\`lua\nx()\n\`\`\`\nTHEN:\n${item}`,
    );
    expect(v.directive).toMatchObject({ then: [{ path: 'TODO.lua', args: ['list'] }] });
  });

  it.each([
    'RUN\nPATH: TODO.lua\nARGS: add "Buy milk"\nEXPECT: Added',
    '**DIRECTIVE:** RUN\n**PATH:** TODO.lua\n**ARGS:** add "Buy milk"\n**EXPECT:** Added',
    '**Directive**: RUN\n**Path**: TODO.lua\n**Args**: add "Buy milk"\n**Expect**: Added',
    '### RUN\n### PATH: TODO.lua\n### ARGS: add "Buy milk"\n### EXPECT: Added',
    '*RUN*\n*PATH*: TODO.lua\n*ARGS*: add "Buy milk"\n*EXPECT*: Added',
    '_RUN_\n_PATH_: TODO.lua\n_ARGS_: add "Buy milk"\n_EXPECT_: Added',
    'run\npath: TODO.lua\nargs: add "Buy milk"\nexpect: Added',
    'RUN\nPATH: "TODO.lua"\nARGS: "add" "Buy milk"\nEXPECT: Added',
    'RUN\nPATH: `TODO.lua`\nARGS: ["add", "Buy milk"]\nEXPECT: Added',
    'RUN\nPATH: \u201cTODO.lua\u201d\nARGS: add \u201cBuy milk\u201d\nEXPECT: Added',
    "RUN\r\n- PATH: TODO.lua\r\n- ARGS: add 'Buy milk'\r\n- EXPECT: Added\r\n",
    'Action: run\n1. PATH: TODO.lua\n2. ARGS: add "Buy milk"\n3. EXPECT: Added',
  ])('reads decorated, lower-case and quoted forms the same: %j', (reply) => {
    const v = ok(reply);
    expect(v.directive).toEqual(canonical);
    expect(v.guesses).toEqual([]);
  });

  it.each([
    'COMMAND: "ls"',
    "COMMAND: 'ls'",
    'COMMAND: `ls`',
    'COMMAND: ls',
    '**COMMAND:** `ls`',
    'COMMAND: \u201cls\u201d',
  ])('sends ls, not the quotes, to the shell for %j', (line) => {
    expect(ok(`SHELL\n${line}\nEXPECT: files`).directive).toEqual({
      kind: 'SHELL',
      command: 'ls',
      expect: 'files',
    });
  });

  it('keeps quotes that are part of the command', () => {
    expect(ok('SHELL\nCOMMAND: echo "a b"\nEXPECT: a b').directive).toMatchObject({ command: 'echo "a b"' });
  });

  it('reads a quoted LANGUAGE and an ASK_USER header with markdown the same', () => {
    const v = ok('## **WRITE_FILE**\nPATH: a.lua\nLANGUAGE: "lua"\nCONTENT:\n```lua\nx()\n```');
    expect(v.directive).toMatchObject({ kind: 'WRITE_FILE', language: 'lua' });
    expect(ok('**ASK_USER**\nQUESTION: which?\nWHY: two readings').directive.kind).toBe('ASK_USER');
  });
});

describe('formatDirective and parseDirective agree', () => {
  const directives: Directive[] = [
    { kind: 'WRITE_FILE', path: 'TODO.lua', language: 'lua', content: 'print("hi")\n', then: [] },
    {
      kind: 'WRITE_FILE',
      path: 'todo.lua',
      language: 'lua',
      content: 'local x = 1\nprint(x)\n',
      then: [
        { path: 'todo.lua', args: ['add', 'buy milk'] },
        { path: 'todo.lua', args: ['list'] },
      ],
    },
    { kind: 'RUN', path: 'todo.lua', args: ['done', '1'], expect: 'marks item 1 done' },
    { kind: 'SHELL', command: 'ls /tools', expect: 'the tool files' },
    { kind: 'ASK_USER', question: 'Which file?', why: 'two match', next: 'edit it' },
    { kind: 'DONE', summary: 'fixed TODO.lua', notes: 'every command tested' },
  ];
  for (const d of directives) {
    it(`reads back a ${d.kind}${d.kind === 'WRITE_FILE' ? ` with ${d.then.length} runs` : ''} exactly as written (guards against "THEN: (none)" becoming a program named "(none)")`, () => {
      const r = parseDirective(formatDirective(d));
      expect(r.ok && r.value.directive).toEqual(d);
    });
  }

  it('a planner that writes "THEN: (none)" or "THEN: none." runs nothing after the write', () => {
    for (const then of ['(none)', 'none.', '(None)', 'n/a']) {
      const r = parseDirective(
        `WRITE_FILE\nPATH: a.lua\nLANGUAGE: lua\nCONTENT:\n\`\`\`lua\nprint(1)\n\`\`\`\nTHEN: ${then}`,
      );
      expect(r.ok && r.value.directive.kind === 'WRITE_FILE' && r.value.directive.then, then).toEqual([]);
    }
  });
});
