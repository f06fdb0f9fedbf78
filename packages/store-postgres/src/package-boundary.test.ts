import { readdirSync, readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Every TypeScript file of this package, its tests included: the files under src/ and test/. */
function allSources(): string[] {
  return ['src', 'test'].flatMap((dir) =>
    readdirSync(path.join(ROOT, dir), { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts'))
      .map((f) => path.join(ROOT, dir, f)),
  );
}

describe('@ccagent/store-postgres', () => {
  it('does not depend on the SQLite store: what both share comes from @ccagent/store-core (guards against pg users installing better-sqlite3 and the two stores drifting through a shared copy)', () => {
    const pkg = JSON.parse(readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as {
      dependencies: Record<string, string>;
      peerDependencies?: Record<string, string>;
      devDependencies?: Record<string, string>;
    };
    expect(Object.keys(pkg.dependencies)).not.toContain('@ccagent/store');
    expect(Object.keys(pkg.peerDependencies ?? {})).not.toContain('@ccagent/store');
    // Not even its tests: the comparison with the SQLite store lives in @ccagent/store (test/postgres-parity).
    expect(Object.keys(pkg.devDependencies ?? {})).not.toContain('@ccagent/store');
    expect(Object.keys(pkg.dependencies)).toContain('@ccagent/store-core');
    const sources = allSources();
    expect(sources.length).toBeGreaterThan(5);
    const offenders = sources.filter((f) =>
      /(?:from|import)\s*\(?\s*['"]@ccagent\/store['"]/.test(readFileSync(f, 'utf8')),
    );
    expect(offenders.map((f) => path.relative(ROOT, f))).toEqual([]);
  });
});
