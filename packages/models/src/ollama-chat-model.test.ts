import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatDelta } from './chat-model.js';
import { OllamaChatModel } from './ollama-chat-model.js';

const FAST_RETRY = { retries: 2, minDelayMs: 1, maxDelayMs: 2 };

let fake: FakeOllama;
let model: OllamaChatModel;

beforeEach(async () => {
  fake = await startFakeOllama();
  model = new OllamaChatModel({ host: fake.url, retry: FAST_RETRY });
});

afterEach(async () => {
  await fake.close();
});

describe('OllamaChatModel — happy path through the real ollama client', () => {
  it('streams content deltas in order and resolves with the whole reply (guards against lost or reordered tokens)', async () => {
    fake.script('qwen2.5:7b', [{ content: 'Hello there, crafter!', thinking: 'greet them' }]);
    const deltas: ChatDelta[] = [];
    const reply = await model.chat({
      model: 'qwen2.5:7b',
      messages: [{ role: 'user', content: 'hi' }],
      onDelta: (d) => deltas.push(d),
    });
    expect(reply.message.content).toBe('Hello there, crafter!');
    expect(reply.message.thinking).toBe('greet them');
    expect(reply.message.toolCalls).toEqual([]);
    const streamed = deltas.map((d) => d.content ?? '').join('');
    expect(streamed).toBe('Hello there, crafter!');
    expect(deltas.filter((d) => d.content !== undefined).length).toBeGreaterThan(1);
    expect(deltas.map((d) => d.thinking ?? '').join('')).toBe('greet them');
    expect(fake.chatRequests()[0]?.body).toMatchObject({ stream: true });
  });

  it('reports the final chunk figures as usage (guards against dropping metrics the step log needs)', async () => {
    fake.script('m', [{ content: 'ok', promptEvalCount: 42, evalCount: 7, doneReason: 'length' }]);
    const reply = await model.chat({ model: 'm', messages: [{ role: 'user', content: 'x' }] });
    expect(reply.usage).toEqual({
      doneReason: 'length',
      promptEvalCount: 42,
      evalCount: 7,
      totalDurationNs: expect.any(Number) as number,
      loadDurationNs: expect.any(Number) as number,
      promptEvalDurationNs: expect.any(Number) as number,
      evalDurationNs: expect.any(Number) as number,
    });
    expect(reply.usage.totalDurationNs).toBeGreaterThan(0);
  });

  it('supports stream:false with the same result shape (guards against a non-streaming path that drops fields)', async () => {
    fake.script('m', [{ content: 'whole reply', promptEvalCount: 3, evalCount: 2 }]);
    const deltas: ChatDelta[] = [];
    const reply = await model.chat({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      stream: false,
      onDelta: (d) => deltas.push(d),
    });
    expect(reply.message.content).toBe('whole reply');
    expect(reply.usage.promptEvalCount).toBe(3);
    expect(reply.usage.doneReason).toBe('stop');
    expect(fake.chatRequests()[0]?.body).toMatchObject({ stream: false });
    expect(deltas).toEqual([]);
  });

  it('sends tools and returns the tool calls, streamed and not (guards against losing native tool calling)', async () => {
    const call = { name: 'turtle_forward', arguments: { steps: 3 } };
    fake.script('m', [{ toolCalls: [call] }, { toolCalls: [call] }]);
    const tools = [
      {
        name: 'turtle_forward',
        description: 'Move forward',
        parameters: { type: 'object', properties: { steps: { type: 'integer' } }, required: ['steps'] },
      },
    ];
    const deltas: ChatDelta[] = [];
    const streamed = await model.chat({
      model: 'm',
      messages: [{ role: 'user', content: 'go' }],
      tools,
      onDelta: (d) => deltas.push(d),
    });
    expect(streamed.message.toolCalls).toEqual([call]);
    expect(deltas.flatMap((d) => d.toolCalls ?? [])).toEqual([call]);
    const whole = await model.chat({
      model: 'm',
      messages: [{ role: 'user', content: 'go' }],
      tools,
      stream: false,
    });
    expect(whole.message.toolCalls).toEqual([call]);
    expect(fake.chatRequests()[0]?.body).toMatchObject({
      tools: [
        {
          type: 'function',
          function: { name: 'turtle_forward', description: 'Move forward', parameters: tools[0]?.parameters },
        },
      ],
    });
  });

  it('maps every message role, tool results and history tool calls to the wire (guards against a model that never sees tool output)', async () => {
    fake.script('m', ['done']);
    await model.chat({
      model: 'm',
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'dig' },
        {
          role: 'assistant',
          content: '',
          toolCalls: [{ id: 'c1', name: 'dig', arguments: { dir: 'down' } }],
        },
        { role: 'tool', content: 'dug 1 block', toolName: 'dig', toolCallId: 'c1' },
      ],
    });
    expect(fake.chatRequests()[0]?.body).toMatchObject({
      messages: [
        { role: 'system', content: 'be brief' },
        { role: 'user', content: 'dig' },
        {
          role: 'assistant',
          content: '',
          tool_calls: [{ id: 'c1', function: { name: 'dig', arguments: { dir: 'down' } } }],
        },
        { role: 'tool', content: 'dug 1 block', tool_name: 'dig', tool_call_id: 'c1' },
      ],
    });
  });

  it('sends format (JSON Schema or "json"), options, keep_alive and think with Ollama field names (guards against silently ignored settings)', async () => {
    fake.script('m', [{ json: { tool: 'noop', args: {} } }, { json: { a: 1 } }]);
    const schema = { type: 'object', properties: { tool: { type: 'string' } }, required: ['tool'] };
    const reply = await model.chat({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      format: schema,
      options: { temperature: 0, numCtx: 8192, numPredict: 256, seed: 7, topP: 0.9, stop: ['</end>'] },
      keepAlive: '30m',
      think: 'low',
    });
    expect(JSON.parse(reply.message.content)).toEqual({ tool: 'noop', args: {} });
    expect(fake.chatRequests()[0]?.body).toMatchObject({
      format: schema,
      options: { temperature: 0, num_ctx: 8192, num_predict: 256, seed: 7, top_p: 0.9, stop: ['</end>'] },
      keep_alive: '30m',
      think: 'low',
    });
    await model.chat({
      model: 'm',
      messages: [{ role: 'user', content: 'x' }],
      format: 'json',
      think: false,
    });
    const second = fake.chatRequests()[1]?.body as Record<string, unknown>;
    expect(second['format']).toBe('json');
    expect(second['think']).toBe(false);
    expect(second).not.toHaveProperty('options');
    expect(second).not.toHaveProperty('keep_alive');
  });

  it('passes the fake request to a script function (guards against scripts that cannot react to the prompt)', async () => {
    fake.script(
      'echo',
      (req) => `you said: ${String((req.body['messages'] as { content: string }[])[0]?.content)}`,
    );
    const reply = await model.chat({ model: 'echo', messages: [{ role: 'user', content: 'ping' }] });
    expect(reply.message.content).toBe('you said: ping');
    expect(reply.model).toBe('echo');
  });
});
