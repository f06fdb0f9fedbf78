import type { Result } from './agent-error.js';
import type { Directive } from './directive-parser.js';
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
