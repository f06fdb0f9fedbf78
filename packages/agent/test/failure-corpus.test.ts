// CI guard of the small-model failure corpus (test/corpus/fixtures): every realistic bad output reaches the
// outcome its fixture states — tolerated, repaired, bounced, rejected, or stopped with a clear reason — without a
// crash or an unbounded loop. tools/bench/agent-robustness prints the same run as `handled N/M`.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createPlannerExecutorStrategy } from '../src/index.js';
import { loadCorpus, runFixture } from './corpus/corpus-runner.mjs';
import { startModels } from './support/harness.mjs';

const fixtures = await loadCorpus();
let models: Awaited<ReturnType<typeof startModels>>;
beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
});

describe('failure corpus', () => {
  it('has at least 40 fixtures, each stating its expected outcome', () => {
    expect(fixtures.length).toBeGreaterThanOrEqual(40);
    for (const f of fixtures) {
      expect(f.description, f.name).not.toBe('');
      expect(['completed', 'failed'], f.name).toContain(f.expect.status);
      if (f.expect.status === 'failed') expect(f.expect.errorCode, f.name).toBeTruthy();
    }
  });

  it.each(fixtures.map((f) => [f.name, f] as const))('%s', async (_name, fixture) => {
    const r = await runFixture(fixture, { createPlannerExecutorStrategy, models });
    expect(r.problems, `${fixture.description}\nevents: ${r.events.join(', ')}`).toEqual([]);
    expect(r.handled).toBe(true);
  });
});
