import { ChunkAssembler, type ChunkAssemblerOptions } from './chunk.js';
import { MAX_REASSEMBLED_BYTES } from './constants.js';
import type { ClientMessage, Message, ServerMessage } from './messages.js';
import { parseFrame, type ParseOptions, type ProtocolResult, type ReceivingSide } from './parse.js';

/** Options of a {@link FrameDecoder}: frame limits plus the reassembly limits and clock. */
export interface FrameDecoderOptions extends ParseOptions, ChunkAssemblerOptions {}

/**
 * Turns the text frames of one connection into messages: parses each frame and transparently reassembles
 * `chunk` frames. One decoder per connection (it owns that connection's partial transfers).
 *
 * `decode` returns `{ ok: true, value: message }` for a complete message, `{ ok: true, value: undefined }` for a
 * chunk that did not complete one, and `{ ok: false, error }` for anything rejected (answer it with
 * `toErrorMessage`).
 */
export class FrameDecoder<M extends Message> {
  private readonly assembler: ChunkAssembler;
  private readonly frameOpts: ParseOptions;
  private readonly messageOpts: ParseOptions;

  private constructor(
    private readonly side: ReceivingSide,
    opts: FrameDecoderOptions,
  ) {
    this.assembler = new ChunkAssembler(opts);
    const maxDepth = opts.maxDepth;
    this.frameOpts = { maxBytes: opts.maxBytes, maxDepth };
    this.messageOpts = { maxBytes: opts.maxMessageBytes ?? MAX_REASSEMBLED_BYTES, maxDepth };
  }

  /** A decoder for the orchestrator: it accepts client messages. */
  static forServer(opts: FrameDecoderOptions = {}): FrameDecoder<ClientMessage> {
    return new FrameDecoder<ClientMessage>('server', opts);
  }

  /** A decoder for a client: it accepts server messages. */
  static forClient(opts: FrameDecoderOptions = {}): FrameDecoder<ServerMessage> {
    return new FrameDecoder<ServerMessage>('client', opts);
  }

  /** Number of chunked messages still incomplete. */
  get pending(): number {
    return this.assembler.pending;
  }

  /** Decode one received text frame. Never throws. */
  decode(raw: string): ProtocolResult<M | undefined> {
    const frame = parseFrame(raw, this.side, this.frameOpts);
    if (!frame.ok) return frame;
    if (frame.value.type !== 'chunk') return frame as ProtocolResult<M>;
    const progress = this.assembler.feed(frame.value);
    if (!progress.ok) return progress;
    if (!progress.value.done) return { ok: true, value: undefined };
    const whole = parseFrame(progress.value.text, this.side, this.messageOpts);
    if (whole.ok && whole.value.type === 'chunk') {
      return {
        ok: false,
        error: {
          code: 'chunk_error',
          path: '$.type',
          message: 'a chunked message may not itself be a chunk',
        },
      };
    }
    return whole as ProtocolResult<M>;
  }

  /** Drop transfers idle past the timeout; returns their `chunk_id`s. */
  sweep(): string[] {
    return this.assembler.sweep();
  }

  /** Forget all partial transfers (call when the connection closes). */
  clear(): void {
    this.assembler.clear();
  }
}
