import { startFakeOllama } from '@ccagent/testkit';
import { describe, expect, it } from 'vitest';
import { loadSuite, selectJobs } from './job.js';
import { DEFAULT_EVAL_NUM_PREDICT, checkModelServer, evalConfig } from './orchestrator.js';
import { runEval } from './run-eval.js';

describe('checkModelServer', () => {
  it('passes a server that has the model (a bare name is name:latest) and names what a server lacks', async () => {
    const fake = await startFakeOllama({ installed: ['qwen2.5-coder:7b', 'tiny:latest'] });
    try {
      await expect(
        checkModelServer({ provider: 'ollama', host: fake.url, model: 'qwen2.5-coder:7b' }),
      ).resolves.toBe(undefined);
      await expect(
        checkModelServer({ provider: 'ollama', host: `${fake.url}/`, model: 'tiny' }),
      ).resolves.toBe(undefined);
      await expect(
        checkModelServer({ provider: 'ollama', host: fake.url, model: 'qwen3:8b' }),
      ).rejects.toMatchObject({
        code: 'model_unavailable',
        message: expect.stringContaining(
          'has no model "qwen3:8b" (ollama pull qwen3:8b); it has: qwen2.5-coder:7b',
        ) as string,
      });
      await expect(checkModelServer({ provider: 'openai', host: fake.url, model: 'anything' })).resolves.toBe(
        undefined,
      );
      await expect(
        checkModelServer({ provider: 'openai', host: `${fake.url}/v1/`, model: 'any' }),
      ).resolves.toBe(undefined);
      await expect(
        checkModelServer({ provider: 'openai', host: `${fake.url}/nothing`, model: 'any' }),
      ).rejects.toThrow(/does not answer \/models \(HTTP 404\)/);
    } finally {
      await fake.close();
    }
  });

  it('refuses a server that does not answer, before any computer or orchestrator starts', async () => {
    const suite = await loadSuite();
    const started = Date.now();
    await expect(
      runEval({
        suite,
        jobs: suite.jobs,
        model: { kind: 'server', provider: 'ollama', host: 'http://127.0.0.1:9', model: 'm' },
        orchestrator: { main: '/nonexistent/main.js', luaDir: '/nonexistent' },
        outDir: '/nonexistent/out',
      }),
    ).rejects.toMatchObject({
      code: 'model_unavailable',
      message: expect.stringContaining(
        'the model server at http://127.0.0.1:9 does not answer /api/tags',
      ) as string,
    });
    expect(Date.now() - started).toBeLessThan(10_000);
  });
});

describe('evalConfig', () => {
  it('makes a task kind per job and loop with the job budgets, completion and confirmation, every role on the server', async () => {
    const suite = await loadSuite();
    const jobs = selectJobs(suite, ['t4-refuse-wipe', 't4-tool-double', 't3-ask-lamp-colour']);
    const cfg = evalConfig(jobs, {
      provider: 'openai',
      host: 'http://gpu:8080',
      model: 'm',
      numCtx: 4096,
      numPredict: 1000,
      apiKeyEnv: 'KEY',
    }) as { models: Record<string, unknown>; taskKinds: Record<string, Record<string, unknown>> };
    const role = {
      name: 'm',
      provider: 'openai-compatible',
      baseUrl: 'http://gpu:8080/v1',
      apiKeyEnv: 'KEY',
      options: { numCtx: 4096, numPredict: 1000 },
    };
    expect(cfg.models).toEqual({ planner: role, executor: role, native: role });
    // Without a bound of its own the run still sends one: a runaway reply must not run to the deadline.
    const plain = evalConfig(jobs, { provider: 'ollama', host: 'h', model: 'm' }) as {
      models: Record<string, { options?: object }>;
    };
    for (const r of Object.values(plain.models))
      expect(r.options).toEqual({ numPredict: DEFAULT_EVAL_NUM_PREDICT });
    expect((cfg as { server?: object }).server).toEqual({ reconnectGraceMs: 2000, modelConcurrency: 1 });
    expect(
      (evalConfig(jobs, { provider: 'ollama', host: 'h', model: 'm' }, [], 3) as { server: object }).server,
    ).toEqual({
      reconnectGraceMs: 2000,
      modelConcurrency: 3,
    });
    expect(Object.keys(cfg.taskKinds).sort()).toEqual([
      'eval_t3_ask_lamp_colour_pe',
      'eval_t4_refuse_wipe_native',
      'eval_t4_refuse_wipe_pe',
      'eval_t4_tool_double_native',
    ]);
    expect(cfg.taskKinds.eval_t4_refuse_wipe_native).toMatchObject({
      strategy: 'native',
      budgets: { maxSteps: 8, maxToolCalls: 8, deadlineMs: 300000 },
      maxIterations: 8,
      confirm: { sandbox: '/work', commands: [] },
    });
    expect(cfg.taskKinds.eval_t3_ask_lamp_colour_pe).toMatchObject({
      strategy: 'planner_executor',
      completion: { requireSuccessfulRun: true, requireLastRunOk: true },
    });
  });
});
