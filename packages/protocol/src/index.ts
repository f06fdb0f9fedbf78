/**
 * `@ccagent/protocol`: the WebSocket wire contract between the ccagent orchestrator and its CC:Tweaked clients —
 * zod schemas of every message, parsing with structured errors, chunking of large messages, JSON Schemas and the
 * generated protocol reference. Pure: no I/O.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export {
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_MESSAGE_BYTES,
  ERROR_CODE_DESCRIPTIONS,
  ERROR_CODES,
  MAX_REASSEMBLED_BYTES,
  PROTOCOL_VERSION,
  TASK_STATUSES,
  type ProtocolErrorCode,
  type TaskStatus,
} from './constants.js';
export * from './messages.js';
export { MESSAGE_CATALOG, type MessageCatalogEntry, type MessageDirection } from './catalog.js';
export {
  CLIENT_MESSAGE_TYPES,
  SERVER_MESSAGE_TYPES,
  parseClientMessage,
  parseServerMessage,
  serializeMessage,
  toErrorMessage,
  type ParseOptions,
  type ProtocolIssue,
  type ProtocolResult,
} from './parse.js';
export {
  ChunkAssembler,
  encodeFrames,
  splitIntoChunks,
  type ChunkAssemblerOptions,
  type ChunkProgress,
} from './chunk.js';
export { FrameDecoder, type FrameDecoderOptions } from './frame-decoder.js';
export { messageJsonSchema, protocolJsonSchema, type JsonSchema } from './json-schema.js';
export { renderProtocolDoc } from './protocol-doc.js';
export { ProtocolError } from './protocol-error.js';
export { utf8ByteLength } from './utf8.js';
