import { afterEach, describe, expect, it } from 'vitest';
import { startFakeOllama, type FakeOllama } from './fake-ollama.js';

// `timeScale`: a reply is held for its modelled GPU seconds × the factor, its slot busy meanwhile, so a bench sees
// queueing and cache reuse in wall time.

let fake: FakeOllama | undefined;
afterEach(async () => {
  await fake?.close();
});

async function chat(url: string, content: string): Promise<number> {
  const started = performance.now();
  const res = await fetch(`${url}/api/chat`, {
    method: 'POST',
    body: JSON.stringify({
      model: 'm',
      stream: false,
      options: { num_ctx: 16384 },
      messages: [{ role: 'user', content }],
    }),
  });
  await res.json();
  return performance.now() - started;
}

describe('fake server timeScale', () => {
  it('holds a reply for its modelled seconds × timeScale, less when the prompt is cached (guards against a bench whose servers answer at once)', async () => {
    fake = await startFakeOllama({ timeScale: 0.2 });
    fake.script('m', ['ok'], { repeat: true });
    const prompt = 'x'.repeat(12_000); // 3,000 tokens to evaluate cold, after loading the model: about 7.7 s
    const cold = await chat(fake.url, prompt);
    const coldModelled = fake.requests[0]?.modelCall?.seconds.total ?? 0;
    expect(coldModelled).toBeGreaterThan(7);
    expect(cold).toBeGreaterThanOrEqual(coldModelled * 200 - 5);
    const warm = await chat(fake.url, prompt); // the same prompt again: served from the slot's cache
    const warmModelled = fake.requests[1]?.modelCall?.seconds.total ?? 0;
    expect(warmModelled).toBeLessThan(0.2);
    expect(warm).toBeLessThan(cold / 5);
  });

  it('keeps the slot busy while it holds, so a second call on a one-slot server waits (guards against unlimited parallelism)', async () => {
    fake = await startFakeOllama({ timeScale: 0.1, server: { numParallel: 1 } });
    fake.script('m', ['ok'], { repeat: true });
    const one = 'a'.repeat(1_600); // the first loads the model (6.6 s), then ~0.2 s each
    const two = 'b'.repeat(1_600);
    const [t1, t2] = await Promise.all([chat(fake.url, one), chat(fake.url, two)]);
    const s1 = fake.requests[0]?.modelCall?.seconds.total ?? 0;
    const s2 = fake.requests[1]?.modelCall?.seconds.total ?? 0;
    expect(Math.max(t1, t2)).toBeGreaterThanOrEqual((s1 + s2) * 100 - 10);
  });

  it('holds nothing by default', async () => {
    fake = await startFakeOllama();
    fake.script('m', ['ok'], { repeat: true });
    expect(await chat(fake.url, 'x'.repeat(40_000))).toBeLessThan(2_000);
  });
});
