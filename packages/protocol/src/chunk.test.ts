import { describe, expect, it } from 'vitest';
import {
  ChunkAssembler,
  ProtocolError,
  encodeFrames,
  parseClientMessage,
  splitIntoChunks,
  type ChunkMessage,
  type TaskCompletedMessage,
} from './index.js';

const bytes = (s: string) => Buffer.byteLength(s, 'utf8');
const chunkOf = (chunk_id: string, index: number, count: number, data: string): ChunkMessage => ({
  type: 'chunk',
  chunk_id,
  index,
  count,
  data,
});

// Texts that stress the byte accounting: escapes that grow 1 → 2 or 6 bytes, 2- and 3-byte UTF-8, surrogate pairs
// (4 bytes, must never be split), lone surrogates (escaped to 6 bytes).
const TEXTS: Record<string, string> = {
  ascii: 'a'.repeat(5000),
  quotes: '"\\'.repeat(2000),
  controls: '\u0001\n\u001f\t'.repeat(1500),
  accents: 'é'.repeat(3000),
  cjk: '漢字'.repeat(2000),
  emoji: '😀'.repeat(2000),
  lone: 'a\ud800b\udc00'.repeat(1000),
  mixed: 'x"é😀\n漢\u0002'.repeat(700),
};

describe('splitIntoChunks', () => {
  it.each(Object.entries(TEXTS))(
    'keeps every %s frame within maxBytes and the pieces rejoin exactly',
    (_, text) => {
      for (const max of [80, 200, 1000, 4096]) {
        const chunks = splitIntoChunks(text, max, 'm-1');
        expect(chunks.length).toBeGreaterThan(1);
        for (const [i, c] of chunks.entries()) {
          expect(bytes(JSON.stringify(c)), `${max} chunk ${i}`).toBeLessThanOrEqual(max);
          expect(c).toMatchObject({ type: 'chunk', chunk_id: 'm-1', index: i, count: chunks.length });
          // No piece starts with the low half of a surrogate pair (the pair would be split across frames).
          const first = c.data.charCodeAt(0);
          const prev = i > 0 ? (chunks[i - 1] as ChunkMessage).data.slice(-1).charCodeAt(0) : 0;
          expect(first >= 0xdc00 && first <= 0xdfff && prev >= 0xd800 && prev <= 0xdbff).toBe(false);
        }
        expect(chunks.map((c) => c.data).join('')).toBe(text);
      }
    },
  );

  it('packs pieces tightly (guards against a splitter that is correct only because it wastes frames)', () => {
    const text = 'a'.repeat(100_000);
    const chunks = splitIntoChunks(text, 1000, 'm');
    const overhead = bytes(JSON.stringify(chunkOf('m', 999, 999, '')));
    expect(chunks.length).toBeLessThanOrEqual(Math.ceil(text.length / (1000 - overhead)));
  });

  it('widens the index budget when the count needs more digits', () => {
    const chunks = splitIntoChunks('b'.repeat(20_000), 100, 'id');
    expect(chunks.length).toBeGreaterThan(100);
    for (const c of chunks) expect(bytes(JSON.stringify(c))).toBeLessThanOrEqual(100);
  });

  it('throws ProtocolError when the limit leaves no room for data (a configuration bug, not a wire error)', () => {
    expect(() => splitIntoChunks('abc', 40, 'm-1')).toThrow(ProtocolError);
    expect(() => splitIntoChunks('abc', 1000, '')).toThrow(ProtocolError);
  });
});

describe('encodeFrames', () => {
  const big: TaskCompletedMessage = {
    type: 'task_completed',
    task_id: 't-1',
    result: { log: 'é😀"'.repeat(50_000) },
  };

  it('sends a message that fits as one unchanged frame', () => {
    const msg = { type: 'ping', id: 'p' } as const;
    expect(encodeFrames(msg, 'm-1')).toEqual([JSON.stringify(msg)]);
  });

  it('chunks a message over the 128 KiB default into frames that each parse as chunk messages', () => {
    const frames = encodeFrames(big, 'm-2');
    expect(frames.length).toBeGreaterThan(1);
    let text = '';
    for (const f of frames) {
      expect(bytes(f)).toBeLessThanOrEqual(131_072);
      const r = parseClientMessage(f);
      expect(r.ok && r.value.type === 'chunk').toBe(true);
      if (r.ok && r.value.type === 'chunk') text += r.value.data;
    }
    expect(JSON.parse(text)).toEqual(big);
  });
});

describe('ChunkAssembler', () => {
  const pieces = (id: string, text: string, max = 80) => splitIntoChunks(text, max, id);

  it('reassembles interleaved, out-of-order transfers', () => {
    const a = pieces('a', 'A'.repeat(500));
    const b = pieces('b', 'B😀'.repeat(100));
    const asm = new ChunkAssembler();
    const order = [...a.slice(1), ...b.reverse()];
    const done: string[] = [];
    for (const c of order) {
      const r = asm.feed(c);
      expect(r.ok).toBe(true);
      if (r.ok && r.value.done) done.push(r.value.text);
    }
    expect(done).toEqual(['B😀'.repeat(100)]);
    expect(asm.pending).toBe(1);
    const last = asm.feed(a[0] as ChunkMessage);
    expect(last).toEqual({ ok: true, value: { done: true, text: 'A'.repeat(500) } });
    expect(asm.pending).toBe(0);
    expect(asm.bufferedBytes).toBe(0);
  });

  it('completes a single-chunk transfer at once', () => {
    expect(new ChunkAssembler().feed(chunkOf('x', 0, 1, '{}'))).toEqual({
      ok: true,
      value: { done: true, text: '{}' },
    });
  });

  it('drops the transfer on a duplicate index and ignores its later chunks', () => {
    const asm = new ChunkAssembler();
    expect(asm.feed(chunkOf('d', 0, 3, 'a')).ok).toBe(true);
    expect(asm.feed(chunkOf('d', 0, 3, 'a'))).toMatchObject({
      ok: false,
      error: { code: 'chunk_error', path: '$.index' },
    });
    expect(asm.pending).toBe(0);
    // The remaining pieces neither restart the transfer nor produce a second error.
    expect(asm.feed(chunkOf('d', 1, 3, 'b'))).toEqual({ ok: true, value: { done: false } });
    expect(asm.feed(chunkOf('d', 2, 3, 'c'))).toEqual({ ok: true, value: { done: false } });
    expect(asm.pending).toBe(0);
  });

  it('drops the transfer when count changes between chunks', () => {
    const asm = new ChunkAssembler();
    asm.feed(chunkOf('c', 0, 3, 'a'));
    expect(asm.feed(chunkOf('c', 1, 4, 'b'))).toMatchObject({
      ok: false,
      error: { code: 'chunk_error', path: '$.count' },
    });
    expect(asm.bufferedBytes).toBe(0);
  });

  it('rejects out-of-range index and count even without schema validation', () => {
    const asm = new ChunkAssembler({ maxChunks: 10 });
    expect(asm.feed(chunkOf('i', 5, 5, 'a'))).toMatchObject({ ok: false, error: { code: 'chunk_error' } });
    expect(asm.feed(chunkOf('j', 0, 11, 'a'))).toMatchObject({ ok: false, error: { code: 'chunk_error' } });
    expect(asm.feed(chunkOf('k', 0.5, 2, 'a'))).toMatchObject({ ok: false, error: { code: 'chunk_error' } });
  });

  it('refuses a new transfer beyond maxTransfers but keeps the ones in flight', () => {
    const asm = new ChunkAssembler({ maxTransfers: 2 });
    asm.feed(chunkOf('t1', 0, 2, 'a'));
    asm.feed(chunkOf('t2', 0, 2, 'b'));
    expect(asm.feed(chunkOf('t3', 0, 2, 'c'))).toMatchObject({ ok: false, error: { code: 'chunk_error' } });
    expect(asm.pending).toBe(2);
    expect(asm.feed(chunkOf('t1', 1, 2, 'A'))).toEqual({ ok: true, value: { done: true, text: 'aA' } });
  });

  it('drops a transfer whose reassembled size exceeds maxMessageBytes (counted in UTF-8 bytes)', () => {
    const asm = new ChunkAssembler({ maxMessageBytes: 10 });
    expect(asm.feed(chunkOf('s', 0, 3, 'éé')).ok).toBe(true); // 4 bytes
    expect(asm.feed(chunkOf('s', 1, 3, 'éééé'))).toMatchObject({
      ok: false,
      error: { code: 'message_too_large' },
    });
    expect(asm.pending).toBe(0);
    expect(asm.bufferedBytes).toBe(0);
  });

  it('bounds the bytes buffered over all transfers together', () => {
    const asm = new ChunkAssembler({ maxMessageBytes: 100, maxBufferedBytes: 150 });
    expect(asm.feed(chunkOf('a', 0, 2, 'x'.repeat(80))).ok).toBe(true);
    expect(asm.feed(chunkOf('b', 0, 2, 'y'.repeat(80)))).toMatchObject({
      ok: false,
      error: { code: 'message_too_large' },
    });
    expect(asm.bufferedBytes).toBe(80);
  });

  it('expires idle transfers by the injected clock; a late chunk does not restart them', () => {
    let now = 1_000;
    const asm = new ChunkAssembler({ timeoutMs: 5_000, now: () => now });
    asm.feed(chunkOf('slow', 0, 3, 'a'));
    now += 4_000;
    asm.feed(chunkOf('slow', 1, 3, 'b')); // activity resets the idle timer
    asm.feed(chunkOf('other', 0, 2, 'x'));
    now += 5_000;
    expect(asm.sweep()).toEqual([]);
    now += 1;
    expect(asm.sweep().sort()).toEqual(['other', 'slow']);
    expect(asm.pending).toBe(0);
    expect(asm.bufferedBytes).toBe(0);
    expect(asm.feed(chunkOf('slow', 2, 3, 'c'))).toEqual({ ok: true, value: { done: false } });
    expect(asm.pending).toBe(0);
  });

  it('sweeps on feed so an owner that never calls sweep still frees stale transfers', () => {
    let now = 0;
    const asm = new ChunkAssembler({ timeoutMs: 100, maxTransfers: 1, now: () => now });
    asm.feed(chunkOf('stale', 0, 2, 'a'));
    now = 500;
    expect(asm.feed(chunkOf('fresh', 0, 1, '{}'))).toEqual({ ok: true, value: { done: true, text: '{}' } });
  });

  it('clear() forgets partial transfers and dropped ids (a new connection starts clean)', () => {
    const asm = new ChunkAssembler();
    asm.feed(chunkOf('p', 0, 2, 'a'));
    asm.discard('p');
    expect(asm.feed(chunkOf('p', 1, 2, 'b'))).toEqual({ ok: true, value: { done: false } });
    asm.clear();
    expect(asm.feed(chunkOf('p', 0, 1, 'z'))).toEqual({ ok: true, value: { done: true, text: 'z' } });
  });
});
