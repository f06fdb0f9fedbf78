/**
 * One set of input limits (`server.inputLimits`: request size, prompt, context size and depth, command output) on
 * every entry point: HTTP, the ComputerCraft WebSocket and the Minecraft mod endpoint. Before, HTTP JSON nested
 * thousands deep was a 500 (a stack overflow in the store) and a prompt over the WebSocket had no bound at all (15 MiB
 * was accepted, stored and listed) while HTTP stopped at 1 MiB. Each refusal is a structured error that changes
 * nothing.
 */
import { describe, expect, it } from 'vitest';
import WebSocket from 'ws';
import type { Harness } from './support/harness.js';
import { useHarness } from './support/session.js';
import type { TestClient } from './support/ws-test-client.js';

const t = useHarness();

/** The same limits for every channel, small enough to test each one. */
const LIMITS = {
  maxRequestBytes: 200_000,
  maxToolOutputBytes: 300_000,
  maxPromptBytes: 5_000,
  maxContextBytes: 4_000,
  maxDepth: 16,
};

/** JSON text of an object nested `depth` levels deep. */
const deep = (depth: number): string => `${'{"a":'.repeat(depth - 1)}{}${'}'.repeat(depth - 1)}`;

async function taskCount(h: Harness): Promise<number> {
  return ((await (await h.http('/api/tasks')).json()) as { total: number }).total;
}

async function post(
  h: Harness,
  p: string,
  body: string,
): Promise<{ status: number; error: Record<string, unknown> }> {
  const r = await h.http(p, { method: 'POST', headers: { 'content-type': 'application/json' }, body });
  return { status: r.status, error: ((await r.json()) as { error: Record<string, unknown> }).error };
}

/** Send `msg` as chunk frames of at most 100,000 characters of data. */
function sendChunked(c: TestClient, msg: unknown, id: string): void {
  const text = JSON.stringify(msg);
  const n = Math.ceil(text.length / 100_000);
  for (let i = 0; i < n; i++)
    c.send({
      type: 'chunk',
      chunk_id: id,
      index: i,
      count: n,
      data: text.slice(i * 100_000, (i + 1) * 100_000),
    });
}

describe('input limits over HTTP', () => {
  it('answers a body nested thousands deep with 400 nesting_too_deep on every JSON route, not 500 (guards against a stack overflow in the store)', async () => {
    const h = await t.start({ minecraft: true });
    const body = `{"task_kind":"general_agent","prompt":"p","context":${deep(5000)}}`;
    expect(await post(h, '/api/tasks', body)).toMatchObject({
      status: 400,
      error: { code: 'nesting_too_deep' },
    });
    for (const p of ['/api/pair', '/api/tasks/x/answer', '/api/credentials/enroll', '/api/minecraft/tasks']) {
      expect((await post(h, p, deep(5000))).error, p).toMatchObject({ code: 'nesting_too_deep' });
    }
    expect(await taskCount(h)).toBe(0);
  });

  it('applies the server’s limits to a prompt, a context and a body', async () => {
    const h = await t.start({ config: { server: { inputLimits: LIMITS } } });
    const create = (extra: Record<string, unknown>) =>
      post(h, '/api/tasks', JSON.stringify({ task_kind: 'general_agent', prompt: 'p', ...extra }));
    expect(await create({ prompt: 'x'.repeat(5_001) })).toMatchObject({
      status: 400,
      error: { code: 'invalid_body', path: '$.prompt' },
    });
    expect(await create({ context: { text: 'x'.repeat(4_000) } })).toMatchObject({
      status: 400,
      error: { path: '$.context' },
    });
    expect((await create({ context: JSON.parse(deep(17)) as unknown })).error).toMatchObject({
      code: 'nesting_too_deep',
    });
    expect((await create({ pad: 'x'.repeat(200_000) })).status).toBe(413);
    expect(await taskCount(h)).toBe(0);
    expect(
      (await create({ prompt: 'x'.repeat(5_000), context: JSON.parse(deep(15)) as unknown })).status,
    ).toBe(201);
  });
});

describe('input limits over the ComputerCraft WebSocket', () => {
  it('refuses a prompt over the limit by default, in chunks, and stores nothing: the same 1 MiB as an HTTP body (guards against a 15 MiB prompt accepted, stored and listed)', async () => {
    const h = await t.start();
    const c = await t.connect('pc-1');
    const big = { type: 'create_task', task_kind: 'code_job', client_id: 'pc-1', allowed_commands: [] };
    sendChunked(c, { ...big, request_id: 'r-1', prompt: 'x'.repeat(1024 * 1024 + 1) }, 'c1');
    expect(await c.waitFor('error', { request_id: 'r-1' })).toMatchObject({ code: 'message_too_large' });
    sendChunked(c, { ...big, request_id: 'r-2', prompt: 'x'.repeat(15 * 1024 * 1024) }, 'c2');
    expect(await c.waitFor('error', { request_id: 'r-2' })).toMatchObject({ code: 'message_too_large' });
    const r = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'general_agent', prompt: 'x'.repeat(1024 * 1024 + 1) },
    });
    expect(r.status).toBe(413);
    expect(await taskCount(h)).toBe(0);
  });

  it('applies the same limits as HTTP to a prompt, a context, a message and a command’s output', async () => {
    const h = await t.start({ config: { server: { inputLimits: LIMITS } } });
    const c = await t.connect('pc-1');
    const create = (request_id: string, extra: Record<string, unknown>) => ({
      type: 'create_task',
      request_id,
      task_kind: 'code_job',
      client_id: 'pc-1',
      prompt: 'p',
      allowed_commands: [],
      ...extra,
    });
    c.send(create('p', { prompt: 'x'.repeat(5_001) }));
    expect(await c.waitFor('error', { request_id: 'p' })).toMatchObject({
      code: 'invalid_field',
      path: '$.prompt',
    });
    c.send(create('c', { context: { text: 'x'.repeat(4_000) } }));
    expect(await c.waitFor('error', { request_id: 'c' })).toMatchObject({ path: '$.context' });
    c.send(JSON.stringify(create('d', {})).replace('"prompt"', `"context":${deep(16)},"prompt"`));
    // Refused before it is parsed, so the error cannot carry the request id.
    expect(await c.waitFor('error', { code: 'nesting_too_deep' })).toBeTruthy();
    sendChunked(c, create('m', { pad: 'x'.repeat(200_000) }), 'm1');
    expect(await c.waitFor('error', { request_id: 'm' })).toMatchObject({ code: 'message_too_large' });
    // A command's output has its own limit: a result of 250 KB is over the request limit but within the output one;
    // 350 KB is over both.
    sendChunked(
      c,
      { type: 'command_result', task_id: 't-x', call_id: 'big-1', ok: true, result: 'x'.repeat(350_000) },
      'r1',
    );
    // Refused while it is reassembled (its call id is not known yet): nothing over the limit is held.
    expect(await c.waitFor('error', { code: 'message_too_large', path: '$' })).toMatchObject({
      message: expect.stringContaining('300000'),
    });
    sendChunked(
      c,
      { type: 'command_result', task_id: 't-x', call_id: 'big-2', ok: true, result: 'x'.repeat(250_000) },
      'r2',
    );
    // Within the output limit it reaches the call rules (no such call here).
    expect(await c.waitFor('error', { call_id: 'big-2' })).toMatchObject({ code: 'unknown_call' });
    expect(await taskCount(h)).toBe(0);
  });
});

describe('input limits on the Minecraft side', () => {
  function modUrl(h: Harness): string {
    const mc = h.running.report.minecraft;
    if (mc === undefined || !('url' in mc)) throw new Error('the mod endpoint is not running');
    return mc.url;
  }

  it('refuses a mod frame nested thousands deep with an error frame and keeps the connection (guards against deep JSON reaching the schema)', async () => {
    const h = await t.start({ minecraft: true });
    const ws = new WebSocket(modUrl(h));
    const frames: Array<Record<string, unknown>> = [];
    ws.on('message', (d) => frames.push(JSON.parse(String(d)) as Record<string, unknown>));
    await new Promise((r) => ws.once('open', r));
    ws.send(JSON.stringify({ type: 'register', instanceId: 'Bot', version: '1.0' }));
    ws.send(`{"type":"state","state":${deep(5000)}}`);
    // A frame after it is still read: the connection goes on.
    ws.send(JSON.stringify({ type: 'register', instanceId: 'Bot', version: '1.0' }));
    const until = Date.now() + 3000;
    while (frames.length < 3 && Date.now() < until) await new Promise((r) => setTimeout(r, 20));
    expect(frames).toEqual([
      { type: 'registered', success: true },
      expect.objectContaining({
        type: 'error',
        code: 'invalid_message',
        message: expect.stringContaining('deeper than 64'),
      }),
      expect.objectContaining({ type: 'error', message: 'already registered on this connection' }),
    ]);
    expect(ws.readyState).toBe(WebSocket.OPEN);
    ws.close();
  });

  it('applies the prompt limit to a Minecraft task (the engine checks it for every adapter)', async () => {
    const h = await t.start({
      minecraft: true,
      config: { server: { inputLimits: { ...LIMITS, maxPromptBytes: 1_000 } } },
    });
    const r = await post(
      h,
      '/api/minecraft/tasks',
      JSON.stringify({ instance_id: 'Bot', prompt: 'x'.repeat(1_001), model: 'qwen3:8b' }),
    );
    expect(r).toMatchObject({ status: 400, error: { path: '$.prompt' } });
    expect(await taskCount(h)).toBe(0);
  });
});
