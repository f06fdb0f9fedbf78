import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import type { ChatDelta, ChatRequest } from './chat-model.js';
import { failure } from '../test/support/failure.js';
import { OpenAICompatibleChatModel } from './openai-compatible-chat-model.js';

const FAST_RETRY = { retries: 2, minDelayMs: 1, maxDelayMs: 2 };
const ask = (extra: Partial<ChatRequest> = {}): ChatRequest => ({
  model: 'm',
  messages: [{ role: 'user', content: 'hello' }],
  ...extra,
});

let fake: FakeOllama;
let model: OpenAICompatibleChatModel;

beforeEach(async () => {
  fake = await startFakeOllama();
  model = new OpenAICompatibleChatModel({ baseUrl: `${fake.url}/v1`, retry: FAST_RETRY });
});

afterEach(async () => {
  await fake.close();
});

/** A one-off raw HTTP server for replies the fake deliberately never produces (bad tool JSON, odd servers). */
async function rawServer(
  handler: (body: Record<string, unknown>) => { status?: number; type: string; text: string },
): Promise<{ url: string; close: () => Promise<void> }> {
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      const body =
        chunks.length > 0
          ? (JSON.parse(Buffer.concat(chunks).toString('utf8')) as Record<string, unknown>)
          : {};
      const reply = handler(body);
      res.writeHead(reply.status ?? 200, { 'Content-Type': reply.type });
      res.end(reply.text);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}/v1`,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
}

describe('OpenAICompatibleChatModel — happy path over fetch', () => {
  it('streams SSE content deltas and resolves with the whole reply and usage (guards against lost tokens or missing usage)', async () => {
    fake.script('m', [{ content: 'Hello there, crafter!', promptEvalCount: 11, evalCount: 5 }]);
    const deltas: ChatDelta[] = [];
    const reply = await model.chat(ask({ onDelta: (d) => deltas.push(d) }));
    expect(reply.message.content).toBe('Hello there, crafter!');
    expect(deltas.map((d) => d.content ?? '').join('')).toBe('Hello there, crafter!');
    expect(deltas.length).toBeGreaterThan(1);
    expect(reply.usage).toEqual({ doneReason: 'stop', promptEvalCount: 11, evalCount: 5 });
    expect(fake.chatRequests()[0]).toMatchObject({
      path: '/v1/chat/completions',
      body: { model: 'm', stream: true, stream_options: { include_usage: true } },
    });
  });

  it('assembles tool calls streamed in pieces by index and parses their JSON arguments (guards against truncated or merged calls)', async () => {
    const calls = [
      { name: 'fs_write', arguments: { path: '/startup.lua', content: 'print("hi")\n' } },
      { name: 'turtle_turn', arguments: { direction: 'left' } },
    ];
    fake.script('m', [{ toolCalls: calls }]);
    const deltas: ChatDelta[] = [];
    const reply = await model.chat(
      ask({
        tools: [{ name: 'fs_write', description: 'write a file', parameters: { type: 'object' } }],
        onDelta: (d) => deltas.push(d),
      }),
    );
    expect(reply.message.toolCalls.map(({ name, arguments: a }) => ({ name, arguments: a }))).toEqual(calls);
    expect(reply.message.toolCalls.every((c) => typeof c.id === 'string' && c.id !== '')).toBe(true);
    expect(reply.usage.doneReason).toBe('tool_calls');
    expect(deltas.flatMap((d) => d.toolCalls ?? [])).toEqual(reply.message.toolCalls);
    expect(fake.chatRequests()[0]?.body).toMatchObject({
      tools: [
        {
          type: 'function',
          function: { name: 'fs_write', description: 'write a file', parameters: { type: 'object' } },
        },
      ],
    });
  });

  it('supports stream:false with tool calls, reasoning and usage (guards against a non-streaming path that drops fields)', async () => {
    fake.script('m', [
      {
        content: 'thinking done',
        thinking: 'hmm',
        toolCalls: [{ id: 'call_9', name: 'dig', arguments: {} }],
      },
    ]);
    const reply = await model.chat(ask({ stream: false }));
    expect(reply.message).toEqual({
      role: 'assistant',
      content: 'thinking done',
      thinking: 'hmm',
      toolCalls: [{ id: 'call_9', name: 'dig', arguments: {} }],
    });
    expect(reply.usage.doneReason).toBe('tool_calls');
    expect(reply.usage.promptEvalCount).toBeGreaterThan(0);
    expect(fake.chatRequests()[0]?.body).toMatchObject({ stream: false });
    expect(fake.chatRequests()[0]?.body).not.toHaveProperty('stream_options');
  });

  it('sends a JSON Schema format as response_format json_schema, json as json_object, and maps options (guards against unconstrained executor output)', async () => {
    const strictModel = new OpenAICompatibleChatModel({
      baseUrl: `${fake.url}/v1/`,
      schemaName: 'executor_call',
    });
    fake.script('m', [{ json: { tool: 'noop' } }, { json: {} }, { json: {} }]);
    const schema = {
      type: 'object',
      properties: { tool: { type: 'string' } },
      required: ['tool'],
      additionalProperties: false,
    };
    const reply = await strictModel.chat(
      ask({
        format: schema,
        options: { temperature: 0.2, topP: 0.5, seed: 3, stop: ['END'], numPredict: 64, numCtx: 4096 },
        think: 'high',
      }),
    );
    expect(JSON.parse(reply.message.content)).toEqual({ tool: 'noop' });
    const body = fake.chatRequests()[0]?.body as Record<string, unknown>;
    expect(body).toMatchObject({
      response_format: { type: 'json_schema', json_schema: { name: 'executor_call', schema, strict: true } },
      temperature: 0.2,
      top_p: 0.5,
      seed: 3,
      stop: ['END'],
      max_tokens: 64,
      reasoning_effort: 'high',
    });
    expect(body).not.toHaveProperty('num_ctx');
    await strictModel.chat(ask({ format: 'json' }));
    expect(fake.chatRequests()[1]?.body).toMatchObject({ response_format: { type: 'json_object' } });
    // Ollama's "no limit" (-1) has no OpenAI spelling: no max_tokens, rather than one the server refuses.
    await strictModel.chat(ask({ format: 'json', options: { numPredict: -1 } }));
    expect(fake.chatRequests()[2]?.body).not.toHaveProperty('max_tokens');
  });

  it('links tool results to calls with ids, making ids up for histories that have none (guards against servers rejecting tool messages)', async () => {
    fake.script('m', ['ok']);
    await model.chat(
      ask({
        messages: [
          { role: 'system', content: 'sys' },
          { role: 'user', content: 'go' },
          {
            role: 'assistant',
            content: '',
            toolCalls: [
              { name: 'dig', arguments: { dir: 'up' } },
              { id: 'given', name: 'look', arguments: {} },
            ],
          },
          { role: 'tool', content: 'saw stone', toolName: 'look', toolCallId: 'given' },
          { role: 'tool', content: 'dug', toolName: 'dig' },
        ],
      }),
    );
    expect(fake.chatRequests()[0]?.body).toMatchObject({
      messages: [
        { role: 'system', content: 'sys' },
        { role: 'user', content: 'go' },
        {
          role: 'assistant',
          content: null,
          tool_calls: [
            { id: 'call_2_0', type: 'function', function: { name: 'dig', arguments: '{"dir":"up"}' } },
            { id: 'given', type: 'function', function: { name: 'look', arguments: '{}' } },
          ],
        },
        { role: 'tool', content: 'saw stone', tool_call_id: 'given' },
        { role: 'tool', content: 'dug', tool_call_id: 'call_2_0' },
      ],
    });
  });

  it('does not send numCtx, keepAlive or a boolean think, and warns once per field (guards against a context size silently ignored)', async () => {
    const warnings: { obj: Record<string, unknown>; msg: string | undefined }[] = [];
    const logged = new OpenAICompatibleChatModel({
      baseUrl: `${fake.url}/v1`,
      retry: FAST_RETRY,
      logger: { warn: (obj, msg) => warnings.push({ obj, msg }), debug: () => undefined },
    });
    fake.script('m', ['one', 'two', 'three']);
    const big = ask({ options: { numCtx: 32768, temperature: 0.1 }, keepAlive: '30m', think: true });
    await logged.chat(big);
    await logged.chat(big);
    const body = (fake.chatRequests()[0]?.body ?? {}) as Record<string, unknown>;
    expect(body['temperature']).toBe(0.1);
    for (const key of ['num_ctx', 'options', 'keep_alive', 'think', 'reasoning_effort'])
      expect(body).not.toHaveProperty(key);
    expect(warnings).toHaveLength(1);
    expect(warnings[0]?.obj).toMatchObject({
      provider: 'openai-compatible',
      model: 'm',
      not_sent: ['numCtx', 'keepAlive', 'think'],
    });
    expect(warnings[0]?.msg).toMatch(/--ctx-size/);
    await logged.chat(ask({ think: 'low' }));
    expect((fake.chatRequests()[2]?.body as Record<string, unknown>)['reasoning_effort']).toBe('low');
    expect(warnings).toHaveLength(1);
  });

  it('sends the API key as a bearer token (guards against unauthenticated calls to hosted servers)', async () => {
    const keyed = new OpenAICompatibleChatModel({ baseUrl: `${fake.url}/v1`, apiKey: 'sk-test-123' });
    fake.script('m', ['ok', 'ok']);
    await keyed.chat(ask());
    expect(fake.chatRequests()[0]?.headers['authorization']).toBe('Bearer sk-test-123');
    await model.chat(ask());
    expect(fake.chatRequests()[1]?.headers['authorization']).toBeUndefined();
  });

  it('checks models via GET /models with normalised names (guards against a missing model going unnoticed)', async () => {
    fake.script('qwen2.5:latest', ['x']);
    const result = await model.checkModels(['qwen2.5', 'absent:1b']);
    expect(result).toEqual({
      ok: true,
      value: {
        provider: 'openai-compatible',
        host: `${fake.url}/v1`,
        present: ['qwen2.5'],
        missing: ['absent:1b'],
        available: ['qwen2.5:latest'],
      },
    });
  });

  it('rejects a baseUrl that is not http(s) at construction (guards against a confusing first-call failure)', () => {
    expect(() => new OpenAICompatibleChatModel({ baseUrl: 'localhost:1234' })).toThrow(TypeError);
    expect(() => new OpenAICompatibleChatModel({ baseUrl: 'not a url' })).toThrow(/invalid baseUrl/);
  });
});

describe('OpenAICompatibleChatModel — failures', () => {
  it('retries refused connections then fails with "connection" (guards against hanging when the server is down)', async () => {
    const closed = await startFakeOllama();
    const url = closed.url;
    await closed.close();
    const down = new OpenAICompatibleChatModel({ baseUrl: `${url}/v1`, retry: FAST_RETRY });
    const error = await failure(down.chat(ask()));
    expect(error.code).toBe('connection');
    expect(error.attempts).toBe(3);
  });

  it('retries 5xx and recovers, and gives up with "server" when it persists (guards against transient errors failing steps)', async () => {
    fake.script('m', ['recovered']);
    fake.setFault({ status: 500 }, 1);
    expect((await model.chat(ask())).message.content).toBe('recovered');
    fake.setFault({ status: 502, message: 'bad gateway' });
    const error = await failure(model.chat(ask()));
    expect(error.code).toBe('server');
    expect(error.status).toBe(502);
    expect(error.message).toContain('bad gateway');
  });

  it('reports 404 as "model_not_found" naming the model, without retrying (guards against retrying a hopeless call)', async () => {
    const error = await failure(model.chat(ask({ model: 'llama3.2:1b' })));
    expect(error.code).toBe('model_not_found');
    expect(error.message).toContain('"llama3.2:1b"');
    expect(error.message).toContain('ollama pull llama3.2:1b');
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('maps 401 to "unauthorized" and 429 to a retried "rate_limited" (guards against retrying a bad key / not retrying a throttle)', async () => {
    fake.script('m', ['ok']);
    fake.setFault({ status: 401, message: 'invalid api key' });
    const error = await failure(model.chat(ask()));
    expect(error.code).toBe('unauthorized');
    expect(fake.chatRequests()).toHaveLength(1);
    fake.setFault({ status: 429 }, 1);
    expect((await model.chat(ask())).message.content).toBe('ok');
    expect(fake.chatRequests()).toHaveLength(3);
  });

  it('fails with "stream_interrupted" when the SSE stream drops after deltas, without replaying (guards against a partial reply used as complete)', async () => {
    fake.script('m', [{ content: 'a b c d e', fault: { dropAfterChunks: 3 } }, 'unused']);
    const deltas: ChatDelta[] = [];
    const error = await failure(model.chat(ask({ onDelta: (d) => deltas.push(d) })));
    expect(error.code).toBe('stream_interrupted');
    expect(deltas.length).toBeGreaterThan(0);
    expect(fake.chatRequests()).toHaveLength(1);
  });

  it('fails with "stream_interrupted" when the stream ends without finish_reason or [DONE] (guards against accepting a truncated reply)', async () => {
    fake.script('m', [{ content: 'a b c d', fault: { truncateAfterChunks: 3 } }]);
    const error = await failure(model.chat(ask({ onDelta: () => undefined })));
    expect(error.code).toBe('stream_interrupted');
  });

  it('fails with "bad_response" on a malformed SSE data line (guards against silently skipping tokens)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { malformedAfterChunks: 2 } }]);
    const error = await failure(model.chat(ask({ onDelta: () => undefined })));
    expect(error.code).toBe('bad_response');
    expect(error.message).toMatch(/malformed SSE/);
  });

  it('maps a mid-stream error event to "server" (guards against an error read as content)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { errorAfterChunks: 2, message: 'model crashed' } }]);
    const error = await failure(model.chat(ask({ onDelta: () => undefined })));
    expect(error.code).toBe('server');
    expect(error.message).toContain('model crashed');
  });

  it('times out a stalled stream and aborts the HTTP request (guards against a hung server blocking a task)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { stallAfterChunks: 2 } }]);
    const error = await failure(model.chat(ask({ timeoutMs: 150 })));
    expect(error.code).toBe('timeout');
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
  });

  it('aborts via AbortSignal and the server sees the connection close (guards against orphaned generations on cancel)', async () => {
    fake.script('m', [{ content: 'a b c', fault: { stallAfterChunks: 3 } }]);
    const controller = new AbortController();
    const pending = failure(
      model.chat(
        ask({
          signal: controller.signal,
          onDelta: () => controller.abort(),
        }),
      ),
    );
    const error = await pending;
    expect(error.code).toBe('aborted');
    expect(await fake.waitForOutcome(0)).toBe('client_closed');
  });

  it('turns tool call arguments that are not valid JSON into "bad_response" naming the tool, streamed or not (guards against a crash or a silently empty call)', async () => {
    const broken = { name: 'fs_write', rawArguments: '{"path": "/a", ' };
    fake.script('m', [{ toolCalls: [broken] }, { toolCalls: [broken] }]);
    for (const stream of [false, true]) {
      const error = await failure(model.chat(ask({ stream })));
      expect(error.code).toBe('bad_response');
      expect(error.message).toContain('fs_write');
      expect(error.message).toContain('not valid JSON');
    }
    expect(fake.chatRequests()).toHaveLength(2);
  });

  it('treats empty tool arguments as {} (guards against rejecting no-argument tools)', async () => {
    fake.script('m', [{ toolCalls: [{ name: 'look', rawArguments: '' }] }]);
    const reply = await model.chat(ask());
    expect(reply.message.toolCalls).toEqual([
      { id: expect.any(String) as string, name: 'look', arguments: {} },
    ]);
  });

  it('accepts reasoning_content deltas and a stream without [DONE] that has a finish_reason (guards against llama.cpp/vLLM dialects failing)', async () => {
    const sse = [
      {
        choices: [
          { index: 0, delta: { role: 'assistant', reasoning_content: 'let me see' }, finish_reason: null },
        ],
      },
      { choices: [{ index: 0, delta: { content: 'answer' }, finish_reason: null }] },
      {
        choices: [{ index: 0, delta: {}, finish_reason: 'stop' }],
        usage: { prompt_tokens: 4, completion_tokens: 2, total_tokens: 6 },
      },
    ]
      .map(
        (c) =>
          `data: ${JSON.stringify({ id: 'x', object: 'chat.completion.chunk', created: 1, model: 'm', ...c })}\n\n`,
      )
      .join('');
    const server = await rawServer(() => ({ type: 'text/event-stream', text: `: keep-alive\n\n${sse}` }));
    try {
      const odd = new OpenAICompatibleChatModel({ baseUrl: server.url, retry: FAST_RETRY });
      const deltas: ChatDelta[] = [];
      const reply = await odd.chat(ask({ onDelta: (d) => deltas.push(d) }));
      expect(reply.message).toEqual({
        role: 'assistant',
        content: 'answer',
        thinking: 'let me see',
        toolCalls: [],
      });
      expect(reply.usage).toEqual({ doneReason: 'stop', promptEvalCount: 4, evalCount: 2 });
      expect(deltas).toEqual([{ thinking: 'let me see' }, { content: 'answer' }]);
    } finally {
      await server.close();
    }
  });
});
