import { describe, expect, it } from 'vitest';
import { parseScenario } from './scenario.js';

describe('parseScenario', () => {
  it('accepts replies as strings or objects with tool calls and faults, defaulting repeat and installed (guards against rejecting valid scenario files)', () => {
    const result = parseScenario({
      models: {
        'qwen2.5:7b': [
          'Hello!',
          { toolCalls: [{ name: 'dig', arguments: { dir: 'down' } }], fault: { tokenDelayMs: 5 } },
        ],
      },
    });
    expect(result).toEqual({
      ok: true,
      value: {
        models: {
          'qwen2.5:7b': [
            'Hello!',
            { toolCalls: [{ name: 'dig', arguments: { dir: 'down' } }], fault: { tokenDelayMs: 5 } },
          ],
        },
        repeat: true,
        installed: [],
      },
    });
  });

  it.each([
    [[], '(root)'],
    [{}, 'models'],
    [{ models: { m: 'hi' } }, 'models.m'],
    [{ models: { m: [{ toolCalls: [{ arguments: {} }] }] } }, 'models.m[0]'],
    [{ models: { m: [{ contnet: 'typo' }] } }, 'models.m[0]'],
    [{ models: { m: [{ fault: { dropAfterChunk: 1 } }] } }, 'models.m[0]'],
    [{ models: {}, repeat: 'yes' }, 'repeat'],
    [{ models: {}, installed: [1] }, 'installed[0]'],
  ])('rejects %j naming %s (guards against a typo silently changing the test double)', (input, where) => {
    const result = parseScenario(input);
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error).toContain(where);
  });
});
