import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { normalizeModelName, sameModel } from './model-names.js';
import { OllamaChatModel } from './ollama-chat-model.js';

let fake: FakeOllama;

beforeEach(async () => {
  fake = await startFakeOllama({
    version: '0.12.6',
    installed: ['qwen2.5:latest', 'llama3.2:3b', 'hf.co/org/tiny:Q4_K_M'],
  });
});

afterEach(async () => {
  await fake.close();
});

describe('normalizeModelName', () => {
  it('treats a missing tag as :latest and ignores case and the default registry (guards against a present model reported missing)', () => {
    expect(normalizeModelName('qwen2.5')).toBe('qwen2.5:latest');
    expect(normalizeModelName('Qwen2.5:Latest')).toBe('qwen2.5:latest');
    expect(normalizeModelName('registry.ollama.ai/library/qwen2.5')).toBe('qwen2.5:latest');
    expect(normalizeModelName('library/qwen2.5:7b')).toBe('qwen2.5:7b');
    expect(normalizeModelName('hf.co/org/tiny')).toBe('hf.co/org/tiny:latest');
    expect(normalizeModelName('localhost:5000/m')).toBe('localhost:5000/m:latest');
    expect(sameModel('qwen2.5', 'qwen2.5:latest')).toBe(true);
    expect(sameModel('qwen2.5:7b', 'qwen2.5:latest')).toBe(false);
  });
});

describe('OllamaChatModel.checkModels', () => {
  it('splits requested names into present and missing via /api/tags and reports /api/version (guards against a silent missing model at startup)', async () => {
    const model = new OllamaChatModel({ host: fake.url });
    const result = await model.checkModels([
      'qwen2.5',
      'llama3.2:3b',
      'llama3.2',
      'hf.co/org/tiny:Q4_K_M',
      'nope:1b',
    ]);
    expect(result).toEqual({
      ok: true,
      value: {
        provider: 'ollama',
        host: fake.url,
        version: '0.12.6',
        present: ['qwen2.5', 'llama3.2:3b', 'hf.co/org/tiny:Q4_K_M'],
        missing: ['llama3.2', 'nope:1b'],
        available: expect.arrayContaining([
          'qwen2.5:latest',
          'llama3.2:3b',
          'hf.co/org/tiny:q4_k_m',
        ]) as string[],
      },
    });
    expect(fake.requests.map((r) => `${r.method} ${r.path}`).sort()).toEqual([
      'GET /api/tags',
      'GET /api/version',
    ]);
  });

  it('returns { ok: false } with a "connection" error when Ollama is down, without throwing (guards against /health crashing)', async () => {
    const closed = await startFakeOllama();
    const url = closed.url;
    await closed.close();
    const model = new OllamaChatModel({ host: url, retry: { retries: 1, minDelayMs: 1 } });
    const result = await model.checkModels(['qwen2.5']);
    expect(result.ok).toBe(false);
    if (!result.ok) {
      expect(result.error.code).toBe('connection');
      expect(result.error.attempts).toBe(2);
    }
  });

  it('honours its own timeout (guards against a health check that hangs on a stuck server)', async () => {
    fake.setFault({ latencyMs: 10_000 }, { paths: ['/api/tags'] });
    const model = new OllamaChatModel({ host: fake.url });
    const result = await model.checkModels(['qwen2.5'], { timeoutMs: 100 });
    expect(result.ok).toBe(false);
    if (!result.ok) expect(result.error.code).toBe('timeout');
  });

  it('still reports the models when /api/version fails, leaving version out (guards against an old server failing the whole check)', async () => {
    fake.setFault({ status: 404, message: 'not here' }, { paths: ['/api/version'] });
    const model = new OllamaChatModel({ host: fake.url });
    const result = await model.checkModels(['qwen2.5']);
    expect(result).toMatchObject({ ok: true, value: { present: ['qwen2.5'], missing: [] } });
    expect(result.ok && result.value.version).toBe(undefined);
  });

  it('retries a 5xx from /api/tags (guards against one hiccup marking every model missing)', async () => {
    fake.setFault({ status: 500 }, { paths: ['/api/tags'], times: 1 });
    const model = new OllamaChatModel({ host: fake.url, retry: { retries: 2, minDelayMs: 1 } });
    const result = await model.checkModels(['llama3.2:3b']);
    expect(result).toMatchObject({ ok: true, value: { present: ['llama3.2:3b'] } });
    expect(fake.requests.filter((r) => r.path === '/api/tags')).toHaveLength(2);
  });
});
