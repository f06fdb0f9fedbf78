import { startFakeOllama } from '@ccagent/testkit';
import { describe, expect, it } from 'vitest';
import { parseOllamaHost, resolveOllamaHost } from './ollama-host.js';
import { OllamaChatModel } from './ollama-chat-model.js';

describe('OLLAMA_HOST parsing', () => {
  it.each([
    [undefined, 'http://127.0.0.1:11434'],
    ['', 'http://127.0.0.1:11434'],
    ['gpu-box', 'http://gpu-box:11434'],
    ['gpu-box:8080', 'http://gpu-box:8080'],
    [':9999', 'http://127.0.0.1:9999'],
    ['0.0.0.0', 'http://127.0.0.1:11434'],
    ['0.0.0.0:11434', 'http://127.0.0.1:11434'],
    ['http://gpu-box', 'http://gpu-box:80'],
    ['https://ollama.example.org', 'https://ollama.example.org:443'],
    ['http://10.0.0.5:11434/', 'http://10.0.0.5:11434'],
    ['https://proxy.example.org:8443/ollama/', 'https://proxy.example.org:8443/ollama'],
    ['[::1]:11434', 'http://[::1]:11434'],
    ['::1', 'http://[::1]:11434'],
    ['  example.com:1234  ', 'http://example.com:1234'],
  ])('reads %j as %s (guards against dialling the wrong address)', (value, expected) => {
    expect(parseOllamaHost(value)).toBe(expected);
  });

  it.each([['host:notaport'], ['host:99999'], ['ftp://host']])(
    'rejects %j (guards against a silently wrong host)',
    (value) => {
      expect(parseOllamaHost(value)).toBeUndefined();
      expect(() => resolveOllamaHost(undefined, { OLLAMA_HOST: value })).toThrow(/from OLLAMA_HOST/);
    },
  );

  it('prefers an explicit host over OLLAMA_HOST (guards against the override being ignored)', () => {
    expect(resolveOllamaHost('other:1', { OLLAMA_HOST: 'gpu-box' })).toBe('http://other:1');
    expect(resolveOllamaHost(undefined, { OLLAMA_HOST: 'gpu-box' })).toBe('http://gpu-box:11434');
  });

  it('sends requests to OLLAMA_HOST given as host:port when no host is configured (guards against the env var being ignored)', async () => {
    const fake = await startFakeOllama();
    try {
      fake.script('m', ['from env']);
      const model = new OllamaChatModel({ env: { OLLAMA_HOST: `127.0.0.1:${fake.port}` } });
      expect(model.host).toBe(fake.url);
      const reply = await model.chat({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
      expect(reply.message.content).toBe('from env');
    } finally {
      await fake.close();
    }
  });
});
