// The mod protocol's ids are printable, like the CC protocol's: an instance id or action id with ESC, CR, a bidi
// override or a space is an `invalid_message` error naming the field, before it reaches a log line, the dashboard or
// the CLI.
import { describe, expect, it } from 'vitest';
import { ID_CHARSET_MESSAGE } from '@ccagent/protocol';
import { parseModMessage } from './parse.js';

const frame = (v: unknown) => JSON.stringify(v);

describe('mod protocol ids', () => {
  it.each(['alex\u001b[31m', 'alex\r\u001b[2K', 'alex\u202e', 'alex laptop', 'alex\u009b2J'])(
    'refuses the instance id %j with the field and the allowed characters (guards against a terminal obeying it)',
    (bad) => {
      const r = parseModMessage(frame({ type: 'register', instanceId: bad, version: '1.0' }));
      expect(r.ok).toBe(false);
      if (r.ok) return;
      expect(r.error.path).toEqual(['instanceId']);
      expect(r.error.message).toContain(ID_CHARSET_MESSAGE);
    },
  );

  it('refuses a hostile action id and accepts the ids the backend and the bridge make', () => {
    const bad = parseModMessage(
      frame({ type: 'action_complete', instanceId: 'alex-laptop', actionId: 't1:p1:a0\u001b]0;x\u0007' }),
    );
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.path).toEqual(['actionId']);
    expect(
      parseModMessage(
        frame({
          type: 'action_complete',
          instanceId: 'Steve_123',
          actionId: '3f6b2a10-8c4d-4e1f-9a7b-2d5e6c8f1a01:p1:a0',
        }),
      ).ok,
    ).toBe(true);
    expect(parseModMessage(frame({ type: 'register', instanceId: 'alex-laptop', version: '1.0' })).ok).toBe(
      true,
    );
  });
});
