import { describe, expect, it } from 'vitest';
import { FrameDecoder, encodeFrames, splitIntoChunks, type CommandResultMessage } from './index.js';

const result: CommandResultMessage = {
  type: 'command_result',
  task_id: 't-1',
  call_id: 'c-1',
  ok: true,
  result: { listing: 'file-é😀.lua\n'.repeat(20_000) },
};

describe('FrameDecoder', () => {
  it('passes single frames through as typed messages', () => {
    const dec = FrameDecoder.forServer();
    expect(dec.decode('{"type":"ping","id":"1"}')).toEqual({ ok: true, value: { type: 'ping', id: '1' } });
  });

  it('turns the chunk frames of a large command_result back into the message (server side)', () => {
    const frames = encodeFrames(result, 'm-1', 4096);
    expect(frames.length).toBeGreaterThan(50);
    const dec = FrameDecoder.forServer();
    const outcomes = frames.map((f) => dec.decode(f));
    expect(outcomes.slice(0, -1).every((o) => o.ok && o.value === undefined)).toBe(true);
    expect(outcomes.at(-1)).toEqual({ ok: true, value: result });
    expect(dec.pending).toBe(0);
  });

  it('applies the receiving side rules to the reassembled message', () => {
    // A client cannot smuggle a server-only message through chunking.
    const text = JSON.stringify({ type: 'task_completed', task_id: 't', result: 'x'.repeat(500) });
    const dec = FrameDecoder.forServer();
    const out = splitIntoChunks(text, 200, 'm-2').map((c) => dec.decode(JSON.stringify(c)));
    expect(out.at(-1)).toMatchObject({ ok: false, error: { code: 'unknown_type' } });
    // And the client side accepts it.
    const cdec = FrameDecoder.forClient();
    const cout = splitIntoChunks(text, 200, 'm-2').map((c) => cdec.decode(JSON.stringify(c)));
    expect(cout.at(-1)).toMatchObject({ ok: true, value: { type: 'task_completed' } });
  });

  it('rejects a chunk whose payload is itself a chunk (no nested chunking)', () => {
    const inner = JSON.stringify({ type: 'chunk', chunk_id: 'in', index: 0, count: 1, data: '{}' });
    const dec = FrameDecoder.forClient();
    expect(
      dec.decode(JSON.stringify({ type: 'chunk', chunk_id: 'out', index: 0, count: 1, data: inner })),
    ).toMatchObject({ ok: false, error: { code: 'chunk_error' } });
  });

  it('reports invalid frames and broken transfers with their codes', () => {
    const dec = FrameDecoder.forServer({ maxBytes: 1000 });
    expect(dec.decode('{')).toMatchObject({ ok: false, error: { code: 'invalid_json' } });
    expect(dec.decode('x'.repeat(1001))).toMatchObject({ ok: false, error: { code: 'message_too_large' } });
    dec.decode(JSON.stringify({ type: 'chunk', chunk_id: 'q', index: 0, count: 2, data: '{' }));
    expect(
      dec.decode(JSON.stringify({ type: 'chunk', chunk_id: 'q', index: 0, count: 2, data: '{' })),
    ).toMatchObject({
      ok: false,
      error: { code: 'chunk_error' },
    });
  });

  it('limits the reassembled message by maxMessageBytes', () => {
    const dec = FrameDecoder.forServer({ maxMessageBytes: 10_000 });
    const outs = encodeFrames(result, 'big', 4096).map((f) => dec.decode(f));
    expect(outs.some((o) => !o.ok && o.error.code === 'message_too_large')).toBe(true);
    expect(outs.some((o) => o.ok && o.value !== undefined)).toBe(false);
  });

  it('expires idle transfers by the injected clock and clear() drops everything', () => {
    let now = 0;
    const dec = FrameDecoder.forServer({ timeoutMs: 1000, now: () => now });
    dec.decode(JSON.stringify({ type: 'chunk', chunk_id: 'z', index: 0, count: 2, data: '{' }));
    expect(dec.pending).toBe(1);
    now = 2000;
    expect(dec.sweep()).toEqual(['z']);
    dec.decode(JSON.stringify({ type: 'chunk', chunk_id: 'y', index: 0, count: 2, data: '{' }));
    dec.clear();
    expect(dec.pending).toBe(0);
  });
});
