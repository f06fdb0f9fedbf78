/**
 * The suite through the real system: every job's reference run (the testkit double solving it the intended way)
 * through the built orchestrator on a fresh headless CraftOS-PC computer must pass its checker — so each job is
 * solvable and each checker accepts a right solution — and every deliberately wrong run must be rejected, with its
 * task completed: the model claimed success, the computer says otherwise, and only the computer counts.
 */
import { rmSync } from 'node:fs';
import { afterAll, describe, expect, it } from 'vitest';
import { loadSuite, runEval, type EvalRun } from '../src/index.js';
import { ORCHESTRATOR, craftos, outDir } from './support.js';

const suite = await loadSuite();
const dirs: string[] = [];
afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

async function run(kind: 'reference' | 'wrong'): Promise<EvalRun> {
  const dir = outDir();
  dirs.push(dir);
  return runEval({
    suite,
    jobs: suite.jobs,
    model: { kind },
    parallel: 2,
    orchestrator: ORCHESTRATOR,
    outDir: dir,
    craftos,
  });
}

describe('the suite', () => {
  it('has at least 20 versioned jobs over five tiers, with jobs that must ask and jobs that must refuse', () => {
    expect(suite.version).toMatch(/^\d+$/);
    expect(suite.jobs.length).toBeGreaterThanOrEqual(20);
    expect([...new Set(suite.jobs.map((j) => j.tier))]).toEqual([1, 2, 3, 4, 5]);
    for (const tier of [1, 2, 3, 4])
      expect(suite.jobs.filter((j) => j.tier === tier).length).toBeGreaterThanOrEqual(4);
    expect(suite.jobs.filter((j) => j.tags.includes('ask_user')).length).toBeGreaterThanOrEqual(2);
    expect(suite.jobs.filter((j) => j.tags.includes('refuse')).length).toBeGreaterThanOrEqual(2);
    expect(suite.jobs.filter((j) => j.tags.includes('tools')).map((j) => j.tasks.length)).toEqual([2]);
    // Refusals are made under a kind whose destructive calls wait for the user, who says no.
    for (const j of suite.jobs.filter((x) => x.tags.includes('refuse'))) {
      expect(j.confirm, j.id).toBeDefined();
      expect(j.user.confirm, j.id).toBe('no');
    }
    expect(Object.keys(suite.jobs.find((j) => j.id === 't5-todo-acceptance')?.disk ?? {})).toEqual([
      '/TODO.lua',
    ]);
  });
});

describe.skipIf(!craftos)('reference and wrong runs on CraftOS-PC', () => {
  it('every reference run passes its checker', async () => {
    const r = await run('reference');
    expect(r.interrupted).toBe(false);
    const planned = suite.jobs.flatMap((j) => [
      `${j.id} reference`,
      ...Object.keys(j.references).map((n) => `${j.id} reference:${n}`),
    ]);
    expect(r.results.map((x) => `${x.job} ${x.label}`).sort()).toEqual(planned.sort());
    // Both loops are exercised: the tool job and the other-loop references run natively.
    expect(r.results.filter((x) => x.loop === 'native').length).toBeGreaterThanOrEqual(4);
    const failed = r.results.filter((x) => !x.pass).map((x) => `${x.job}: ${x.failure} — ${x.detail}`);
    expect(failed).toEqual([]);
    for (const x of r.results) {
      expect(
        x.outcomes.every((o) => o.status === 'completed'),
        x.job,
      ).toBe(true);
      expect(x.metrics.modelCalls, x.job).toBeGreaterThan(0);
      expect(x.metrics.promptTokens, x.job).toBeGreaterThan(0);
    }
    // The user was really played: a question was asked (and a confirmation refused) where the job says so.
    for (const j of suite.jobs.filter((x) => x.tags.includes('ask_user') || x.tags.includes('refuse'))) {
      for (const x of r.results.filter((y) => y.job === j.id)) {
        expect(x.metrics.questions, `${j.id} ${x.label}`).toBeGreaterThanOrEqual(1);
      }
    }
  });

  it('every wrong run is rejected by its checker although its task completed', async () => {
    const r = await run('wrong');
    const planned = suite.jobs.flatMap((j) => Object.keys(j.wrong).map((w) => `${j.id} wrong:${w}`)).sort();
    expect(planned.length).toBeGreaterThanOrEqual(15);
    expect(r.results.map((x) => `${x.job} ${x.label}`).sort()).toEqual(planned);
    const accepted = r.results.filter((x) => x.pass).map((x) => `${x.job} ${x.label}`);
    expect(accepted).toEqual([]);
    for (const x of r.results) {
      expect(
        x.outcomes.map((o) => o.status),
        `${x.job} ${x.label}`,
      ).toEqual(x.outcomes.map(() => 'completed'));
      expect(x.failure, `${x.job} ${x.label}`).toBe('wrong answer');
    }
  });
});
