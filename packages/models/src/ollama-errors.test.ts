import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatDelta, ChatRequest } from './chat-model.js';
import { isModelError, type ModelError } from './model-error.js';
import { failure } from '../test/support/failure.js';
import { OllamaChatModel } from './ollama-chat-model.js';

const FAST_RETRY = { retries: 2, minDelayMs: 1, maxDelayMs: 2 };
const ask = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});

let fake: FakeOllama;
let model: OllamaChatModel;

beforeEach(async () => {
  fake = await startFakeOllama();
  model = new OllamaChatModel({ host: fake.url, retry: FAST_RETRY });
});

afterEach(async () => {
  await fake.close();
});

describe('OllamaChatModel — failures and retries', () => {
  it('retries a refused connection a bounded number of times, then fails with code "connection" (guards against hanging or retrying forever when Ollama is down)', async () => {
    const closed = await startFakeOllama();
    const url = closed.url;
    await closed.close();
    const down = new OllamaChatModel({ host: url, retry: FAST_RETRY });
    const error = await failure(down.chat(ask()));
    expect(error.code).toBe('connection');
    expect(error.attempts).toBe(3);
    expect(error.retryable).toBe(true);
    expect(error.message).toContain(url);
    expect(error.message).toMatch(/ECONNREFUSED/);
  });

  it('recovers from connection resets before the response by retrying (guards against one network blip failing a step)', async () => {
    fake.script('m', ['recovered']);
    fake.setFault({ resetBeforeResponse: true }, 2);
    const reply = await model.chat(ask());
    expect(reply.message.content).toBe('recovered');
    expect(fake.chatRequests().map((r) => r.outcome)).toEqual(['reset', 'reset', 'finished']);
  });

  it('fails with "connection" after the retry budget when every attempt is reset (guards against unbounded retries)', async () => {
    fake.script('m', ['never']);
    fake.setFault({ resetBeforeResponse: true });
    const error = await failure(model.chat(ask()));
    expect(error.code).toBe('connection');
    expect(error.attempts).toBe(3);
    expect(fake.chatRequests()).toHaveLength(3);
  });

  it('retries HTTP 5xx and succeeds when the server recovers (guards against treating a transient 500 as final)', async () => {
    fake.script('m', ['fine now']);
    fake.setFault({ status: 500, message: 'llama runner process has terminated' }, 1);
    const reply = await model.chat(ask());
    expect(reply.message.content).toBe('fine now');
    expect(fake.chatRequests()).toHaveLength(2);
  });

  it('gives up on persistent 5xx with code "server", the status and the server message (guards against a vague error)', async () => {
    fake.script('m', ['never']);
    fake.setFault({ status: 503, message: 'server busy' });
    const error = await failure(model.chat(ask()));
    expect(error.code).toBe('server');
    expect(error.status).toBe(503);
    expect(error.message).toContain('server busy');
    expect(error.attempts).toBe(3);
  });

  it('backs off exponentially between retries (guards against retry storms against a struggling server)', async () => {
    const backoff = new OllamaChatModel({
      host: fake.url,
      retry: { retries: 3, minDelayMs: 20, factor: 2, maxDelayMs: 1000, jitter: false },
    });
    fake.script('m', ['never']);
    fake.setFault({ status: 500 });
    const started = performance.now();
    const error = await failure(backoff.chat(ask()));
    expect(error.attempts).toBe(4);
    // 20 + 40 + 80 ms of backoff at least; a constant or missing delay would take well under 140 ms.
    expect(performance.now() - started).toBeGreaterThanOrEqual(135);
  });

  it('does not retry when retries is 0 (guards against ignoring the configured policy)', async () => {
    const once = new OllamaChatModel({ host: fake.url, retry: { retries: 0 } });
    fake.script('m', ['never']);
    fake.setFault({ status: 500 });
    const error = await failure(once.chat(ask()));
    expect(error.code).toBe('server');
    expect(error.attempts).toBe(1);
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('reports an unknown model as "model_not_found" naming it and suggesting ollama pull, without retrying (guards against retrying a hopeless call)', async () => {
    const error = await failure(model.chat(ask({ model: 'qwen2.5-coder:7b' })));
    expect(error.code).toBe('model_not_found');
    expect(error.retryable).toBe(false);
    expect(error.status).toBe(404);
    expect(error.model).toBe('qwen2.5-coder:7b');
    expect(error.message).toContain('"qwen2.5-coder:7b"');
    expect(error.message).toContain('ollama pull qwen2.5-coder:7b');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('maps other 4xx to "bad_request" without retrying (guards against hammering the server with a request it rejects)', async () => {
    fake.script('m', ['never']);
    fake.setFault({ status: 400, message: 'registry.ollama.ai/library/m:latest does not support tools' });
    const error = await failure(model.chat(ask()));
    expect(error.code).toBe('bad_request');
    expect(error.message).toContain('does not support tools');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('fails with "stream_interrupted" when the connection drops mid-stream after deltas were delivered, and does not replay (guards against a partial reply passed on as complete)', async () => {
    fake.script('m', [{ content: 'one two three four five', fault: { dropAfterChunks: 2 } }, 'second reply']);
    const deltas: ChatDelta[] = [];
    const error = await failure(model.chat(ask({ onDelta: (d) => deltas.push(d) })));
    expect(error.code).toBe('stream_interrupted');
    expect(deltas.map((d) => d.content).join('')).toBe('one two ');
    expect(fake.chatRequests()).toHaveLength(1);
    expect(fake.chatRequests()[0]?.outcome).toBe('dropped');
  });

  it('retries a dropped stream when nothing reached the caller yet (guards against failing a step that could be recovered)', async () => {
    fake.script('m', [{ content: 'one two three', fault: { dropAfterChunks: 1 } }, 'clean reply']);
    const reply = await model.chat(ask());
    expect(reply.message.content).toBe('clean reply');
    expect(fake.chatRequests()).toHaveLength(2);
  });

  it('fails with "stream_interrupted" when the stream ends cleanly without the final done chunk (guards against accepting a truncated reply)', async () => {
    fake.script('m', [{ content: 'a b c d', fault: { truncateAfterChunks: 2 } }]);
    const error = await failure(model.chat(ask({ onDelta: () => undefined })));
    expect(error.code).toBe('stream_interrupted');
  });

  it('fails with "bad_response" on a malformed NDJSON line instead of skipping it (guards against silently losing tokens)', async () => {
    fake.script('m', [{ content: 'a b c d', fault: { malformedAfterChunks: 2 } }]);
    const error = await failure(model.chat(ask({ onDelta: () => undefined })));
    expect(error.code).toBe('bad_response');
    expect(error.message).toMatch(/malformed NDJSON/);
  });

  it('maps an error object sent mid-stream to "server" with its message (guards against an error line read as content)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { errorAfterChunks: 1, message: 'out of memory' } }]);
    const deltas: ChatDelta[] = [];
    const error = await failure(model.chat(ask({ onDelta: (d) => deltas.push(d) })));
    expect(error.code).toBe('server');
    expect(error.message).toContain('out of memory');
    expect(deltas).toHaveLength(1);
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('times out a stalled stream with "timeout" and closes the HTTP request (guards against a hung model blocking a task forever)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { stallAfterChunks: 1 } }]);
    const error = await failure(model.chat(ask({ timeoutMs: 150 })));
    expect(error.code).toBe('timeout');
    expect(error.message).toContain('150 ms');
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
  });

  it('applies the timeout to the whole call including retries and backoff (guards against timeout × retries wall time)', async () => {
    const patient = new OllamaChatModel({
      host: fake.url,
      retry: { retries: 1000, minDelayMs: 20, maxDelayMs: 20 },
    });
    fake.script('m', ['never']);
    fake.setFault({ status: 500 });
    const started = performance.now();
    const error = await failure(patient.chat(ask({ timeoutMs: 200 })));
    expect(error.code).toBe('timeout');
    expect(error.attempts).toBeGreaterThan(1);
    expect(performance.now() - started).toBeLessThan(2000);
  });

  it('keeps the last server error when the deadline ends the retries: in the message and as the cause (guards against "did not complete" hiding "CUDA out of memory")', async () => {
    const patient = new OllamaChatModel({
      host: fake.url,
      retry: { retries: 5, minDelayMs: 400, maxDelayMs: 400, jitter: false },
    });
    fake.script('m', ['never']);
    fake.setFault({ status: 500, message: 'CUDA out of memory' });
    // First attempt fails at once, then the 200 ms deadline passes during the 400 ms backoff.
    const error = await failure(patient.chat(ask({ timeoutMs: 200 })));
    expect(error.code).toBe('timeout');
    expect(error.message).toMatch(/did not complete within 200 ms \(after 1 attempt\)/);
    expect(error.message).toContain('CUDA out of memory');
    expect(error.status).toBe(500);
    expect(isModelError(error.cause)).toBe(true);
    expect((error.cause as ModelError).code).toBe('server');
    expect((error.cause as ModelError).message).toContain('CUDA out of memory');
  });

  it('times out a non-streaming call that gets no answer (guards against the client having no signal for stream:false)', async () => {
    fake.script('m', [{ content: 'late', fault: { latencyMs: 10_000 } }]);
    const error = await failure(model.chat(ask({ stream: false, timeoutMs: 100 })));
    expect(error.code).toBe('timeout');
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
  });

  it('aborts a streaming call via AbortSignal and the server sees the connection close (guards against orphaned generations on cancel)', async () => {
    fake.script('m', [{ content: 'a b c d', fault: { stallAfterChunks: 2 } }]);
    const controller = new AbortController();
    const deltas: ChatDelta[] = [];
    const pending = model.chat(
      ask({
        signal: controller.signal,
        onDelta: (d) => {
          deltas.push(d);
          if (deltas.length === 2) controller.abort();
        },
      }),
    );
    const error = await failure(pending);
    expect(error.code).toBe('aborted');
    expect(error.retryable).toBe(false);
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('aborts a non-streaming call waiting for its answer (guards against abort only working for streams)', async () => {
    fake.script('m', [{ content: 'late', fault: { latencyMs: 10_000 } }]);
    const controller = new AbortController();
    const pending = failure(model.chat(ask({ stream: false, signal: controller.signal })));
    await fake.waitForRequests(1);
    controller.abort();
    expect((await pending).code).toBe('aborted');
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
  });

  it('rejects an already-aborted signal without any HTTP request (guards against work started after cancel)', async () => {
    fake.script('m', ['never']);
    const error = await failure(model.chat(ask({ signal: AbortSignal.abort() })));
    expect(error.code).toBe('aborted');
    expect(fake.requests).toHaveLength(0);
  });

  it('stops retrying when aborted during backoff (guards against retries outliving a cancelled task)', async () => {
    const slow = new OllamaChatModel({
      host: fake.url,
      retry: { retries: 5, minDelayMs: 60_000, jitter: false },
    });
    fake.script('m', ['never']);
    fake.setFault({ status: 500 });
    const controller = new AbortController();
    const pending = failure(slow.chat(ask({ signal: controller.signal })));
    await fake.waitForOutcome(0);
    controller.abort();
    const error = await pending;
    expect(error.code).toBe('aborted');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('rethrows an exception from onDelta unchanged and does not retry (guards against caller bugs disguised as model errors)', async () => {
    fake.script('m', ['a b c', 'unused']);
    const bug = new RangeError('consumer bug');
    await expect(
      model.chat(
        ask({
          onDelta: () => {
            throw bug;
          },
        }),
      ),
    ).rejects.toBe(bug);
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('logs each retry to the injected logger (guards against invisible flakiness in the step logs)', async () => {
    const warnings: Record<string, unknown>[] = [];
    const logged = new OllamaChatModel({
      host: fake.url,
      retry: FAST_RETRY,
      logger: { warn: (obj) => warnings.push(obj), debug: () => undefined },
    });
    fake.script('m', ['ok']);
    fake.setFault({ status: 502 }, 1);
    await logged.chat(ask());
    expect(warnings).toHaveLength(1);
    expect(warnings[0]).toMatchObject({
      provider: 'ollama',
      model: 'm',
      code: 'server',
      status: 502,
      attempt: 1,
    });
  });
});
