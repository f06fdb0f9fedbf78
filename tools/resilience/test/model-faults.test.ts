/**
 * The model server misbehaves under a running orchestrator: it stalls mid-stream, drops streams, answers 500, sends
 * garbage lines, is down when the server starts and comes back, or stays down. Guards against: a task hanging
 * forever on a dead model call; a task failing without saying why; the orchestrator crashing or stopping to serve
 * other requests. Model calls are bounded by a short `timeoutMs` so every case ends in seconds.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeFault, type FakeOllama } from '@ccagent/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import { jobPrompt, jobScript, MODEL } from './support/model.js';
import { eventually, faultConfig, startServer, type Server } from './support/server.js';
import { SimClient } from './support/sim-client.js';

const MODEL_TIMEOUT_MS = 1500;

interface Detail {
  task: { status: string; result?: { message?: string }; error?: { code: string; message: string } };
  steps: Array<{ kind: string; error?: { code: string; message: string } }>;
}

const dirs: string[] = [];
function tempDb(): string {
  const dir = mkdtempSync(path.join(tmpdir(), 'resilience-model-'));
  dirs.push(dir);
  return path.join(dir, 'ccagent.db');
}

function config(modelTimeoutMs: number) {
  const c = faultConfig();
  c.models.native.timeoutMs = modelTimeoutMs;
  return c;
}

async function runJob(
  s: Server,
  c: SimClient,
  tag: string,
  steps: number,
  boundMs: number,
): Promise<{ detail: Detail; ms: number }> {
  const t0 = Date.now();
  c.createTask(`req-${tag}`, jobPrompt(tag, steps));
  const created = await c.waitFor('task_created', { request_id: `req-${tag}` });
  const taskId = String(created.task_id);
  // Bounded: a task that neither continues nor fails within the bound is the bug this suite looks for.
  await c.next(
    (m) => (m.type === 'task_completed' || m.type === 'task_failed') && m.task_id === taskId,
    boundMs,
  );
  const detail = (await (await s.http(`/api/tasks/${taskId}`)).json()) as Detail;
  return { detail, ms: Date.now() - t0 };
}

async function healthy(s: Server): Promise<void> {
  expect(s.alive()).toBe(true);
  const res = await s.http('/health');
  expect(res.status).toBe(200);
}

afterAll(() => {
  for (const d of dirs) rmSync(d, { recursive: true, force: true });
});

describe('model server faults under a running orchestrator', () => {
  let fake: FakeOllama;
  let s: Server;
  let c: SimClient;
  beforeAll(async () => {
    fake = await startFakeOllama({ installed: [MODEL] });
    fake.script(MODEL, jobScript());
    s = await startServer({ db: tempDb(), config: config(MODEL_TIMEOUT_MS), ollamaUrl: fake.url });
    c = new SimClient('turtle-1');
    await c.connect(s.url);
  });
  afterEach(() => fake.setFault(null));
  afterAll(async () => {
    c.close();
    await s.kill9();
    await fake.close();
  });

  it('a stream that stalls mid-reply times out; the step is logged with the reason and the task continues', async () => {
    fake.setFault({ stallAfterChunks: 1 }, { times: 1 });
    const { detail, ms } = await runJob(s, c, 'stall', 2, 15_000);
    expect(detail.task).toMatchObject({ status: 'completed', result: { message: 'finished stall' } });
    const failed = detail.steps.filter((x) => x.kind === 'native' && x.error);
    expect(failed).toHaveLength(1);
    expect(failed[0]?.error?.code).toBe('timeout');
    expect(ms).toBeLessThan(MODEL_TIMEOUT_MS + 8000);
    await healthy(s);
  });

  it('dropped streams and connection resets are retried and the task completes', async () => {
    fake.setFault({ dropAfterChunks: 0 }, { times: 1 });
    const before = fake.chatRequests().length;
    const { detail } = await runJob(s, c, 'drop', 2, 15_000);
    expect(detail.task.status).toBe('completed');
    const outcomes = fake
      .chatRequests()
      .slice(before)
      .map((r) => r.outcome);
    expect(outcomes).toContain('dropped');
    fake.setFault({ resetBeforeResponse: true }, { times: 1 });
    const again = await runJob(s, c, 'reset', 1, 15_000);
    expect(again.detail.task.status).toBe('completed');
    await healthy(s);
  });

  it('a few HTTP 500s are retried; the task completes', async () => {
    fake.setFault({ status: 500, message: 'CUDA out of memory' }, { times: 2 });
    const { detail } = await runJob(s, c, 'flaky500', 2, 20_000);
    expect(detail.task).toMatchObject({ status: 'completed', result: { message: 'finished flaky500' } });
    await healthy(s);
  });

  it('HTTP 500 on every call fails the task with model_failed and the server message, in bounded time', async () => {
    fake.setFault({ status: 500, message: 'CUDA out of memory' });
    const { detail, ms } = await runJob(s, c, 'dead500', 2, 30_000);
    expect(detail.task.status).toBe('failed');
    expect(detail.task.error?.code).toBe('model_failed');
    expect(detail.task.error?.message).toMatch(/model failed 3 times/);
    expect(ms).toBeLessThan(3 * MODEL_TIMEOUT_MS + 10_000);
    await healthy(s);
  });

  // @ccagent/models used to say only "did not complete within N ms (after k attempts)" when the call deadline ended
  // the retries, losing the server's own error (here HTTP 500 "CUDA out of memory"); it now keeps the last one.
  it('when the deadline cuts the retries, the failure still names the last server error', async () => {
    fake.setFault({ status: 500, message: 'CUDA out of memory' });
    const { detail } = await runJob(s, c, 'dead500msg', 1, 30_000);
    expect(detail.task.status).toBe('failed');
    expect(detail.task.error?.message).toContain('CUDA out of memory');
  });

  it.each<[string, FakeFault]>([
    ['a garbage line mid-stream', { malformedAfterChunks: 0 }],
    ['a mid-stream error object', { errorAfterChunks: 0, message: 'model crashed' }],
    ['a stream cut without its final chunk', { truncateAfterChunks: 1 }],
    ['slow tokens and latency', { latencyMs: 200, tokenDelayMs: 50 }],
  ])('%s: the task continues or fails with a reason, never hangs', async (name, fault) => {
    fake.setFault(fault, { times: 2 });
    const tag = name.replace(/\W+/g, '_');
    const { detail } = await runJob(s, c, tag, 2, 20_000);
    if (detail.task.status === 'failed') {
      expect(detail.task.error?.code).toBeTruthy();
      expect(detail.task.error?.message.length).toBeGreaterThan(10);
    } else {
      expect(detail.task).toMatchObject({ status: 'completed', result: { message: `finished ${tag}` } });
    }
    await healthy(s);
  });
});

// With models.<role>.stallTimeoutMs configured, a silent stream is cut and retried inside the same step instead of
// holding it until the call deadline and failing it (the case above, with the 60 s default stall bound).
describe('stall detection configured on the running orchestrator', () => {
  it('a stream that stalls mid-reply is cut after stallTimeoutMs and retried; no step fails', async () => {
    const fake = await startFakeOllama({ installed: [MODEL] });
    fake.script(MODEL, jobScript());
    const cfg = config(10_000);
    Object.assign(cfg.models.native, { stallTimeoutMs: 300 });
    const s = await startServer({ db: tempDb(), config: cfg, ollamaUrl: fake.url });
    const c = new SimClient('turtle-stall');
    try {
      await c.connect(s.url);
      fake.setFault({ stallAfterChunks: 1 }, { times: 1 });
      const { detail, ms } = await runJob(s, c, 'stallcut', 2, 15_000);
      expect(detail.task).toMatchObject({ status: 'completed', result: { message: 'finished stallcut' } });
      expect(detail.steps.filter((x) => x.kind === 'native' && x.error)).toHaveLength(0);
      const outcomes = fake.chatRequests().map((r) => r.outcome);
      // The stalled attempt was closed by the orchestrator, then the retry finished.
      expect(outcomes[0]).toBe('client_closed');
      expect(outcomes.slice(1)).toContain('finished');
      // Well under the 10 s call deadline the stall would otherwise have consumed.
      expect(ms).toBeLessThan(8000);
      await healthy(s);
    } finally {
      c.close();
      await s.kill9();
      await fake.close();
    }
  });
});

describe('model server down', () => {
  it('down at start: /health says so; a task waits for it and continues when it comes back', async () => {
    const probe = await startFakeOllama({ installed: [MODEL] });
    const port = probe.port;
    await probe.close(); // nothing listens on that port now
    const s = await startServer({
      db: tempDb(),
      config: config(15_000),
      ollamaUrl: `http://127.0.0.1:${port}`,
    });
    let fake: FakeOllama | undefined;
    try {
      const health = (await (await s.http('/health')).json()) as {
        ok: boolean;
        degraded: boolean;
        model_servers: Array<{ reachable: boolean; error?: string }>;
      };
      expect(health).toMatchObject({ ok: true, degraded: true });
      expect(health.model_servers[0]?.reachable).toBe(false);
      expect(health.model_servers[0]?.error).toBeTruthy();
      const c = new SimClient('turtle-2');
      await c.connect(s.url);
      const job = runJob(s, c, 'comeback', 2, 30_000);
      await new Promise((r) => setTimeout(r, 700));
      fake = await startFakeOllama({ port, installed: [MODEL] });
      fake.script(MODEL, jobScript());
      const { detail } = await job;
      expect(detail.task).toMatchObject({ status: 'completed', result: { message: 'finished comeback' } });
      c.close();
      await healthy(s);
    } finally {
      await s.kill9();
      await fake?.close();
    }
  });

  it('staying down: the task fails with model_failed naming the connection problem, in bounded time', async () => {
    const probe = await startFakeOllama();
    const port = probe.port;
    await probe.close();
    const s = await startServer({
      db: tempDb(),
      config: config(MODEL_TIMEOUT_MS),
      ollamaUrl: `http://127.0.0.1:${port}`,
    });
    try {
      const c = new SimClient('turtle-3');
      await c.connect(s.url);
      const { detail, ms } = await runJob(s, c, 'neverback', 2, 30_000);
      expect(detail.task.status).toBe('failed');
      expect(detail.task.error?.code).toBe('model_failed');
      expect(detail.task.error?.message).toMatch(
        /connect|ECONNREFUSED|not reachable|timed out|did not complete/i,
      );
      expect(ms).toBeLessThan(3 * MODEL_TIMEOUT_MS + 10_000);
      // Other requests were served all along.
      await eventually(async () => (await s.http('/api/tasks')).status === 200, 2000);
      c.close();
      await healthy(s);
    } finally {
      await s.kill9();
    }
  });
});
