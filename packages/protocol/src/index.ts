/**
 * `@ccagent/protocol`: the WebSocket wire contract between the ccagent orchestrator and its CC:Tweaked clients.
 * zod schemas of every message, parsing with structured errors, chunking of large messages, JSON Schemas and the
 * generated protocol reference. Pure: no I/O.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export * from './constants.js';
export * from './messages.js';
export { MESSAGE_CATALOG, type MessageCatalogEntry, type MessageDirection } from './catalog.js';
export {
  parseClientMessage,
  parseServerMessage,
  serializeMessage,
  toErrorMessage,
  toJsonPath,
  type ParseOptions,
  type ProtocolIssue,
  type ProtocolResult,
  type Receiver,
} from './parse.js';
export {
  ChunkAssembler,
  encodeFrames,
  splitIntoChunks,
  type ChunkAssemblerOptions,
  type ChunkProgress,
} from './chunk.js';
export { ProtocolError } from './protocol-error.js';
export { utf8ByteLength } from './utf8.js';
