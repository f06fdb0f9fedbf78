import { DEFAULT_MAX_MESSAGE_BYTES, MAX_REASSEMBLED_BYTES } from './constants.js';
import type { ChunkMessage, Message } from './messages.js';
import type { ProtocolIssue, ProtocolResult } from './parse.js';
import { ProtocolError } from './protocol-error.js';
import { isHighSurrogate, isLowSurrogate, utf8ByteLength } from './utf8.js';

// Bytes one UTF-16 code unit (or surrogate pair) takes inside a JSON string literal, exactly as JSON.stringify
// writes it: short escapes for " \ and \b\f\n\r\t, \u00XX for other controls and lone surrogates, UTF-8 otherwise.
function escapedCost(text: string, i: number): { bytes: number; units: number } {
  const c = text.charCodeAt(i);
  if (c === 0x22 || c === 0x5c) return { bytes: 2, units: 1 };
  if (c < 0x20) {
    const short = c === 0x08 || c === 0x09 || c === 0x0a || c === 0x0c || c === 0x0d;
    return { bytes: short ? 2 : 6, units: 1 };
  }
  if (c < 0x80) return { bytes: 1, units: 1 };
  if (c < 0x800) return { bytes: 2, units: 1 };
  if (isHighSurrogate(c)) {
    if (i + 1 < text.length && isLowSurrogate(text.charCodeAt(i + 1))) return { bytes: 4, units: 2 };
    return { bytes: 6, units: 1 };
  }
  if (isLowSurrogate(c)) return { bytes: 6, units: 1 };
  return { bytes: 3, units: 1 };
}

function chunkFrame(chunkId: string, index: number, count: number, data: string): ChunkMessage {
  return { type: 'chunk', chunk_id: chunkId, index, count, data };
}

/**
 * Split JSON text into `chunk` messages whose serialized frames are each at most `maxBytes` UTF-8 bytes and whose
 * `data` strings concatenate to `jsonText`. Never splits a surrogate pair. Throws {@link ProtocolError}
 * (`message_too_large`) when `maxBytes` leaves no room for data.
 */
export function splitIntoChunks(jsonText: string, maxBytes: number, chunkId: string): ChunkMessage[] {
  // The frame overhead grows with the number of digits of index/count; try 1 digit, 2 digits, … until it fits.
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
    let i = 0;
    while (i < jsonText.length) {
      const { bytes, units } = escapedCost(jsonText, i);
      if (used + bytes > budget) {
        pieces.push(jsonText.slice(start, i));
        start = i;
        used = 0;
        if (pieces.length > widest) break;
      }
      used += bytes;
      i += units;
    }
    if (pieces.length > widest) continue;
    pieces.push(jsonText.slice(start));
    if (pieces.length > widest) continue;
    return pieces.map((data, index) => chunkFrame(chunkId, index, pieces.length, data));
  }
  throw new ProtocolError('message_too_large', 'message needs too many chunks');
}

/**
 * Serialize a message into the frames to send: one frame when it fits in `maxBytes`, otherwise the serialized
 * `chunk` messages of {@link splitIntoChunks}.
 */
export function encodeFrames(msg: Message, chunkId: string, maxBytes = DEFAULT_MAX_MESSAGE_BYTES): string[] {
  const text = JSON.stringify(msg);
  if (utf8ByteLength(text, maxBytes) <= maxBytes) return [text];
  return splitIntoChunks(text, maxBytes, chunkId).map((c) => JSON.stringify(c));
}

/** Limits of a {@link ChunkAssembler}. */
export interface ChunkAssemblerOptions {
  /** Largest reassembled message, UTF-8 bytes of the concatenated data; default 16 MiB. */
  maxTotalBytes?: number;
  /** Most transfers (distinct chunk_ids) in flight at once; default 8. */
  maxTransfers?: number;
  /** Largest accepted `count`; default 65536. */
  maxChunks?: number;
}

/** Progress of a transfer after feeding one chunk. */
export type ChunkProgress = { done: false } | { done: true; text: string };

interface Transfer {
  count: number;
  bytes: number;
  pieces: Map<number, string>;
}

/**
 * Reassembles `chunk` messages (already schema-validated) into the original JSON text. Owns the partial transfers
 * of one connection; a rejected chunk discards its whole transfer so memory stays bounded.
 */
export class ChunkAssembler {
  private readonly transfers = new Map<string, Transfer>();
  private readonly maxTotalBytes: number;
  private readonly maxTransfers: number;
  private readonly maxChunks: number;

  constructor(opts: ChunkAssemblerOptions = {}) {
    this.maxTotalBytes = opts.maxTotalBytes ?? MAX_REASSEMBLED_BYTES;
    this.maxTransfers = opts.maxTransfers ?? 8;
    this.maxChunks = opts.maxChunks ?? 65_536;
  }

  /** Number of transfers waiting for more chunks. */
  get pending(): number {
    return this.transfers.size;
  }

  /** Feed one chunk; returns the reassembled text when its last missing chunk arrives. */
  feed(chunk: ChunkMessage): ProtocolResult<ChunkProgress> {
    const { chunk_id: id, index, count, data } = chunk;
    if (!Number.isInteger(count) || count < 1 || count > this.maxChunks) {
      return this.reject(id, `chunk count must be an integer from 1 to ${this.maxChunks}`);
    }
    if (!Number.isInteger(index) || index < 0 || index >= count) {
      return this.reject(id, `chunk index ${index} out of range 0..${count - 1}`);
    }
    let transfer = this.transfers.get(id);
    if (transfer === undefined) {
      if (this.transfers.size >= this.maxTransfers) {
        return this.reject(id, `too many chunked messages in flight (max ${this.maxTransfers})`, false);
      }
      transfer = { count, bytes: 0, pieces: new Map() };
      this.transfers.set(id, transfer);
    }
    if (transfer.count !== count) {
      return this.reject(id, `chunk count changed from ${transfer.count} to ${count}`);
    }
    if (transfer.pieces.has(index)) return this.reject(id, `duplicate chunk index ${index}`);
    transfer.bytes += utf8ByteLength(data);
    if (transfer.bytes > this.maxTotalBytes) {
      return this.reject(id, `reassembled message exceeds ${this.maxTotalBytes} bytes`);
    }
    transfer.pieces.set(index, data);
    if (transfer.pieces.size < count) return { ok: true, value: { done: false } };
    this.transfers.delete(id);
    const parts: string[] = [];
    for (let i = 0; i < count; i++) parts.push(transfer.pieces.get(i) ?? '');
    return { ok: true, value: { done: true, text: parts.join('') } };
  }

  /** Forget one partial transfer (e.g. its sender gave up). */
  discard(chunkId: string): void {
    this.transfers.delete(chunkId);
  }

  /** Forget every partial transfer (e.g. the connection closed). */
  clear(): void {
    this.transfers.clear();
  }

  private reject(id: string, message: string, drop = true): { ok: false; error: ProtocolIssue } {
    if (drop) this.transfers.delete(id);
    return { ok: false, error: { code: 'chunk_error', message: `chunk ${JSON.stringify(id)}: ${message}` } };
  }
}
