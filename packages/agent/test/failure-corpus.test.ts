// CI guard of the small-model failure corpus (testing/corpus/fixtures): every realistic bad output reaches the
// outcome its fixture states — tolerated, repaired, bounced, rejected, or stopped with a clear reason — without a
// crash or an unbounded loop. Every fixture runs in all three executor modes and, where it has one, in its
// native-loop form. tools/bench/agent-robustness prints the same run as `handled N/M`. The r31-* cases (issue 31)
// write every field of every directive with prose after it and with each decoration around its value.
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { createNativeToolStrategy, createPlannerExecutorStrategy } from '../src/index.js';
import { loadCorpus, runFixture, runNativeFixture, startModels } from '@ccagent/agent/testing';

const fixtures = await loadCorpus();
const runs = fixtures.flatMap((f) => [
  ...(f.modes ?? [f.mode ?? 'parser-then-model']).map((mode) => [`${f.name} [${mode}]`, f, mode] as const),
  ...(f.native ? [[`${f.name} [native]`, f, 'native'] as const] : []),
]);
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

  it('runs every fixture in all three executor modes', () => {
    for (const f of fixtures)
      expect([...(f.modes ?? [])].sort(), f.name).toEqual(['model', 'parser', 'parser-then-model']);
  });

  it('has at least 40 issue-19 cases, each naming its class and required outcome', () => {
    const cases = fixtures.filter((f) => f.name.startsWith('r19-'));
    expect(cases.length).toBeGreaterThanOrEqual(40);
    for (const f of cases) {
      expect(f.class, f.name).toMatch(/^[1-6] /);
      expect(f.required, f.name).toBeTruthy();
    }
    expect(new Set(cases.map((f) => f.class)).size).toBe(6);
  });

  it('has the issue-31 cases: every field of every directive with prose after it, and every decoration', () => {
    const cases = fixtures.filter((f) => f.name.startsWith('r31-'));
    const slug = (kind: string) => kind.toLowerCase().replace('_', '-');
    const fields: Record<string, string[]> = {
      RUN: ['PATH', 'ARGS', 'EXPECT'],
      SHELL: ['COMMAND', 'EXPECT'],
      WRITE_FILE: ['PATH', 'LANGUAGE', 'CONTENT', 'THEN'],
      ASK_USER: ['QUESTION', 'WHY', 'NEXT'],
      DONE: ['SUMMARY', 'NOTES'],
    };
    const named = (cls: string, end: string) =>
      cases.some((f) => f.class === cls && f.name.endsWith(end) && f.required);
    for (const [kind, names] of Object.entries(fields)) {
      for (const field of names) {
        for (const form of ['next-line', 'blank-line', 'after-fence']) {
          const end = `${slug(kind)}-${field.toLowerCase()}-${form}`;
          expect(named('7 prose after a field', end), end).toBe(true);
        }
      }
      for (const d of ['code', 'double-code', 'bold', 'italic', 'underscore', 'bold-code']) {
        expect(named('8 decorated values', `${slug(kind)}-${d}`), `${kind} ${d}`).toBe(true);
      }
      for (const d of ['double-quotes', 'typographic-quotes', 'single-quotes']) {
        expect(named('8 decorated values', `${slug(kind)}-${d}`), `${kind} ${d}`).toBe(true);
      }
    }
    // Same-line remarks after every structured value, values that bounce, and the native loop's decorated calls.
    expect(cases.filter((f) => f.name.endsWith('-same-line')).length).toBe(6);
    expect(cases.filter((f) => f.name.includes('-bounce-')).length).toBeGreaterThanOrEqual(8);
    expect(cases.filter((f) => f.native).length).toBeGreaterThanOrEqual(9);
  });

  it.each(runs)('%s', async (_name, fixture, mode) => {
    const r =
      mode === 'native'
        ? await runNativeFixture(fixture, { createNativeToolStrategy, models })
        : await runFixture(fixture, { createPlannerExecutorStrategy, models, mode });
    expect(r.problems, `${fixture.description}\nevents: ${r.events.join(', ')}`).toEqual([]);
    expect(r.handled).toBe(true);
  });
});
