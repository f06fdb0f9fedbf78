/**
 * A run against a model server (here the testkit fake, scripted like a model that solves the job), both APIs: every
 * role is the one model, no per-task model settings, jobs the chosen loop cannot do are listed as skipped, and the
 * figures are the server's.
 */
import { rmSync } from 'node:fs';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEFAULT_EVAL_NUM_PREDICT, loadSuite, runEval, selectJobs } from '../src/index.js';
import { ORCHESTRATOR, craftos, outDir } from './support.js';

const suite = await loadSuite();
const dirs: string[] = [];
let fake: FakeOllama;
beforeAll(async () => {
  fake = await startFakeOllama({ installed: ['some-model:7b'] });
});
afterAll(async () => {
  await fake?.close();
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe.skipIf(!craftos)('a run against a model server', () => {
  for (const provider of ['ollama', 'openai'] as const) {
    it(`${provider}: the model solves t1-read-code twice in the native loop; the ask_user job is skipped; every request carries the output bound`, async () => {
      // Ollama takes the eval's default bound, the OpenAI-compatible run a bound of its own.
      const numPredict = provider === 'ollama' ? undefined : 777;
      const job = selectJobs(suite, ['t1-read-code'])[0]!;
      fake.script('some-model:7b', [
        ...job.references.native!.replies.native!,
        ...job.references.native!.replies.native!,
      ]);
      const before = fake.chatRequests('some-model:7b').length;
      const dir = outDir();
      dirs.push(dir);
      const run = await runEval({
        suite,
        jobs: selectJobs(suite, ['t1-read-code', 't3-ask-lamp-colour']),
        model: {
          kind: 'server',
          provider,
          host: fake.url,
          model: 'some-model:7b',
          ...(numPredict !== undefined ? { numPredict } : {}),
        },
        loop: 'native',
        repeat: 2,
        orchestrator: ORCHESTRATOR,
        outDir: dir,
        craftos,
      });
      const bound = numPredict ?? DEFAULT_EVAL_NUM_PREDICT;
      expect(run).toMatchObject({
        model: 'some-model:7b',
        provider,
        loop: 'native',
        interrupted: false,
        numPredict: bound,
      });
      expect(run.jobs.find((j) => j.id === 't3-ask-lamp-colour')?.skipped).toBe(
        'needs the planner-executor loop',
      );
      expect(run.results.map((r) => [r.job, r.attempt, r.pass, r.loop])).toEqual([
        ['t1-read-code', 1, true, 'native'],
        ['t1-read-code', 2, true, 'native'],
      ]);
      for (const r of run.results) expect(r.metrics.modelCalls).toBe(3);
      const requests = fake.chatRequests('some-model:7b').slice(before);
      expect(requests).toHaveLength(6);
      expect(
        requests.every((q) => q.path === (provider === 'ollama' ? '/api/chat' : '/v1/chat/completions')),
      ).toBe(true);
      // A runaway model stops at the bound instead of generating until the task's deadline.
      const sent = requests.map((q) =>
        provider === 'ollama'
          ? (q.body as { options?: { num_predict?: number } }).options?.num_predict
          : (q.body as { max_tokens?: number }).max_tokens,
      );
      expect(sent).toEqual(requests.map(() => bound));
    });
  }
});
