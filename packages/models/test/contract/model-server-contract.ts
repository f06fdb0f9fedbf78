// The model-server contract: what ccagent relies on from a model server, checked through our adapters
// (OllamaChatModel on /api/chat, OpenAICompatibleChatModel on /v1/chat/completions) with the same assertions against
// the scripted double and the real Ollama. Every check holds whatever words the model chooses: where the double
// needs to be told what to say (`arrange`), a real model writes its own reply and only its shape is asserted.
import { expect } from 'vitest';
import type { ChatDelta, ChatMessage, ChatRequest, ChatResponse } from '../../src/chat-model.js';
import { OllamaChatModel } from '../../src/ollama-chat-model.js';
import { OpenAICompatibleChatModel } from '../../src/openai-compatible-chat-model.js';
import { failure } from '../support/failure.js';
import type { ContractTarget } from './targets.js';

/** One named behaviour of the contract. */
export interface ContractCheck {
  name: string;
  run(target: ContractTarget): Promise<void>;
}

const NO_RETRY = { retries: 0 };
// Deterministic sampling, a short reply: the checks are about the server, not the prose.
const OPTIONS = { temperature: 0, seed: 7, numPredict: 24 };

function ollama(t: ContractTarget): OllamaChatModel {
  return new OllamaChatModel({ host: t.url, retry: NO_RETRY, timeoutMs: 180_000 });
}

function openai(t: ContractTarget): OpenAICompatibleChatModel {
  return new OpenAICompatibleChatModel({ baseUrl: `${t.url}/v1`, retry: NO_RETRY, timeoutMs: 180_000 });
}

async function getJson<T>(t: ContractTarget, path: string): Promise<T> {
  const res = await fetch(`${t.url}${path}`);
  expect(res.status, `${path} status`).toBe(200);
  return (await res.json()) as T;
}

interface PsModel {
  name: string;
  model: string;
  expires_at: string;
  context_length?: number;
}

async function loaded(t: ContractTarget): Promise<PsModel[]> {
  return (await getJson<{ models: PsModel[] }>(t, '/api/ps')).models;
}

/** Until `check` holds for `/api/ps` (Ollama unloads a model asynchronously), bounded. */
async function psUntil(
  t: ContractTarget,
  check: (m: PsModel[]) => boolean,
  what: string,
): Promise<PsModel[]> {
  const end = Date.now() + 15_000;
  let last: PsModel[] = [];
  while (Date.now() < end) {
    last = await loaded(t);
    if (check(last)) return last;
    await new Promise((r) => setTimeout(r, 100));
  }
  throw new Error(`/api/ps never showed ${what}; last: ${JSON.stringify(last)}`);
}

const isLoaded = (t: ContractTarget) => (m: PsModel[]) => m.some((x) => sameName(x.name, t.model));
const sameName = (a: string, b: string) =>
  a.toLowerCase().replace(/:latest$/, '') === b.toLowerCase().replace(/:latest$/, '');

/** The figures every finished reply carries, sane. */
function expectFigures(reply: ChatResponse): void {
  const u = reply.usage;
  expect(['stop', 'length']).toContain(u.doneReason);
  expect(Number.isInteger(u.promptEvalCount) && (u.promptEvalCount ?? 0) > 0, 'prompt_eval_count > 0').toBe(
    true,
  );
  expect(Number.isInteger(u.evalCount) && (u.evalCount ?? 0) > 0, 'eval_count > 0').toBe(true);
  for (const k of ['totalDurationNs', 'promptEvalDurationNs', 'evalDurationNs'] as const) {
    expect(u[k] ?? 0, k).toBeGreaterThan(0);
  }
  expect(u.totalDurationNs ?? 0).toBeGreaterThanOrEqual(
    (u.promptEvalDurationNs ?? 0) + (u.evalDurationNs ?? 0),
  );
}

/** keep_alive of the cache checks' calls: the model stays loaded between them, whatever the server's default. */
const KEEP = '30m';

const ms = (ns: number | undefined) => (ns === undefined ? '?' : `${(ns / 1e6).toFixed(0)} ms`);
const figures = (label: string, r: ChatResponse) =>
  `${label}: prompt_eval_count ${r.usage.promptEvalCount ?? '?'}, prompt eval ${ms(r.usage.promptEvalDurationNs)}, ` +
  `load ${ms(r.usage.loadDurationNs)}, total ${ms(r.usage.totalDurationNs)}`;

/**
 * A cache check's first request (a fresh long prompt tagged `tag`, kept loaded with `KEEP`) and how it calls: through
 * the Ollama adapter, the double told to answer "OK." each time.
 */
function cacheCheck(
  t: ContractTarget,
  tag: string,
): { request: ChatRequest; chat: (r: ChatRequest) => Promise<ChatResponse> } {
  const model = ollama(t);
  const request: ChatRequest = {
    model: t.model,
    messages: longPrompt(tag),
    options: OPTIONS,
    keepAlive: KEEP,
    stream: false,
  };
  return {
    request,
    chat: (r) => {
      t.arrange({ text: 'OK.' });
      return model.chat(r);
    },
  };
}

/**
 * A cache check's timing: the `cached` call must spend less than 1/`divisor` of the uncached call's prompt evaluation.
 *
 * A model server keeps its prompt cache in one slot per parallel request (Ollama with `OLLAMA_NUM_PARALLEL=1`, as in
 * CI), so one request of another client between the two calls (any prompt), or a reload of the model (another
 * client's num_ctx, keep_alive 0, an expiry), empties that slot and the second call evaluates the whole prompt again:
 * the figures then say nothing about how the server reports a cached prompt. The reply does not tell (after another
 * client's request, load_duration is as small as a warm call's). And on a CPU shared far beyond its cores, a few
 * tokens can take half as long as hundreds (seen at a load average of 30 on 2 cores: 21 new tokens from the cache's
 * end in 9.8 s against 489 in 19 s; the server's log showed the cache used). So a miss is measured once more, back
 * to back, right after the miss put the prompt back in the slot. A server that never times only what it evaluated
 * fails both measurements (a double with a client between every two calls shows it), and the failure names every
 * figure. `counts` holds on every measurement, the missed one included.
 */
async function cacheTimed(
  t: ContractTarget,
  check: {
    what: string;
    uncached: ChatResponse;
    divisor: number;
    cached: () => Promise<ChatResponse>;
    counts: (reply: ChatResponse) => void;
  },
): Promise<void> {
  const bound = (check.uncached.usage.promptEvalDurationNs ?? 0) / check.divisor;
  const seen = [figures('uncached', check.uncached)];
  for (const attempt of [1, 2]) {
    const reply = await check.cached();
    check.counts(reply);
    seen.push(figures(`${check.what}, measurement ${attempt}`, reply));
    if ((reply.usage.promptEvalDurationNs ?? 0) < bound) {
      if (attempt > 1)
        console.warn(
          `[contract] ${t.name}: ${check.what} missed its bound once and was measured again; ${seen.join('; ')}`,
        );
      return;
    }
  }
  const ps = await fetch(`${t.url}/api/ps`)
    .then((r) => r.text())
    .catch((e: unknown) => String(e));
  expect.fail(
    `${check.what} took as long as a prompt evaluated from scratch (bound: ${ms(bound)}, 1/${check.divisor} ` +
      `of the uncached one), twice in a row; ${seen.join('; ')}; /api/ps afterwards: ${ps}`,
  );
}

/**
 * A prompt of several hundred tokens (about 450 with SmolLM2's tokenizer), so that evaluating it once takes clearly
 * longer than reusing it from the cache, on any machine.
 */
export function longPrompt(tag: string): ChatMessage[] {
  const facts = Array.from(
    { length: 24 },
    (_, i) => `Fact ${i}: a turtle can dig block number ${i} and place it back.`,
  ).join(' ');
  return [
    { role: 'system', content: `You are a terse assistant. (${tag})` },
    { role: 'user', content: `Here is a list of facts about ComputerCraft. ${facts}\nSay OK.` },
  ];
}

const ask = (content: string): ChatMessage[] => [{ role: 'user', content }];

/** The structured-output checks' schema: an answer and a count, both required. */
const ANSWER_SCHEMA = {
  type: 'object',
  properties: { answer: { type: 'string' }, count: { type: 'integer' } },
  required: ['answer', 'count'],
};

export const CONTRACT: ContractCheck[] = [
  {
    name: 'answers /api/chat in one object with the final figures (done_reason, counts, durations in ns)',
    async run(t) {
      t.arrange({ text: 'Hello there, crafter!' });
      const reply = await ollama(t).chat({
        model: t.model,
        messages: ask('Say hello in three words.'),
        options: OPTIONS,
        stream: false,
      });
      expect(reply.message.role).toBe('assistant');
      expect(reply.message.content.trim().length).toBeGreaterThan(0);
      expect(reply.message.toolCalls).toEqual([]);
      expectFigures(reply);
    },
  },
  {
    name: 'streams deltas that add up to the reply, then the final figures',
    async run(t) {
      t.arrange({ text: 'One two three four five six seven eight.' });
      const deltas: ChatDelta[] = [];
      const reply = await ollama(t).chat({
        model: t.model,
        messages: ask('Count from one to eight in words.'),
        options: OPTIONS,
        onDelta: (d) => deltas.push(d),
      });
      expect(deltas.map((d) => d.content ?? '').join('')).toBe(reply.message.content);
      expect(deltas.filter((d) => (d.content ?? '') !== '').length).toBeGreaterThan(1);
      expectFigures(reply);
    },
  },
  {
    name: 'stops at num_predict tokens with done_reason "length"',
    async run(t) {
      t.arrange({
        text: 'This reply is much longer than four tokens, so the server must cut it short here.',
      });
      const reply = await ollama(t).chat({
        model: t.model,
        messages: ask('Tell me a long story about a turtle that digs a tunnel.'),
        options: { ...OPTIONS, numPredict: 4 },
        stream: false,
      });
      expect(reply.usage.doneReason).toBe('length');
      expect(reply.usage.evalCount).toBe(4);
    },
  },
  {
    name: 'constrains the reply to a JSON Schema given as format',
    async run(t) {
      t.arrange({ json: { answer: 'eight legs', count: 8 } });
      const reply = await ollama(t).chat({
        model: t.model,
        messages: ask('How many legs has a spider? Answer in JSON.'),
        format: ANSWER_SCHEMA,
        options: { ...OPTIONS, numPredict: 200 },
        stream: false,
      });
      expect(reply.usage.doneReason).toBe('stop');
      const value = JSON.parse(reply.message.content) as Record<string, unknown>;
      expect(typeof value['answer']).toBe('string');
      expect(Number.isInteger(value['count'])).toBe(true);
    },
  },
  {
    name: 'reports the whole prompt as prompt_eval_count even when it came from the cache, and times only what it evaluated',
    async run(t) {
      // A fresh prompt (the tag differs per target run), then the identical request: the cache holds all of it.
      const { request, chat } = cacheCheck(t, `${t.name} ${Date.now()}`);
      const first = await chat(request);
      expect(first.usage.promptEvalCount).toBeGreaterThan(250);
      await cacheTimed(t, {
        what: 'the repeated prompt',
        uncached: first,
        divisor: 3,
        cached: () => chat(request),
        counts: (again) =>
          expect(again.usage.promptEvalCount, 'the whole prompt, cached or not').toBe(
            first.usage.promptEvalCount,
          ),
      });
    },
  },
  {
    name: 'counts the whole prompt of a request that extends the previous one, evaluating only the new part',
    async run(t) {
      const { request, chat } = cacheCheck(t, `extend ${t.name} ${Date.now()}`);
      const first = await chat(request);
      const extended: ChatMessage[] = [
        ...request.messages,
        { role: 'assistant', content: first.message.content },
        { role: 'user', content: 'Now say DONE, and nothing else.' },
      ];
      let warm = false;
      await cacheTimed(t, {
        what: 'the extended prompt',
        uncached: first,
        divisor: 2,
        cached: async () => {
          // Measured once more: the earlier turns go back into the slot first, as the first call put them there.
          if (warm) await chat(request);
          warm = true;
          return chat({ ...request, messages: extended });
        },
        counts: (next) => {
          const added = (next.usage.promptEvalCount ?? 0) - (first.usage.promptEvalCount ?? 0);
          expect(added, 'the new turns are counted on top of the whole earlier prompt').toBeGreaterThan(5);
          expect(added).toBeLessThan((first.usage.promptEvalCount ?? 0) / 2);
        },
      });
    },
  },
  {
    name: 'keeps the model loaded for keep_alive, lists it in /api/ps, and unloads it at keep_alive 0',
    async run(t) {
      const model = ollama(t);
      t.arrange({ text: 'Hi.' }, 2);
      const before = Date.now();
      await model.chat({
        model: t.model,
        messages: ask('Hi'),
        options: OPTIONS,
        keepAlive: '10m',
        stream: false,
      });
      const [entry] = (await psUntil(t, isLoaded(t), t.model)).filter((m) => sameName(m.name, t.model));
      const expires = Date.parse(entry?.expires_at ?? '');
      expect(expires - before).toBeGreaterThan(9 * 60_000);
      expect(expires - before).toBeLessThan(11 * 60_000);
      await model.chat({
        model: t.model,
        messages: ask('Hi'),
        options: OPTIONS,
        keepAlive: 0,
        stream: false,
      });
      await psUntil(t, (m) => !isLoaded(t)(m), `${t.model} unloaded`);
    },
  },
  {
    name: 'loads the model with the num_ctx of the request (a new num_ctx reloads it)',
    async run(t) {
      const model = ollama(t);
      t.arrange({ text: 'Hi.' }, 2);
      await model.chat({
        model: t.model,
        messages: ask('Hi'),
        options: { ...OPTIONS, numCtx: 1024 },
        stream: false,
      });
      let [entry] = (await loaded(t)).filter((m) => sameName(m.name, t.model));
      expect(entry?.context_length).toBe(1024);
      const reply = await model.chat({
        model: t.model,
        messages: ask('Hi'),
        options: { ...OPTIONS, numCtx: 2048 },
        stream: false,
      });
      [entry] = (await loaded(t)).filter((m) => sameName(m.name, t.model));
      expect(entry?.context_length).toBe(2048);
      expect(reply.usage.loadDurationNs ?? 0).toBeGreaterThan(0);
    },
  },
  {
    name: 'cuts a prompt longer than num_ctx to fit by default, and refuses it with truncate:false (context_overflow)',
    async run(t) {
      const model = ollama(t);
      const messages = longPrompt(`overflow ${t.name} ${Date.now()}`);
      t.arrange({ text: 'OK.' });
      const request: ChatRequest = {
        model: t.model,
        messages,
        options: { ...OPTIONS, numCtx: 256, numPredict: 4 },
        stream: false,
      };
      const cut = await model.chat(request);
      expect(cut.usage.promptEvalCount ?? 0).toBeLessThanOrEqual(256);
      expect(cut.usage.promptEvalCount ?? 0).toBeGreaterThan(0);
      const refused = await failure(model.chat({ ...request, truncate: false }));
      expect(refused.code).toBe('context_overflow');
      expect(refused.retryable).toBe(false);
    },
  },
  {
    name: 'answers an unknown model with model_not_found on both APIs, naming the model',
    async run(t) {
      const missing = 'no-such-model-here:1b';
      const viaOllama = await failure(ollama(t).chat({ model: missing, messages: ask('hi'), stream: false }));
      expect(viaOllama.code).toBe('model_not_found');
      expect(viaOllama.message).toContain(missing);
      const viaOpenai = await failure(openai(t).chat({ model: missing, messages: ask('hi'), stream: false }));
      expect(viaOpenai.code).toBe('model_not_found');
      expect(viaOpenai.message).toContain(missing);
    },
  },
  {
    name: 'accepts tools on /api/chat and returns only well-formed calls of offered tools',
    async run(t) {
      t.arrange({ text: 'I would read the file first.' });
      const reply = await ollama(t).chat({
        model: t.model,
        messages: ask('Read the file /startup.lua for me.'),
        tools: [
          {
            name: 'fs_read',
            description: 'Read a file on the computer',
            parameters: { type: 'object', properties: { path: { type: 'string' } }, required: ['path'] },
          },
        ],
        options: { ...OPTIONS, numPredict: 60 },
        stream: false,
      });
      for (const call of reply.message.toolCalls) {
        expect(call.name).toBe('fs_read');
        expect(typeof call.arguments).toBe('object');
      }
      expectFigures(reply);
    },
  },
  {
    name: 'answers /v1/chat/completions (LM Studio clients) streamed and not, with usage equal to /api/chat counts',
    async run(t) {
      const messages = ask('Say hello in three words.');
      t.arrange({ text: 'Hello there, crafter!' }, 3);
      const native = await ollama(t).chat({ model: t.model, messages, options: OPTIONS, stream: false });
      const whole = await openai(t).chat({ model: t.model, messages, options: OPTIONS, stream: false });
      expect(whole.message.content.trim().length).toBeGreaterThan(0);
      expect(whole.usage.promptEvalCount).toBe(native.usage.promptEvalCount);
      expect(whole.usage.evalCount ?? 0).toBeGreaterThan(0);
      const deltas: ChatDelta[] = [];
      const streamed = await openai(t).chat({
        model: t.model,
        messages,
        options: OPTIONS,
        onDelta: (d) => deltas.push(d),
      });
      expect(deltas.map((d) => d.content ?? '').join('')).toBe(streamed.message.content);
      expect(streamed.usage.promptEvalCount).toBe(native.usage.promptEvalCount);
      const models = await getJson<{ data: { id: string }[] }>(t, '/v1/models');
      expect(models.data.some((m) => sameName(m.id, t.model))).toBe(true);
    },
  },
  {
    name: 'constrains /v1/chat/completions to a JSON Schema (response_format) and stops at max_tokens',
    async run(t) {
      t.arrange({ json: { answer: 'eight legs', count: 8 } });
      const reply = await openai(t).chat({
        model: t.model,
        messages: ask('How many legs has a spider? Answer in JSON.'),
        format: ANSWER_SCHEMA,
        options: { ...OPTIONS, numPredict: 200 },
        stream: false,
      });
      const value = JSON.parse(reply.message.content) as Record<string, unknown>;
      expect(typeof value['answer']).toBe('string');
      expect(Number.isInteger(value['count'])).toBe(true);
      t.arrange({
        text: 'This reply is much longer than four tokens, so the server must cut it short here.',
      });
      const cut = await openai(t).chat({
        model: t.model,
        messages: ask('Tell me a long story about a turtle that digs a tunnel.'),
        options: { ...OPTIONS, numPredict: 4 },
        stream: false,
      });
      expect(cut.usage.doneReason).toBe('length');
      expect(cut.usage.evalCount).toBe(4);
    },
  },
];
