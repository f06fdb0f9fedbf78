/**
 * Runs the examples of docs/embedding.md and of the engine and store READMEs exactly as printed (every ```js block
 * whose first line is `// example: NAME`), against the built packages, so the documentation cannot rot.
 */
import { execFileSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, it } from 'vitest';

const read = (rel: string) => readFileSync(fileURLToPath(new URL(rel, import.meta.url)), 'utf8');
const docs = {
  embedding: read('../../../docs/embedding.md'),
  engineReadme: read('../../engine/README.md'),
  storeReadme: read('../README.md'),
};
const examples = new Map(
  Object.values(docs).flatMap((doc) =>
    [...doc.matchAll(/```js\n\/\/ example: (\S+)\n[\s\S]*?```/g)].map((m) => [
      m[1] as string,
      m[0].slice(6, -3),
    ]),
  ),
);

// Inside the package so that `@ccagent/engine` / `@ccagent/store` resolve through the workspace's node_modules.
const dir = mkdtempSync(path.join(fileURLToPath(new URL('.', import.meta.url)), '.examples-'));
writeFileSync(path.join(dir, 'package.json'), '{ "type": "module" }\n');
afterAll(() => rmSync(dir, { recursive: true, force: true }));

function run(name: string): string {
  const code = examples.get(name);
  if (!code) throw new Error(`no documented example ${name}`);
  const cwd = path.join(dir, name.replace(/\.mjs$/, '')); // each example in its own folder (own ./tasks.db)
  mkdirSync(cwd, { recursive: true });
  writeFileSync(path.join(cwd, name), code);
  // A reader copying the example sees plain output in a pipe; Nx exports FORCE_COLOR to tasks, which would make
  // console.log colour numbers, so the example runs with the environment a user's shell would give it.
  const env: NodeJS.ProcessEnv = { ...process.env, NO_COLOR: '1' };
  delete env.FORCE_COLOR;
  return execFileSync(process.execPath, [name], { cwd, encoding: 'utf8', timeout: 20_000, env });
}

describe('documented examples run as printed', () => {
  it('finds every documented example (guards against the test silently running nothing)', () => {
    expect([...examples.keys()].sort()).toEqual([
      'durable.mjs',
      'engine-readme.mjs',
      'local-tools.mjs',
      'store-readme.mjs',
    ]);
  });

  it('docs/embedding.md local-tools.mjs prints what the guide says', () => {
    const out = run('local-tools.mjs');
    expect(out.match(/^call /gm)).toHaveLength(3);
    expect(out).toContain('completed {"files":2,"bytes":12}');
    expect(docs.embedding).toContain('`completed {"files":2,"bytes":12}`');
  });

  it('docs/embedding.md durable.mjs completes, then finds the finished task on a second run', () => {
    const first = run('durable.mjs').trim();
    expect(first).toBe('countdown-1 completed "liftoff" 11 step records');
    expect(docs.embedding).toContain(`\`${first}\``);
    expect(run('durable.mjs').trim()).toBe(first);
  });

  it('the engine README example prints what the README says', () => {
    expect(run('engine-readme.mjs').trim()).toBe('result 5');
    expect(docs.engineReadme).toContain('Prints `result 5`.');
  });

  it('the store README example persists across runs as the README says', () => {
    const db = path.join(dir, 'store-readme', 'tasks.db');
    expect(run('store-readme.mjs').trim()).toBe(`hi 1 completed task(s) in ${db}`);
    expect(run('store-readme.mjs').trim()).toBe(`hi 2 completed task(s) in ${db}`);
  });
});
