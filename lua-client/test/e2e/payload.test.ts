// End to end: messages over CC:Tweaked's 128 KiB WebSocket limit, both ways, with nothing breaking. A model reads a
// ~210 KiB file on the CC computer (the command_result travels as protocol chunks, client → server) and writes a
// ~150 KiB file there (the command_call travels as chunks, server → client).
//
// What the model sees of the big read: the native strategy clips a tool result to its first 8000 characters and
// says how much was cut (`… [N chars cut]`); the full content is stored in the task's command call.
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { bootDriver, driverResult } from './driver.js';
import { MODELS, Stack, craftos } from './stack.js';

const line = (i: number) =>
  `line ${String(i).padStart(5, '0')}: the quick brown fox jumps over the lazy dog é✓\n`;
const BIG_READ = Array.from({ length: 3500 }, (_, i) => line(i + 1)).join('');
// Quotes, backslashes, tabs and newlines double in size when JSON-escaped: the splitter must account for it.
const BIG_WRITE = Array.from(
  { length: 2500 },
  (_, i) => `${i}\t"quoted" C:\\path\\${i} ünïcødé ✓ {json: [1, 2]}\n`,
).join('');
const MAX_TOOL_RESULT_CHARS = 8000; // the native strategy's default clip

describe.skipIf(!craftos)('end to end: payloads over 128 KiB', () => {
  let stack: Stack;
  beforeAll(async () => {
    stack = await Stack.start();
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('a big fs_read result and a big fs_write call are chunked; the content arrives intact both ways', async () => {
    expect(Buffer.byteLength(BIG_READ)).toBeGreaterThan(200 * 1024);
    expect(Buffer.byteLength(JSON.stringify(BIG_WRITE))).toBeGreaterThan(128 * 1024);
    stack.fake.script(MODELS.native, [
      { toolCalls: [{ name: 'fs_read', arguments: { path: 'big.txt' } }] },
      { toolCalls: [{ name: 'fs_write', arguments: { path: 'copy.txt', content: BIG_WRITE } }] },
      'Read big.txt and wrote copy.txt.',
    ]);
    const c = bootDriver(
      {
        url: stack.wsUrl,
        client_id: 'e2e-payload',
        tasks: [{ kind: 'general_agent', prompt: 'Read big.txt, then write copy.txt.' }],
      },
      { files: { 'big.txt': BIG_READ } },
    );
    const out = await driverResult(c);
    const [seen] = out.tasks;
    expect(seen?.status, JSON.stringify(seen)).toBe('completed');
    // Neither side broke: one connection throughout, no protocol or chunk errors.
    expect(out.connections).toEqual(['connected']);
    expect(out.errors).toEqual([]);

    const detail = await stack.task(seen!.id!);
    const [read, write] = detail.command_calls;
    // Client → server: the whole file, byte for byte (UTF-8 included).
    expect(read?.status).toBe('succeeded');
    expect(read?.outcome?.result).toEqual({
      path: '/big.txt',
      content: BIG_READ,
      size: Buffer.byteLength(BIG_READ),
    });
    // Server → client: the whole content written on the computer.
    expect(write?.status).toBe('succeeded');
    expect(write?.outcome?.result).toEqual({ path: '/copy.txt', bytes: Buffer.byteLength(BIG_WRITE) });
    expect(readFileSync(path.join(c.disk, 'copy.txt')).equals(Buffer.from(BIG_WRITE))).toBe(true);

    // The model saw the read clipped to a clearly marked prefix, not the whole 210 KiB.
    const second = stack.fake.chatRequests(MODELS.native)[1]?.body as {
      messages: Array<{ role: string; content: string }>;
    };
    const shown = second.messages.find((m) => m.role === 'tool')?.content;
    const full = JSON.stringify(read?.outcome?.result);
    expect(shown).toBe(
      `${full.slice(0, MAX_TOOL_RESULT_CHARS)}… [${full.length - MAX_TOOL_RESULT_CHARS} chars cut]`,
    );
    expect(shown).toContain('line 00001: the quick brown fox jumps over the lazy dog é✓');
  });
});

// A result over the orchestrator's output limit (server.inputLimits.maxToolOutputBytes) used to be refused by the
// server with an error to the computer only: the call stayed open, the task waited for the tool timeout and the
// client re-sent the result after every reconnect. The welcome now names the limit and the Lua client cuts the
// result down before sending it, marked; the server fails any result still over it at once.
describe.skipIf(!craftos)('end to end: a result over the server’s output limit', () => {
  const LIMIT = 60_000;
  let stack: Stack;
  beforeAll(async () => {
    stack = await Stack.start({
      config: { server: { inputLimits: { maxToolOutputBytes: LIMIT }, commandTimeoutMs: 120_000 } },
    });
  });
  afterAll(async () => {
    await stack?.close();
  });

  it('the client cuts the result to the limit, marked as cut; the task goes on at once and the model reads what fits', async () => {
    stack.fake.script(MODELS.native, [
      { toolCalls: [{ name: 'fs_read', arguments: { path: 'big.txt' } }] },
      'big.txt starts with line 00001.',
    ]);
    const started = Date.now();
    const c = bootDriver(
      {
        url: stack.wsUrl,
        client_id: 'e2e-over-limit',
        tasks: [{ kind: 'general_agent', prompt: 'Read big.txt.' }],
      },
      { files: { 'big.txt': BIG_READ } },
    );
    const out = await driverResult(c);
    const [seen] = out.tasks;
    expect(seen?.status, JSON.stringify(seen)).toBe('completed');
    expect(out.errors).toEqual([]);
    // Far below the call's 120 s timeout: nothing waited for it.
    expect(Date.now() - started).toBeLessThan(60_000);

    const detail = await stack.task(seen!.id!);
    const [read] = detail.command_calls;
    expect(read?.status).toBe('succeeded');
    const result = read?.outcome?.result as {
      path: string;
      content: string;
      size: number;
      truncated: boolean;
    };
    expect(result).toMatchObject({ path: '/big.txt', size: Buffer.byteLength(BIG_READ), truncated: true });
    // What fits of the file, byte for byte, then the note of what was cut.
    const note = /\n\[\.\.\. (\d+) bytes cut: the result was (\d+) bytes, the server takes at most 60000\]$/;
    expect(result.content).toMatch(note);
    const kept = result.content.replace(note, '');
    expect(BIG_READ.startsWith(kept)).toBe(true);
    expect(kept.length).toBeGreaterThan(40_000);
    expect(Buffer.byteLength(JSON.stringify(read?.outcome?.result))).toBeLessThanOrEqual(LIMIT);
    // The model's next request carries the start of the file.
    const second = stack.fake.chatRequests(MODELS.native)[1]?.body as {
      messages: Array<{ role: string; content: string }>;
    };
    expect(second.messages.find((m) => m.role === 'tool')?.content).toContain('line 00001');
  });
});
