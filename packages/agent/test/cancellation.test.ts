// Cancelling a task while its planner call is in flight aborts the HTTP request (the step's AbortSignal reaches the
// `ollama` client) and leaves the task cancelled, with no decision applied afterwards.
import { Engine, InMemoryTaskStore } from '@ccagent/engine';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { createPlannerExecutorStrategy } from '../src/index.js';
import { createLuaToolExecutor, startModels } from '@ccagent/agent/testing';

let models: Awaited<ReturnType<typeof startModels>>;
beforeAll(async () => {
  models = await startModels();
});
afterAll(async () => {
  await models.close();
});

it('aborts the in-flight planner call when the task is cancelled', async () => {
  models.fake.script('slow-planner', [{ content: 'RUN\nPATH: a.lua', fault: { latencyMs: 5000 } }]);
  const strategy = createPlannerExecutorStrategy({
    planner: models.role('slow-planner'),
    executor: models.role('slow-executor'),
  });
  const store = new InMemoryTaskStore();
  const executor = createLuaToolExecutor({ root: '/nonexistent-ccagent-root' });
  const engine = new Engine({ store, strategies: { code: strategy }, executor, tickIntervalMs: 0 });
  await engine.start();
  try {
    const task = await engine.createTask({
      kind: 'code',
      prompt: 'Say hi.',
      allowedCommands: ['run_program'],
    });
    const started = Date.now();
    while (models.fake.chatRequests('slow-planner').length === 0) {
      if (Date.now() - started > 5000) throw new Error('the planner was never called');
      await new Promise((r) => setTimeout(r, 10));
    }
    await engine.cancelTask(task.id, 'user changed their mind');
    const index = models.fake.requests.indexOf(models.fake.chatRequests('slow-planner')[0]!);
    expect(await models.fake.waitForOutcome(index, 2000)).toBe('client_closed');
    expect(Date.now() - started).toBeLessThan(4000);
    const after = await engine.getTask(task.id);
    expect(after?.status).toBe('cancelled');
    expect(after?.counters.steps).toBe(0);
  } finally {
    await engine.stop();
  }
});
