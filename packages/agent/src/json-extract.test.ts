import { describe, expect, it } from 'vitest';
import { extractJsonObject } from './json-extract.js';

const value = (reply: string): unknown => {
  const r = extractJsonObject(reply);
  if (!r.ok) throw new Error(r.error.message);
  return r.value.value;
};

describe('extractJsonObject', () => {
  it('reads plain JSON without repairs', () => {
    const r = extractJsonObject('{"a":1}');
    expect(r).toEqual({ ok: true, value: { value: { a: 1 }, repairs: [] } });
  });

  it('strips code fences with or without language and prose around', () => {
    expect(value('Here you go:\n```json\n{"a": [1, 2]}\n```\nDone.')).toEqual({ a: [1, 2] });
    expect(value('```\n{"a": "}"}\n```')).toEqual({ a: '}' });
    expect(value('Sure. {"a": {"b": 2}} hope that helps')).toEqual({ a: { b: 2 } });
  });

  it('repairs trailing commas, single quotes, bare keys and Python literals and says so', () => {
    const r = extractJsonObject(`{kind: 'tool', 'parameters': {'path': 'it\\'s "x".lua', ok: True,},}`);
    expect(r.ok).toBe(true);
    if (!r.ok) return;
    expect(r.value.value).toEqual({ kind: 'tool', parameters: { path: `it's "x".lua`, ok: true } });
    expect(r.value.repairs).toEqual(
      expect.arrayContaining([
        'trailing commas',
        'single-quoted strings',
        'unquoted keys',
        'Python literals',
      ]),
    );
  });

  it('leaves apostrophes inside double-quoted strings alone', () => {
    expect(value(`{"a": "don't", "b": [1,],}`)).toEqual({ a: "don't", b: [1] });
  });

  it('reports empty, missing, truncated and hopeless input with distinct codes', () => {
    expect(extractJsonObject('   ')).toMatchObject({ ok: false, error: { code: 'empty' } });
    expect(extractJsonObject('I will write the file.')).toMatchObject({
      ok: false,
      error: { code: 'no_object' },
    });
    expect(extractJsonObject('{"kind":"tool","parameters":{"content":"abc')).toMatchObject({
      ok: false,
      error: { code: 'truncated' },
    });
    expect(extractJsonObject('{"a" 1 2}')).toMatchObject({ ok: false, error: { code: 'invalid_json' } });
  });
});
