import type { Result } from './agent-error.js';
import type { Directive } from './directive-parser.js';
import { parseArgsValue, undecorate } from './field-values.js';
import { normalizePath } from './history-view.js';
import { planToolCall, type AgentToolCall, type CommandCall } from './tools.js';

/** Why a tool call is not what its directive asked for; `message` names the first difference, for the model. */
export interface DerivationError {
  code: 'not_derived' | 'path_outside';
  message: string;
}

/**
 * True when a CC path climbs above the computer's root (`../x`, `a/../../x`): such a path names nothing on the
 * computer a task may touch, so it is refused before dispatch instead of left to the client.
 */
export function escapesRoot(path: string): boolean {
  let depth = 0;
  for (const part of path.replace(/\\/g, '/').split('/')) {
    if (part === '' || part === '.') continue;
    if (part === '..') {
      depth--;
      if (depth < 0) return true;
    } else depth++;
  }
  return false;
}

/**
 * The CC commands a directive asks for (none for DONE and ASK_USER). Written out here from the directive's fields,
 * on purpose not through the translation the parser mode uses (`directiveToToolCall`), so the dispatch gate does
 * not share a bug with the path it checks.
 */
export function derivedCommands(d: Directive): CommandCall[] {
  switch (d.kind) {
    case 'WRITE_FILE':
      return [
        { command: 'fs_write', args: { path: d.path, content: d.content } },
        ...d.then.map((r) => ({ command: 'run_program', args: { path: r.path, args: r.args } })),
      ];
    case 'RUN':
      return [{ command: 'run_program', args: { path: d.path, args: d.args } }];
    case 'SHELL':
      return [{ command: 'shell_exec', args: { command: d.command } }];
    case 'ASK_USER':
    case 'DONE':
      return [];
  }
}

function describe(c: CommandCall): string {
  return `${c.command} ${JSON.stringify(c.args)}`;
}

function sameArgs(a: unknown, b: unknown): boolean {
  return JSON.stringify(a ?? []) === JSON.stringify(b ?? []);
}

/**
 * Check that `calls` are exactly what directive `d` asks for: the same commands in the same order, with the same
 * path (`/a.lua` = `a.lua`), arguments, shell command (surrounding spaces aside) and file content (trailing
 * whitespace aside). Anything else — another command, a changed or added argument, a second call, a run the
 * directive did not list — is not a translation and is refused. Tolerated differences are returned for the log.
 * Every path must also stay inside the computer's root.
 */
export function checkDerived(
  d: Directive,
  calls: readonly CommandCall[],
): Result<{ tolerated: string[] }, DerivationError> {
  const tolerated: string[] = [];
  for (const c of calls) {
    const p = c.args.path;
    if (typeof p === 'string' && escapesRoot(p)) {
      return {
        ok: false,
        error: {
          code: 'path_outside',
          message: `the path "${p}" of ${c.command} is outside the computer's files (it climbs above the root with ..); use a path inside it`,
        },
      };
    }
  }
  const want = derivedCommands(d);
  const fail = (message: string): Result<never, DerivationError> => ({
    ok: false,
    error: {
      code: 'not_derived',
      message: `the call is not a translation of the ${d.kind} directive: ${message}`,
    },
  });
  if (calls.length !== want.length) {
    return fail(
      `the directive asks for ${want.length} command${want.length === 1 ? '' : 's'} ` +
        `(${want.map(describe).join(', ') || 'none'}), the reply has ${calls.length} (${calls.map(describe).join(', ') || 'none'})`,
    );
  }
  for (let i = 0; i < want.length; i++) {
    const w = want[i] as CommandCall;
    const c = calls[i] as CommandCall;
    if (c.command !== w.command) return fail(`${c.command} instead of ${w.command}`);
    const keys = new Set([...Object.keys(w.args), ...Object.keys(c.args)]);
    for (const k of keys) {
      const a = c.args[k];
      const b = w.args[k];
      if (k === 'path' && typeof a === 'string' && typeof b === 'string') {
        if (normalizePath(a) !== normalizePath(b)) return fail(`path "${a}" instead of "${b}"`);
        if (a !== b) tolerated.push(`path "${a}" is the directive's "${b}"`);
      } else if (k === 'args') {
        if (!sameArgs(a, b))
          return fail(`arguments ${JSON.stringify(a ?? [])} instead of ${JSON.stringify(b ?? [])}`);
      } else if (k === 'command' && typeof a === 'string' && typeof b === 'string') {
        if (a.trim() !== b.trim())
          return fail(`command ${JSON.stringify(a)} instead of ${JSON.stringify(b)}`);
      } else if (k === 'content' && typeof a === 'string' && typeof b === 'string') {
        if (a !== b) {
          if (a.trimEnd() !== b.trimEnd())
            return fail("the file content differs from the directive's CONTENT");
          tolerated.push('file content differs from the directive only in trailing whitespace');
        }
      } else if (JSON.stringify(a) !== JSON.stringify(b)) {
        return fail(`parameter ${k} ${JSON.stringify(a ?? null)} is not in the directive`);
      }
    }
  }
  return { ok: true, value: { tolerated } };
}

/** {@link checkDerived} for a validated executor tool call (an `ask_user` must carry the directive's question). */
export function checkDerivedCall(
  d: Directive,
  call: AgentToolCall,
): Result<{ tolerated: string[] }, DerivationError> {
  const plan = planToolCall(call);
  if (plan.kind === 'ask') {
    if (d.kind !== 'ASK_USER') {
      return {
        ok: false,
        error: {
          code: 'not_derived',
          message: `the call is not a translation of the ${d.kind} directive: ask_user`,
        },
      };
    }
    const norm = (t: string) => t.replace(/\s+/g, ' ').trim();
    if (norm(plan.question) !== norm(d.question)) {
      return {
        ok: false,
        error: {
          code: 'not_derived',
          message: `the call is not a translation of the ASK_USER directive: question ${JSON.stringify(plan.question)} instead of ${JSON.stringify(d.question)}`,
        },
      };
    }
    return { ok: true, value: { tolerated: [] } };
  }
  return checkDerived(d, plan.calls);
}

/** The text after `NAME:` of every line of `lines` that labels field `name`, whatever Markdown is around the label. */
function labelled(lines: readonly string[], name: string): string[] {
  const label = new RegExp(`^[\\s#>*_\`+\\-\\d.)]*${name}[*_\`]*\\s*:(.*)$`, 'i');
  return lines.flatMap((l) => {
    const m = label.exec(l);
    return m ? [m[1] ?? ''] : [];
  });
}

/** Text compared without quotes and JSON escapes: `--name="Buy milk"` holds the word `--name=Buy milk`. */
function bare(text: string): string {
  const escapes: Record<string, string> = { n: '\n', t: '\t', r: '\r', b: '\b', f: '\f', '/': '/' };
  return text
    .replace(/\\u([0-9a-fA-F]{4})|\\(["\\/bfnrt])/g, (_, hex?: string, c?: string) =>
      hex !== undefined ? String.fromCharCode(parseInt(hex, 16)) : (escapes[c ?? ''] ?? c ?? ''),
    )
    .replace(/["'`\u201c\u201d\u2018\u2019]/g, '');
}

/** The first of `words` not written in `text` in order, or undefined when all are. */
function firstMissing(text: string, words: readonly string[]): string | undefined {
  const haystack = bare(text);
  let at = 0;
  for (const w of words) {
    const needle = bare(w);
    if (needle === '') continue;
    const i = haystack.indexOf(needle, at);
    if (i < 0) return w;
    at = i + needle.length;
  }
  return undefined;
}

/**
 * A value still in its Markdown or JSON wrapping (`` `x` ``, `**x**`, a JSON array as one argument): the parser
 * removes these, so one reaching the gate means a reading path skipped that.
 */
function decorated(value: string, quotes: boolean): boolean {
  const v = value.trim();
  return undecorate(v, quotes) !== v || (/^\[[\s\S]*\]$/.test(v) && parseArgsValue(v).ok);
}

/**
 * Check that every value directive `d` sends to the computer is written in the planner's `reply` where it belongs:
 * a path on a `PATH:` line, a RUN's arguments in order after its path on its `PATH:`/`ARGS:` lines, a shell command
 * on a `COMMAND:` line, each THEN run on one line after `THEN:`, the file content as one block. Read from the raw
 * reply here, independently of the parser, so a parse that merged prose into a value (a sign-off read as arguments)
 * is refused at dispatch instead of run. Decoration and quotes around a value do not matter (its text is inside
 * them).
 */
export function checkWrittenIn(d: Directive, reply: string): Result<void, DerivationError> {
  const text = reply.replace(/\r\n?/g, '\n');
  const lines = text.split('\n');
  const fail = (what: string, where: string): Result<never, DerivationError> => ({
    ok: false,
    error: {
      code: 'not_derived',
      message:
        `the call is not a translation of the ${d.kind} directive: ${what} is not written on its ${where}, so ` +
        'nothing was run. Write each value on its own field line.',
    },
  });
  const on = (names: string[]) => names.flatMap((n) => labelled(lines, n)).join('\n');
  const values =
    d.kind === 'RUN'
      ? [d.path, ...d.args]
      : d.kind === 'SHELL'
        ? [d.command]
        : d.kind === 'WRITE_FILE'
          ? [d.path, ...d.then.flatMap((r) => [r.path, ...r.args])]
          : [];
  const wrapped = values.find((v) => decorated(v, v === (d as { path?: string }).path || d.kind === 'SHELL'));
  if (wrapped !== undefined) {
    return {
      ok: false,
      error: {
        code: 'not_derived',
        message:
          `the call is not a translation of the ${d.kind} directive: the value ${JSON.stringify(wrapped)} still has ` +
          'its Markdown or JSON wrapping, so nothing was run. Write each value plainly.',
      },
    };
  }
  switch (d.kind) {
    case 'RUN': {
      const missing = firstMissing(on(['PATH', 'ARGS']), [d.path, ...d.args]);
      return missing === undefined
        ? { ok: true, value: undefined }
        : fail(JSON.stringify(missing), 'PATH: or ARGS: line');
    }
    case 'SHELL':
      return firstMissing(on(['COMMAND']), [d.command]) === undefined
        ? { ok: true, value: undefined }
        : fail(`the command ${JSON.stringify(d.command)}`, 'COMMAND: line');
    case 'WRITE_FILE': {
      if (firstMissing(on(['PATH']), [d.path]) !== undefined) {
        return fail(`the path ${JSON.stringify(d.path)}`, 'PATH: line');
      }
      if (!text.includes(d.content.replace(/\n$/, ''))) return fail('the file content', 'CONTENT block');
      // THEN's runs: its list items when it has a list, else its line and the lines right under it (the block up to
      // the first blank line), as the directive grammar defines it. Every THEN: line counts (a file's content may hold
      // one too).
      const after: string[] = [];
      lines.forEach((l, start) => {
        const own = labelled([l], 'THEN');
        if (own.length === 0) return;
        const block: string[] = [];
        let i = start + 1;
        while (i < lines.length && (lines[i] ?? '').trim() === '') i++;
        while (i < lines.length && (lines[i] ?? '').trim() !== '') block.push(lines[i++] ?? '');
        const items = block.filter((b) => /^\s*(?:[-*+]|\d+[.):]?)\s+/.test(b));
        after.push(...(items.length > 0 ? items : [...own, ...block]));
      });
      for (const r of d.then) {
        if (!after.some((l) => firstMissing(l, [r.path, ...r.args]) === undefined)) {
          return fail(
            `the run ${JSON.stringify([r.path, ...r.args].join(' '))}`,
            'THEN list (one run per line)',
          );
        }
      }
      return { ok: true, value: undefined };
    }
    case 'ASK_USER':
    case 'DONE':
      return { ok: true, value: undefined };
  }
}
