/**
 * Conformance: the fake server's payloads have the same shape (field names, JSON types) as recorded examples of the
 * real Ollama and OpenAI APIs (fixtures/, written from their documentation), so the test double cannot drift.
 */
import { readFileSync } from 'node:fs';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startFakeOllama, type FakeOllama } from './fake-ollama.js';
import { compareShape, type CompareShapeOptions } from './shape.js';

function fixture(name: string): unknown {
  return JSON.parse(readFileSync(new URL(`../fixtures/${name}.json`, import.meta.url), 'utf8')) as unknown;
}

/** Tool-call arguments and model_info are free-form maps in the real APIs: compare their type only. */
const OLLAMA: CompareShapeOptions = {
  opaquePaths: ['message.tool_calls[].function.arguments', 'model_info'],
};

/** Fields OpenAI documents that Ollama's /v1 (which the fake imitates) leaves out. */
const OPENAI: CompareShapeOptions = {
  optionalPaths: [
    'service_tier',
    'choices[].logprobs',
    'choices[].message.refusal',
    'choices[].message.annotations',
    'usage.prompt_tokens_details',
    'usage.completion_tokens_details',
  ],
  nullablePaths: ['error.code'],
};

let fake: FakeOllama;

beforeAll(async () => {
  fake = await startFakeOllama({ installed: ['llama3.2:3b'] });
});

afterAll(async () => {
  await fake.close();
});

async function post(path: string, body: unknown): Promise<Response> {
  return fetch(`${fake.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify(body),
  });
}

async function ndjson(path: string, body: unknown): Promise<Record<string, unknown>[]> {
  const res = await post(path, body);
  expect(res.headers.get('content-type')).toBe('application/x-ndjson');
  const text = await res.text();
  expect(text.endsWith('\n')).toBe(true);
  return text
    .split('\n')
    .filter((l) => l !== '')
    .map((l) => JSON.parse(l) as Record<string, unknown>);
}

async function sse(body: unknown): Promise<(Record<string, unknown> | '[DONE]')[]> {
  const res = await post('/v1/chat/completions', body);
  expect(res.headers.get('content-type')).toBe('text/event-stream');
  const text = await res.text();
  const events = text.split('\n\n').filter((e) => e !== '');
  return events.map((e) => {
    expect(e.startsWith('data: ')).toBe(true);
    const data = e.slice('data: '.length);
    return data === '[DONE]' ? '[DONE]' : (JSON.parse(data) as Record<string, unknown>);
  });
}

function deltaOf(chunk: Record<string, unknown> | '[DONE]'): Record<string, unknown> | undefined {
  if (chunk === '[DONE]') return undefined;
  const choices = chunk['choices'] as { delta: Record<string, unknown> }[];
  return choices[0]?.delta;
}

describe('compareShape', () => {
  it('finds missing fields, extra fields and type changes, with their paths (guards against a conformance check that cannot fail)', () => {
    const diffs = compareShape(
      { a: 1, b: { c: 'x' }, list: [{ d: true }] },
      { a: '1', b: {}, list: [{ d: true, e: 2 }], extra: null },
    );
    expect(diffs).toEqual([
      'a: expected number, got string',
      'b.c: missing (the real API sends it)',
      "list[].e: extra field (not in the real API's payload)",
      "extra: extra field (not in the real API's payload)",
    ]);
    expect(
      compareShape(
        { a: 1, o: { k: 1 } },
        { o: { other: 'x' } },
        { optionalPaths: ['a'], opaquePaths: ['o'] },
      ),
    ).toEqual([]);
    expect(compareShape({ a: 1 }, { a: null }, { optionalPaths: ['a'] })).toEqual([
      'a: expected number, got null',
    ]);
    expect(compareShape({ a: 'x' }, { a: null }, { nullablePaths: ['a'] })).toEqual([]);
    expect(compareShape({ a: 'x' }, { a: 1 }, { nullablePaths: ['a'] })).toEqual([
      'a: expected string, got number',
    ]);
  });
});

describe('fake Ollama /api conforms to the recorded Ollama payloads', () => {
  it('streams /api/chat chunks and a final chunk shaped like the real ones (guards against NDJSON drift)', async () => {
    fake.script('chat', ['Hello world']);
    const lines = await ndjson('/api/chat', { model: 'chat', messages: [{ role: 'user', content: 'hi' }] });
    expect(lines.length).toBeGreaterThan(2);
    for (const line of lines.slice(0, -1))
      expect(compareShape(fixture('ollama/chat-stream-chunk'), line, OLLAMA)).toEqual([]);
    expect(compareShape(fixture('ollama/chat-stream-final'), lines.at(-1), OLLAMA)).toEqual([]);
  });

  it('streams thinking and tool-call chunks shaped like the real ones (guards against drift in the fields the agent reads)', async () => {
    fake.script('think', [
      { thinking: 'The user asks', toolCalls: [{ name: 'get_weather', arguments: { city: 'Tokyo' } }] },
    ]);
    const lines = await ndjson('/api/chat', {
      model: 'think',
      messages: [{ role: 'user', content: 'weather?' }],
      think: true,
    });
    const thinking = lines.filter((l) => (l['message'] as { thinking?: string }).thinking !== undefined);
    const tools = lines.filter((l) => (l['message'] as { tool_calls?: unknown }).tool_calls !== undefined);
    expect(thinking.length).toBeGreaterThan(0);
    expect(tools).toHaveLength(1);
    for (const t of thinking)
      expect(compareShape(fixture('ollama/chat-stream-thinking-chunk'), t, OLLAMA)).toEqual([]);
    expect(compareShape(fixture('ollama/chat-stream-tool-chunk'), tools[0], OLLAMA)).toEqual([]);
  });

  it('answers stream:false with one object shaped like the real reply, with and without tool calls (guards against JSON reply drift)', async () => {
    fake.script('whole', [
      { json: { age: 22 } },
      { toolCalls: [{ name: 'get_weather', arguments: { city: 'Tokyo' } }] },
    ]);
    const plain = (await (
      await post('/api/chat', { model: 'whole', messages: [], stream: false, format: 'json' })
    ).json()) as unknown;
    expect(compareShape(fixture('ollama/chat-nonstream'), plain, OLLAMA)).toEqual([]);
    const withTools = (await (
      await post('/api/chat', { model: 'whole', messages: [], stream: false })
    ).json()) as unknown;
    expect(compareShape(fixture('ollama/chat-nonstream-tools'), withTools, OLLAMA)).toEqual([]);
  });

  it('answers /api/tags, /api/show and /api/version like the real server (guards against inventory drift)', async () => {
    const tags = (await (await fetch(`${fake.url}/api/tags`)).json()) as unknown;
    expect(compareShape(fixture('ollama/tags'), tags, OLLAMA)).toEqual([]);
    const show = (await (await post('/api/show', { model: 'llama3.2:3b' })).json()) as unknown;
    expect(compareShape(fixture('ollama/show'), show, OLLAMA)).toEqual([]);
    const version = (await (await fetch(`${fake.url}/api/version`)).json()) as unknown;
    expect(compareShape(fixture('ollama/version'), version, OLLAMA)).toEqual([]);
  });

  it('sends errors as {"error": string}, also mid-stream (guards against error-body drift)', async () => {
    const res = await post('/api/chat', { model: 'missing-model', messages: [] });
    expect(res.status).toBe(404);
    expect(res.headers.get('content-type')).toMatch(/^application\/json/);
    expect(compareShape(fixture('ollama/error'), await res.json(), OLLAMA)).toEqual([]);
    fake.script('broken', [{ content: 'a b c', fault: { errorAfterChunks: 1 } }]);
    const lines = await ndjson('/api/chat', { model: 'broken', messages: [] });
    expect(compareShape(fixture('ollama/error'), lines.at(-1), OLLAMA)).toEqual([]);
  });
});

describe('fake /v1 conforms to the recorded OpenAI payloads', () => {
  it('answers a non-streaming completion, with and without tool calls, like the reference (guards against completion drift)', async () => {
    fake.script('oa', [
      'Hello there',
      { toolCalls: [{ name: 'get_current_weather', arguments: { location: 'Boston' } }] },
    ]);
    const plain = (await (
      await post('/v1/chat/completions', { model: 'oa', messages: [] })
    ).json()) as unknown;
    expect(compareShape(fixture('openai/chat-completion'), plain, OPENAI)).toEqual([]);
    const tools = (await (
      await post('/v1/chat/completions', { model: 'oa', messages: [] })
    ).json()) as unknown;
    expect(compareShape(fixture('openai/chat-completion-tools'), tools, OPENAI)).toEqual([]);
  });

  it('streams role, content, tool-call, finish and usage chunks and [DONE] like the reference (guards against SSE drift)', async () => {
    fake.script('oas', [
      { content: 'Hi there', toolCalls: [{ name: 'get_weather', arguments: { location: 'Boston, MA' } }] },
    ]);
    const events = await sse({
      model: 'oas',
      messages: [],
      stream: true,
      stream_options: { include_usage: true },
    });
    expect(events.at(-1)).toBe('[DONE]');
    const chunks = events.filter((e): e is Record<string, unknown> => e !== '[DONE]');
    const [role, ...rest] = chunks;
    expect(compareShape(fixture('openai/chat-chunk-role'), role, OPENAI)).toEqual([]);
    // Content chunks: text before the finish (Ollama's finish chunk also carries content "", with its reason).
    const content = rest.filter(
      (c) =>
        deltaOf(c)?.['content'] !== undefined &&
        (c['choices'] as { finish_reason: unknown }[])[0]?.finish_reason == null,
    );
    const toolStart = rest.filter(
      (c) => (deltaOf(c)?.['tool_calls'] as { id?: string }[] | undefined)?.[0]?.id !== undefined,
    );
    const toolArgs = rest.filter((c) => {
      const calls = deltaOf(c)?.['tool_calls'] as { id?: string }[] | undefined;
      return calls !== undefined && calls[0]?.id === undefined;
    });
    const finish = rest.filter(
      (c) => (c['choices'] as { finish_reason: unknown }[])[0]?.finish_reason != null,
    );
    const usage = rest.filter((c) => c['usage'] !== undefined);
    expect(content.length).toBeGreaterThan(0);
    expect(toolStart).toHaveLength(1);
    expect(toolArgs.length).toBeGreaterThan(1);
    expect(finish).toHaveLength(1);
    expect(usage).toHaveLength(1);
    for (const c of content)
      expect(compareShape(fixture('openai/chat-chunk-content'), c, OPENAI)).toEqual([]);
    expect(compareShape(fixture('openai/chat-chunk-tool-start'), toolStart[0], OPENAI)).toEqual([]);
    for (const c of toolArgs)
      expect(compareShape(fixture('openai/chat-chunk-tool-args'), c, OPENAI)).toEqual([]);
    expect(compareShape(fixture('openai/chat-chunk-finish'), finish[0], OPENAI)).toEqual([]);
    expect(compareShape(fixture('openai/chat-chunk-usage'), usage[0], OPENAI)).toEqual([]);
    const args = toolArgs
      .map(
        (c) => (deltaOf(c)?.['tool_calls'] as { function: { arguments: string } }[])[0]?.function.arguments,
      )
      .join('');
    expect(JSON.parse(args)).toEqual({ location: 'Boston, MA' });
  });

  it('leaves the usage chunk out unless stream_options.include_usage is set (guards against a chunk real servers do not send)', async () => {
    fake.script('nousage', ['x']);
    const events = await sse({ model: 'nousage', messages: [], stream: true });
    expect(events.filter((e) => e !== '[DONE]' && e['usage'] !== undefined)).toEqual([]);
  });

  it('answers /v1/models and errors like the reference (guards against inventory and error drift)', async () => {
    const models = (await (await fetch(`${fake.url}/v1/models`)).json()) as unknown;
    expect(compareShape(fixture('openai/models'), models, OPENAI)).toEqual([]);
    const res = await post('/v1/chat/completions', { model: 'nope', messages: [] });
    expect(res.status).toBe(404);
    expect(compareShape(fixture('openai/error'), await res.json(), OPENAI)).toEqual([]);
  });
});
