/**
 * `@ccagent/protocol`: the wire contracts of the ccagent orchestrator — the WebSocket protocol with its CC:Tweaked
 * clients and the HTTP API's bodies: zod schemas of every message and body, parsing with structured errors, chunking
 * of large messages, JSON Schemas and the generated references. Pure: no I/O.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export {
  DEFAULT_INPUT_LIMITS,
  DEFAULT_MAX_DEPTH,
  DEFAULT_MAX_MESSAGE_BYTES,
  ERROR_CODE_DESCRIPTIONS,
  ERROR_CODES,
  HTTP_EVENT_TYPES,
  MAX_REASSEMBLED_BYTES,
  PROTOCOL_VERSION,
  TASK_STATUSES,
  type HttpEventType,
  type ProtocolErrorCode,
  type TaskStatus,
} from './constants.js';
export * from './messages.js';
export * from './screen.js';
export {
  CC_CORE_COMMANDS,
  CC_FILE_CHANGE_ARGS,
  CC_INFO_COMMANDS,
  CC_TASK_COMMANDS,
  CC_TOOL_COMMANDS,
  type CcCoreCommand,
} from './cc-commands.js';
export { MESSAGE_CATALOG, type MessageCatalogEntry, type MessageDirection } from './catalog.js';
export {
  CLIENT_MESSAGE_TYPES,
  SERVER_MESSAGE_TYPES,
  parseClientMessage,
  nestingExceeds,
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
export {
  hasUnsafeText,
  ID_CHARSET_MESSAGE,
  ID_CHARSET_PATTERN,
  inertDeep,
  inertJson,
  inertText,
  isPrintableId,
  type InertTextOptions,
} from './text.js';
export {
  callOutcome,
  conversation,
  conversationMarkdown,
  DIFF_MAX_LINES,
  lineDiff,
  stepFigures,
  stepFromWire,
  valueText,
  type ConversationItem,
  type ConversationMessage,
  type ConversationQuestion,
  type ConversationStep,
  type ConversationTask,
  type ConversationUsage,
  type DiffLine,
  type StepFigures,
  type WrittenFile,
} from './conversation.js';
/** HTTP API: request and response schemas (snake_case, like the messages), the route list, the generated reference. */
export * from './http/index.js';
