import * as models from '@ccagent/models';
import { describe, expect, it } from 'vitest';
import * as compat from './index.js';

describe('@ccagent/ollama (compatibility name)', () => {
  it('re-exports every name of @ccagent/models as the same object (guards against code on the old name breaking)', () => {
    expect(Object.keys(compat).sort()).toEqual(Object.keys(models).sort());
    expect(Object.keys(compat).length).toBeGreaterThan(10);
    for (const [name, value] of Object.entries(models)) {
      expect(compat[name as keyof typeof compat], name).toBe(value);
    }
  });
});
