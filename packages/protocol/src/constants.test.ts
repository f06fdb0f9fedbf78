import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import * as constants from './constants.js';
import * as api from './index.js';

describe('@ccagent/protocol/constants', () => {
  it('imports nothing, so a browser bundle taking the lists from it does not bundle zod (it cost the dashboard 34 KB gzip)', () => {
    const source = readFileSync(new URL('./constants.ts', import.meta.url), 'utf8');
    expect(source).not.toMatch(/^\s*import\s/m);
    expect(source).not.toMatch(/\brequire\(|\bimport\(/);
  });

  it('is published as its own entry with the same values as the main entry (one list each, not a copy)', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      exports: Record<string, { import: { default: string } }>;
    };
    expect(pkg.exports['./constants']?.import.default).toBe('./dist/constants.js');
    expect(constants.TASK_STATUSES).toBe(api.TASK_STATUSES);
    expect(constants.HTTP_EVENT_TYPES).toBe(api.HTTP_EVENT_TYPES);
  });
});
