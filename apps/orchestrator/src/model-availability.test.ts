import { ManualClock, type Decision, type StepContext, type Task, type TaskStrategy } from '@ccagent/engine';
import { OllamaChatModel } from '@ccagent/models';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { gateOnModels, ModelAvailability } from './model-availability.js';

let fake: FakeOllama | undefined;
afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

async function setup(installed: string[]) {
  fake = await startFakeOllama({ installed });
  const clock = new ManualClock(1_000);
  const availability = new ModelAvailability(
    [
      {
        provider: 'ollama',
        url: fake.url,
        inventory: new OllamaChatModel({ host: fake.url }),
        names: ['a', 'b'],
      },
    ],
    clock,
    10_000,
  );
  const decided: Array<Promise<Decision>> = [];
  const inner: TaskStrategy = {
    decide: () => {
      const p = Promise.resolve<Decision>({ type: 'complete', result: 'ok' });
      decided.push(p);
      return p;
    },
  };
  const tagRequests = () => fake?.requests.filter((r) => r.path === '/api/tags').length ?? 0;
  return { clock, availability, inner, decided, tagRequests };
}

const task = { id: 't' } as Task;
const ctx = {} as StepContext;

describe('gateOnModels', () => {
  it('fails a step with model_missing when a needed model is not installed, and lets a step through when its models are (guards against the fast path skipping the check)', async () => {
    const s = await setup(['a']);
    const missing = await gateOnModels(s.inner, ['b'], s.availability).decide(task, [], ctx);
    expect(missing).toMatchObject({
      type: 'fail',
      error: { code: 'model_missing', details: { missing: ['b'] } },
    });
    expect(s.decided).toHaveLength(0);
    // Cached now: the same answer without a new request.
    const again = await gateOnModels(s.inner, ['b'], s.availability).decide(task, [], ctx);
    expect(again).toMatchObject({ type: 'fail', error: { code: 'model_missing' } });
    expect(await gateOnModels(s.inner, ['a'], s.availability).decide(task, [], ctx)).toEqual({
      type: 'complete',
      result: 'ok',
    });
    expect(s.tagRequests()).toBe(1);
  });

  it('a need naming its server is missing only there: a model of that name missing on another server does not fail the task (guards against a kind on one server failing for another server’s inventory)', async () => {
    const s = await setup(['a']);
    const other = await startFakeOllama({ installed: ['b'] });
    try {
      const availability = new ModelAvailability(
        [
          {
            provider: 'ollama',
            url: 'one',
            inventory: new OllamaChatModel({ host: fake?.url ?? '' }),
            names: ['b'],
          },
          {
            provider: 'ollama',
            url: 'two',
            inventory: new OllamaChatModel({ host: other.url }),
            names: ['b'],
          },
        ],
        s.clock,
        10_000,
      );
      expect(
        await gateOnModels(s.inner, [{ name: 'b', url: 'two' }], availability).decide(task, [], ctx),
      ).toEqual({
        type: 'complete',
        result: 'ok',
      });
      expect(
        await gateOnModels(s.inner, [{ name: 'b', url: 'one' }], availability).decide(task, [], ctx),
      ).toMatchObject({
        type: 'fail',
        error: { code: 'model_missing', details: { missing: ['b'] } },
      });
      // by name only: missing anywhere counts
      expect(await gateOnModels(s.inner, ['b'], availability).decide(task, [], ctx)).toMatchObject({
        type: 'fail',
      });
    } finally {
      await other.close();
    }
  });

  it('with a fresh cached report, hands back the strategy’s own promise (guards against an await and extra promise hops on every step)', async () => {
    const s = await setup(['a', 'b']);
    const gated = gateOnModels(s.inner, ['a'], s.availability);
    await gated.decide(task, [], ctx); // first step: checks the server
    const p = gated.decide(task, [], ctx);
    expect(p).toBe(s.decided[1]);
    expect(s.tagRequests()).toBe(1);
  });

  it('checks again once the cached report is older than the cache period (guards against a pulled or removed model never being noticed)', async () => {
    const s = await setup(['a', 'b']);
    const gated = gateOnModels(s.inner, ['b'], s.availability);
    await gated.decide(task, [], ctx);
    await s.clock.advance(10_001);
    expect(s.availability.cached()).toBeUndefined();
    expect(await gated.decide(task, [], ctx)).toMatchObject({ type: 'complete' });
    expect(s.tagRequests()).toBe(2);
  });
});
