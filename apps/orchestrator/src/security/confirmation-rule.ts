/**
 * The task kinds' `confirm` settings as one rule: which tool calls wait for a person's yes before they are sent, and
 * the question they are asked. Used twice: by the engine (it holds such a call durably and asks) and by the WebSocket
 * executor (the last check before a call leaves for the computer).
 */
import path from 'node:path';
import type { JsonValue } from '@ccagent/engine';
import { CC_FILE_CHANGE_ARGS } from '@ccagent/protocol';
import type { OrchestratorConfig } from '../config.js';

/** Question for a call that needs a yes, or undefined when it may run at once. */
export type KindConfirmationRule = (kind: string, command: string, args: JsonValue) => string | undefined;

/** Commands that write, delete or move files, and the argument names holding their paths. */
const FILE_CHANGES = CC_FILE_CHANGE_ARGS;

/** The rule of every kind with a `confirm` setting; undefined when no kind has one (nothing to check). */
export function confirmationRule(config: OrchestratorConfig): KindConfirmationRule | undefined {
  const rules = new Map<string, (command: string, args: JsonValue) => string | undefined>();
  for (const [kind, spec] of Object.entries(config.taskKinds)) {
    const c = spec.confirm;
    if (!c) continue;
    const patterns = c.shellPatterns.map((src) => new RegExp(src, 'i'));
    const sandbox = c.sandbox !== undefined ? normalize(c.sandbox) : undefined;
    rules.set(kind, (command, args) => {
      if (c.commands.includes(command)) return `${command} always needs a yes for "${kind}" tasks`;
      const a = isRecord(args) ? args : {};
      const keys = FILE_CHANGES[command];
      if (sandbox !== undefined && keys) {
        for (const k of keys) {
          const p = a[k];
          if (typeof p === 'string' && !inside(sandbox, normalize(p)))
            return `it changes ${normalize(p)}, outside the task's sandbox ${sandbox}`;
        }
      }
      const line =
        command === 'shell_exec' && typeof a.command === 'string'
          ? a.command
          : command === 'run_program' && typeof a.path === 'string'
            ? [a.path, ...(Array.isArray(a.args) ? a.args.map(String) : [])].join(' ')
            : undefined;
      if (line !== undefined) {
        const hit = patterns.find((re) => re.test(line));
        if (hit) return `the command line matches /${hit.source}/`;
      }
      return undefined;
    });
  }
  if (rules.size === 0) return undefined;
  return (kind, command, args) => {
    const why = rules.get(kind)?.(command, args);
    if (why === undefined) return undefined;
    let shown = JSON.stringify(args);
    if (shown.length > 300) shown = `${shown.slice(0, 300)}…`;
    return `Allow ${command} ${shown}? (${why}) Answer "yes" to run it; any other answer refuses it.`;
  };
}

/** A computer path as an absolute, normalized POSIX path (`a/../b` → `/b`). */
function normalize(p: string): string {
  const n = path.posix.normalize(`/${p}`);
  return n.length > 1 && n.endsWith('/') ? n.slice(0, -1) : n;
}

function inside(dir: string, p: string): boolean {
  return dir === '/' || p === dir || p.startsWith(`${dir}/`);
}

function isRecord(v: JsonValue): v is Record<string, JsonValue> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}
