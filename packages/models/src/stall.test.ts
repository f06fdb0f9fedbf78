import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { DEFAULT_FIRST_CHUNK_TIMEOUT_MS, DEFAULT_STALL_TIMEOUT_MS, StallWatch } from './call.js';
import type { ChatDelta, ChatModel, ChatRequest } from './chat-model.js';
import { isModelError, isRetryableCode, MODEL_ERROR_CODES } from './model-error.js';
import { failure } from '../test/support/failure.js';
import { OllamaChatModel } from './ollama-chat-model.js';
import { OpenAICompatibleChatModel } from './openai-compatible-chat-model.js';

// Stall detection through the real `ollama` client and real `fetch` against the fake server's stall, latency and
// slow-token faults. Bounds are a few hundred ms apart so a loaded CI machine cannot flip an outcome.

const FAST_RETRY = { retries: 2, minDelayMs: 1, maxDelayMs: 2 };
const ask = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});

interface StallSettings {
  stallTimeoutMs?: number;
  firstChunkTimeoutMs?: number;
  retries?: number;
}

const adapters: [string, (url: string, s: StallSettings) => ChatModel][] = [
  [
    'OllamaChatModel (ollama client)',
    (url, s) =>
      new OllamaChatModel({
        host: url,
        retry: { ...FAST_RETRY, ...(s.retries !== undefined ? { retries: s.retries } : {}) },
        ...(s.stallTimeoutMs !== undefined ? { stallTimeoutMs: s.stallTimeoutMs } : {}),
        ...(s.firstChunkTimeoutMs !== undefined ? { firstChunkTimeoutMs: s.firstChunkTimeoutMs } : {}),
      }),
  ],
  [
    'OpenAICompatibleChatModel (fetch + SSE)',
    (url, s) =>
      new OpenAICompatibleChatModel({
        baseUrl: `${url}/v1`,
        retry: { ...FAST_RETRY, ...(s.retries !== undefined ? { retries: s.retries } : {}) },
        ...(s.stallTimeoutMs !== undefined ? { stallTimeoutMs: s.stallTimeoutMs } : {}),
        ...(s.firstChunkTimeoutMs !== undefined ? { firstChunkTimeoutMs: s.firstChunkTimeoutMs } : {}),
      }),
  ],
];

let fake: FakeOllama;

beforeEach(async () => {
  fake = await startFakeOllama();
});

afterEach(async () => {
  await fake.close();
});

describe.each(adapters)('%s — stream stall detection', (_name, make) => {
  it('cuts a stream that goes silent mid-reply and retries it (guards against a hung model server holding a task until the 10-minute call deadline)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 150 });
    fake.script('m', [{ content: 'a b c d', fault: { stallAfterChunks: 2 } }, 'second try']);
    const started = performance.now();
    const reply = await model.chat(ask());
    expect(reply.message.content).toBe('second try');
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
    expect(fake.chatRequests().map((r) => r.outcome)).toEqual(['client_closed', 'finished']);
  });

  it('fails with "model_stalled" after the retry budget when every attempt stalls, each request closed (guards against an untyped or endless failure)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 120 });
    fake.script('m', [{ content: 'a b c', fault: { stallAfterChunks: 1 } }], { repeat: true });
    const error = await failure(model.chat(ask({ timeoutMs: 20_000 })));
    expect(error.code).toBe('model_stalled');
    expect(error.retryable).toBe(true);
    expect(error.attempts).toBe(3);
    expect(error.model).toBe('m');
    expect(error.message).toMatch(
      /stalled: the reply stream went silent for 120 ms after \d+ chunks? \(stallTimeoutMs\)/,
    );
    expect(fake.chatRequests()).toHaveLength(3);
    for (let i = 0; i < 3; i += 1) expect(await fake.waitForOutcome(i)).toBe('client_closed');
  });

  it('does NOT cut a slow but alive stream: chunks every 60 ms under a 400 ms stall bound, 700+ ms in all (guards against killing slow CPU models)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 400 });
    const words = 'one two three four five six seven eight nine ten eleven twelve';
    fake.script('m', [{ content: words, fault: { tokenDelayMs: 60 } }]);
    const started = performance.now();
    const reply = await model.chat(ask());
    const took = performance.now() - started;
    expect(reply.message.content).toBe(words);
    expect(took).toBeGreaterThan(400); // longer than the stall bound: it is a bound on silence, not on the reply
    expect(fake.chatRequests().map((r) => r.outcome)).toEqual(['finished']);
  });

  it('cuts an attempt whose response headers never come within firstChunkTimeoutMs, and retries (guards against a server that accepts and never answers)', async () => {
    const model = make(fake.url, { firstChunkTimeoutMs: 150 });
    fake.script('m', [{ content: 'late', fault: { latencyMs: 5_000 } }, 'on time']);
    const reply = await model.chat(ask());
    expect(reply.message.content).toBe('on time');
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
  });

  it('gives the first chunk its own, longer bound: a 300 ms model load passes a 100 ms stall bound (guards against cutting every cold start)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 100, firstChunkTimeoutMs: 2_000 });
    fake.script('m', [{ content: 'warm now', fault: { latencyMs: 300 } }]);
    const reply = await model.chat(ask());
    expect(reply.message.content).toBe('warm now');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('with the first-chunk bound only, a reply silent before its first chunk is cut with a message naming firstChunkTimeoutMs (guards against a vague error)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 0, firstChunkTimeoutMs: 120, retries: 0 });
    fake.script('m', [{ content: 'x', fault: { latencyMs: 5_000 } }]);
    const error = await failure(model.chat(ask()));
    expect(error.code).toBe('model_stalled');
    expect(error.message).toMatch(/no reply within 120 ms \(firstChunkTimeoutMs/);
  });

  it('stallTimeoutMs 0 turns the between-chunk bound off: only the call deadline ends a silent stream (guards against an option that cannot be disabled)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 0 });
    fake.script('m', [{ content: 'a b c', fault: { stallAfterChunks: 1 } }]);
    const error = await failure(model.chat(ask({ timeoutMs: 300 })));
    expect(error.code).toBe('timeout');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('does not watch non-streaming calls, whose body only comes when the reply is complete (guards against cutting every long stream:false call)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 50, firstChunkTimeoutMs: 50 });
    fake.script('m', [{ content: 'whole', fault: { latencyMs: 250 } }]);
    const reply = await model.chat(ask({ stream: false }));
    expect(reply.message.content).toBe('whole');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('does not replay a stalled stream whose deltas already reached the caller: "model_stalled", one request (guards against a reply shown twice)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 120 });
    // After 2 chunks: the OpenAI stream's first chunk carries only the role, the second the first text.
    fake.script('m', [{ content: 'a b c d', fault: { stallAfterChunks: 2 } }, 'never used']);
    const deltas: ChatDelta[] = [];
    const error = await failure(model.chat(ask({ onDelta: (d) => deltas.push(d) })));
    expect(error.code).toBe('model_stalled');
    expect(deltas.length).toBeGreaterThan(0);
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('stays inside the call deadline: stalls and retries end with "timeout" carrying the stall as its cause (guards against stall retries outliving timeoutMs)', async () => {
    const model = make(fake.url, { stallTimeoutMs: 80, retries: 1000 });
    fake.script('m', [{ content: 'a b', fault: { stallAfterChunks: 1 } }], { repeat: true });
    const started = performance.now();
    const error = await failure(model.chat(ask({ timeoutMs: 600 })));
    expect(error.code).toBe('timeout');
    expect(performance.now() - started).toBeLessThan(3_000);
    expect(isModelError(error.cause) && error.cause.code).toBe('model_stalled');
    expect(error.message).toContain('stalled');
  });
});

describe('StallWatch and the model_stalled code', () => {
  it('is a stable, retryable code with 60 s / 5 min defaults (guards against a silent change of the public taxonomy)', () => {
    expect(MODEL_ERROR_CODES).toContain('model_stalled');
    expect(isRetryableCode('model_stalled')).toBe(true);
    expect(DEFAULT_STALL_TIMEOUT_MS).toBe(60_000);
    expect(DEFAULT_FIRST_CHUNK_TIMEOUT_MS).toBe(300_000);
  });

  it('watches nothing when both bounds are 0, and applies the defaults when only one is given (guards against a disabled watch that still fires)', () => {
    const target = { provider: 'ollama', host: 'http://x' };
    expect(StallWatch.start(target, undefined)).toBeUndefined();
    expect(StallWatch.start(target, { stallTimeoutMs: 0, firstChunkTimeoutMs: 0 })).toBeUndefined();
    const watch = StallWatch.start(target, { stallTimeoutMs: 0 });
    expect(watch).toBeDefined();
    watch?.stop();
    expect(watch?.signal.aborted).toBe(false);
  });
});
