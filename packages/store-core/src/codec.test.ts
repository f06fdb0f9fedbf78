import { describe, expect, it } from 'vitest';
import { recordToStep, rowToStep, stepToRow } from './codec.js';

describe('recordToStep', () => {
  it('gives exactly what reading the row back gives (guards against a commit result that differs from getSteps)', () => {
    const records = [
      { kind: 'note', step: 1, at: 5 },
      {
        kind: 'native',
        step: 2,
        at: 6,
        model: 'qwen3:8b',
        input: { messages: [{ role: 'user', content: 'hi' }], options: { temperature: 0 } },
        output: { content: '', tool_calls: [{ name: 'noop', arguments: { i: 1 } }] },
        startedAt: 1,
        durationMs: 40,
        usage: { promptTokens: 10, completionTokens: 2 },
      },
      {
        kind: 'decision',
        step: 3,
        at: 7,
        directive: { type: 'tool_call', command: 'noop', args: {}, memory: { turns: [1, 2, null] } },
        validationErrors: ['$.x: bad'],
        error: { code: 'e', message: 'm', details: { a: [1] } },
        usage: {},
      },
      {
        kind: 'tool_result',
        step: 3,
        at: 8,
        toolCall: { callId: 't:call:1', command: 'noop', args: { a: 'é' } },
        toolResult: { ok: false, error: { message: 'x' } },
        usage: { totalDurationMs: 0 },
      },
    ];
    for (const [i, r] of records.entries()) {
      expect(recordToStep('t', i + 1, r)).toStrictEqual(rowToStep(stepToRow('t', i + 1, r)));
    }
  });
});
