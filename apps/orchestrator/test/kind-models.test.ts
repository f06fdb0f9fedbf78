/**
 * A task kind's own model and provider per role (`models.<role>` on a kind), over real sockets: the in-process
 * orchestrator (SQLite file, the configured agent strategies), two fake model servers from @ccagent/testkit, and a
 * computer that answers command calls. A kind saved over HTTP whose planner and executor name different models, one
 * on another configured server, sends each role's calls to that model on that server; a task's own settings win over
 * the kind's; bad input (a model the operator does not allow, a provider or endpoint not configured, a URL, a role the
 * strategy does not call, a model the server lacks …) is refused naming the field and changes nothing; the config
 * file's kinds follow the same rules at load and their models are in the startup check; a running task keeps its
 * kind's models across a new revision and a restart.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeChatRequest, type FakeOllama } from '@ccagent/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { loadConfig } from '../src/config.js';
import { eventually, startHarness, type Harness } from './support/harness.js';
import { TestClient, type Msg } from './support/ws-test-client.js';

const TOKEN = 'operator-token-for-kind-models';
const PLAN_BIG = 'plan-big:14b';
const EXEC_SMALL = 'exec-small:1b';
const CHAT_A = 'chat-a:1b';
const CHAT_B = 'chat-b:1b';
/** Allowed by limits.models but installed on no server. */
const GHOST = 'ghost:1b';

const cleanup: Array<() => Promise<void> | void> = [];
afterEach(async () => {
  for (const f of cleanup.splice(0).reverse()) await f();
});

type Kind = {
  name: string;
  revision?: number;
  definition: Record<string, unknown>;
  roles: Array<{ role: string; model: string; provider: string; endpoint: string }>;
};

/**
 * The harness's fake serves the planner and native roles; `second` (its own fake) the executor role. Every model a
 * test uses is allowed.
 */
async function start(
  opts: { dir?: string; second?: FakeOllama } = {},
): Promise<{ h: Harness; second: FakeOllama }> {
  let second = opts.second;
  if (!second) {
    const made = await startFakeOllama({ installed: ['qwen3:8b'] });
    second = made;
    cleanup.push(() => made.close());
  }
  const h = await startHarness({
    token: TOKEN,
    ...(opts.dir !== undefined ? { dir: opts.dir } : {}),
    config: {
      models: { executor: { baseUrl: second.url } },
      limits: { models: ['qwen3:8b', PLAN_BIG, EXEC_SMALL, CHAT_A, CHAT_B, GHOST] },
    },
  });
  cleanup.push(() => h.close());
  return { h, second };
}

/** A computer that writes files and answers every other call with ok. */
async function computer(h: Harness): Promise<TestClient> {
  const c = await TestClient.connect(h.url, 'pc-1', {
    commands: [{ name: 'fs_write' }, { name: 'run_program' }],
    token: TOKEN,
  });
  cleanup.push(() => c.terminate());
  c.ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8')) as Msg;
    if (m.type === 'command_call')
      c.send({
        type: 'command_result',
        task_id: m.task_id,
        call_id: m.call_id,
        ok: true,
        result: { ok: true },
      });
  });
  return c;
}

const DIRECTIVE = ['WRITE_FILE', 'PATH: /hello.lua', 'CONTENT:', '```lua', 'print("hi")', '```'].join('\n');
/** The executor: the write as one tool call, a DONE as the final result. */
function EXECUTOR_REPLY(req: FakeChatRequest): string {
  const last = (req.body as ChatBody).messages.at(-1)?.content ?? '';
  return JSON.stringify(
    /^\s*DONE/m.test(last)
      ? {
          kind: 'final',
          explanation: 'done',
          result: { success: true, message: 'wrote hello.lua', details: '' },
        }
      : {
          kind: 'tool',
          explanation: 'write the file',
          tool: 'cc_write',
          parameters: { path: '/hello.lua', content: 'print("hi")' },
        },
  );
}

/** A planner that writes one file, then says DONE once the write is in its history. */
function planner(req: FakeChatRequest): string {
  const all = (req.body.messages as Array<{ content: string }>).map((m) => m.content).join('\n');
  return /fs_write[\s\S]*ok/i.test(all) && all.includes('hello.lua') && countAssistant(req) > 0
    ? 'DONE\nSUMMARY: wrote hello.lua'
    : DIRECTIVE;
}

function countAssistant(req: FakeChatRequest): number {
  return (req.body.messages as Array<{ role: string }>).filter((m) => m.role === 'assistant').length;
}

async function save(h: Harness, name: string, definition: unknown): Promise<Response> {
  return h.http(`/api/task-kinds/${name}`, { method: 'POST', json: { definition } });
}

async function listKinds(h: Harness): Promise<{ kinds: Kind[]; models: string[]; endpoints: unknown[] }> {
  const r = await h.http('/api/task-kinds');
  expect(r.status).toBe(200);
  return (await r.json()) as { kinds: Kind[]; models: string[]; endpoints: unknown[] };
}

async function runTask(h: Harness, body: Record<string, unknown>): Promise<string> {
  const r = await h.http('/api/tasks', { method: 'POST', json: { client_id: 'pc-1', ...body } });
  expect(r.status, await r.clone().text()).toBe(201);
  const id = ((await r.json()) as { task: { id: string } }).task.id;
  await waitDone(h, id, 0);
  return id;
}

async function waitDone(h: Harness, id: string, after: number): Promise<string> {
  return eventually(async () => {
    const t = (await (await h.http(`/api/tasks/${id}?steps=0`)).json()) as {
      task: { status: string; updated_at: number; error?: unknown; result?: { message?: string } };
    };
    if (t.task.status === 'failed') throw new Error(`task failed: ${JSON.stringify(t.task.error)}`);
    return t.task.status === 'completed' && t.task.updated_at > after
      ? t.task.result?.message || '(completed)'
      : undefined;
  }, 15_000);
}

/** The model names of a fake's chat requests, in order, with the role each prompt is written for. */
function calls(fake: FakeOllama): string[] {
  return fake.chatRequests().map((r) => {
    const body = r.body as ChatBody;
    const system = body.messages[0]?.content ?? '';
    const role = /executor|JSON object/i.test(system.slice(0, 400)) ? 'executor' : 'planner';
    return `${role}:${body.model}`;
  });
}

type ChatBody = { model: string; messages: Array<{ role: string; content: string }> };

/** The model names of a fake's chat requests, in order. */
function models(fake: FakeOllama): string[] {
  return fake.chatRequests().map((r) => (r.body as ChatBody).model);
}

/** One task's calls: the planner's write and the executor's tool call, then the planner's DONE and the executor's final. */
const ROUND = (plannerModel: string): string[] => [
  `planner:${plannerModel}`,
  `executor:${EXEC_SMALL}`,
  `planner:${plannerModel}`,
  `executor:${EXEC_SMALL}`,
];

const TWO_MODELS = {
  strategy: 'planner_executor',
  executorMode: 'model',
  allowedCommands: ['fs_write', 'run_program'],
  completion: { requireSuccessfulRun: false, requireLastRunOk: false },
  models: {
    planner: { name: PLAN_BIG },
    // the executor role's server is the second fake; this kind moves its calls to the planner's server
    executor: { name: EXEC_SMALL, endpoint: 'planner', provider: 'ollama' },
  },
};

describe('a task kind’s own model and provider per role', () => {
  it('sends the planner’s and the executor’s calls to the kind’s two models, on the server the kind chose', async () => {
    const { h, second } = await start();
    h.fake.script(PLAN_BIG, planner, { repeat: true });
    h.fake.script(EXEC_SMALL, EXECUTOR_REPLY);
    second.script(EXEC_SMALL, EXECUTOR_REPLY);
    await computer(h);
    const r = await save(h, 'two_models', TWO_MODELS);
    expect(r.status, await r.clone().text()).toBe(200);
    const saved = (await r.json()) as { kind: Kind; warnings?: string[] };
    expect(saved.warnings).toBeUndefined();
    expect(saved.kind.roles).toEqual([
      { role: 'planner', model: PLAN_BIG, provider: 'ollama', endpoint: 'planner' },
      { role: 'executor', model: EXEC_SMALL, provider: 'ollama', endpoint: 'planner' },
    ]);

    const id = await runTask(h, { task_kind: 'two_models', prompt: 'write hello.lua' });
    // the write directive and the DONE each go from the planner to the executor
    expect(calls(h.fake)).toEqual(ROUND(PLAN_BIG));
    expect(second.chatRequests()).toEqual([]);
    // the step log names each role's model
    const steps = (await (await h.http(`/api/tasks/${id}/steps`)).json()) as { steps: unknown[] };
    const text = JSON.stringify(steps.steps);
    expect(text).toContain(PLAN_BIG);
    expect(text).toContain(EXEC_SMALL);
    expect(text).not.toContain('qwen3:8b');
  });

  it('a task’s own model for a role wins over the kind’s; the kind’s other role stays', async () => {
    const { h, second } = await start();
    h.fake.script('qwen3:8b', planner, { repeat: true });
    h.fake.script(PLAN_BIG, planner, { repeat: true });
    h.fake.script(EXEC_SMALL, EXECUTOR_REPLY);
    await computer(h);
    expect((await save(h, 'two_models', TWO_MODELS)).status).toBe(200);
    await runTask(h, {
      task_kind: 'two_models',
      prompt: 'write hello.lua',
      settings: { models: { planner: 'qwen3:8b' } },
    });
    expect(calls(h.fake)).toEqual(ROUND('qwen3:8b'));
    expect(second.chatRequests()).toEqual([]);
    // without its own settings the next task gets the kind's planner again
    await runTask(h, { task_kind: 'two_models', prompt: 'write hello.lua' });
    expect(calls(h.fake).slice(4)).toEqual(ROUND(PLAN_BIG));
  });

  it('refuses a bad kind with a structured error naming the field, stores and audits nothing', async () => {
    const { h } = await start();
    const before = await listKinds(h);
    const pe = (models: unknown) => ({ strategy: 'planner_executor', models });
    const cases: Array<[string, unknown, string, RegExp]> = [
      [
        'not_allowed',
        pe({ planner: { name: 'secret:70b' } }),
        '$.definition.models.planner.name',
        /limits\.models/,
      ],
      [
        'unknown_provider',
        pe({ planner: { provider: 'anthropic' } }),
        '$.definition.models.planner.provider',
        /ollama/,
      ],
      [
        'unconfigured_provider',
        pe({ planner: { provider: 'openai-compatible' } }),
        '$.definition.models.planner.provider',
        /no model role is configured/,
      ],
      [
        'unknown_endpoint',
        pe({ executor: { endpoint: 'gpu9' } }),
        '$.definition.models.executor.endpoint',
        /planner/,
      ],
      [
        'a_url',
        pe({ planner: { name: 'qwen3:8b', baseUrl: 'http://169.254.169.254/' } }),
        '$.definition.models.planner',
        /baseUrl/,
      ],
      [
        'servers',
        pe({ planner: { servers: [{ baseUrl: 'http://10.0.0.9:11434' }] } }),
        '$.definition.models.planner',
        /servers/,
      ],
      [
        'role_not_called',
        pe({ native: { name: 'qwen3:8b' } }),
        '$.definition.models.native',
        /calls no native model/,
      ],
      [
        'chat_role',
        { strategy: 'chat', models: { planner: { name: 'qwen3:8b' } } },
        '$.definition.models.planner',
        /native/,
      ],
      ['empty_name', pe({ planner: { name: '' } }), '$.definition.models.planner.name', /.{5}/],
      ['not_a_role', pe({ critic: { name: 'qwen3:8b' } }), '$.definition.models', /critic/],
      [
        'not_installed',
        pe({ planner: { name: GHOST } }),
        '$.definition.models.planner.name',
        /ollama pull ghost:1b/,
      ],
    ];
    for (const [name, definition, where, message] of cases) {
      const r = await save(h, name, definition);
      const b = (await r.json()) as { error: { code: string; message: string; path?: string } };
      expect(r.status, `${name}: ${JSON.stringify(b)}`).toBe(400);
      expect(b.error.code, name).toBe('invalid_body');
      expect(b.error.path ?? '', name).toMatch(new RegExp(`^${where.replace(/[.$]/g, '\\$&')}`));
      expect(b.error.message, name).toMatch(message);
    }
    expect(await listKinds(h)).toEqual(before);
    const audit = (await (await h.http('/api/audit?action=task_kind.save')).json()) as { entries: unknown[] };
    expect(audit.entries).toEqual([]);
    const raw = await import('@ccagent/store');
    const s = raw.openSqliteStore({ path: h.dbPath, readonly: true });
    try {
      expect(await s.taskKinds.listTaskKindRevisions()).toEqual([]);
    } finally {
      await s.close();
    }
  });

  it('saves with a stated warning when the kind’s server does not answer', async () => {
    const { h, second } = await start();
    await second.close();
    const r = await save(h, 'offline_exec', {
      strategy: 'planner_executor',
      models: { executor: { name: EXEC_SMALL } },
    });
    expect(r.status, await r.clone().text()).toBe(200);
    const b = (await r.json()) as { kind: Kind; warnings?: string[] };
    expect(b.warnings).toEqual([
      expect.stringMatching(/^models\.executor: ollama at http:\/\/127\.0\.0\.1:\d+ did not answer/),
    ]);
    expect(b.kind.revision).toBe(1);
    const audit = (await (await h.http('/api/audit?action=task_kind.save')).json()) as { entries: unknown[] };
    expect(audit.entries).toHaveLength(1);
  });

  it('the config file’s kinds follow the same rules, and their models are in the startup model check', async () => {
    const bad = loadConfig({
      overrides: {
        taskKinds: { pirate: { strategy: 'native', models: { native: { name: 'secret:70b' } } } },
      },
    });
    expect(bad.ok).toBe(false);
    if (!bad.ok) expect(bad.error.message).toContain('taskKinds.pirate.models.native.name');
    const url = loadConfig({
      overrides: {
        taskKinds: { pirate: { strategy: 'native', models: { native: { baseUrl: 'http://x:1' } } } },
      },
    });
    expect(url.ok).toBe(false);

    const h = await startHarness({
      token: TOKEN,
      config: {
        limits: { models: ['qwen3:8b', GHOST] },
        taskKinds: { ghostly: { strategy: 'native', models: { native: { name: GHOST } } } },
      },
    });
    cleanup.push(() => h.close());
    const health = (await (await h.http('/health')).json()) as { models: { missing: string[] } };
    expect(health.models.missing).toEqual([GHOST]);
    const kinds = await listKinds(h);
    expect(kinds.kinds.find((k) => k.name === 'ghostly')?.roles).toEqual([
      { role: 'native', model: GHOST, provider: 'ollama', endpoint: 'native' },
    ]);
    expect(kinds.models).toEqual(['qwen3:8b', GHOST]);
  });

  it('a stored kind whose model the configuration no longer allows is ignored at the next start', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-kind-models-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const withLimits = async (models: string[]): Promise<Harness> => {
      const h = await startHarness({ token: TOKEN, dir, config: { limits: { models } } });
      cleanup.push(() => h.close());
      h.fake.script(CHAT_A, ['hi'], { repeat: true });
      return h;
    };
    let h = await withLimits(['qwen3:8b', CHAT_A]);
    const r = await save(h, 'talk', { strategy: 'chat', models: { native: { name: CHAT_A } } });
    expect(r.status, await r.clone().text()).toBe(200);
    await h.close();
    h = await withLimits(['qwen3:8b']);
    expect((await listKinds(h)).kinds.map((k) => k.name)).not.toContain('talk');
    const refused = await h.http('/api/tasks', { method: 'POST', json: { task_kind: 'talk', prompt: 'x' } });
    expect(refused.status).toBe(400);
  });

  it('a running task keeps its kind’s model after a new revision and across a restart', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-kind-models-'));
    cleanup.push(() => rmSync(dir, { recursive: true, force: true }));
    const second = await startFakeOllama({ installed: ['qwen3:8b'] });
    cleanup.push(() => second.close());
    let { h } = await start({ dir, second });
    const script = (fake: FakeOllama): void => {
      for (const m of [CHAT_A, CHAT_B]) fake.script(m, [`answered by ${m}`], { repeat: true });
    };
    script(h.fake);
    const chat = (model: string) => ({ strategy: 'chat', models: { native: { name: model } } });
    expect((await save(h, 'talk', chat(CHAT_A))).status).toBe(200);
    const first = await runTask(h, { task_kind: 'talk', prompt: 'hello' });
    expect((await save(h, 'talk', chat(CHAT_B))).status).toBe(200);
    const follow = async (): Promise<string> => {
      const at = Date.now();
      const m = await h.http(`/api/tasks/${first}/messages`, { method: 'POST', json: { text: 'again?' } });
      expect(m.status, await m.clone().text()).toBe(200);
      return waitDone(h, first, at - 1);
    };
    expect(await follow()).toBe(`answered by ${CHAT_A}`);
    await runTask(h, { task_kind: 'talk', prompt: 'hello' });
    expect(models(h.fake)).toEqual([CHAT_A, CHAT_A, CHAT_B]);

    await h.close();
    ({ h } = await start({ dir, second }));
    script(h.fake);
    expect(await follow()).toBe(`answered by ${CHAT_A}`);
    await runTask(h, { task_kind: 'talk', prompt: 'hello' });
    expect(models(h.fake)).toEqual([CHAT_A, CHAT_B]);
  });
});
