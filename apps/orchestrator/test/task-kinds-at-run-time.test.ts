/**
 * Task kinds edited at run time, over real sockets against the in-process orchestrator (SQLite file, the configured
 * agent strategies, the fake model server): a kind an operator saves is validated with the config file's schema,
 * stored, audited and used by the next task without a restart; bad input is a structured 400 that changes nothing;
 * a stored kind wins over the file's and its removal brings the file's back; a running task keeps the definition
 * of its creation, also across a restart; a viewer reads the kinds and cannot change them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually, startHarness, type Harness } from './support/harness.js';
import { TestClient, type Msg } from './support/ws-test-client.js';

const TOKEN = 'operator-token-for-task-kinds';

type Kind = {
  name: string;
  source: string;
  definition: Record<string, unknown>;
  config_definition?: Record<string, unknown>;
  revision?: number;
  saved_by?: string;
  roles: Array<{ role: string; model: string; provider: string; endpoint: string }>;
  aliases: string[];
};

const started: Harness[] = [];
const dirs: string[] = [];
afterEach(async () => {
  for (const h of started.splice(0)) await h.close();
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function start(dir?: string): Promise<Harness> {
  const h = await startHarness({ token: TOKEN, ...(dir !== undefined ? { dir } : {}) });
  started.push(h);
  // Every chat reply names the system prompt it was given, so a test sees which definition a task ran with.
  h.fake.script(
    'qwen3:8b',
    (req) => {
      const messages = req.body.messages as Array<{ role: string; content: string }>;
      const system = messages.find((m) => m.role === 'system')?.content ?? '';
      return { content: `reply under [${system.slice(0, 60)}]` };
    },
    { repeat: true },
  );
  return h;
}

async function kinds(h: Harness, key?: string): Promise<Kind[]> {
  const r = await h.http(
    '/api/task-kinds',
    key ? { headers: { authorization: `Bearer ${key}` }, auth: false } : {},
  );
  expect(r.status).toBe(200);
  return ((await r.json()) as { kinds: Kind[] }).kinds;
}

async function save(h: Harness, name: string, body: unknown): Promise<Response> {
  return h.http(`/api/task-kinds/${name}`, { method: 'POST', json: body });
}

/** Create a task and wait until it completed; returns its id and its result message. */
async function runTask(h: Harness, kind: string, prompt: string): Promise<{ id: string; message: string }> {
  const r = await h.http('/api/tasks', { method: 'POST', json: { task_kind: kind, prompt } });
  expect(r.status, await r.clone().text()).toBe(201);
  const id = ((await r.json()) as { task: { id: string } }).task.id;
  const message = await waitCompleted(h, id, 0);
  return { id, message };
}

async function waitCompleted(h: Harness, id: string, after: number): Promise<string> {
  return eventually(async () => {
    const t = (await (await h.http(`/api/tasks/${id}?steps=0`)).json()) as {
      task: { status: string; updated_at: number; result?: { message?: string } };
    };
    return t.task.status === 'completed' && t.task.updated_at > after
      ? (t.task.result?.message ?? '')
      : undefined;
  }, 10_000);
}

const PIRATE = 'You are PIRATE-42. Answer like a pirate <b>bold</b>.';

describe('task kinds at run time', () => {
  it('lists the config file’s kinds with their models, then a saved kind is stored, audited and used by the next task', async () => {
    const h = await start();
    const before = await kinds(h);
    expect(before.map((k) => `${k.name}:${k.source}`)).toEqual([
      'chat:config',
      'code_job:config',
      'general_agent:config',
      'resident_agent:config',
    ]);
    expect(before.find((k) => k.name === 'code_job')?.roles).toEqual([
      { role: 'planner', model: 'qwen3:8b', provider: 'ollama', endpoint: 'planner' },
      { role: 'executor', model: 'qwen3:8b', provider: 'ollama', endpoint: 'executor' },
    ]);
    expect(before.find((k) => k.name === 'general_agent')?.aliases).toEqual(['general', 'agent']);
    // an unknown kind is refused before it exists
    const early = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'pirate_chat', prompt: 'x' },
    });
    expect(early.status).toBe(400);

    const r = await save(h, 'pirate_chat', {
      definition: { strategy: 'chat', description: 'Talks like a pirate', systemPrompt: PIRATE },
      expected_revision: 0,
    });
    expect(r.status, await r.clone().text()).toBe(200);
    const saved = ((await r.json()) as { kind: Kind }).kind;
    expect(saved).toMatchObject({
      name: 'pirate_chat',
      source: 'stored',
      revision: 1,
      saved_by: 'operator:token',
    });
    expect(saved.definition).toMatchObject({ strategy: 'chat', systemPrompt: PIRATE, allowedCommands: [] });

    const { message } = await runTask(h, 'pirate_chat', 'hello');
    expect(message).toBe(`reply under [${PIRATE.slice(0, 60)}]`);
    const audit = (await (await h.http('/api/audit?action=task_kind.save')).json()) as {
      entries: Array<{ target?: string; outcome: string; role: string }>;
    };
    expect(audit.entries).toEqual([
      expect.objectContaining({ target: 'pirate_chat', outcome: 'ok', role: 'operator' }),
    ]);
  });

  it('refuses bad input with a structured error naming the field, and changes nothing', async () => {
    const h = await start();
    const before = await kinds(h);
    const cases: Array<[string, unknown, string]> = [
      ['bad_strategy', { definition: { strategy: 'telepathy' } }, '$.definition.strategy'],
      ['typo_field', { definition: { strategy: 'native', sytemPrompt: 'x' } }, '$.definition'],
      [
        'bad_budget',
        { definition: { strategy: 'native', budgets: { maxSteps: '5' } } },
        '$.definition.budgets.maxSteps',
      ],
      [
        'neg_budget',
        { definition: { strategy: 'native', budgets: { maxSteps: -1 } } },
        '$.definition.budgets.maxSteps',
      ],
      [
        'bad_regex',
        { definition: { strategy: 'native', confirm: { shellPatterns: ['(['] } } },
        '$.definition.confirm.shellPatterns.0',
      ],
      [
        'reads_file',
        { definition: { strategy: 'native', systemPromptFile: '/etc/passwd' } },
        '$.definition.systemPromptFile',
      ],
      [
        'bad_policy',
        { definition: { strategy: 'planner_executor', policy: { maxQuestions: 'many' } } },
        '$.definition.policy',
      ],
      ['Bad-Name', { definition: { strategy: 'chat' } }, 'name'],
      ['general', { definition: { strategy: 'chat' } }, 'name'],
      ['no_def', { strategy: 'chat' }, '$.definition'],
      ['chat', { definition: { strategy: 'chat' }, expected_revision: 3 }, '$.expected_revision'],
    ];
    for (const [name, body, where] of cases) {
      const r = await save(h, name, body);
      const b = (await r.json()) as { error: { code: string; message: string; path?: string } };
      expect(r.status, `${name}: ${JSON.stringify(b)}`).toBe(name === 'chat' ? 409 : 400);
      expect(b.error.path ?? '', name).toMatch(new RegExp(`^${where.replace(/[.$]/g, '\\$&')}`));
      expect(b.error.message.length, name).toBeGreaterThan(5);
    }
    expect(await kinds(h)).toEqual(before);
    const audit = (await (await h.http('/api/audit?action=task_kind.save')).json()) as { entries: unknown[] };
    expect(audit.entries).toEqual([]);
    // nothing reached the database either: a restart shows the same kinds
    const dir = h.dir;
    const again = await (async () => {
      const raw = await import('@ccagent/store');
      const s = raw.openSqliteStore({ path: path.join(dir, 'ccagent.db'), readonly: true });
      try {
        return await s.taskKinds.listTaskKindRevisions();
      } finally {
        await s.close();
      }
    })();
    expect(again).toEqual([]);
  });

  it('a stored kind wins over the file’s; removing it brings the file’s back; a second writer with a stale revision is refused', async () => {
    const h = await start();
    const fileChat = (await kinds(h)).find((k) => k.name === 'chat') as Kind;
    const r = await save(h, 'chat', {
      definition: { ...fileChat.definition, systemPrompt: 'STORED CHAT PROMPT' },
      expected_revision: 0,
    });
    expect(r.status).toBe(200);
    const chat = (await kinds(h)).find((k) => k.name === 'chat') as Kind;
    expect(chat.source).toBe('stored_over_config');
    expect(chat.config_definition).toEqual(fileChat.definition);
    expect((await runTask(h, 'chat', 'hi')).message).toBe('reply under [STORED CHAT PROMPT]');
    // someone else editing from revision 0 is refused
    const stale = await save(h, 'chat', { definition: { strategy: 'chat' }, expected_revision: 0 });
    expect(stale.status).toBe(409);
    expect(((await kinds(h)).find((k) => k.name === 'chat') as Kind).revision).toBe(1);

    const removed = await h.http('/api/task-kinds/chat/remove', {
      method: 'POST',
      json: { expected_revision: 1 },
    });
    expect(await removed.json()).toEqual({ removed: 'chat', source: 'config' });
    expect((await kinds(h)).find((k) => k.name === 'chat')).toEqual(fileChat);
    expect((await runTask(h, 'chat', 'hi')).message).not.toContain('STORED CHAT PROMPT');
    // a config kind that was never stored cannot be removed
    expect((await h.http('/api/task-kinds/code_job/remove', { method: 'POST', json: {} })).status).toBe(404);
  });

  it('a running task keeps the definition it was created with, also after a restart; new tasks get the new one', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-kinds-'));
    dirs.push(dir);
    let h = await start(dir);
    expect(
      (await save(h, 'pirate_chat', { definition: { strategy: 'chat', systemPrompt: 'VERSION ONE' } }))
        .status,
    ).toBe(200);
    const first = await runTask(h, 'pirate_chat', 'hello');
    expect(first.message).toBe('reply under [VERSION ONE]');
    expect(
      (await save(h, 'pirate_chat', { definition: { strategy: 'chat', systemPrompt: 'VERSION TWO' } }))
        .status,
    ).toBe(200);
    expect((await runTask(h, 'pirate_chat', 'hello')).message).toBe('reply under [VERSION TWO]');

    // a follow-up to the first task: its kind's first definition
    const follow = async (): Promise<string> => {
      const at = Date.now();
      const m = await h.http(`/api/tasks/${first.id}/messages`, {
        method: 'POST',
        json: { text: 'and again?' },
      });
      expect(m.status, await m.clone().text()).toBe(200);
      return waitCompleted(h, first.id, at - 1);
    };
    expect(await follow()).toBe('reply under [VERSION ONE]');

    await h.close();
    started.splice(started.indexOf(h), 1);
    h = await start(dir);
    const k = (await kinds(h)).find((x) => x.name === 'pirate_chat') as Kind;
    expect(k).toMatchObject({ source: 'stored', revision: 2, definition: { systemPrompt: 'VERSION TWO' } });
    expect(await follow()).toBe('reply under [VERSION ONE]');
    expect((await runTask(h, 'pirate_chat', 'hello')).message).toBe('reply under [VERSION TWO]');
  });

  it('a saved kind’s confirmation rule holds a destructive call for a yes, on a server whose file kinds have none', async () => {
    const h = await start();
    const saved = await save(h, 'careful_rt', {
      definition: { strategy: 'native', confirm: { commands: ['fs_delete'] } },
    });
    expect(saved.status).toBe(200);
    h.fake.script('qwen3:8b', [
      { toolCalls: [{ name: 'fs_delete', arguments: { path: '/startup.lua' } }] },
      'Deleted it.',
    ]);
    const c = await TestClient.connect(h.url, 'turtle-1', {
      commands: [{ name: 'fs_delete' }],
      token: TOKEN,
    });
    try {
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
      c.send({
        type: 'create_task',
        request_id: 'r1',
        task_kind: 'careful_rt',
        client_id: 'turtle-1',
        prompt: 'delete the startup file',
        allowed_commands: [],
      });
      const taskId = String((await c.waitFor('task_created', { request_id: 'r1' })).task_id);
      const ask = await c.waitFor('ask_user', { task_id: taskId }, 20_000);
      expect(String(ask.question)).toContain('fs_delete always needs a yes for "careful_rt" tasks');
      await new Promise((r) => setTimeout(r, 300));
      expect(c.messages.filter((m) => m.type === 'command_call')).toHaveLength(0);
      c.send({ type: 'user_answer', task_id: taskId, question_id: ask.question_id, text: 'yes' });
      await c.waitFor('task_completed', { task_id: taskId }, 20_000);
      expect(c.messages.filter((m) => m.type === 'command_call').map((m) => m.command)).toEqual([
        'fs_delete',
      ]);
    } finally {
      c.terminate();
    }
  });

  it('a viewer reads the kinds and cannot change them', async () => {
    const h = await start();
    const made = await h.http('/api/credentials/keys', {
      method: 'POST',
      json: { role: 'viewer', name: 'wall' },
    });
    const viewer = ((await made.json()) as { key: string }).key;
    expect((await kinds(h, viewer)).length).toBe(4);
    const r = await h.http('/api/task-kinds/pirate_chat', {
      method: 'POST',
      auth: false,
      headers: { authorization: `Bearer ${viewer}`, 'content-type': 'application/json' },
      body: JSON.stringify({ definition: { strategy: 'chat' } }),
    });
    expect(r.status).toBe(403);
    expect((await kinds(h)).map((k) => k.name)).not.toContain('pirate_chat');
    expect((await h.http('/api/task-kinds', { auth: false })).status).toBe(401);
  });
});
