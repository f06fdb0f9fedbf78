import { Ollama } from 'ollama';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { normalizeModelName, startFakeOllama, type FakeOllama } from './fake-ollama.js';

let fake: FakeOllama;
let client: Ollama;

beforeEach(async () => {
  fake = await startFakeOllama({ now: () => new Date('2025-01-02T03:04:05.000Z') });
  client = new Ollama({ host: fake.url });
});

afterEach(async () => {
  await fake.close();
});

const user = [{ role: 'user', content: 'hi' }];

describe('startFakeOllama', () => {
  it('listens on 127.0.0.1 with an ephemeral port (guards against tests colliding on fixed ports)', async () => {
    expect(fake.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(fake.port).toBeGreaterThan(0);
    const other = await startFakeOllama();
    expect(other.port).not.toBe(fake.port);
    await other.close();
    const res = await fetch(fake.url);
    expect(await res.text()).toMatch(/scripted test double/);
  });

  it('replays a reply queue in order and reports exhaustion clearly (guards against a test silently reusing replies)', async () => {
    fake.script('m', ['first', 'second']);
    expect((await client.chat({ model: 'm', messages: user })).message.content).toBe('first');
    expect((await client.chat({ model: 'm', messages: user })).message.content).toBe('second');
    await expect(client.chat({ model: 'm', messages: user })).rejects.toMatchObject({
      status_code: 400,
      error: expect.stringContaining('exhausted') as string,
    });
  });

  it('cycles the queue with repeat (guards against standalone runs dying after one pass)', async () => {
    fake.script('m', ['a', 'b'], { repeat: true });
    const got: string[] = [];
    for (let i = 0; i < 5; i += 1)
      got.push((await client.chat({ model: 'm', messages: user })).message.content);
    expect(got).toEqual(['a', 'b', 'a', 'b', 'a']);
  });

  it('answers from a script function that sees the API, model, stream flag and body (guards against scripts that cannot branch)', async () => {
    const seen: unknown[] = [];
    fake.script('fn', (req) => {
      seen.push({ api: req.api, model: req.model, stream: req.stream, format: req.body['format'] });
      return { content: `format was ${JSON.stringify(req.body['format'])}` };
    });
    const reply = await client.chat({ model: 'fn', messages: user, format: 'json' });
    expect(reply.message.content).toBe('format was "json"');
    await fetch(`${fake.url}/v1/chat/completions`, {
      method: 'POST',
      body: JSON.stringify({ model: 'fn', messages: user }),
    });
    expect(seen).toEqual([
      { api: 'ollama', model: 'fn', stream: false, format: 'json' },
      { api: 'openai', model: 'fn', stream: false, format: undefined },
    ]);
  });

  it('records every request with method, path, headers and parsed body (guards against assertions on what the model saw being impossible)', async () => {
    fake.script('m', ['ok']);
    await client.chat({
      model: 'm',
      messages: user,
      format: { type: 'object' },
      options: { temperature: 0 },
    });
    await client.list();
    expect(fake.requests.map((r) => `${r.method} ${r.path} ${r.outcome}`)).toEqual([
      'POST /api/chat finished',
      'GET /api/tags finished',
    ]);
    expect(fake.requests[0]?.headers['user-agent']).toMatch(/^ollama-js\//);
    expect(fake.chatRequests('m:latest')[0]?.body).toEqual({
      model: 'm',
      messages: user,
      format: { type: 'object' },
      options: { temperature: 0 },
      stream: false,
    });
    expect(fake.chatRequests('other')).toEqual([]);
  });

  it('keeps no request with recordRequests: false and still answers (guards against a fake serving all night holding every prompt it was sent)', async () => {
    const quiet = await startFakeOllama({ recordRequests: false });
    try {
      quiet.script('m', ['one', 'two']);
      const c = new Ollama({ host: quiet.url });
      const big = [{ role: 'user', content: 'x'.repeat(64 * 1024) }];
      expect((await c.chat({ model: 'm', messages: big })).message.content).toBe('one');
      expect((await c.chat({ model: 'm', messages: big, stream: false })).message.content).toBe('two');
      expect(quiet.requests).toHaveLength(0);
      expect(quiet.chatRequests()).toHaveLength(0);
    } finally {
      await quiet.close();
    }
    // The default still records (the assertions of every other test depend on it).
    fake.script('m', ['three']);
    await client.chat({ model: 'm', messages: user });
    expect(fake.chatRequests('m')).toHaveLength(1);
  });

  it('resolves model names like Ollama: no tag means :latest (guards against scripts missing their requests)', async () => {
    expect(normalizeModelName('Qwen2.5')).toBe('qwen2.5:latest');
    expect(normalizeModelName('registry.ollama.ai/library/qwen2.5:7b')).toBe('qwen2.5:7b');
    fake.script('qwen2.5', ['tagless']);
    expect((await client.chat({ model: 'qwen2.5:latest', messages: user })).message.content).toBe('tagless');
  });

  it("answers an unknown model with 404 and Ollama's message on /api/chat and /api/show (guards against the not-found path going untested)", async () => {
    await expect(client.chat({ model: 'ghost', messages: user })).rejects.toMatchObject({
      status_code: 404,
      error: "model 'ghost' not found",
    });
    await expect(client.show({ model: 'ghost' })).rejects.toMatchObject({ status_code: 404 });
  });

  it('lists scripted and installed models on /api/tags and /v1/models and describes them on /api/show (guards against checkModels tests lying)', async () => {
    const withInstalled = await startFakeOllama({ installed: ['llama3.2:3b'], version: '9.9.9' });
    try {
      withInstalled.script('qwen2.5', ['x']);
      const c = new Ollama({ host: withInstalled.url });
      expect((await c.list()).models.map((m) => m.name)).toEqual(['llama3.2:3b', 'qwen2.5:latest']);
      expect((await c.version()).version).toBe('9.9.9');
      const show = await c.show({ model: 'llama3.2:3b' });
      expect(show.details.format).toBe('gguf');
      expect(show.capabilities).toContain('tools');
      const models = (await (await fetch(`${withInstalled.url}/v1/models`)).json()) as {
        data: { id: string }[];
      };
      expect(models.data.map((m) => m.id)).toEqual(['llama3.2:3b', 'qwen2.5:latest']);
      await expect(c.chat({ model: 'llama3.2:3b', messages: user })).rejects.toMatchObject({
        status_code: 400,
      });
    } finally {
      await withInstalled.close();
    }
  });

  it('rejects a body that is not JSON with 400 (guards against the fake accepting what Ollama refuses)', async () => {
    const res = await fetch(`${fake.url}/api/chat`, { method: 'POST', body: '{not json' });
    expect(res.status).toBe(400);
    expect(((await res.json()) as { error: string }).error).toMatch(/JSON/);
  });

  it('streams text in word pieces or chunkChars pieces with the whole text preserved (guards against a fake that never really streams)', async () => {
    fake.script('m', ['one two three', { content: 'abcdefgh', chunkChars: 3 }]);
    const words: string[] = [];
    for await (const part of await client.chat({ model: 'm', messages: user, stream: true })) {
      if (!part.done) words.push(part.message.content);
    }
    expect(words).toEqual(['one ', 'two ', 'three']);
    const pieces: string[] = [];
    for await (const part of await client.chat({ model: 'm', messages: user, stream: true })) {
      if (!part.done) pieces.push(part.message.content);
    }
    expect(pieces).toEqual(['abc', 'def', 'gh']);
  });

  it('uses the injected clock for created_at (guards against nondeterministic payloads in snapshot tests)', async () => {
    fake.script('m', ['x']);
    const reply = await client.chat({ model: 'm', messages: user });
    expect(new Date(reply.created_at).toISOString()).toBe('2025-01-02T03:04:05.000Z');
  });
});

describe('fault injection', () => {
  it('applies setFault to the next N chat requests only, without consuming scripted replies (guards against retry tests losing replies)', async () => {
    fake.script('m', ['after the fault']);
    fake.setFault({ status: 500, message: 'boom' }, 2);
    await expect(client.chat({ model: 'm', messages: user })).rejects.toMatchObject({
      status_code: 500,
      error: 'boom',
    });
    await expect(client.chat({ model: 'm', messages: user })).rejects.toMatchObject({ status_code: 500 });
    expect((await client.chat({ model: 'm', messages: user })).message.content).toBe('after the fault');
  });

  it('scopes setFault to given paths (guards against a chat fault breaking inventory checks and vice versa)', async () => {
    fake.script('m', ['fine']);
    fake.setFault({ status: 503 }, { paths: ['/api/tags'], times: 1 });
    expect((await client.chat({ model: 'm', messages: user })).message.content).toBe('fine');
    await expect(client.list()).rejects.toMatchObject({ status_code: 503 });
    await expect(client.list()).resolves.toMatchObject({ models: [{ name: 'm:latest' }] });
  });

  it('clears a fault with null (guards against faults leaking between test phases)', async () => {
    fake.script('m', ['ok']);
    fake.setFault({ status: 500 });
    fake.setFault(null);
    expect((await client.chat({ model: 'm', messages: user })).message.content).toBe('ok');
  });

  it('resets the connection before responding (guards against connection-reset handling going untested)', async () => {
    fake.script('m', ['x']);
    fake.setFault({ resetBeforeResponse: true }, 1);
    await expect(client.chat({ model: 'm', messages: user })).rejects.toThrow(/fetch failed/);
    expect(await fake.waitForOutcome(0)).toBe('reset');
  });

  it('drops the connection mid-stream after N chunks (guards against cut streams looking complete)', async () => {
    fake.script('m', [{ content: 'a b c d', fault: { dropAfterChunks: 2 } }]);
    const got: string[] = [];
    await expect(
      (async () => {
        for await (const part of await client.chat({ model: 'm', messages: user, stream: true }))
          got.push(part.message.content);
      })(),
    ).rejects.toThrow();
    expect(got).toEqual(['a ', 'b ']);
    expect(fake.requests[0]?.outcome).toBe('dropped');
  });

  it('writes a malformed NDJSON line mid-stream, and a mid-stream error object (guards against the adapter never seeing either)', async () => {
    fake.script('m', [
      { content: 'a b', fault: { malformedAfterChunks: 1 } },
      { content: 'a b', fault: { errorAfterChunks: 1, message: 'runner died' } },
    ]);
    const raw = await (
      await fetch(`${fake.url}/api/chat`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: user }),
      })
    ).text();
    const lines = raw.split('\n').filter((l) => l !== '');
    expect(() => JSON.parse(lines[1] ?? '')).toThrow();
    expect(
      lines
        .slice(0, 1)
        .concat(lines.slice(2))
        .every((l) => JSON.parse(l) !== null),
    ).toBe(true);
    const errored = await (
      await fetch(`${fake.url}/api/chat`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: user }),
      })
    ).text();
    expect(errored.trim().split('\n').at(-1)).toBe('{"error":"runner died"}');
  });

  it('ends a stream without its final chunk with truncateAfterChunks (guards against missing-done handling going untested)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { truncateAfterChunks: 2 } }]);
    const raw = await (
      await fetch(`${fake.url}/api/chat`, {
        method: 'POST',
        body: JSON.stringify({ model: 'm', messages: user }),
      })
    ).text();
    const lines = raw
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l) as { done: boolean });
    expect(lines).toHaveLength(2);
    expect(lines.every((l) => !l.done)).toBe(true);
  });

  it('delays the response by latencyMs and tokens by tokenDelayMs (guards against slow-model paths being untestable)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { latencyMs: 60, tokenDelayMs: 30 } }]);
    const started = performance.now();
    const stamps: number[] = [];
    for await (const part of await client.chat({ model: 'm', messages: user, stream: true })) {
      stamps.push(performance.now() - started);
      if (part.done) break;
    }
    expect(stamps[0]).toBeGreaterThanOrEqual(55);
    expect((stamps.at(-1) ?? 0) - (stamps[0] ?? 0)).toBeGreaterThanOrEqual(3 * 25);
  });

  it('stalls a stream until the client hangs up, and records that (guards against abort tests passing without a real close)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { stallAfterChunks: 1 } }]);
    const controller = new AbortController();
    const res = await fetch(`${fake.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: user }),
      signal: controller.signal,
    });
    const reader = res.body!.getReader();
    const first = await reader.read();
    expect(new TextDecoder().decode(first.value)).toContain('"content":"a "');
    expect(fake.requests[0]?.outcome).toBe('pending');
    controller.abort();
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
  });

  it('close() ends stalled connections and stops listening (guards against tests hanging in afterEach)', async () => {
    const local = await startFakeOllama();
    local.script('m', [{ content: 'a b', fault: { stallAfterChunks: 1 } }]);
    const res = await fetch(`${local.url}/api/chat`, {
      method: 'POST',
      body: JSON.stringify({ model: 'm', messages: user }),
    });
    const reading = res.text().then(
      () => 'ended',
      () => 'errored',
    );
    await local.close();
    expect(['ended', 'errored']).toContain(await reading);
    await expect(fetch(`${local.url}/api/version`)).rejects.toThrow();
  });

  it('waitForRequests resolves on arrival and rejects with a count when they never come (guards against silent hangs)', async () => {
    fake.script('m', ['x']);
    const waiting = fake.waitForRequests(1);
    await client.chat({ model: 'm', messages: user });
    expect(await waiting).toHaveLength(1);
    await expect(fake.waitForRequests(5, 20)).rejects.toThrow(/1 of 5 expected requests/);
  });
});
