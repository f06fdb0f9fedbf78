/**
 * A computer's `command_result` over the output limit (`server.inputLimits.maxToolOutputBytes`, or a single frame over
 * `max_message_bytes`) used to be refused with an `error` to the computer only: the call stayed open and the task
 * waited for the tool timeout (minutes) with nothing to tell the model. Now the call fails at once with
 * `output_too_large`, the model's next step sees why, and the computer gets its `command_ack` so it stops re-sending
 * the result after every reconnect. Real WebSocket, real SQLite file; the welcome names the limit so a client can
 * truncate before sending (the Lua client does: lua-client/test/craftos/oversized-result.test.ts).
 */
import { describe, expect, it } from 'vitest';
import { eventually, everyKind, results, writeThenRun } from './support/harness.js';
import { useHarness } from './support/session.js';
import type { Msg, TestClient } from './support/ws-test-client.js';

const t = useHarness();

const LIMITS = { maxRequestBytes: 200_000, maxToolOutputBytes: 300_000 };
/** Far above what the test waits for the task to move on. */
const TOOL_TIMEOUT_MS = 120_000;

/** Send `text` as chunk frames of at most 100,000 characters of data. */
function sendChunked(c: TestClient, text: string, id: string): void {
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

async function start(): Promise<{ c: TestClient; taskId: string; call: Msg }> {
  await t.start({
    strategies: everyKind(writeThenRun),
    config: { server: { inputLimits: LIMITS, commandTimeoutMs: TOOL_TIMEOUT_MS } },
  });
  const c = await t.connect('pc-1');
  const welcome = c.messages.find((m) => m.type === 'welcome');
  // The client learns the limit, so it can cut its result down before sending it.
  expect(welcome).toMatchObject({ max_tool_output_bytes: 300_000 });
  const taskId = await t.createTask(c, 'pc-1');
  const call = await c.waitFor('command_call', { command: 'fs_write' });
  return { c, taskId, call };
}

/** The first call's outcome, once the task moved on to its second call. */
async function firstOutcome(c: TestClient, taskId: string): Promise<unknown> {
  const second = await c.waitFor('command_call', { command: 'run_program' }, 5000);
  expect(second.task_id).toBe(taskId);
  const res = await t.h.http(`/api/tasks/${taskId}`);
  const detail = (await res.json()) as { history: Parameters<typeof results>[0] };
  return results(detail.history)[0]?.outcome;
}

describe('a command result over the output limit', () => {
  // Lua's encoder sorts keys: the call id comes first, the task id after the result (which is not read).
  const orders: Array<[string, (call: Msg, result: string) => string]> = [
    [
      'type, task_id, call_id first (JavaScript order)',
      (call, result) =>
        JSON.stringify({
          type: 'command_result',
          task_id: call.task_id,
          call_id: call.call_id,
          ok: true,
          result,
        }),
    ],
    [
      'sorted keys, the task id after the result (the Lua client’s order)',
      (call, result) =>
        `{"call_id":${JSON.stringify(call.call_id)},"ok":true,"result":${JSON.stringify(result)},` +
        `"task_id":${JSON.stringify(call.task_id)},"type":"command_result"}`,
    ],
  ];
  for (const [name, encode] of orders) {
    it(`in chunks (${name}): the call fails at once with output_too_large, the model sees it, the computer gets its ack`, async () => {
      const { c, taskId, call } = await start();
      const started = Date.now();
      sendChunked(c, encode(call, 'x'.repeat(350_000)), 'big');
      expect(await c.waitFor('error', { call_id: call.call_id })).toMatchObject({
        code: 'message_too_large',
        message: expect.stringContaining('300000'),
      });
      expect(await c.waitFor('command_ack', { call_id: call.call_id })).toMatchObject({ task_id: taskId });
      expect(await firstOutcome(c, taskId)).toEqual({
        ok: false,
        error: {
          code: 'output_too_large',
          message: expect.stringMatching(/more than 300000 bytes.*maxToolOutputBytes/),
        },
      });
      expect(Date.now() - started).toBeLessThan(5000);
    });
  }

  it('reassembled within the chunk limit but over the output limit: the same prompt failure', async () => {
    // maxRequestBytes above maxToolOutputBytes: the transfer completes and the parsed result is over the limit.
    await t.start({
      strategies: everyKind(writeThenRun),
      config: {
        server: {
          inputLimits: { maxRequestBytes: 400_000, maxToolOutputBytes: 300_000 },
          commandTimeoutMs: TOOL_TIMEOUT_MS,
        },
      },
    });
    const c = await t.connect('pc-1');
    const taskId = await t.createTask(c, 'pc-1');
    const call = await c.waitFor('command_call', { command: 'fs_write' });
    const text = JSON.stringify({
      type: 'command_result',
      task_id: call.task_id,
      call_id: call.call_id,
      ok: true,
      result: 'x'.repeat(350_000),
    });
    sendChunked(c, text, 'big');
    expect(await c.waitFor('error', { call_id: call.call_id })).toMatchObject({ code: 'message_too_large' });
    expect(await c.waitFor('command_ack', { call_id: call.call_id })).toBeTruthy();
    expect(await firstOutcome(c, taskId)).toMatchObject({ ok: false, error: { code: 'output_too_large' } });
  });

  it('in one frame over max_message_bytes (a client that does not chunk): the same prompt failure', async () => {
    const { c, taskId, call } = await start();
    c.send({
      type: 'command_result',
      task_id: call.task_id,
      call_id: call.call_id,
      ok: true,
      result: 'y'.repeat(140_000),
    });
    expect(await c.waitFor('error', { call_id: call.call_id })).toMatchObject({ code: 'message_too_large' });
    expect(await c.waitFor('command_ack', { call_id: call.call_id })).toBeTruthy();
    expect(await firstOutcome(c, taskId)).toMatchObject({ ok: false, error: { code: 'output_too_large' } });
  });

  it('an oversized result naming a call of another computer, or no open call, changes nothing', async () => {
    const { c, taskId, call } = await start();
    const other = await t.connect('pc-2');
    const big = 'z'.repeat(350_000);
    sendChunked(other, JSON.stringify({ ...call, type: 'command_result', ok: true, result: big }), 'o');
    sendChunked(other, `{"call_id":"c-none","ok":true,"result":"${big}"}`, 'n');
    const refusals = () => other.messages.filter((m) => m.type === 'error' && m.code === 'message_too_large');
    await eventually(async () => refusals().length === 2);
    // The call is still open for its own computer, which answers it normally.
    expect(other.messages.some((m) => m.type === 'command_ack')).toBe(false);
    c.send({
      type: 'command_result',
      task_id: taskId,
      call_id: call.call_id,
      ok: true,
      result: { bytes: 11 },
    });
    expect(await c.waitFor('command_ack', { call_id: call.call_id })).toBeTruthy();
    expect(await firstOutcome(c, taskId)).toEqual({ ok: true, result: { bytes: 11 } });
  });
});
