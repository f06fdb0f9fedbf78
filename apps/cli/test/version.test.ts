import { execFileSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const bin = fileURLToPath(new URL('../dist/main.js', import.meta.url));

describe('ccagent binary', () => {
  it('runs as a built executable and prints its version (guards against a broken bin/shebang)', () => {
    const out = execFileSync(process.execPath, [bin, '--version'], { encoding: 'utf8' });
    expect(out.trim()).toBe('0.1.0');
  });
});
