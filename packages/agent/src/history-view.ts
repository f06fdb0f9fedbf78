import { createHash } from 'node:crypto';
import type { CommandOutcome, HistoryEntry, JsonValue } from '@ccagent/engine';

/** A command outcome reduced to what the planner and the policies need. */
export interface OutcomeView {
  /** The command ran and reported success (no error, no `success:false`/`ok:false`, exit code 0 if given). */
  ok: boolean;
  /** Printed output or the JSON of the result. */
  output: string;
  error?: string;
  traceback?: string;
}

function isRecord(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/**
 * A command result as the model is shown it: without `host_traceback`, the untrimmed Lua traceback the CC client keeps
 * beside a trace it cut its own frames from (the client's frames mislead a small model; the step log keeps them).
 */
export function resultForModel(result: JsonValue): JsonValue {
  if (!isRecord(result) || !('host_traceback' in result)) return result;
  const { host_traceback: _full, ...rest } = result;
  void _full;
  return rest as JsonValue;
}

/** Interpret a command outcome: CC clients report failures as errors or as `{success:false}` results. */
export function viewOutcome(outcome: CommandOutcome, timedOut = false): OutcomeView {
  if (!outcome.ok) {
    return {
      ok: false,
      output: '',
      error: (timedOut ? 'timed out: ' : '') + outcome.error.message,
      ...(outcome.error.traceback ? { traceback: outcome.error.traceback } : {}),
    };
  }
  const r: JsonValue = resultForModel(outcome.result);
  if (typeof r === 'string') return { ok: true, output: r };
  if (!isRecord(r)) return { ok: true, output: JSON.stringify(r) };
  const text = ['output', 'stdout', 'text', 'content'].map((k) => r[k]).find((v) => typeof v === 'string');
  const stderr = typeof r.stderr === 'string' ? r.stderr : '';
  const failed =
    r.success === false ||
    r.ok === false ||
    (typeof r.exitCode === 'number' && r.exitCode !== 0) ||
    r.error != null;
  const output = typeof text === 'string' ? text : JSON.stringify(r);
  if (!failed) return { ok: true, output };
  const error =
    typeof r.error === 'string'
      ? r.error
      : isRecord(r.error) && typeof r.error.message === 'string'
        ? r.error.message
        : stderr || 'the program reported failure';
  let traceback = typeof r.traceback === 'string' ? r.traceback : undefined;
  let message = error;
  // The CC host reports Lua errors as `debug.traceback` text: the message, then "stack traceback:".
  const at = error.indexOf('\nstack traceback:');
  if (traceback === undefined && at >= 0) {
    message = error.slice(0, at);
    traceback = error.slice(at + 1);
  }
  return { ok: false, output, error: message, ...(traceback ? { traceback } : {}) };
}

/** Short hex content hash (sha256, 12 chars) shown next to file versions. */
export function contentHash(content: string): string {
  return createHash('sha256').update(content).digest('hex').slice(0, 12);
}

function quoteArg(a: string): string {
  return /^[^\s"']+$/.test(a) ? a : JSON.stringify(a);
}

/** One-line human form of a command call (file contents replaced by their size and hash). */
export function describeCall(command: string, args: JsonValue): string {
  const a = isRecord(args) ? args : {};
  if (command === 'run_program' && typeof a.path === 'string') {
    const list = Array.isArray(a.args) ? a.args.map((x) => quoteArg(String(x))) : [];
    return `run_program ${[quoteArg(a.path), ...list].join(' ')}`;
  }
  if (command === 'shell_exec' && typeof a.command === 'string')
    return `shell_exec ${JSON.stringify(a.command)}`;
  if (command === 'fs_write' && typeof a.path === 'string' && typeof a.content === 'string') {
    const lines = a.content.split('\n').length;
    return `fs_write ${quoteArg(a.path)} (${lines} lines, sha ${contentHash(a.content)})`;
  }
  if (
    (command === 'fs_read' || command === 'fs_list' || command === 'fs_delete') &&
    typeof a.path === 'string'
  ) {
    return `${command} ${quoteArg(a.path)}`;
  }
  return `${command} ${JSON.stringify(args)}`;
}

/** Stable key of a call for duplicate detection. */
export function callKey(command: string, args: JsonValue): string {
  return `${command} ${stableJson(args)}`;
}

function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(',')}]`;
  if (isRecord(v)) {
    return `{${Object.keys(v)
      .sort()
      .map((k) => `${JSON.stringify(k)}:${stableJson(v[k])}`)
      .join(',')}}`;
  }
  return JSON.stringify(v) ?? 'null';
}

/** A completed command call found in the history: the call and its outcome. */
export interface CallView {
  seq: number;
  command: string;
  args: JsonValue;
  outcome: OutcomeView;
}

/** Calls with their outcomes, in order (calls still pending are left out). */
export function completedCalls(history: readonly HistoryEntry[]): CallView[] {
  const timedOut = new Set<number>();
  for (const e of history) if (e.type === 'tool_result' && e.timedOut === true) timedOut.add(e.seq);
  return completedRaw(history).map((c) => ({
    seq: c.seq,
    command: c.command,
    args: c.args,
    outcome: viewOutcome(c.outcome, timedOut.has(c.seq)),
  }));
}

/** A file as the task last saw it: written by it (fs_write) or read (fs_read). */
export interface FileView {
  path: string;
  content: string;
  /** Counts the versions the task has seen of this path (1 = first read or write). */
  version: number;
  hash: string;
  /** History seq of the write's or read's result. */
  seq: number;
  source: 'written' | 'read';
}

/**
 * Current version of every file the task wrote (fs_write) or read (fs_read) successfully, keyed by path. A read
 * returning the content already known does not count as a new version.
 */
export function currentFiles(history: readonly HistoryEntry[]): Map<string, FileView> {
  const files = new Map<string, FileView>();
  for (const e of completedRaw(history)) {
    if (!e.outcome.ok || !isRecord(e.args)) continue;
    let path: unknown;
    let content: unknown;
    let source: FileView['source'];
    if (e.command === 'fs_write' && e.args.append !== true) {
      ({ path, content } = e.args);
      source = 'written';
    } else if (e.command === 'fs_read' && isRecord(e.outcome.result) && e.args.offset === undefined) {
      path = e.args.path;
      content = e.outcome.result.content;
      source = 'read';
    } else continue;
    if (typeof path !== 'string' || typeof content !== 'string') continue;
    const key = normalizePath(path);
    const prev = files.get(key);
    if (prev && prev.content === content && source === 'read') continue;
    files.set(key, {
      path: key,
      content,
      version: (prev?.version ?? 0) + 1,
      hash: contentHash(content),
      seq: e.seq,
      source,
    });
  }
  return files;
}

/** Path as a CC computer resolves it: no leading slash, no `./`, forward slashes. */
export function normalizePath(p: string): string {
  return p
    .trim()
    .replace(/\\/g, '/')
    .replace(/^\.?\/+/, '')
    .replace(/\/\.\//g, '/');
}

interface RawCall {
  seq: number;
  command: string;
  args: JsonValue;
  outcome: CommandOutcome;
}

function completedRaw(history: readonly HistoryEntry[]): RawCall[] {
  const calls = new Map<string, JsonValue>();
  const out: RawCall[] = [];
  for (const e of history) {
    if (e.type === 'tool_call') calls.set(e.callId, e.args);
    if (e.type === 'tool_result') {
      out.push({ seq: e.seq, command: e.command, args: calls.get(e.callId) ?? null, outcome: e.outcome });
    }
  }
  return out;
}

/** The last failed call's error and stack trace, if any. */
export function lastFailure(
  history: readonly HistoryEntry[],
): { call: CallView; error: string; traceback?: string } | null {
  const failed = completedCalls(history).filter((c) => !c.outcome.ok);
  const last = failed[failed.length - 1];
  if (!last) return null;
  return {
    call: last,
    error: last.outcome.error ?? 'failed',
    ...(last.outcome.traceback ? { traceback: last.outcome.traceback } : {}),
  };
}
