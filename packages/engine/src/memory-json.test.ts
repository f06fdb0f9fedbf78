import { describe, expect, it } from 'vitest';
import { decisionRecord, memoryJson } from './memory-json.js';
import type { Decision } from './types.js';

describe('memoryJson', () => {
  it('is JSON.stringify for objects and scalars, undefined as null (guards against a cached text that differs from the value)', () => {
    expect(memoryJson({ a: [1, 'x'] })).toBe('{"a":[1,"x"]}');
    expect(memoryJson([1, 2])).toBe('[1,2]');
    expect(memoryJson('s')).toBe('"s"');
    expect(memoryJson(3)).toBe('3');
    expect(memoryJson(null)).toBe('null');
    expect(memoryJson(undefined)).toBe('null');
  });

  it('encodes one object once: the text of the first call is returned for it afterwards', () => {
    const m = { n: 1 };
    const first = memoryJson(m);
    // Mutating a committed memory breaks the port contract; this shows the cache is what makes it matter.
    m.n = 2;
    expect(memoryJson(m)).toBe(first);
    expect(memoryJson({ n: 2 })).toBe('{"n":2}');
  });
});

describe('decisionRecord', () => {
  it('drops a memory key that is present but undefined, and keeps every other field (guards against losing decision details)', () => {
    const d = {
      type: 'tool_call',
      command: 'dig',
      args: { n: 1 },
      timeoutMs: 5,
      memory: undefined,
    } as Decision;
    expect(decisionRecord(d, { a: 1 })).toEqual({
      type: 'tool_call',
      command: 'dig',
      args: { n: 1 },
      timeoutMs: 5,
    });
    expect('memory' in decisionRecord(d, null)).toBe(false);
  });

  it('fingerprints scalar and null memories too, compared with the previous memory by content', () => {
    expect(decisionRecord({ type: 'continue', memory: null }, undefined)).toMatchObject({
      memoryBytes: 4,
      memoryChanged: false, // undefined and null memories encode alike
    });
    const r = decisionRecord({ type: 'continue', memory: 'abc' }, 'abd');
    expect(r).toMatchObject({ memoryBytes: 5, memoryChanged: true });
    expect((r as { memorySha256: string }).memorySha256).toMatch(/^[0-9a-f]{64}$/);
  });
});
