import { DEFAULT_MAX_MESSAGE_BYTES, MAX_REASSEMBLED_BYTES } from './constants.js';
import type { ChunkMessage, Message } from './messages.js';
import type { ProtocolIssue, ProtocolResult } from './parse.js';
import { ProtocolError } from './protocol-error.js';
import { fitsUtf8, isHighSurrogate, isLowSurrogate, utf8ByteLength } from './utf8.js';

// Bytes that the UTF-16 code unit at `i` takes inside a JSON string literal, exactly as JSON.stringify writes it:
// short escapes for " \ and \b\f\n\r\t, \u00XX for other controls and \uDXXX for lone surrogates, UTF-8 otherwise.
// A surrogate pair is 4 bytes for both units together: counted on the high unit, 0 on the low one.
function escapedBytes(text: string, i: number): number {
  const c = text.charCodeAt(i);
  if (c === 0x22 || c === 0x5c) return 2;
  if (c < 0x20) return c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d ? 2 : 6;
  if (c < 0x80) return 1;
  if (c < 0x800) return 2;
  if (isHighSurrogate(c)) return i + 1 < text.length && isLowSurrogate(text.charCodeAt(i + 1)) ? 4 : 6;
  if (isLowSurrogate(c)) return i > 0 && isHighSurrogate(text.charCodeAt(i - 1)) ? 0 : 6;
  return 3;
}

function chunkFrame(chunkId: string, index: number, count: number, data: string): ChunkMessage {
  return { type: 'chunk', chunk_id: chunkId, index, count, data };
}

/**
 * Split JSON text into `chunk` messages whose serialized frames are each at most `maxBytes` UTF-8 bytes and whose
 * `data` strings concatenate to `jsonText`. Never splits a surrogate pair. Throws {@link ProtocolError}
 * (`message_too_large`) when `maxBytes` leaves no room for data — a programming error, not a wire condition.
 */
export function splitIntoChunks(jsonText: string, maxBytes: number, chunkId: string): ChunkMessage[] {
  if (chunkId.length === 0) throw new ProtocolError('invalid_field', 'chunkId must not be empty');
  // The frame overhead grows with the digits of index/count; try 1 digit, 2 digits, … until the pieces fit.
  for (let digits = 1; digits <= 15; digits++) {
    const widest = 10 ** digits - 1;
    const overhead = utf8ByteLength(JSON.stringify(chunkFrame(chunkId, widest, widest, '')));
    const budget = maxBytes - overhead;
    // 6 bytes is the widest single code unit (`\u001f`), so smaller budgets could not make progress.
    if (budget < 6) {
      throw new ProtocolError('message_too_large', `maxBytes ${maxBytes} leaves no room for chunk data`);
    }
    const pieces: string[] = [];
    let start = 0;
    let used = 0;
    for (let i = 0; i < jsonText.length; i++) {
      const bytes = escapedBytes(jsonText, i);
      // A low surrogate costs 0 and is never a cut point, so pairs stay whole.
      if (bytes > 0 && used + bytes > budget) {
        pieces.push(jsonText.slice(start, i));
        if (pieces.length >= widest) break;
        start = i;
        used = 0;
      }
      used += bytes;
    }
    if (pieces.length >= widest) continue;
    pieces.push(jsonText.slice(start));
    return pieces.map((data, index) => chunkFrame(chunkId, index, pieces.length, data));
  }
  throw new ProtocolError('message_too_large', 'message needs too many chunks');
}

/**
 * Serialize a message into the text frames to send: one frame when it fits in `maxBytes` (default 128 KiB),
 * otherwise the serialized `chunk` frames of {@link splitIntoChunks}, each within `maxBytes`. `chunkId` must be
 * unique among the sender's transfers in flight.
 */
export function encodeFrames(msg: Message, chunkId: string, maxBytes = DEFAULT_MAX_MESSAGE_BYTES): string[] {
  const text = JSON.stringify(msg);
  if (fitsUtf8(text, maxBytes)) return [text];
  return splitIntoChunks(text, maxBytes, chunkId).map((c) => JSON.stringify(c));
}

/** Limits and clock of a {@link ChunkAssembler}. */
export interface ChunkAssemblerOptions {
  /** Largest reassembled message, UTF-8 bytes of the concatenated data; default 16 MiB. */
  maxMessageBytes?: number;
  /** Largest sum of buffered data over all transfers in flight; default twice `maxMessageBytes`. */
  maxBufferedBytes?: number;
  /** Most transfers (distinct `chunk_id`s) in flight at once; default 8. */
  maxTransfers?: number;
  /** Largest accepted `count`; default 65 536. */
  maxChunks?: number;
  /** A transfer with no new chunk for this long (ms) is dropped; default 60 000. */
  timeoutMs?: number;
  /** Current time in ms (injected clock); default `Date.now`. */
  now?: () => number;
}

/** Progress of a transfer after feeding one chunk: still waiting, or the reassembled JSON text. */
export type ChunkProgress = { done: false } | { done: true; text: string };

interface Transfer {
  count: number;
  bytes: number;
  lastAt: number;
  pieces: Map<number, string>;
}

// Ids of dropped transfers are remembered (bounded) so their remaining chunks are ignored instead of starting a
// new transfer that could never complete.
const REMEMBERED_DROPS = 64;

/**
 * Reassembles `chunk` messages (already schema-validated) into the original JSON text. Owns the partial transfers
 * of one connection. Any inconsistency drops the whole transfer (`chunk_error`); its later chunks are ignored.
 * Memory is bounded by `maxTransfers`, `maxMessageBytes` and `maxBufferedBytes`; stale transfers expire.
 */
export class ChunkAssembler {
  private readonly transfers = new Map<string, Transfer>();
  private readonly dropped = new Set<string>();
  private buffered = 0;
  private readonly maxMessageBytes: number;
  private readonly maxBufferedBytes: number;
  private readonly maxTransfers: number;
  private readonly maxChunks: number;
  private readonly timeoutMs: number;
  private readonly now: () => number;

  constructor(opts: ChunkAssemblerOptions = {}) {
    this.maxMessageBytes = opts.maxMessageBytes ?? MAX_REASSEMBLED_BYTES;
    this.maxBufferedBytes = opts.maxBufferedBytes ?? 2 * this.maxMessageBytes;
    this.maxTransfers = opts.maxTransfers ?? 8;
    this.maxChunks = opts.maxChunks ?? 65_536;
    this.timeoutMs = opts.timeoutMs ?? 60_000;
    this.now = opts.now ?? Date.now;
  }

  /** Number of transfers waiting for more chunks. */
  get pending(): number {
    return this.transfers.size;
  }

  /** Total UTF-8 bytes of chunk data currently buffered. */
  get bufferedBytes(): number {
    return this.buffered;
  }

  /**
   * Feed one chunk. Returns the reassembled text when its last missing chunk arrives, `{done:false}` while
   * waiting (or when the chunk belongs to an already dropped transfer), and a `chunk_error` (or
   * `message_too_large`) issue when the chunk is inconsistent — its transfer is then dropped.
   */
  feed(chunk: ChunkMessage): ProtocolResult<ChunkProgress> {
    this.sweep();
    const { chunk_id: id, index, count, data } = chunk;
    if (this.dropped.has(id)) return { ok: true, value: { done: false } };
    if (!Number.isInteger(count) || count < 1 || count > this.maxChunks) {
      return this.reject(
        id,
        'chunk_error',
        '$.count',
        `count must be an integer from 1 to ${this.maxChunks}`,
      );
    }
    if (!Number.isInteger(index) || index < 0 || index >= count) {
      return this.reject(id, 'chunk_error', '$.index', `index ${index} out of range 0..${count - 1}`);
    }
    let transfer = this.transfers.get(id);
    if (transfer === undefined) {
      if (this.transfers.size >= this.maxTransfers) {
        return this.reject(
          id,
          'chunk_error',
          '$.chunk_id',
          `more than ${this.maxTransfers} transfers in flight`,
        );
      }
      transfer = { count, bytes: 0, lastAt: this.now(), pieces: new Map() };
      this.transfers.set(id, transfer);
    }
    if (transfer.count !== count) {
      return this.reject(id, 'chunk_error', '$.count', `count changed from ${transfer.count} to ${count}`);
    }
    if (transfer.pieces.has(index)) {
      return this.reject(id, 'chunk_error', '$.index', `duplicate index ${index}`);
    }
    const bytes = utf8ByteLength(data);
    if (transfer.bytes + bytes > this.maxMessageBytes) {
      return this.reject(
        id,
        'message_too_large',
        '$',
        `reassembled message exceeds ${this.maxMessageBytes} bytes`,
      );
    }
    if (this.buffered + bytes > this.maxBufferedBytes) {
      return this.reject(
        id,
        'message_too_large',
        '$',
        `buffered chunks exceed ${this.maxBufferedBytes} bytes`,
      );
    }
    transfer.bytes += bytes;
    this.buffered += bytes;
    transfer.lastAt = this.now();
    transfer.pieces.set(index, data);
    if (transfer.pieces.size < count) return { ok: true, value: { done: false } };
    this.forget(id);
    const parts: string[] = [];
    for (let i = 0; i < count; i++) parts.push(transfer.pieces.get(i) ?? '');
    return { ok: true, value: { done: true, text: parts.join('') } };
  }

  /**
   * Drop every transfer idle for longer than `timeoutMs` and return their `chunk_id`s (the owner may report them
   * as `chunk_error`). {@link feed} sweeps too, so calling this is only needed to free memory on an idle link.
   */
  sweep(): string[] {
    const now = this.now();
    const expired: string[] = [];
    for (const [id, t] of this.transfers) {
      if (now - t.lastAt > this.timeoutMs) expired.push(id);
    }
    for (const id of expired) this.drop(id);
    return expired;
  }

  /** Forget one partial transfer (e.g. its sender gave up); its later chunks are ignored. */
  discard(chunkId: string): void {
    this.drop(chunkId);
  }

  /** Forget every partial transfer and dropped id (e.g. the connection closed). */
  clear(): void {
    this.transfers.clear();
    this.dropped.clear();
    this.buffered = 0;
  }

  private forget(id: string): void {
    const t = this.transfers.get(id);
    if (t === undefined) return;
    this.buffered -= t.bytes;
    this.transfers.delete(id);
  }

  private drop(id: string): void {
    this.forget(id);
    this.dropped.add(id);
    if (this.dropped.size > REMEMBERED_DROPS) {
      const oldest = this.dropped.values().next();
      if (oldest.done !== true) this.dropped.delete(oldest.value);
    }
  }

  private reject(
    id: string,
    code: ProtocolIssue['code'],
    path: string,
    message: string,
  ): { ok: false; error: ProtocolIssue } {
    this.drop(id);
    return {
      ok: false,
      error: { code, path, message: `chunk ${JSON.stringify(id.slice(0, 64))}: ${message}` },
    };
  }
}
