import { readFileSync } from 'node:fs';
import { describe, expect, it } from 'vitest';
import { ORCHESTRATOR_VERSION } from './version.js';

describe('ORCHESTRATOR_VERSION', () => {
  it('equals package.json version (guards /health and welcome reporting a stale version)', () => {
    const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8')) as {
      version: string;
    };
    expect(ORCHESTRATOR_VERSION).toBe(pkg.version);
  });
});
