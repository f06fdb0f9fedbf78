import { describe, expect, it } from 'vitest';
import { prettyDestination, ShownProblems } from './pretty-log.js';

function capture() {
  const lines: string[] = [];
  const shown = new ShownProblems();
  const dest = prettyDestination({ write: (t: string) => lines.push(t) }, shown);
  const log = (r: Record<string, unknown>) =>
    dest.write(JSON.stringify({ time: '2026-11-25T10:05:02.435Z', service: 'cc-orchestrator', ...r }));
  return { lines, shown, log };
}

const retry = (attempt: number) => ({
  level: 'warn',
  msg: 'model call failed; retrying',
  provider: 'ollama',
  host: 'http://127.0.0.1:9',
  code: 'connection',
  attempt,
  err: 'cannot reach ollama at http://127.0.0.1:9: fetch failed; is Ollama running (`ollama serve`)?',
});

describe('pretty log', () => {
  it('says an unreachable model server once: the summary line, not also every retry (guards against the same problem four times)', () => {
    const { lines, shown, log } = capture();
    log(retry(1));
    log(retry(2));
    log({ level: 'warn', msg: 'startup model check', warning: 'ollama … is not reachable' });
    expect(lines).toEqual([]);
    // The summary printed the server as NOT reachable with its fix, and noted it.
    shown.note(ShownProblems.modelServer('connection', 'http://127.0.0.1:9/'));
    expect(shown.release()).toEqual([]);
    log(retry(3));
    expect(lines).toEqual([]);
  });

  it('prints held problems the summary did not say, once, and other problems once each', () => {
    const { lines, shown, log } = capture();
    log(retry(1));
    expect(shown.release()).toHaveLength(1);
    expect(shown.release()).toEqual([]);
    log({ level: 'error', msg: 'http handler failed', err: { message: 'boom' }, route: 'tasks.list' });
    log({ level: 'error', msg: 'http handler failed', err: { message: 'boom' }, route: 'tasks.list' });
    log({ level: 'info', msg: 'client connected', client_id: 'pc-1', commands: 15 });
    expect(lines).toEqual([
      '10:05:02 ERROR http handler failed: boom (route=tasks.list)\n',
      '10:05:02 INFO  client connected (client_id=pc-1 commands=15)\n',
    ]);
  });

  it('counts a repeated problem: said once, again with its count at 10 and 100, and listed with its total at shutdown (guards against a warning flood, and against a count that is lost)', () => {
    const { lines, shown, log } = capture();
    const boom = { level: 'warn', msg: 'client refused', err: 'bad key', client_id: 'pc-9' };
    for (let i = 0; i < 123; i += 1) log(boom);
    log({ level: 'warn', msg: 'said only once', err: 'x' });
    expect(lines).toEqual([
      '10:05:02 WARN  client refused: bad key (client_id=pc-9)\n',
      '10:05:02 WARN  client refused: bad key (client_id=pc-9) — said 10 times so far\n',
      '10:05:02 WARN  client refused: bad key (client_id=pc-9) — said 100 times so far\n',
      '10:05:02 WARN  said only once: x\n',
    ]);
    expect(shown.repeated()).toEqual(['10:05:02 WARN  client refused: bad key (client_id=pc-9) (123 times)']);
    // A model-server problem the summary said is counted too, from the summary's own mention.
    shown.note(ShownProblems.modelServer('connection', 'http://127.0.0.1:9'));
    shown.release();
    for (let i = 1; i <= 9; i += 1) log(retry(i));
    expect(lines).toHaveLength(5);
    expect(lines[4]).toMatch(/model call failed; retrying.* — said 10 times so far\n$/);
  });

  it('leaves out what the startup summary says in its own words', () => {
    const { lines, log } = capture();
    log({ level: 'info', msg: 'orchestrator listening', url: 'http://127.0.0.1:7420' });
    expect(lines).toEqual([]);
  });

  it('shows what a computer or model sent as visible symbols, one line each: message, fields, keys and error text (guards against a log line that recolours, retitles or rewrites the terminal)', () => {
    const { lines, log } = capture();
    const hostile = '\u001b]0;pwned\u0007\u001b[31mRED\r\u009b2J\u202e\nforged line';
    log({ level: 'info', msg: `client connected${hostile}`, client_id: `pc${hostile}`, [`k${hostile}`]: 1 });
    log({
      level: 'error',
      msg: 'http handler failed',
      err: { message: `boom${hostile}` },
      detail: { x: hostile },
    });
    expect(lines).toHaveLength(2);
    for (const line of lines) {
      expect(line.endsWith('\n')).toBe(true);
      expect(line.slice(0, -1)).not.toMatch(/[\p{Cc}\p{Cf}\p{Zl}\p{Zp}]/u);
    }
    expect(lines[0]).toContain('client connected␛]0;pwned␇␛[31mRED␍\\x9b2J\\u202e␊forged line');
    expect(lines[1]).toContain('boom␛]0;pwned␇');
  });
});
