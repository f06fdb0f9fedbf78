import { readFileSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, it } from 'vitest';
import { loadSuite } from './job.js';

const doc = readFileSync(
  path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..', '..', 'docs', 'eval.md'),
  'utf8',
);

it('docs/eval.md lists every job of the suite with its tier, title, loops and wrong runs, and the job count', async () => {
  const suite = await loadSuite();
  for (const j of suite.jobs) {
    const row = `| \`${j.id}\` | ${j.tier} | ${j.title} | ${j.tags.join(', ')} | ${j.loops.join(', ')} | ${Object.keys(j.wrong).join(', ')} |`;
    expect(doc, j.id).toContain(row.replace('|  |', '| |'));
  }
  expect(doc).toContain(`## The suite (version ${suite.version})`);
  expect(doc).toContain(`Five tiers, ${suite.jobs.length} jobs.`);
});
