import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import type { ChatRequest, ChatResponse, ModelFailover } from './chat-model.js';
import { isModelError } from './model-error.js';
import { ModelPool, type ModelPoolOptions } from './model-pool.js';
import { OllamaChatModel } from './ollama-chat-model.js';
import { OpenAICompatibleChatModel } from './openai-compatible-chat-model.js';

// The pool's contract over real sockets: every server is a testkit fake Ollama (its own port, its own prompt cache),
// reached through the real adapters without retries of their own, so what moves a call is the pool.

const MODEL = 'qwen2.5:7b';
let fakes: FakeOllama[] = [];
let pools: ModelPool[] = [];

afterEach(async () => {
  for (const p of pools) p.close();
  await Promise.all(fakes.map((f) => f.close()));
  fakes = [];
  pools = [];
});

async function startFakes(n: number, latencyMs = 0): Promise<FakeOllama[]> {
  const made = await Promise.all(Array.from({ length: n }, () => startFakeOllama()));
  for (const f of made) {
    f.script(MODEL, () => ({ content: 'ok', fault: { latencyMs } }), { repeat: true });
  }
  fakes.push(...made);
  return made;
}

function poolOver(
  servers: FakeOllama[],
  options: Partial<ModelPoolOptions> = {},
  concurrency = 1,
): ModelPool {
  const pool = new ModelPool({
    servers: servers.map((f) => ({
      name: f.url,
      model: new OllamaChatModel({ host: f.url, retry: { retries: 0 } }),
      concurrency,
    })),
    models: [MODEL],
    probeIntervalMs: 0,
    ...options,
  });
  pools.push(pool);
  return pool;
}

const ask = (key: string | undefined, text = 'hello', extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: MODEL,
  messages: [{ role: 'user', content: text }],
  ...(key !== undefined ? { affinityKey: key } : {}),
  ...extra,
});

describe('ModelPool — cache affinity and placement', () => {
  it("keeps a task's calls on the server that served its first call (guards against a warm prompt cache thrown away on every call)", async () => {
    const [a, b] = await startFakes(2);
    const pool = poolOver([a!, b!]);
    // Two tasks start together: least-loaded placement gives them different servers.
    const first = await Promise.all([pool.chat(ask('t1', 'one')), pool.chat(ask('t2', 'two'))]);
    expect(new Set(first.map((r) => r.server)).size).toBe(2);
    const home = { t1: first[0]!.server, t2: first[1]!.server };
    for (let i = 0; i < 4; i += 1) {
      const [r1, r2] = await Promise.all([
        pool.chat(ask('t1', `one ${i}`)),
        pool.chat(ask('t2', `two ${i}`)),
      ]);
      expect(r1.server).toBe(home.t1);
      expect(r2.server).toBe(home.t2);
    }
    // Each fake saw exactly one task's five calls.
    expect(a!.chatRequests().length).toBe(5);
    expect(b!.chatRequests().length).toBe(5);
    const snap = pool.snapshot();
    expect(snap.servers.map((s) => s.affinityHits)).toEqual([4, 4]);
    expect(snap.servers.map((s) => s.affinityHitRate)).toEqual([1, 1]);
  });

  it('sends each new task to the least-loaded server (guards against piling new tasks onto one GPU)', async () => {
    const [a, b] = await startFakes(2, 200);
    const pool = poolOver([a!, b!], {}, 2);
    // a: 0/2, b: 0/2 → a; a: 1/2, b: 0/2 → b; 1/2 each → a; a: 2/2, b: 1/2 → b.
    const rs = await Promise.all(['w', 'x', 'y', 'z'].map((k) => pool.chat(ask(k))));
    expect(rs.map((r) => r.server)).toEqual([a!.url, b!.url, a!.url, b!.url]);
    // With a busy with two calls and b with one, a fifth new task goes to b at once.
    const busy = [pool.chat(ask('w', 'again')), pool.chat(ask('y', 'again')), pool.chat(ask('x', 'again'))];
    await a!.waitForRequests(4);
    const fresh = await pool.chat(ask('v'));
    expect(fresh.server).toBe(b!.url);
    await Promise.all(busy);
  });

  it('moves a call off its warm server when that server stays saturated past affinityWaitMs (guards against a task stuck behind a long call while a GPU idles)', async () => {
    const [a, b] = await startFakes(2);
    const slowOnA = (req: {
      body: Record<string, unknown>;
    }): { content: string; fault: { latencyMs: number } } => ({
      content: 'ok',
      fault: { latencyMs: JSON.stringify(req.body).includes('slow') ? 1500 : 0 },
    });
    a!.script(MODEL, slowOnA, { repeat: true });
    const pool = poolOver([a!, b!], { affinityWaitMs: 100 });
    expect((await pool.chat(ask('t', 'first'))).server).toBe(a!.url); // both idle: the first server
    const slow = pool.chat(ask('other', 'slow')); // both idle again: a
    await a!.waitForRequests(2);
    const started = Date.now();
    const r2 = await pool.chat(ask('t', 'second'));
    const waited = Date.now() - started;
    // t's warm server a is busy for 1.5 s: t waits about affinityWaitMs, then goes to the idle b.
    expect(r2.server).toBe(b!.url);
    expect(waited).toBeGreaterThanOrEqual(90);
    expect(waited).toBeLessThan(1000);
    expect(pool.snapshot().servers[0]!.affinityMisses).toBe(1);
    expect((await slow).server).toBe(a!.url);
  });
});

describe('ModelPool — fair queueing', () => {
  it('serves quiet tasks between the calls of a noisy one (guards against a chatty task starving every other task)', async () => {
    const [a] = await startFakes(1, 40);
    const pool = poolOver([a!]);
    const done: string[] = [];
    const track = (label: string, p: Promise<ChatResponse>): Promise<void> =>
      p.then(() => {
        done.push(label);
      });
    const all: Promise<void>[] = [];
    for (let i = 0; i < 10; i += 1) all.push(track(`noisy${i}`, pool.chat(ask('noisy', `n${i}`))));
    await a!.waitForRequests(1);
    for (const q of ['q1', 'q2', 'q3']) all.push(track(q, pool.chat(ask(q, q))));
    await Promise.all(all);
    // A FIFO queue would finish the quiet calls 11th–13th. Round-robin across tasks serves each quiet task within one
    // round of the noisy task: by the 5th completion (noisy0 running, noisy1, then q1 q2 q3).
    const quietPositions = ['q1', 'q2', 'q3'].map((q) => done.indexOf(q));
    expect(Math.max(...quietPositions)).toBeLessThan(5);
    expect(done.filter((d) => d.startsWith('noisy'))).toEqual(
      Array.from({ length: 10 }, (_, i) => `noisy${i}`),
    );
    expect(pool.snapshot().servers[0]!.waitMsMax).toBeGreaterThan(0);
  });

  it('drops a queued call whose caller aborts, without sending it (guards against cancelled tasks still using the GPU)', async () => {
    const [a] = await startFakes(1, 150);
    const pool = poolOver([a!]);
    const running = pool.chat(ask('a'));
    const controller = new AbortController();
    const queued = pool.chat(ask('b', 'never sent', { signal: controller.signal }));
    controller.abort();
    const err: unknown = await queued.catch((e: unknown) => e);
    expect(isModelError(err) && err.code).toBe('aborted');
    await running;
    expect(a!.chatRequests().map((r) => JSON.stringify(r.body))).not.toContain('never sent');
    expect(a!.chatRequests().length).toBe(1);
    expect(pool.snapshot().queued).toBe(0);
  });
});

describe('ModelPool — health and failover', () => {
  it('retries a call cut by a dying server once on another and reports the first attempt (guards against a task failing because one GPU box died)', async () => {
    const [a, b] = await startFakes(2);
    // a stops in the middle of its reply, then dies; b answers.
    a!.script(MODEL, [{ content: 'half of a reply that never ends', fault: { stallAfterChunks: 2 } }]);
    const pool = poolOver([a!, b!], { probeBackoffMs: 60_000 });
    const failovers: ModelFailover[] = [];
    const deltas: string[] = [];
    const call = pool.chat(
      ask('t', 'hello', {
        onFailover: (e) => {
          failovers.push(e);
        },
        onDelta: (d) => deltas.push(d.content ?? ''),
      }),
    );
    await a!.waitForRequests(1);
    await new Promise((r) => setTimeout(r, 50));
    await a!.close(); // the server dies mid-reply
    const reply = await call;
    expect(reply.server).toBe(b!.url);
    expect(reply.attempt).toBe(2);
    expect(reply.message.content).toBe('ok');
    expect(failovers).toHaveLength(1);
    expect(failovers[0]!.server).toBe(a!.url);
    expect(failovers[0]!.error.code).toBe('stream_interrupted');
    expect(failovers[0]!.emitted).toBe(true);
    const snap = pool.snapshot();
    expect(snap.servers[0]).toMatchObject({ state: 'down', failures: 1, failovers: 1 });
    expect(snap.servers[0]!.nextProbeAt).toBeGreaterThan(Date.now());
    // The task's next call goes straight to b: a is out.
    expect((await pool.chat(ask('t', 'again'))).server).toBe(b!.url);
    expect((await pool.chat(ask('new', 'x'))).server).toBe(b!.url);
  });

  it("fails the call after one failover when the second server fails too, with that server's error (guards against endless ping-pong)", async () => {
    const [a, b] = await startFakes(2);
    a!.setFault({ status: 500 });
    b!.setFault({ status: 503 });
    const pool = poolOver([a!, b!], { probeBackoffMs: 60_000 });
    let failovers = 0;
    const err: unknown = await pool
      .chat(ask('t', 'x', { onFailover: () => void (failovers += 1) }))
      .catch((e: unknown) => e);
    expect(isModelError(err) && err.code).toBe('server');
    expect(failovers).toBe(1);
    expect(a!.chatRequests().length + b!.chatRequests().length).toBe(2);
  });

  it('does not fail over a request the server refused as bad (guards against sending a broken request to every GPU)', async () => {
    const [a, b] = await startFakes(2);
    a!.setFault({ status: 400, message: 'bad tools' });
    b!.setFault({ status: 400, message: 'bad tools' });
    const pool = poolOver([a!, b!]);
    const err: unknown = await pool.chat(ask('t')).catch((e: unknown) => e);
    expect(isModelError(err) && err.code).toBe('bad_request');
    expect(a!.chatRequests().length + b!.chatRequests().length).toBe(1);
    expect(pool.snapshot().servers.every((s) => s.state === 'up')).toBe(true);
  });

  it('puts a failed server back once it answers its probe again, with growing backoff meanwhile (guards against a recovered GPU left idle)', async () => {
    const [a, b] = await startFakes(2);
    const port = a!.port;
    const pool = poolOver([a!, b!], { probeBackoffMs: 40, maxProbeBackoffMs: 80 });
    await a!.close();
    fakes = fakes.filter((f) => f !== a);
    // A new task lands on a (least loaded, first), fails with a refused connection and moves to b.
    const r = await pool.chat(ask('t'));
    expect(r.server).toBe(b!.url);
    expect(pool.snapshot().servers[0]!.state).toBe('down');
    // Probes keep failing while a is away: the backoff grows up to its bound.
    await new Promise((res) => setTimeout(res, 200));
    expect(pool.snapshot().servers[0]!.state).toBe('down');
    expect(pool.snapshot().servers[0]!.lastError?.code).toBe('connection');
    // a comes back on the same port: the next probe re-admits it.
    const again = await startFakeOllama({ port });
    again.script(MODEL, ['back'], { repeat: true });
    fakes.push(again);
    const deadline = Date.now() + 3000;
    while (pool.snapshot().servers[0]!.state !== 'up' && Date.now() < deadline) {
      await new Promise((res) => setTimeout(res, 10));
    }
    expect(pool.snapshot().servers[0]!.state).toBe('up');
    expect(pool.snapshot().servers[0]!.nextProbeAt).toBeUndefined();
    // Re-admitted servers take work: a new task (b has t's warm conversation, a has none) lands on a.
    const busy = pool.chat(ask('t', 'keeps b busy'));
    const fresh = await pool.chat(ask('fresh'));
    await busy;
    expect(fresh.server).toBe(a!.url);
    expect(fresh.message.content).toBe('back');
  });

  it('takes out a server whose probe says the model is missing (guards against routing calls to a box without the model)', async () => {
    const [a, b] = await startFakes(2);
    const empty = await startFakeOllama();
    fakes.push(empty);
    const pool = poolOver([empty, a!, b!], { probeBackoffMs: 60_000 });
    await pool.probe();
    const snap = pool.snapshot();
    expect(snap.servers.map((s) => s.state)).toEqual(['down', 'up', 'up']);
    expect(snap.servers[0]!.lastError?.code).toBe('model_not_found');
    const rs = await Promise.all([pool.chat(ask('1')), pool.chat(ask('2')), pool.chat(ask('3'))]);
    expect(rs.every((r) => r.server !== empty.url)).toBe(true);
    expect(empty.chatRequests()).toHaveLength(0);
  });

  it('mixes Ollama and OpenAI-compatible servers of the same model (guards against a pool tied to one wire dialect)', async () => {
    const [a, b] = await startFakes(2);
    const pool = new ModelPool({
      servers: [
        { name: a!.url, model: new OllamaChatModel({ host: a!.url, retry: { retries: 0 } }) },
        {
          name: `${b!.url}/v1`,
          model: new OpenAICompatibleChatModel({ baseUrl: `${b!.url}/v1`, retry: { retries: 0 } }),
        },
      ],
      models: [MODEL],
      probeIntervalMs: 0,
    });
    pools.push(pool);
    await pool.probe();
    expect(pool.snapshot().servers.map((s) => [s.provider, s.state])).toEqual([
      ['ollama', 'up'],
      ['openai-compatible', 'up'],
    ]);
    const rs = await Promise.all([pool.chat(ask('1')), pool.chat(ask('2'))]);
    expect(rs.map((r) => r.server).sort()).toEqual([a!.url, `${b!.url}/v1`].sort());
    expect(b!.chatRequests()[0]!.path).toBe('/v1/chat/completions');
    const check = await pool.checkModels([MODEL, 'missing:1b']);
    expect(check.ok && check.value).toMatchObject({ present: [MODEL], missing: ['missing:1b'] });
  });

  it('refuses a pool without servers, with a repeated server or a bad concurrency', () => {
    const model = new OllamaChatModel({ host: 'http://127.0.0.1:1' });
    expect(() => new ModelPool({ servers: [] })).toThrow(/at least one server/);
    expect(
      () =>
        new ModelPool({
          servers: [
            { name: 'a', model },
            { name: 'a', model },
          ],
        }),
    ).toThrow(/listed twice/);
    expect(() => new ModelPool({ servers: [{ name: 'a', model, concurrency: 0 }] })).toThrow(
      /positive integer/,
    );
  });
});
