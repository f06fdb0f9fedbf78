import { isEngineError } from './engine-error.js';
import { describe, expect, it } from 'vitest';
import { bindClientRefusal, bindingRefusal } from './binding-verdicts.js';

describe('bindCall verdicts', () => {
  it('refuse an empty or non-string client id before anything is written (guards against a call bound to nobody)', () => {
    expect(isEngineError(bindClientRefusal(''), 'invalid_input')).toBe(true);
    expect(isEngineError(bindClientRefusal(undefined), 'invalid_input')).toBe(true);
    expect(bindClientRefusal('pc-1')).toBeUndefined();
  });

  it('judge the call read back: unknown, closed unless this write bound it, else returned (guards against binding a finished call)', () => {
    expect(isEngineError(bindingRefusal('c1', false, undefined), 'unknown_call')).toBe(true);
    const closed = bindingRefusal('c1', false, 'completed');
    expect(isEngineError(closed, 'call_closed')).toBe(true);
    expect(closed?.message).toBe('command call c1 is already completed');
    expect(closed?.details).toEqual({ callId: 'c1', status: 'completed' });
    // Pending and bound before (the first binding holds), or bound by this write: the call is returned.
    expect(bindingRefusal('c1', false, 'pending')).toBeUndefined();
    expect(bindingRefusal('c1', true, 'pending')).toBeUndefined();
  });
});
