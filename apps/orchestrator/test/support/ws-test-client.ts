/**
 * The orchestrator tests' WebSocket client: {@link WsTestClient} (shared with the resilience suite through
 * `cc-orchestrator/testing`) with the commands of a CC agent host as its default `hello`, opening its socket at once.
 */
import type WebSocket from 'ws';
import { WsTestClient, type HelloOptions } from '../../src/testing/index.js';

export type { Closed, Msg } from '../../src/testing/index.js';

/** Standard commands a CC agent host registers, with simple schemas. */
export const CC_COMMANDS = [
  {
    name: 'fs_write',
    description: 'Write a file',
    args_schema: {
      type: 'object',
      properties: { path: { type: 'string' }, content: { type: 'string' } },
      required: ['path', 'content'],
      additionalProperties: false,
    },
  },
  {
    name: 'run_program',
    description: 'Run a program',
    args_schema: {
      type: 'object',
      properties: { path: { type: 'string' }, args: { type: 'array', items: { type: 'string' } } },
      required: ['path'],
    },
  },
  { name: 'fs_list', args_schema: { type: 'object', properties: { path: { type: 'string' } } } },
];

/** A client whose socket starts opening on construction (`opened`); {@link TestClient.connect} also says hello. */
export class TestClient extends WsTestClient {
  declare ws: WebSocket;
  /** Resolves when the socket is open. */
  readonly opened: Promise<void>;

  constructor(url: string) {
    super();
    this.opened = this.open(url);
    // Callers that never await `opened` (a refused upgrade) must not see an unhandled rejection.
    this.opened.catch(() => {});
  }

  /** Open a client and complete the handshake (commands default to {@link CC_COMMANDS}); rejects on a refusal. */
  static async connect(url: string, clientId: string, opts: HelloOptions = {}): Promise<TestClient> {
    const c = new TestClient(url);
    await c.opened;
    await c.hello(clientId, { ...opts, commands: opts.commands ?? CC_COMMANDS });
    return c;
  }
}
