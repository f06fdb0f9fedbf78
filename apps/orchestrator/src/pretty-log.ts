/**
 * The log for a person at a terminal (`--log-format pretty`, the default there): each JSON log line from pino becomes
 * `HH:MM:SS level message (key=value …)`, and a problem is said once with its count — a warning or error whose key
 * (its `code` and `host`, else its message and error text) was already shown, or was already reported by the startup
 * summary, is counted rather than repeated: it is said again only on its 10th, 100th, 1000th… time, with the count,
 * and the shutdown line lists each repeated problem with its total. `--log-format json` keeps every line. A log line quotes clients, models and tools (a client id, an error's
 * text): every part of it is made inert (control and bidi characters shown as visible symbols, one line each), so the
 * person's terminal never obeys what a computer sent.
 */
import { inertText } from '@ccagent/protocol';

/** One line of outside text, shown, never obeyed. */
const shown = (text: string): string => inertText(text, { multiline: false });

/** What has been said: keys of problems already shown to the person. */
export class ShownProblems {
  /** Each problem that came up: how many times (1 = said once), and the words it was first logged with. */
  private readonly seen = new Map<string, { count: number; text?: string }>();
  /** Model-server problems logged before the startup summary has said how each server is (then undefined). */
  private held: { key: string; text: string }[] | undefined = [];

  /**
   * Keep `text` until {@link release} when the startup summary has not been printed yet (it may say the same
   * problem); true when it was kept.
   */
  holdForSummary(key: string, text: string): boolean {
    if (this.held === undefined) return false;
    this.held.push({ key, text });
    return true;
  }

  /** The summary is out: the held lines it did not already say, once each. */
  release(): string[] {
    const held = this.held ?? [];
    this.held = undefined;
    return held.filter((h) => this.note(h.key)).map((h) => h.text);
  }

  /** Remember `key`; true when it is new (a known key is counted once more). */
  note(key: string): boolean {
    const entry = this.seen.get(key) ?? { count: 0 };
    entry.count += 1;
    this.seen.set(key, entry);
    return entry.count === 1;
  }

  /** How many times `key` came up (0 when never). */
  count(key: string): number {
    return this.seen.get(key)?.count ?? 0;
  }

  /**
   * The words a problem is listed with at shutdown: the first logged ones, so `text` is only called (the line only
   * formatted) the first time — a flood of repeats costs a count each.
   */
  remember(key: string, text: () => string): void {
    const entry = this.seen.get(key) ?? { count: 0 };
    if (entry.text === undefined) entry.text = text();
    this.seen.set(key, entry);
  }

  /** Each problem that came up more than once, as `text (N times)` — for the line printed at shutdown. */
  repeated(): string[] {
    const out: string[] = [];
    for (const { count, text } of this.seen.values()) {
      if (count > 1 && text !== undefined) out.push(`${text} (${count} times)`);
    }
    return out;
  }

  /** The key of a model-server connection problem, as the model client logs it (`code` + `host`). */
  static modelServer(code: string, url: string): string {
    return `${code}@${url.replace(/\/+$/, '')}`;
  }
}

/** Messages the startup summary on stdout already says in its own words. */
const SAID_BY_SUMMARY = new Set(['orchestrator listening', 'startup model check']);

const LEVEL_WIDTH = 5;
const SKIP = new Set(['level', 'time', 'msg', 'service', 'pid', 'hostname']);

function valueText(v: unknown): string {
  if (typeof v === 'string') return shown(/\s/.test(v) ? JSON.stringify(v) : v);
  if (v instanceof Object) return shown(JSON.stringify(v));
  return shown(String(v));
}

/** Format one pino JSON record, or undefined when it should not be shown. */
export function prettyLine(record: Record<string, unknown>, shown: ShownProblems): string | undefined {
  const msg = typeof record.msg === 'string' ? record.msg : '';
  if (SAID_BY_SUMMARY.has(msg)) return undefined;
  const level = typeof record.level === 'string' ? record.level : 'info';
  if (level === 'warn' || level === 'error' || level === 'fatal') {
    const code = typeof record.code === 'string' ? record.code : undefined;
    const host = typeof record.host === 'string' ? record.host : undefined;
    const modelKey =
      code !== undefined && host !== undefined ? ShownProblems.modelServer(code, host) : undefined;
    const key = modelKey ?? `${msg}\u0000${valueText(record.err ?? '')}`;
    const line = (): string => format(record, level, msg);
    shown.remember(key, line);
    if (modelKey !== undefined && shown.holdForSummary(modelKey, line())) return undefined;
    if (!shown.note(key)) {
      const n = shown.count(key);
      return isPowerOfTen(n) ? `${line()} — said ${n} times so far` : undefined;
    }
    return line();
  }
  return format(record, level, msg);
}

/** 10, 100, 1000…: the counts at which a repeated problem is said again. */
function isPowerOfTen(n: number): boolean {
  if (n < 10) return false;
  while (n % 10 === 0) n /= 10;
  return n === 1;
}

function format(record: Record<string, unknown>, level: string, msg: string): string {
  const time = typeof record.time === 'string' ? record.time.slice(11, 19) : '';
  const fields = Object.entries(record)
    .filter(([k, v]) => !SKIP.has(k) && v !== undefined)
    .map(([k, v]) => `${shown(k)}=${valueText(v)}`);
  const err = record.err as { message?: unknown } | string | undefined;
  const errText = typeof err === 'string' ? err : typeof err?.message === 'string' ? err.message : undefined;
  const detail = fields.filter((f) => !f.startsWith('err='));
  return (
    `${shown(time)} ${shown(level.toUpperCase()).padEnd(LEVEL_WIDTH)} ${shown(msg)}` +
    (errText !== undefined ? `: ${shown(errText)}` : '') +
    (detail.length > 0 ? ` (${detail.join(' ')})` : '')
  );
}

/** A pino destination writing {@link prettyLine}s to `out`. */
export function prettyDestination(
  out: { write(text: string): unknown },
  shown: ShownProblems,
): { write(line: string): void } {
  return {
    write(line: string): void {
      let record: Record<string, unknown>;
      try {
        record = JSON.parse(line) as Record<string, unknown>;
      } catch {
        out.write(`${inertText(line)}`);
        return;
      }
      const text = prettyLine(record, shown);
      if (text !== undefined) out.write(`${text}\n`);
    },
  };
}
