import { describe, expect, it } from 'vitest';
import type { Logger } from '@ccagent/engine';
import { RefusalLog } from './refusal-log.js';

function capture(): { logger: Logger; lines: Array<{ obj: Record<string, unknown>; msg: string }> } {
  const lines: Array<{ obj: Record<string, unknown>; msg: string }> = [];
  const push = (obj: unknown, msg?: string) =>
    lines.push({ obj: obj as Record<string, unknown>, msg: msg ?? '' });
  return { logger: { debug: () => undefined, info: () => undefined, warn: push, error: push }, lines };
}

describe('RefusalLog', () => {
  const base = { clientId: 'pc-1', code: 'unknown_call', what: 'command_result', message: 'no open call x' };

  it('logs a client and code once per window with the call id, then counts what it held back (guards against a flooder filling the log)', () => {
    let t = 0;
    const { logger, lines } = capture();
    const log = new RefusalLog(logger, () => t, 60_000);
    for (let i = 0; i < 5; i++) log.refused({ ...base, callId: `c${i}` });
    expect(lines).toHaveLength(1);
    expect(lines[0]?.obj).toEqual({ client_id: 'pc-1', code: 'unknown_call', call_id: 'c0' });
    expect(lines[0]?.msg).toBe('command_result refused: no open call x');
    t = 60_000;
    log.refused({ ...base, callId: 'c9' });
    expect(lines).toHaveLength(2);
    expect(lines[1]?.obj).toMatchObject({ call_id: 'c9', refused_since_last_log: 4 });
  });

  it('another code or another client is logged on its own (guards against one noisy client hiding another)', () => {
    const { logger, lines } = capture();
    const log = new RefusalLog(logger, () => 0);
    log.refused(base);
    log.refused({ ...base, code: 'forbidden' });
    log.refused({ ...base, clientId: 'pc-2' });
    log.refused(base);
    expect(lines.map((l) => [l.obj.client_id, l.obj.code])).toEqual([
      ['pc-1', 'unknown_call'],
      ['pc-1', 'forbidden'],
      ['pc-2', 'unknown_call'],
    ]);
  });

  it('remembers a bounded number of keys', () => {
    const { logger, lines } = capture();
    const log = new RefusalLog(logger, () => 0, 60_000, 2);
    log.refused({ ...base, clientId: 'a' });
    log.refused({ ...base, clientId: 'b' });
    log.refused({ ...base, clientId: 'c' }); // forgets a
    log.refused({ ...base, clientId: 'a' });
    expect(lines).toHaveLength(4);
  });
});
