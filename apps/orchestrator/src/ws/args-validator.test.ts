import { describe, expect, it } from 'vitest';
import { ArgsValidator, MAX_SCHEMA_BYTES } from './args-validator.js';

const schema = {
  type: 'object',
  properties: { path: { type: 'string' }, lines: { type: 'array', items: { type: 'integer' } } },
  required: ['path'],
  additionalProperties: false,
};

describe('ArgsValidator', () => {
  it('accepts valid args and lists each problem with its path', () => {
    const v = new ArgsValidator();
    expect(v.validate(schema, { path: '/a', lines: [1, 2] })).toEqual({ ok: true });
    const r = v.validate(schema, { lines: [1, 'x'], other: 1 });
    expect(r.ok).toBe(false);
    if (r.ok) return;
    expect(r.message).toContain("$: must have required property 'path'");
    expect(r.message).toContain('$.lines.1: must be integer');
    expect(r.message).toContain('must NOT have additional properties (other)');
  });

  it('ignores a declared $schema dialect (draft-07 schemas from Lua clients work)', () => {
    const v = new ArgsValidator();
    const s = { $schema: 'http://json-schema.org/draft-07/schema#', type: 'object', required: ['a'] };
    expect(v.checkSchema(s)).toEqual({ ok: true });
    expect(v.validate(s, {}).ok).toBe(false);
  });

  it('reports schemas it cannot compile, and refuses oversized ones', () => {
    const v = new ArgsValidator();
    expect(v.checkSchema({ type: 'strin' }).ok).toBe(false);
    const huge = { type: 'object', description: 'x'.repeat(MAX_SCHEMA_BYTES) };
    const r = v.checkSchema(huge);
    expect(r.ok).toBe(false);
    if (!r.ok) expect(r.message).toMatch(/larger than/);
    const use = v.validate({ type: 'strin' }, {});
    expect(use.ok).toBe(false);
  });

  it('compiles each distinct schema once (thousands of clients share schemas)', () => {
    const v = new ArgsValidator();
    const t0 = performance.now();
    for (let i = 0; i < 2000; i++) v.validate(structuredClone(schema), { path: 'a' });
    // One compile (~ms) plus 2000 cached lookups; recompiling each time would take seconds.
    expect(performance.now() - t0).toBeLessThan(1000);
  });
});
