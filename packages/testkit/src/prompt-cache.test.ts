import { Ollama } from 'ollama';
import { afterEach, describe, expect, it } from 'vitest';
import { renderChatPrompt } from './chat-prompt.js';
import { startFakeOllama, type FakeOllama } from './fake-ollama.js';
import type { FakeOllamaOptions } from './fake-types.js';
import { parseKeepAlive } from './model-server.js';
import { loadQwenTokenizer } from './qwen-tokenizer.js';
import { callSeconds, rateAt, REFERENCE_GPU } from './time-model.js';

let fake: FakeOllama | undefined;
let clock = Date.parse('2026-09-22T19:05:00.000Z');

async function start(options: FakeOllamaOptions = {}): Promise<{ fake: FakeOllama; client: Ollama }> {
  clock = Date.parse('2026-09-22T19:05:00.000Z');
  fake = await startFakeOllama({ now: () => new Date(clock), ...options });
  return { fake, client: new Ollama({ host: fake.url }) };
}

afterEach(async () => {
  await fake?.close();
  fake = undefined;
});

const QWEN = 'qwen2.5:7b';

/**
 * Ollama's own report for qwen2.5:7b (`/api/generate`, prompt "Say Bismillah", no system): the `context` it returned
 * starts with these 34 prompt token ids, and `prompt_eval_count` was 34 (a published session log, 2026-05-17).
 */
const SAY_BISMILLAH_IDS = [
  151644, 8948, 198, 2610, 525, 1207, 16948, 11, 3465, 553, 54364, 14817, 13, 1446, 525, 264, 10950, 17847,
  13, 151645, 198, 151644, 872, 198, 45764, 425, 2142, 483, 1466, 151645, 198, 151644, 77091, 198,
];

describe('token counts from the real Qwen tokenizer', () => {
  it('renders and tokenizes a prompt to exactly the ids Ollama reported for qwen2.5:7b (guards against counts that are a guess)', async () => {
    const tokenizer = await loadQwenTokenizer();
    const ids = tokenizer.encode(
      renderChatPrompt({ messages: [{ role: 'user', content: 'Say Bismillah' }] }),
    );
    expect(ids).toEqual(SAY_BISMILLAH_IDS);
  });

  it('reports prompt_eval_count 34 for that prompt over /api/chat, as Ollama did (guards against characters / 4)', async () => {
    const { fake, client } = await start({ tokenizer: 'auto' });
    fake.script(QWEN, ['بسم الله الرحمن الرحيم']);
    const r = await client.chat({ model: QWEN, messages: [{ role: 'user', content: 'Say Bismillah' }] });
    expect(r.prompt_eval_count).toBe(34);
    expect(r.eval_count).toBeGreaterThan(0);
    expect(fake.requests[0]?.modelCall).toMatchObject({ promptTokens: 34, tokenizer: 'qwen', load: 'cold' });
  });
});

describe('the prompt cache, as Ollama and llama.cpp keep it', () => {
  it('reuses the 24-token system + user header for a second question, as Ollama reported on an RTX 3060 (guards against a cache the double does not model)', async () => {
    // Recorded: "What is 2+2?" cold → prompt_eval_count 36, prompt_eval_cached_count 0, load_duration 6.6 s;
    // the next question → prompt_eval_cached_count 24.
    const { fake, client } = await start({ tokenizer: 'auto', server: { reportCachedTokens: true } });
    fake.script(QWEN, ['2 + 2 equals 4.', 'Sure! Here is a joke.']);
    const first = await client.chat({ model: QWEN, messages: [{ role: 'user', content: 'What is 2+2?' }] });
    expect(first.prompt_eval_count).toBe(36);
    expect((first as unknown as Record<string, unknown>)['prompt_eval_cached_count']).toBe(0);
    expect(first.load_duration).toBeGreaterThan(1e9);
    const second = await client.chat({
      model: QWEN,
      messages: [{ role: 'user', content: 'Tell me a joke.' }],
    });
    expect((second as unknown as Record<string, unknown>)['prompt_eval_cached_count']).toBe(24);
    expect(second.load_duration).toBeLessThan(1e8);
    expect(fake.requests[1]?.modelCall).toMatchObject({ cachedTokens: 24 });
    expect(second.prompt_eval_count).toBe(fake.requests[1]?.modelCall?.promptTokens);
  });

  it('reports the whole prompt in prompt_eval_count but evaluates one token when the prompt repeats (guards against faking what Ollama reports)', async () => {
    const { fake, client } = await start({ tokenizer: 'auto' });
    fake.script(QWEN, ['a', 'b']);
    const messages = [{ role: 'user', content: 'Same question twice.' }];
    const first = await client.chat({ model: QWEN, messages });
    const second = await client.chat({ model: QWEN, messages });
    expect(second.prompt_eval_count).toBe(first.prompt_eval_count);
    expect(fake.requests[1]?.modelCall).toMatchObject({ evaluatedTokens: 1 });
    // Ollama 0.12 sends no cached count unless the server is configured to.
    expect(Object.keys(second)).not.toContain('prompt_eval_cached_count');
    expect(second.prompt_eval_duration).toBeLessThan(first.prompt_eval_duration);
  });

  it('keeps the reply in the cache, so a conversation that appends turns evaluates only the new turn (guards against append-only prompts showing no gain)', async () => {
    const { fake, client } = await start({ tokenizer: 'auto' });
    fake.script(QWEN, ['RUN\nPATH: TODO.lua\nARGS: list', 'DONE']);
    const turn1 = [
      { role: 'system', content: 'You are the planner.' },
      { role: 'user', content: 'Fix TODO.lua.' },
    ];
    await client.chat({ model: QWEN, messages: turn1 });
    const first = fake.requests[0]?.modelCall;
    const turn2 = [
      ...turn1,
      { role: 'assistant', content: 'RUN\nPATH: TODO.lua\nARGS: list' },
      { role: 'user', content: 'Result: 1. [ ] Buy milk' },
    ];
    await client.chat({ model: QWEN, messages: turn2 });
    const second = fake.requests[1]?.modelCall;
    if (!first || !second) throw new Error('no model calls recorded');
    expect(second.cachedTokens).toBe(first.promptTokens + first.outputTokens);
    expect(second.evaluatedTokens).toBeLessThan(20);
  });

  it('re-evaluates from the first changed token: a volatile line at the top costs the whole prompt (guards against a cache that ignores order)', async () => {
    const { fake, client } = await start({ tokenizer: 'auto' });
    fake.script(QWEN, ['x', 'y'], { repeat: true });
    const body = 'FILES\n' + 'local x = 1\n'.repeat(200);
    await client.chat({ model: QWEN, messages: [{ role: 'user', content: `step 1\n${body}` }] });
    await client.chat({ model: QWEN, messages: [{ role: 'user', content: `step 2\n${body}` }] });
    const late = fake.requests[1]?.modelCall;
    await client.chat({ model: QWEN, messages: [{ role: 'user', content: `${body}\nstep 3` }] });
    await client.chat({ model: QWEN, messages: [{ role: 'user', content: `${body}\nstep 4` }] });
    const early = fake.requests[3]?.modelCall;
    if (!late || !early) throw new Error('no model calls recorded');
    expect(late.cachedTokens).toBeLessThan(30);
    expect(early.evaluatedTokens).toBeLessThan(10);
    expect(early.cachedTokens / early.promptTokens).toBeGreaterThan(0.95);
  });

  it('reloads the model and drops its cache when num_ctx changes, not when temperature does (guards against options that silently reload)', async () => {
    const { fake, client } = await start({ tokenizer: 'auto' });
    fake.script(QWEN, ['a'], { repeat: true });
    const messages = [{ role: 'user', content: 'hello there' }];
    await client.chat({ model: QWEN, messages, options: { num_ctx: 8192, temperature: 0 } });
    await client.chat({ model: QWEN, messages, options: { num_ctx: 8192, temperature: 0.7 } });
    const changed = await client.chat({ model: QWEN, messages, options: { num_ctx: 4096 } });
    const calls = fake.requests.map((r) => r.modelCall);
    expect(calls.map((c) => c?.load)).toEqual(['cold', undefined, 'options_changed']);
    expect(calls[1]?.evaluatedTokens).toBe(1);
    expect(calls[2]?.cachedTokens).toBe(0);
    expect(changed.load_duration).toBeGreaterThan(1e9);
    expect(fake.modelStats(QWEN)).toMatchObject({
      requests: 3,
      loads: 2,
      loadReasons: { options_changed: 1 },
    });
    expect(fake.loadedModels()).toEqual([{ model: QWEN, numCtx: 4096, expiresAt: clock + 300_000 }]);
  });

  it('unloads after keep_alive (injected clock), at once for 0 and never for a negative one (guards against a cache that lives forever)', async () => {
    const { fake, client } = await start({ tokenizer: 'auto' });
    fake.script(QWEN, ['a'], { repeat: true });
    const messages = [{ role: 'user', content: 'hello there' }];
    await client.chat({ model: QWEN, messages, keep_alive: '1m' });
    clock += 59_000;
    await client.chat({ model: QWEN, messages, keep_alive: '1m' });
    clock += 61_000;
    await client.chat({ model: QWEN, messages, keep_alive: 0 });
    await client.chat({ model: QWEN, messages, keep_alive: -1 });
    clock += 365 * 24 * 3600_000;
    await client.chat({ model: QWEN, messages });
    expect(fake.requests.map((r) => r.modelCall?.load)).toEqual([
      'cold',
      undefined,
      'expired',
      'expired',
      undefined,
    ]);
    expect(fake.requests[4]?.modelCall?.evaluatedTokens).toBe(1);
  });

  it("gives each parallel slot its own cache: alternating prompts thrash one slot and, by Ollama's default slot choice, two; with the multi-user cache both stay cached (guards against planner and executor sharing a model unnoticed)", async () => {
    const alternate = async (numParallel: number, multiUserCache = false): Promise<number> => {
      const { fake, client } = await start({ tokenizer: 'auto', server: { numParallel, multiUserCache } });
      fake.script(QWEN, ['ok'], { repeat: true });
      const planner = { role: 'system', content: 'You are the PLANNER. '.repeat(40) };
      const executor = { role: 'system', content: 'You are the EXECUTOR. '.repeat(40) };
      for (let i = 0; i < 3; i += 1) {
        await client.chat({ model: QWEN, messages: [planner, { role: 'user', content: 'state' }] });
        await client.chat({ model: QWEN, messages: [executor, { role: 'user', content: 'directive' }] });
      }
      const evaluated = fake.modelStats(QWEN).evaluatedTokens;
      await fake.close();
      return evaluated;
    };
    const oneSlot = await alternate(1);
    const twoSlots = await alternate(2);
    const twoSlotsMultiUser = await alternate(2, true);
    expect(twoSlots).toBe(oneSlot);
    expect(twoSlotsMultiUser * 2).toBeLessThan(oneSlot);
  });

  it('unloads the least recently used model when more are loaded than the server keeps (guards against unlimited residency)', async () => {
    const { fake, client } = await start({ tokenizer: 'auto', server: { maxLoadedModels: 2 } });
    for (const m of ['qwen2.5:7b', 'qwen2.5-coder:7b', 'qwen3:8b']) fake.script(m, ['ok'], { repeat: true });
    const messages = [{ role: 'user', content: 'hi' }];
    await client.chat({ model: 'qwen2.5:7b', messages });
    await client.chat({ model: 'qwen2.5-coder:7b', messages });
    await client.chat({ model: 'qwen3:8b', messages });
    await client.chat({ model: 'qwen2.5:7b', messages });
    expect(fake.requests.map((r) => r.modelCall?.load)).toEqual(['cold', 'cold', 'cold', 'evicted']);
  });

  it('reports the whole prompt as usage.prompt_tokens on /v1, and the cached part where the server has the field (guards against OpenAI-compatible drift)', async () => {
    const { fake } = await start({ tokenizer: 'auto', server: { reportCachedTokens: true } });
    fake.script(QWEN, ['a', 'b']);
    const post = async (): Promise<Record<string, unknown>> => {
      const res = await fetch(`${fake.url}/v1/chat/completions`, {
        method: 'POST',
        body: JSON.stringify({ model: QWEN, messages: [{ role: 'user', content: 'What is 2+2?' }] }),
      });
      return ((await res.json()) as { usage: Record<string, unknown> }).usage;
    };
    expect(await post()).toMatchObject({ prompt_tokens: 36, prompt_tokens_details: { cached_tokens: 0 } });
    expect(await post()).toMatchObject({ prompt_tokens: 36, prompt_tokens_details: { cached_tokens: 35 } });
  });

  it('counts other models at 4 characters a token and still models their cache (guards against non-Qwen names breaking)', async () => {
    const { fake, client } = await start({ tokenizer: 'auto' });
    fake.script('llama3.2', ['a', 'b']);
    const messages = [{ role: 'user', content: 'x'.repeat(400) }];
    const r = await client.chat({ model: 'llama3.2', messages });
    await client.chat({ model: 'llama3.2', messages });
    const rendered = renderChatPrompt({ messages });
    expect(r.prompt_eval_count).toBe(Math.ceil(rendered.length / 4));
    expect(fake.requests[1]?.modelCall).toMatchObject({ tokenizer: 'estimate', evaluatedTokens: 1 });
  });
});

describe('keep-alive parsing and the time model', () => {
  it('parses keep_alive like Ollama: durations, seconds, 0 and negative (guards against a keep-alive the double misreads)', () => {
    expect(parseKeepAlive('5m')).toBe(300_000);
    expect(parseKeepAlive('1h30m')).toBe(5_400_000);
    expect(parseKeepAlive(30)).toBe(30_000);
    expect(parseKeepAlive('30')).toBe(30_000);
    expect(parseKeepAlive(0)).toBe(0);
    expect(parseKeepAlive(-1)).toBe(Infinity);
    expect(parseKeepAlive('-1m')).toBe(Infinity);
    expect(parseKeepAlive('soon')).toBeUndefined();
  });

  it('prices a call from the cited rates: 3,000 evaluated tokens cost about a second, 100 output tokens more (guards against a time model that drifts from its sources)', () => {
    expect(rateAt(REFERENCE_GPU.promptRates, 512)).toBe(3936);
    expect(rateAt(REFERENCE_GPU.promptRates, 2560)).toBeCloseTo(3653 - (3653 - 2730) / 2, 6);
    const cold = callSeconds(REFERENCE_GPU, {
      promptTokens: 3000,
      evaluated: 3000,
      output: 100,
      loaded: true,
    });
    const warm = callSeconds(REFERENCE_GPU, {
      promptTokens: 3000,
      evaluated: 100,
      output: 100,
      loaded: false,
    });
    expect(cold.load).toBe(6.6);
    expect(cold.promptEval).toBeCloseTo(3000 / rateAt(REFERENCE_GPU.promptRates, 3000), 6);
    expect(cold.generation).toBeCloseTo(100 / rateAt(REFERENCE_GPU.generationRates, 3050), 6);
    // The per-call overhead is in the total only, as in Ollama's figures (prompt_eval_duration of a cached prompt
    // is that of the few tokens evaluated; measured on the real server by the model-server contract).
    expect(cold.total).toBeCloseTo(6.6 + 0.08 + cold.promptEval + cold.generation, 6);
    expect(warm.promptEval).toBeLessThan(0.07);
    expect(cold.total - warm.total).toBeGreaterThan(7);
  });
});

describe('the default tokenizer', () => {
  it("counts the messages' contents at 4 characters a token, as the fake always did, and still models the cache (guards against changed counts in other suites)", async () => {
    const { fake, client } = await start();
    fake.script(QWEN, ['a', 'b']);
    const messages = [
      { role: 'system', content: 's'.repeat(101) },
      { role: 'user', content: 'u'.repeat(300) },
    ];
    const r = await client.chat({ model: QWEN, messages });
    await client.chat({ model: QWEN, messages });
    expect(r.prompt_eval_count).toBe(Math.ceil(401 / 4));
    expect(fake.requests[1]?.modelCall).toMatchObject({ tokenizer: 'estimate', evaluatedTokens: 1 });
  });
});
