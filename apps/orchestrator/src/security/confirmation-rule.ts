/**
 * The task kinds' `confirm` settings as one rule: which tool calls wait for a person's yes before they are sent, and
 * the question they are asked. Used twice: by the engine (it holds such a call durably and asks) and by the WebSocket
 * executor (the last check before a call leaves for the computer).
 */
import path from 'node:path';
import type { JsonValue } from '@ccagent/engine';
import { CC_FILE_CHANGE_ARGS } from '@ccagent/protocol';
import type { OrchestratorConfig, TaskKindConfig } from '../config.js';

/** Question for a call that needs a yes, or undefined when it may run at once. */
export type KindConfirmationRule = (kind: string, command: string, args: JsonValue) => string | undefined;

/** Commands that write, delete or move files, and the argument names holding their paths. */
const FILE_CHANGES = CC_FILE_CHANGE_ARGS;

type KindRule = (command: string, args: JsonValue) => string | undefined;

/** The rule of one kind's `confirm` setting: why a call needs a yes, or undefined. */
function ruleOf(kind: string, c: NonNullable<TaskKindConfig['confirm']>): KindRule {
  const patterns = c.shellPatterns.map((src) => new RegExp(src, 'i'));
  const sandbox = c.sandbox !== undefined ? normalize(c.sandbox) : undefined;
  return (command, args) => {
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
  };
}

/** The question asked for a call that needs a yes. */
function question(command: string, args: JsonValue, why: string): string {
  let shown = JSON.stringify(args);
  if (shown.length > 300) shown = `${shown.slice(0, 300)}…`;
  return `Allow ${command} ${shown}? (${why}) Answer "yes" to run it; any other answer refuses it.`;
}

/** The rule of every kind with a `confirm` setting; undefined when no kind has one (nothing to check). */
export function confirmationRule(config: OrchestratorConfig): KindConfirmationRule | undefined {
  const rules = new Map<string, KindRule>();
  for (const [kind, spec] of Object.entries(config.taskKinds)) {
    if (spec.confirm) rules.set(kind, ruleOf(kind, spec.confirm));
  }
  if (rules.size === 0) return undefined;
  return (kind, command, args) => {
    const why = rules.get(kind)?.(command, args);
    return why === undefined ? undefined : question(command, args, why);
  };
}

/** Rules of definitions seen, by their `confirm` object (a kind's definition is never changed, only replaced). */
const byDefinition = new WeakMap<object, KindRule>();

/** The question for a call of a task of `kind` run with the definition `v` (a run-time kind), or undefined. */
export function kindConfirmation(
  kind: string,
  v: { spec: TaskKindConfig },
  command: string,
  args: JsonValue,
): string | undefined {
  const c = v.spec.confirm;
  if (!c) return undefined;
  let rule = byDefinition.get(c);
  if (!rule) {
    rule = ruleOf(kind, c);
    byDefinition.set(c, rule);
  }
  const why = rule(command, args);
  return why === undefined ? undefined : question(command, args, why);
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
