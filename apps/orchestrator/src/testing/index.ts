/**
 * `cc-orchestrator/testing`: helpers for testing against a running orchestrator — a WebSocket client that speaks the
 * protocol like a CC computer (records what it receives, answers heartbeats, waits for messages). Not part of the
 * server; nothing here is loaded by `cc-orchestrator serve`.
 */
export {
  WsTestClient,
  type Closed,
  type HelloOptions,
  type Msg,
  type WsTestClientOptions,
} from './ws-test-client.js';
