// A task whose model server dies in the middle of a call goes on on another server of the pool, and its step log
// shows both attempts: the request written ahead, the failed first attempt (model_failover, with the dead server and
// its error), then the answered call with the server that answered. Real engine, real sockets, two fake servers.
import { ModelPool, OllamaChatModel } from '@ccagent/models';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { createNativeToolStrategy, MODEL_FAILOVER_KIND } from '../src/index.js';
import { removeRoot, runTask } from '@ccagent/agent/testing';

const MODEL = 'qwen2.5:7b';
let fakes: FakeOllama[] = [];
let pool: ModelPool | undefined;

afterEach(async () => {
  pool?.close();
  await Promise.all(fakes.map((f) => f.close()));
  fakes = [];
});

describe('a model server dying mid-call', () => {
  it('moves the call to another server once, and the step log records both attempts (guards against a task failing, or a silent retry nobody can audit, when one GPU box dies)', async () => {
    const dying = await startFakeOllama();
    const healthy = await startFakeOllama();
    fakes.push(dying, healthy);
    dying.script(MODEL, [{ content: 'I will look at hello.lua and then', fault: { stallAfterChunks: 3 } }]);
    // Marked final: a first answer in prose with no tool called is otherwise nudged (native/record.ts).
    healthy.script(MODEL, ['FINAL: hello.lua already prints what it should; nothing to change.']);
    pool = new ModelPool({
      servers: [dying, healthy].map((f) => ({
        name: f.url,
        model: new OllamaChatModel({ host: f.url, retry: { retries: 0 } }),
      })),
      models: [MODEL],
      probeIntervalMs: 0,
      probeBackoffMs: 60_000,
    });
    const strategy = createNativeToolStrategy({ model: { model: pool, name: MODEL } });
    const running = runTask(
      strategy,
      { prompt: 'Check hello.lua.', kind: 'native' },
      {
        files: { 'hello.lua': 'print("hi")\n' },
      },
    );
    await dying.waitForRequests(1);
    await new Promise((r) => setTimeout(r, 50));
    await dying.close(); // the server dies with the reply half written
    const run = await running;
    await removeRoot(run.root);

    expect(run.task.status).toBe('completed');
    const modelSteps = run.steps.filter((s) =>
      ['model_request', MODEL_FAILOVER_KIND, 'native'].includes(s.kind),
    );
    expect(modelSteps.map((s) => s.kind)).toEqual(['model_request', MODEL_FAILOVER_KIND, 'native']);
    const [request, failed, answered] = modelSteps;
    expect(failed!.output).toMatchObject({ role: 'native', server: dying.url, attempt: 1, streamed: false });
    expect(failed!.error?.code).toBe('stream_interrupted');
    expect(failed!.startedAt).toBeGreaterThanOrEqual(request!.startedAt!);
    expect(answered!.output).toMatchObject({
      content: 'FINAL: hello.lua already prints what it should; nothing to change.',
      server: healthy.url,
      attempt: 2,
    });
    expect(answered!.error).toBeUndefined();
    expect(healthy.chatRequests()).toHaveLength(1);
    expect(pool.snapshot().servers.map((s) => s.state)).toEqual(['down', 'up']);
  });
});
