import { describe, expect, it } from 'vitest';
import { SseParser } from './sse-parser.js';

describe('SseParser', () => {
  it('holds a record split across chunks until its blank line (guards against half-parsed JSON events)', () => {
    const p = new SseParser();
    expect(p.push('id: a-1\nevent: st')).toEqual([]);
    expect(p.push('ep\ndata: {"seq"')).toEqual([]);
    expect(p.push(':1}\n\n')).toEqual([{ id: 'a-1', event: 'step', data: '{"seq":1}' }]);
    expect(p.lastEventId).toBe('a-1');
  });

  it('skips comments, reads retry, joins multi-line data and accepts CRLF', () => {
    const p = new SseParser();
    const out = p.push(': ping\r\n\r\nretry: 1000\r\ndata: a\r\ndata: b\r\n\r\n');
    expect(out).toEqual([{ id: undefined, event: 'message', data: 'a\nb' }]);
    expect(p.retryMs).toBe(1000);
  });

  it('keeps the last id when a later record has none (what Last-Event-ID must send on reconnect)', () => {
    const p = new SseParser();
    p.push('id: e-5\nevent: task\ndata: {}\n\n');
    p.push('event: task\ndata: {}\n\n');
    expect(p.lastEventId).toBe('e-5');
  });
});
