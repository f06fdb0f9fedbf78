/**
 * The per-test server and WebSocket clients of the in-process integration tests. `useHarness()` registers its own
 * `afterEach` (terminate every client, close the server), so a test file only says what it starts and connects.
 */
import { afterEach } from 'vitest';
import { startHarness, type Harness, type HarnessOptions } from './harness.js';
import { TestClient } from './ws-test-client.js';
import type { HelloOptions } from '../../src/testing/index.js';

/** What {@link useHarness} gives a test file. */
export interface TestSession {
  /** Start the server of the current test. */
  start(opts?: HarnessOptions): Promise<Harness>;
  /** The server of the current test (throws before {@link start}). */
  readonly h: Harness;
  /** The clients of the current test, in the order they were made. */
  readonly clients: readonly TestClient[];
  /** A client that said hello as `clientId` (commands default to the CC agent host's). */
  connect(clientId: string, opts?: HelloOptions): Promise<TestClient>;
  /** A client whose socket is opening and that has said nothing yet. */
  open(): TestClient;
  /** Close `c` with the test's other clients. */
  track(c: TestClient): TestClient;
  /** `create_task` for `clientId` over `c`; resolves with the task id from `task_created`. */
  createTask(
    c: TestClient,
    clientId: string,
    opts?: { requestId?: string; kind?: string; prompt?: string },
  ): Promise<string>;
}

/** See the module comment. Call once at the top level of a test file. */
export function useHarness(): TestSession {
  let current: Harness | undefined;
  const clients: TestClient[] = [];
  afterEach(async () => {
    for (const c of clients.splice(0)) c.terminate();
    await current?.close();
    current = undefined;
  });
  const session: TestSession = {
    async start(opts) {
      current = await startHarness(opts);
      return current;
    },
    get h() {
      if (!current) throw new Error('start() the harness first');
      return current;
    },
    clients,
    track(c) {
      clients.push(c);
      return c;
    },
    async connect(clientId, opts = {}) {
      return session.track(await TestClient.connect(session.h.url, clientId, opts));
    },
    open() {
      return session.track(new TestClient(session.h.url));
    },
    async createTask(c, clientId, opts = {}) {
      const requestId = opts.requestId ?? 'req-1';
      c.send({
        type: 'create_task',
        request_id: requestId,
        task_kind: opts.kind ?? 'code_job',
        client_id: clientId,
        prompt: opts.prompt ?? 'p',
        allowed_commands: [],
      });
      return String((await c.waitFor('task_created', { request_id: requestId })).task_id);
    },
  };
  return session;
}
