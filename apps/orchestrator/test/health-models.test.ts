/**
 * What `/health` says about models, over real sockets with two fake model servers: a model is missing on a server
 * only when something would call it there (a role's configured model, a kind's model on its endpoint, a task's own
 * choice); a name `limits.models` merely allows is listed apart (`allowed_missing`) and does not degrade the server.
 * A task that chooses an allowed model its server lacks still fails with the pull hint.
 */
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from './support/harness.js';
import { TestClient } from './support/ws-test-client.js';

const EXEC = 'exec-small:1b';
const EXTRA = 'extra:3b';
const KIND_ONLY = 'kind-only:1b';

type Health = {
  degraded: boolean;
  model_servers: Array<{ url: string; present: string[]; missing: string[]; allowed_missing: string[] }>;
  models: { missing: string[]; allowed_missing: string[] };
};

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

/** The harness's fake (qwen3:8b) serves planner and native; `second` (EXEC only) serves the executor. */
async function start(extra: Record<string, unknown> = {}): Promise<{ h: Harness; second: FakeOllama }> {
  const second = await startFakeOllama({ installed: [EXEC] });
  cleanup.push(() => second.close());
  const h = await startHarness({
    config: {
      models: { executor: { name: EXEC, baseUrl: second.url } },
      limits: { models: ['qwen3:8b', EXEC, EXTRA, KIND_ONLY] },
      ...extra,
    },
  });
  cleanup.push(() => h.close());
  return { h, second };
}

async function health(h: Harness): Promise<Health> {
  return (await (await h.http('/health')).json()) as Health;
}

function server(body: Health, url: string): Health['model_servers'][number] {
  const s = body.model_servers.find((x) => x.url === url);
  if (!s) throw new Error(`no server ${url} in ${JSON.stringify(body.model_servers)}`);
  return s;
}

describe('/health model availability', () => {
  it('lists an allowed model a server lacks apart, not as missing, and is not degraded by it', async () => {
    const { h, second } = await start();
    const body = await health(h);
    expect(body.degraded).toBe(false);
    expect(body.models.missing).toEqual([]);
    expect([...body.models.allowed_missing].sort()).toEqual([EXEC, EXTRA, KIND_ONLY, 'qwen3:8b'].sort());
    const first = server(body, h.fake.url);
    expect(first).toMatchObject({ present: ['qwen3:8b'], missing: [] });
    expect([...first.allowed_missing].sort()).toEqual([EXEC, EXTRA, KIND_ONLY].sort());
    const other = server(body, second.url);
    expect(other).toMatchObject({ present: [EXEC], missing: [] });
    expect([...other.allowed_missing].sort()).toEqual([EXTRA, KIND_ONLY, 'qwen3:8b'].sort());
  });

  it('a kind’s model is missing only on the endpoint that kind calls it on', async () => {
    const { h, second } = await start({
      taskKinds: { kindly: { strategy: 'native', models: { native: { name: KIND_ONLY } } } },
    });
    const body = await health(h);
    expect(body.degraded).toBe(true);
    expect(body.models.missing).toEqual([KIND_ONLY]);
    expect(server(body, h.fake.url).missing).toEqual([KIND_ONLY]);
    expect(server(body, second.url).missing).toEqual([]);
    expect(server(body, second.url).allowed_missing).toContain(KIND_ONLY);
  });

  it('a task that chooses an allowed model its server lacks still fails with the pull hint before any call', async () => {
    const { h } = await start();
    const c = await TestClient.connect(h.url, 'pc-1', { commands: [{ name: 'fs_write' }] });
    cleanup.push(() => c.terminate());
    const r = await h.http('/api/tasks', {
      method: 'POST',
      json: {
        client_id: 'pc-1',
        task_kind: 'general_agent',
        prompt: 'write a file',
        settings: { models: { native: EXTRA } },
      },
    });
    expect(r.status, await r.clone().text()).toBe(201);
    const id = ((await r.json()) as { task: { id: string } }).task.id;
    const task = await eventually(async () => {
      const t = (await (await h.http(`/api/tasks/${id}?steps=0`)).json()) as {
        task: { status: string; error?: { code: string; message: string } };
      };
      return t.task.status === 'failed' ? t.task : undefined;
    }, 15_000);
    expect(task.error).toMatchObject({
      code: 'model_missing',
      message: expect.stringContaining(`ollama pull ${EXTRA}`),
    });
    expect(h.fake.chatRequests()).toEqual([]);
  });
});
