/**
 * `@ccagent/testkit`: a scripted, wire-faithful fake Ollama / OpenAI-compatible model server for tests, plus the
 * structural comparison used to pin it to the real APIs' payloads.
 */

/** Version of this package, kept equal to package.json's by a test. */
export const VERSION = '0.1.0';

export { startFakeOllama, normalizeModelName, type FakeOllama } from './fake-ollama.js';
export type {
  FakeChatRequest,
  FakeFault,
  FakeOllamaOptions,
  FakeReply,
  FakeReplyObject,
  FakeScript,
  FakeToolCall,
  FaultOptions,
  RecordedRequest,
  RequestOutcome,
  ScriptOptions,
} from './fake-types.js';
export {
  ModelServer,
  parseKeepAlive,
  type AdmittedCall,
  type LoadReason,
  type ModelCallFigures,
  type ModelServerOptions,
  type ModelServerStats,
} from './model-server.js';
export { callSeconds, rateAt, REFERENCE_GPU, type CallSeconds, type TimeModel } from './time-model.js';
export { isQwenModel, loadQwenTokenizer, ESTIMATE_TOKENIZER, type Tokenizer } from './qwen-tokenizer.js';
export { renderChatPrompt, renderAssistantReply, QWEN_DEFAULT_SYSTEM } from './chat-prompt.js';
export { compareShape, jsonTypeOf, type CompareShapeOptions, type JsonTypeName } from './shape.js';
export { parseScenario, applyScenario, type Scenario, type ScenarioResult } from './scenario.js';
export { selfSignedCert, type SelfSignedCert } from './tls.js';
export { scriptByMarker, type MarkerScript, type ScriptsByMarker } from './script-by-marker.js';
