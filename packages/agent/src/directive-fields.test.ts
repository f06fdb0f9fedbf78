// Issue 31: a one-line field's value is its line, and the same un-decoration reaches every field. Every field of every
// directive is written as the directive's last field with prose after it in each form small models write (on the
// next line, after a blank line, after a closing code fence, on the same line after a remark mark), and with each
// Markdown decoration around its value. Each case states what the parse must be: the canonical directive, the prose
// left out and logged as tolerated, never merged into a value.
import { describe, expect, it } from 'vitest';
import { formatDirective, parseDirective, type Directive, type DirectiveKind } from './directive-parser.js';
import { checkWrittenIn } from './derivation.js';
import { parseArgsValue, splitRemark, undecorate } from './field-values.js';

interface FieldCase {
  name: string;
  /** The field as the canonical test directive writes it (value without decoration). */
  value: string;
  /** A field whose value reaches a tool as a structured value (path, arguments, command, language, runs). */
  structured: boolean;
}

interface DirectiveCase {
  kind: DirectiveKind;
  fields: FieldCase[];
  expected: Directive;
}

const CONTENT = 'CONTENT:\n```lua\nprint("Hello, world!")\n```';

const CASES: DirectiveCase[] = [
  {
    kind: 'RUN',
    fields: [
      { name: 'PATH', value: 'hello.lua', structured: true },
      { name: 'ARGS', value: 'add "Buy milk"', structured: true },
      { name: 'EXPECT', value: 'Added', structured: false },
    ],
    expected: { kind: 'RUN', path: 'hello.lua', args: ['add', 'Buy milk'], expect: 'Added' },
  },
  {
    kind: 'SHELL',
    fields: [
      { name: 'COMMAND', value: 'ls /rom', structured: true },
      { name: 'EXPECT', value: 'the files', structured: false },
    ],
    expected: { kind: 'SHELL', command: 'ls /rom', expect: 'the files' },
  },
  {
    kind: 'WRITE_FILE',
    fields: [
      { name: 'PATH', value: 'hello.lua', structured: true },
      { name: 'LANGUAGE', value: 'lua', structured: true },
      { name: 'CONTENT', value: '', structured: false },
      { name: 'THEN', value: 'hello.lua list', structured: true },
    ],
    expected: {
      kind: 'WRITE_FILE',
      path: 'hello.lua',
      language: 'lua',
      content: 'print("Hello, world!")\n',
      then: [{ path: 'hello.lua', args: ['list'] }],
    },
  },
  {
    kind: 'ASK_USER',
    fields: [
      { name: 'QUESTION', value: 'Which side is the monitor on?', structured: false },
      { name: 'WHY', value: 'two monitors are attached', structured: false },
      { name: 'NEXT', value: 'write to that one', structured: false },
    ],
    expected: {
      kind: 'ASK_USER',
      question: 'Which side is the monitor on?',
      why: 'two monitors are attached',
      next: 'write to that one',
    },
  },
  {
    kind: 'DONE',
    fields: [
      { name: 'SUMMARY', value: 'hello.lua prints the greeting', structured: false },
      { name: 'NOTES', value: 'checked with a run', structured: false },
    ],
    expected: { kind: 'DONE', summary: 'hello.lua prints the greeting', notes: 'checked with a run' },
  },
];

/** Sentences small models write after a directive: sign-offs, requests, questions, a prose line with a colon. */
const PROSE = [
  'Let me know the output!',
  'I hope this helps. Tell me what it prints.',
  'Note: this should print the list',
  'Should I also add a test?',
];

function fieldLine(f: FieldCase, value = f.value): string {
  if (f.name === 'CONTENT') return CONTENT;
  if (f.name === 'THEN') return `THEN:\n- ${value}`;
  return `${f.name}: ${value}`;
}

/** The directive with `last` moved to the end, so the prose follows that field. */
function directiveEndingWith(c: DirectiveCase, last: FieldCase, lastLine = fieldLine(last)): string {
  const others = c.fields.filter((f) => f !== last).map((f) => fieldLine(f));
  return [c.kind, ...others, lastLine].join('\n');
}

/** The parse of `reply`, which must succeed and pass the dispatch gate's own reading of the reply. */
function parsed(reply: string) {
  const r = parseDirective(reply);
  if (!r.ok) throw new Error(`expected a directive, got ${r.error.code}: ${r.error.message}`);
  expect(checkWrittenIn(r.value.directive, reply), 'the dispatch gate refused a correct parse').toEqual({
    ok: true,
    value: undefined,
  });
  return r.value;
}

const TRAILING_FORMS: Array<[string, (directive: string, prose: string) => string]> = [
  ['on the next line', (d, p) => `${d}\n${p}`],
  ['after a blank line', (d, p) => `${d}\n\n${p}`],
  ['after the closing fence of the reply', (d, p) => `\`\`\`\n${d}\n\`\`\`\n${p}`],
  ['after a closing fence and a blank line', (d, p) => `\`\`\`text\n${d}\n\`\`\`\n\n${p}`],
  ['after a blank line and a horizontal rule', (d, p) => `${d}\n\n---\n${p}`],
];

describe('prose after a field is never part of its value (issue 31, class 1)', () => {
  for (const c of CASES) {
    for (const f of c.fields) {
      for (const [form, write] of TRAILING_FORMS) {
        it.each(PROSE)(`${c.kind} ${f.name}, prose ${form}: %j`, (prose) => {
          const v = parsed(write(directiveEndingWith(c, f), prose));
          expect(v.directive).toEqual(c.expected);
          expect(v.guesses).toEqual([]);
          expect(v.tolerated.join('\n')).toContain(prose);
        });
      }
    }
  }
});

/** Same-line remarks after a structured value: the value is what comes before the remark mark. */
const SAME_LINE: Array<[string, (value: string, prose: string) => string]> = [
  ['after " — "', (v, p) => `${v} — ${p}`],
  ['after " # "', (v, p) => `${v} # ${p}`],
  ['in parentheses', (v, p) => `${v} (${p.replace(/[().]/g, '')})`],
  ['after an inline-code value and a colon', (v, p) => `\`${v}\`: ${p}`],
  ['after an inline-code value and a dash', (v, p) => `\`${v}\` - ${p}`],
];

describe('a remark on the same line as a structured value is not part of it (issue 31, class 1)', () => {
  for (const c of CASES) {
    for (const f of c.fields.filter((x) => x.structured)) {
      for (const [form, write] of SAME_LINE) {
        it.each(PROSE)(`${c.kind} ${f.name}, remark ${form}: %j`, (prose) => {
          const v = parsed(directiveEndingWith(c, f, fieldLine(f, write(f.value, prose))));
          expect(v.directive).toEqual(c.expected);
          expect(v.tolerated.length).toBeGreaterThan(0);
        });
      }
    }
  }

  it.each([
    ['COMMAND', '`ls /rom` to list the files'],
    ['COMMAND', '**ls /rom** lists the files'],
  ])('a %s in inline code or bold followed by words is the code: %j', (_field, line) => {
    expect(parsed(`SHELL\nCOMMAND: ${line}\nEXPECT: the files`).directive).toEqual(CASES[1]?.expected);
  });

  it('keeps the words after a path in inline code as arguments of a RUN PATH command line (a guess, as before)', () => {
    const v = parsed('RUN\nPATH: `hello.lua` list');
    expect(v.directive).toMatchObject({ path: 'hello.lua', args: ['list'] });
    expect(v.guesses).toHaveLength(1);
  });

  it('keeps a remark mark inside quotes as part of an argument', () => {
    expect(parsed('RUN\nPATH: hello.lua\nARGS: add "milk — 2 (big ones)"').directive).toMatchObject({
      args: ['add', 'milk — 2 (big ones)'],
    });
  });
});

/** Decorations small models put around a value; `{}` stands for the value. */
const DECORATIONS = [
  '`{}`',
  '``{}``',
  '**{}**',
  '*{}*',
  '_{}_',
  '__{}__',
  '**`{}`**',
  '`**{}**`',
  '"{}"',
  '\u201c{}\u201d',
  "'{}'",
  '"`{}`"',
];

// ARGS keeps quotes as word grouping, so its decorated forms are the array and word forms in code or emphasis, and
// the array also in single or typographic quotes.
const ARGS_FORMS = [
  '`["add", "Buy milk"]`',
  '``["add", "Buy milk"]``',
  '**["add", "Buy milk"]**',
  '*["add", "Buy milk"]*',
  '**`["add", "Buy milk"]`**',
  '`add "Buy milk"`',
  '**add "Buy milk"**',
  '_add "Buy milk"_',
  '\'["add", "Buy milk"]\'',
  '\u201c["add", "Buy milk"]\u201d',
  "['add', 'Buy milk']",
  "`['add', 'Buy milk']`",
  '["add", "Buy milk"]',
  '`"add" "Buy milk"`',
];

describe('every field loses the same decoration (issue 31, class 2)', () => {
  for (const c of CASES) {
    for (const f of c.fields.filter((x) => x.name !== 'CONTENT' && x.name !== 'ARGS')) {
      // A THEN item is a command line, where quotes group words (like ARGS): its decorations are code and emphasis.
      const decorations = f.name === 'THEN' ? DECORATIONS.filter((d) => !/^["'\u201c]/.test(d)) : DECORATIONS;
      it.each(decorations)(`${c.kind} ${f.name} written as %j`, (decoration) => {
        const line = fieldLine(f, decoration.replace('{}', f.value));
        const v = parsed([c.kind, ...c.fields.map((x) => (x === f ? line : fieldLine(x)))].join('\n'));
        expect(v.directive).toEqual(c.expected);
      });
    }
  }

  it.each(ARGS_FORMS)('RUN ARGS written as %s is ["add", "Buy milk"]', (args) => {
    const v = parsed(`RUN\nPATH: hello.lua\nARGS: ${args}\nEXPECT: Added`);
    expect(v.directive).toEqual(CASES[0]?.expected);
  });

  it.each(['`none`', '**none**', '`[]`', '`(none)`', '*n/a*'])('RUN ARGS %s is no arguments', (args) => {
    expect(parsed(`RUN\nPATH: hello.lua\nARGS: ${args}`).directive).toMatchObject({ args: [] });
  });

  it.each(['`hello.lua list`', '**hello.lua list**', '*hello.lua list*', '**`hello.lua list`**'])(
    'a THEN item written as %s runs hello.lua list',
    (item) => {
      const v = parsed(`WRITE_FILE\nPATH: hello.lua\nLANGUAGE: lua\n${CONTENT}\nTHEN:\n- ${item}`);
      expect(v.directive).toEqual(CASES[2]?.expected);
    },
  );
});

describe('a value that is not of its type bounces with the expected form (issue 31, class 2)', () => {
  it.each([
    ['ARGS: [add, Buy milk]', /ARGS.*JSON array/],
    ['ARGS: `["add", "Buy milk"`', /ARGS.*JSON array/],
    ['ARGS: [{"item": "milk"}]', /ARGS.*JSON array/],
    ['ARGS:\n- add\n- Buy milk', /ARGS: .*same line/],
    ['ARGS:\nadd "Buy milk"', /ARGS: .*same line/],
    ['PATH:\nhello.lua', /PATH: .*same line/],
    ['ARGS: list\nARGS: add milk', /ARGS.*twice/],
  ])('RUN with %j', (fields, message) => {
    const r = parseDirective(`RUN\n${fields.includes('PATH') ? '' : 'PATH: hello.lua\n'}${fields}`);
    expect(r).toMatchObject({ ok: false, error: { code: 'invalid_field' } });
    if (!r.ok) expect(r.error.message).toMatch(message);
  });

  it.each([
    ['SHELL\nCOMMAND:\nls', /COMMAND: .*same line/],
    ['ASK_USER\nQUESTION:\nWhich side?\nWHY: two', /QUESTION: .*same line/],
    ['WRITE_FILE\nPATH: hello.lua the greeting file\nLANGUAGE: lua\n' + CONTENT, /PATH.*one path/],
  ])('%j', (reply, message) => {
    const r = parseDirective(reply);
    expect(r).toMatchObject({ ok: false, error: { code: 'invalid_field' } });
    if (!r.ok) expect(r.error.message).toMatch(message);
  });

  it('accepts a field written twice with the same value', () => {
    expect(parsed('RUN\nPATH: hello.lua\nARGS: list\nARGS: `list`').directive).toMatchObject({
      args: ['list'],
    });
  });

  it('accepts a quoted WRITE_FILE path with a space', () => {
    expect(parsed(`WRITE_FILE\nPATH: "my file.lua"\n${CONTENT}`).directive).toMatchObject({
      path: 'my file.lua',
    });
  });
});

describe('THEN: its list, or its line, and nothing after', () => {
  const head = `WRITE_FILE\nPATH: hello.lua\nLANGUAGE: lua\n${CONTENT}\n`;
  it.each([
    ['THEN: hello.lua list\nThis runs it.', [['hello.lua', 'list']]],
    [
      'THEN:\nhello.lua list\nhello.lua add milk\nThen we check.',
      [
        ['hello.lua', 'list'],
        ['hello.lua', 'add', 'milk'],
      ],
    ],
    ['THEN:\n- hello.lua list\nThis runs it.', [['hello.lua', 'list']]],
    ['THEN:\n\n- hello.lua list\n\n- Then I check the output', [['hello.lua', 'list']]],
    [
      'THEN:\n1. hello.lua list\n2. hello.lua add milk\n\nBoth should work.',
      [
        ['hello.lua', 'list'],
        ['hello.lua', 'add', 'milk'],
      ],
    ],
    [
      'THEN: hello.lua list; hello.lua add milk\nI hope this helps.',
      [
        ['hello.lua', 'list'],
        ['hello.lua', 'add', 'milk'],
      ],
    ],
    ['THEN: (none)\nLet me know.', []],
  ])('%j', (then, runs) => {
    const v = parsed(head + then);
    expect(v.directive).toMatchObject({
      then: runs.map(([path, ...args]) => ({ path, args })),
    });
  });
});

describe('what the executor is given reads back as the same directive', () => {
  // The canonical text (formatDirective) is the executor's whole view of the directive: any parse must survive it.
  const replies = [
    'RUN\nPATH: `hello.lua`\nARGS: `["add", "Buy milk"]`\n\nLet me know the output!',
    'RUN\nPATH: "my prog.lua"\nARGS: add "a \\"quoted\\" word"',
    'SHELL\nCOMMAND: `echo "a b"` — prints a b\nEXPECT: a b',
    'WRITE_FILE\nPATH: "my file.lua"\nLANGUAGE: **lua**\n' +
      CONTENT +
      '\nTHEN:\n- `"my file.lua" list`\n\nDone.',
    'ASK_USER\nQUESTION: "Which side?"\nWHY: *two*\nNEXT: `ask`\n\nThanks!',
    'DONE\nSUMMARY: **Fixed** it\nNOTES: `none`\n\nBye.',
  ];
  it.each(replies)('%j', (reply) => {
    const first = parsed(reply).directive;
    expect(parsed(formatDirective(first)).directive).toEqual(first);
  });
});

describe('field-values helpers', () => {
  it('undecorate keeps quotes that are part of a value', () => {
    expect(undecorate('echo "a b"')).toBe('echo "a b"');
    expect(undecorate('"a" and "b"')).toBe('"a" and "b"');
    expect(undecorate('**`"ls"`**')).toBe('ls');
    expect(undecorate('"ls"', false)).toBe('"ls"');
  });

  it('splitRemark leaves a line without a remark mark whole', () => {
    expect(splitRemark('add milk Let me know')).toEqual({ value: 'add milk Let me know' });
    expect(splitRemark('--verbose -x')).toEqual({ value: '--verbose -x' });
    expect(splitRemark('list (1)')).toEqual({ value: 'list (1)' });
  });

  it('parseArgsValue reads numbers and booleans of an array as words', () => {
    expect(parseArgsValue('[1, true, "x"]')).toEqual({ ok: true, value: ['1', 'true', 'x'] });
  });
});

describe('the dispatch gate reads the values from the reply itself (checkWrittenIn)', () => {
  // What the parser before issue 31 produced for these replies: each must be refused, whatever parsed it.
  it.each<[string, Directive, RegExp]>([
    [
      'RUN\nPATH: hello.lua\nARGS: list\n\nLet me know the output!',
      { kind: 'RUN', path: 'hello.lua', args: ['list', 'Let', 'me', 'know', 'the', 'output!'], expect: '' },
      /"Let" is not written on its PATH: or ARGS: line/,
    ],
    [
      'RUN\nPATH: hello.lua\n\nLet me know the output',
      { kind: 'RUN', path: 'hello.lua', args: ['Let', 'me'], expect: '' },
      /"Let"/,
    ],
    [
      'RUN\nPATH: hello.lua\nARGS: `["add", "Buy milk"]`',
      { kind: 'RUN', path: 'hello.lua', args: ['["add", "Buy milk"]'], expect: '' },
      /still has its Markdown or JSON wrapping/,
    ],
    [
      'SHELL\nCOMMAND: ls\n\nThis lists files.',
      { kind: 'SHELL', command: 'ls\n\nThis lists files.', expect: '' },
      /the command .* COMMAND: line/,
    ],
    [
      'WRITE_FILE\nPATH: a.lua\nCONTENT:\n```lua\nx()\n```\nTHEN: a.lua\nThis runs it.',
      {
        kind: 'WRITE_FILE',
        path: 'a.lua',
        language: '',
        content: 'x()\n',
        then: [
          { path: 'a.lua', args: [] },
          { path: 'a.lua', args: ['This', 'runs'] },
        ],
      },
      /the run "a.lua This runs"/,
    ],
    [
      'WRITE_FILE\nPATH: a.lua\nCONTENT:\n```lua\nx()\n```',
      { kind: 'WRITE_FILE', path: 'a.lua', language: '', content: 'os.run("rm")\n', then: [] },
      /file content/,
    ],
    [
      'RUN\nPATH: hello.lua\nARGS: list\nEXPECT: add milk',
      { kind: 'RUN', path: 'hello.lua', args: ['list', 'add'], expect: '' },
      /"add"/,
    ],
  ])('refuses %j parsed with values the reply does not hold there', (reply, directive, message) => {
    const r = checkWrittenIn(directive, reply);
    expect(r).toMatchObject({ ok: false, error: { code: 'not_derived' } });
    if (!r.ok) expect(r.error.message).toMatch(message);
  });

  it('refuses a path or command still in inline code or bold', () => {
    const reply = 'SHELL\nCOMMAND: `ls`';
    expect(checkWrittenIn({ kind: 'SHELL', command: '`ls`', expect: '' }, reply).ok).toBe(false);
    const run = 'RUN\nPATH: **hello.lua**';
    expect(checkWrittenIn({ kind: 'RUN', path: '**hello.lua**', args: [], expect: '' }, run).ok).toBe(false);
  });

  it('reads arguments in order: the same words in another order are not the directive', () => {
    const d: Directive = { kind: 'RUN', path: 'hello.lua', args: ['milk', 'add'], expect: '' };
    expect(checkWrittenIn(d, 'RUN\nPATH: hello.lua\nARGS: add milk').ok).toBe(false);
  });

  it('accepts a JSON array argument holding an escaped quote', () => {
    const reply = 'RUN\nPATH: hello.lua\nARGS: ["say", "a \\"b\\""]';
    expect(parsed(reply).directive).toMatchObject({ args: ['say', 'a "b"'] });
  });
});

describe('names that look like decoration at one end only are kept', () => {
  it.each(['_startup.lua', 'lib/_util.lua', 'a_b_.lua', '*.lua'])('PATH %s', (path) => {
    expect(parsed(`RUN\nPATH: ${path}`).directive).toMatchObject({ path });
    expect(parsed(`WRITE_FILE\nPATH: ${path}\n${CONTENT}`).directive).toMatchObject({ path });
  });
});

describe('a free-text sentence wrapped onto the next line continues its field', () => {
  it('reads the wrapped SUMMARY of a real qwen2.5:3b run whole (apps/cli reads-a-real-run)', () => {
    const v = parsed(
      'DONE\nSUMMARY: countdown.lua counts down from its first argument (default 10) and prints "Liftoff!"; the run with 3\nprinted 3, 2, 1, Liftoff!.\nNOTES: none',
    );
    expect(v.directive).toMatchObject({
      summary:
        'countdown.lua counts down from its first argument (default 10) and prints "Liftoff!"; the run with 3 printed 3, 2, 1, Liftoff!.',
      notes: 'none',
    });
  });

  it.each([
    ['SUMMARY: fixed it.\nlet me know', 'fixed it.'],
    ['SUMMARY: fixed it\nLet me know the output', 'fixed it'],
    ['SUMMARY: fixed it\n\nand more', 'fixed it'],
    ['SUMMARY: fixed it\n- and a list', 'fixed it'],
  ])('does not continue %j (a new sentence, a blank line or a list)', (fields, summary) => {
    expect(parsed(`DONE\n${fields}`).directive).toMatchObject({ summary });
  });

  it('never continues a structured value', () => {
    expect(parsed('RUN\nPATH: hello.lua\nARGS: add\nmilk please').directive).toMatchObject({ args: ['add'] });
    expect(parsed('SHELL\nCOMMAND: ls\nrom').directive).toMatchObject({ command: 'ls' });
  });
});

describe('the dispatch gate reads JSON escapes in an ARGS array as the parser does', () => {
  it.each([
    ['["caf\\u00e9", "a\\tb", "x\\/y"]', ['café', 'a\tb', 'x/y']],
    ['["line\\nnext"]', ['line\nnext']],
  ])('ARGS: %s', (args, expected) => {
    expect(parsed(`RUN\nPATH: hello.lua\nARGS: ${args}`).directive).toMatchObject({ args: expected });
  });
});
