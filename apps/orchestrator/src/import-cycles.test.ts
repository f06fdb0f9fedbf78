import { readdirSync, readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';

const SRC = path.dirname(fileURLToPath(import.meta.url));

/** The orchestrator's modules and, for each, the modules of this folder it imports at run time (not `import type`). */
function runtimeImports(): Map<string, string[]> {
  const graph = new Map<string, string[]>();
  const walk = (dir: string): void => {
    for (const name of readdirSync(dir)) {
      const p = path.join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith('.ts') && !p.endsWith('.test.ts')) {
        const text = readFileSync(p, 'utf8');
        const deps = [...text.matchAll(/^(?:import|export)\s+(?!type\b)[^;]*?from\s+'(\.[^']+)'/gms)].map(
          (m) => path.resolve(path.dirname(p), (m[1] as string).replace(/\.js$/, '.ts')),
        );
        graph.set(p, deps);
      }
    }
  };
  walk(SRC);
  return graph;
}

describe('the orchestrator’s modules', () => {
  it('import each other without a cycle at run time (guards against routes/dashboard.ts and routes/index.ts importing each other again, which made the table’s load order matter)', () => {
    const graph = runtimeImports();
    expect(graph.size).toBeGreaterThan(40);
    const cycles: string[] = [];
    const state = new Map<string, 'open' | 'done'>();
    const stack: string[] = [];
    const visit = (n: string): void => {
      state.set(n, 'open');
      stack.push(n);
      for (const d of graph.get(n) ?? []) {
        if (!graph.has(d)) continue;
        if (state.get(d) === 'open')
          cycles.push(
            stack
              .slice(stack.indexOf(d))
              .map((x) => path.relative(SRC, x))
              .join(' -> '),
          );
        else if (state.get(d) === undefined) visit(d);
      }
      stack.pop();
      state.set(n, 'done');
    };
    for (const n of graph.keys()) if (state.get(n) === undefined) visit(n);
    expect(cycles).toEqual([]);
  });
});
