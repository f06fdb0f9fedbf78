import { createHash } from 'node:crypto';
import { mkdirSync, mkdtempSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { Decision, TaskStrategy } from '@ccagent/engine';
import { describe, expect, it } from 'vitest';
import { everyKind, eventually, strategyOf, writeThenRun } from './support/harness.js';
import { useHarness } from './support/session.js';

const t = useHarness();

type Json = Record<string, unknown>;
const json = async (r: Response): Promise<Json> => (await r.json()) as Json;

describe('HTTP API', () => {
  it('GET /health reports DB, model server, models, uptime and version without a token', async () => {
    const h = await t.start({ token: 'secret-token-1' });
    const res = await h.http('/health', { auth: false });
    expect(res.status).toBe(200);
    const body = await json(res);
    expect(body).toMatchObject({
      ok: true,
      version: '0.1.0',
      db: { ok: true, path: h.dbPath },
      model_servers: [{ provider: 'ollama', reachable: true, present: ['qwen3:8b'], missing: [] }],
      models: { missing: [] },
    });
    expect(typeof body.uptime_s).toBe('number');
  });

  it('reports missing models and an unreachable model server as degraded, not down', async () => {
    const h = await t.start({ config: { models: { native: { name: 'not-pulled:1b' } } } });
    const body = await json(await h.http('/health'));
    expect(body).toMatchObject({ ok: true, degraded: true, models: { missing: ['not-pulled:1b'] } });
  });

  it('requires the bearer token on every API route when one is set (401 with a structured error)', async () => {
    const h = await t.start({ token: 'secret-token-1' });
    for (const [method, p] of [
      ['GET', '/api/tasks'],
      ['GET', '/api/tasks/x'],
      ['GET', '/api/tasks/x/steps'],
      ['POST', '/api/tasks'],
      ['POST', '/api/tasks/x/cancel'],
      ['POST', '/api/tasks/x/answer'],
      ['GET', '/api/clients'],
      ['GET', '/api/tools'],
      ['GET', '/metrics'],
    ] as const) {
      const res = await h.http(p, { method, auth: false, headers: { authorization: 'Bearer nope-nope' } });
      expect(res.status, `${method} ${p}`).toBe(401);
      expect((await json(res)).error).toMatchObject({ code: 'unauthorized' });
    }
    expect((await h.http('/api/tasks')).status).toBe(200);
  });

  it('rejects bad bodies with 400 and a path, and creates nothing', async () => {
    const h = await t.start();
    const cases: Array<[unknown, string]> = [
      [{ prompt: 'p' }, '$.task_kind'],
      [{ task_kind: 'code_job', prompt: 5 }, '$.prompt'],
      [{ task_kind: 'code_job', prompt: 'p', allowed_commands: [1] }, '$.allowed_commands[0]'],
      [{ task_kind: 'code_job', prompt: 'p', surprise: 1 }, '$'],
      [{ task_kind: 'nope', prompt: 'p' }, '$.task_kind'],
    ];
    for (const [body, p] of cases) {
      const res = await h.http('/api/tasks', { method: 'POST', json: body });
      expect(res.status, JSON.stringify(body)).toBe(400);
      const e = (await json(res)).error as Json;
      expect(e.code).toBe('invalid_body');
      expect(e.path).toBe(p);
    }
    const raw = await h.http('/api/tasks', {
      method: 'POST',
      body: '{"oops',
      headers: { 'content-type': 'application/json' },
    });
    expect(raw.status).toBe(400);
    expect(((await json(raw)).error as Json).code).toBe('invalid_json');
    const list = await json(await h.http('/api/tasks'));
    expect(list.total).toBe(0);
    const q = await h.http('/api/tasks?status=bogus');
    expect(q.status).toBe(400);
    expect(((await json(q)).error as Json).code).toBe('invalid_query');
  });

  it('creates, lists (filters, paging), shows with steps, and cancels tasks', async () => {
    const waiting = strategyOf((): Decision => ({ type: 'ask_user', question: 'ok?' }));
    const h = await t.start({ strategies: everyKind(waiting) });
    const ids: string[] = [];
    for (let i = 0; i < 3; i++) {
      const res = await h.http('/api/tasks', {
        method: 'POST',
        json: {
          task_kind: i === 2 ? 'general' : 'code_job',
          prompt: `p${i}`,
          client_id: i === 0 ? 'a' : 'b',
        },
      });
      expect(res.status).toBe(201);
      ids.push(((await json(res)).task as Json).id as string);
    }
    const again = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'code_job', prompt: 'x', request_id: 'r1' },
    });
    const again2 = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'code_job', prompt: 'x', request_id: 'r1' },
    });
    expect(again.status).toBe(201);
    expect(again2.status).toBe(200);
    expect(((await json(again2)).task as Json).id).toBe(((await json(again)).task as Json).id);

    const page = await json(await h.http('/api/tasks?limit=2&offset=0&order=oldest'));
    expect(page.total).toBe(4);
    expect((page.tasks as Json[]).map((t) => t.id)).toEqual(ids.slice(0, 2));
    const byClient = await json(await h.http('/api/tasks?client=b'));
    expect((byClient.tasks as Json[]).map((t) => t.id).sort()).toEqual(ids.slice(1).sort());
    const byKind = await json(await h.http('/api/tasks?kind=general_agent'));
    expect((byKind.tasks as Json[]).map((t) => t.id)).toEqual([ids[2]]);

    await eventually(async () => {
      const b = await json(await h!.http(`/api/tasks/${ids[0]}`));
      return (b.task as Json).status === 'waiting_for_user';
    });
    const waitingList = await json(await h.http('/api/tasks?status=waiting_for_user,running'));
    expect(waitingList.total).toBeGreaterThanOrEqual(1);
    const detail = await json(await h.http(`/api/tasks/${ids[0]}`));
    expect(detail.task).toMatchObject({
      id: ids[0],
      kind: 'code_job',
      client_id: 'a',
      counters: { steps: 1 },
    });
    expect((detail.steps as Json[]).some((s) => s.kind === 'decision')).toBe(true);
    expect(detail.questions).toEqual([expect.objectContaining({ question: 'ok?' })]);

    const cancel = await h.http(`/api/tasks/${ids[0]}/cancel`, { method: 'POST', json: {} });
    expect(cancel.status).toBe(200);
    expect(((await json(cancel)).task as Json).status).toBe('cancelled');
    const cancel2 = await h.http(`/api/tasks/${ids[0]}/cancel`, { method: 'POST', json: {} });
    expect(cancel2.status).toBe(200);
    expect((await h.http('/api/tasks/nope/cancel', { method: 'POST', json: {} })).status).toBe(404);
    expect((await h.http('/api/tasks/nope')).status).toBe(404);
  });

  it('GET /api/tasks/:id/steps pages the step log after a seq, with the task and its questions (guards against a follower re-reading the whole log of a long task every poll)', async () => {
    const chatty: TaskStrategy = {
      async decide(_task, _history, ctx) {
        for (let i = 1; i <= 250; i++) await ctx.logStep({ kind: 'note', output: { i } });
        return { type: 'ask_user', question: 'more?' };
      },
    };
    const h = await t.start({ strategies: everyKind(chatty) });
    const created = await json(
      await h.http('/api/tasks', { method: 'POST', json: { task_kind: 'code_job', prompt: 'p' } }),
    );
    const id = (created.task as Json).id as string;
    await eventually(async () => {
      const b = await json(await h!.http(`/api/tasks/${id}`));
      return (b.task as Json).status === 'waiting_for_user';
    });
    const all = (await json(await h.http(`/api/tasks/${id}`))).steps as Json[];
    expect(all.length).toBe(251); // 250 notes + the decision

    // Default page: the first 100, and where to go on from.
    const first = await json(await h.http(`/api/tasks/${id}/steps`));
    expect(first).toMatchObject({ after_seq: 0, limit: 100, has_more: true, next_after_seq: 100 });
    expect((first.task as Json).status).toBe('waiting_for_user');
    expect(first.questions).toEqual([expect.objectContaining({ question: 'more?' })]);
    expect(first.steps).toEqual(all.slice(0, 100));

    // Walking the pages yields every record exactly once, in order.
    const walked: Json[] = [];
    let after = 0;
    for (;;) {
      const page = await json(await h.http(`/api/tasks/${id}/steps?after_seq=${after}&limit=70`));
      walked.push(...(page.steps as Json[]));
      after = page.next_after_seq as number;
      if (!page.has_more) break;
    }
    expect(walked).toEqual(all);
    const tail = await json(await h.http(`/api/tasks/${id}/steps?after_seq=251&limit=500`));
    expect(tail).toMatchObject({ steps: [], has_more: false, next_after_seq: 251, limit: 500 });

    // Bad values: 400 with a structured error naming the parameter.
    for (const [query, path] of [
      ['after_seq=-1', '$.after_seq'],
      ['after_seq=1.5', '$.after_seq'],
      ['after_seq=', '$.after_seq'],
      ['after_seq=abc', '$.after_seq'],
      ['limit=0', '$.limit'],
      ['limit=501', '$.limit'],
      ['limit=1e2', '$.limit'],
      ['after=3', '$'],
    ] as const) {
      const res = await h.http(`/api/tasks/${id}/steps?${query}`);
      expect(res.status, query).toBe(400);
      expect((await json(res)).error, query).toMatchObject({ code: 'invalid_query', path });
    }
    expect((await h.http('/api/tasks/nope/steps')).status).toBe(404);
  });

  it('answers a waiting task over HTTP; 409 when it is not waiting', async () => {
    const asking = strategyOf((_t, history): Decision => {
      const a = history.find((x) => x.type === 'answer');
      return a && a.type === 'answer'
        ? { type: 'complete', result: a.answer }
        : { type: 'ask_user', question: 'name?' };
    });
    const h = await t.start({ strategies: everyKind(asking) });
    const res = await h.http('/api/tasks', { method: 'POST', json: { task_kind: 'code_job', prompt: 'p' } });
    const id = ((await json(res)).task as Json).id as string;
    await eventually(
      async () =>
        ((await json(await h!.http(`/api/tasks/${id}`))).task as Json).status === 'waiting_for_user',
    );
    const bad = await h.http(`/api/tasks/${id}/answer`, { method: 'POST', json: { answer: 'x' } });
    expect(bad.status).toBe(400);
    const ok = await h.http(`/api/tasks/${id}/answer`, { method: 'POST', json: { text: 'Bob' } });
    expect(ok.status).toBe(200);
    await eventually(
      async () => ((await json(await h!.http(`/api/tasks/${id}`))).task as Json).status === 'completed',
    );
    expect(((await json(await h.http(`/api/tasks/${id}`))).task as Json).result).toBe('Bob');
    const late = await h.http(`/api/tasks/${id}/answer`, { method: 'POST', json: { text: 'Alice' } });
    expect(late.status).toBe(409);
  });

  it('GET /api/clients lists connected clients with their commands', async () => {
    const h = await t.start();
    await t.connect('pc-9');
    const body = await json(await h.http('/api/clients'));
    const list = body.clients as Json[];
    expect(list).toHaveLength(1);
    expect(list[0]).toMatchObject({ client_id: 'pc-9', connected: true });
    expect((list[0]?.commands as Json[]).map((x) => x.name)).toEqual(['fs_write', 'run_program', 'fs_list']);
    expect((list[0]?.commands as Json[])[0]).toHaveProperty('args_schema');
  });

  it("GET /api/tasks/:id and /steps show on each call of a task bound to no client the client it was sent to (sent_to), while it waits and after it closed, and none on a bound task's call (guards against a routing choice that cannot be seen)", async () => {
    const h = await t.start({ strategies: everyKind(writeThenRun) });
    const a = await t.connect('pc-a');
    const res = await h.http('/api/tasks', { method: 'POST', json: { task_kind: 'code_job', prompt: 'p' } });
    expect(res.status).toBe(201);
    const unbound = ((await json(res)).task as Json).id as string;
    const calls = async (id: string): Promise<Json[]> =>
      (await json(await h.http(`/api/tasks/${id}`))).command_calls as Json[];

    const write = await a.waitFor('command_call', { task_id: unbound, command: 'fs_write' });
    expect(await calls(unbound)).toEqual([
      expect.objectContaining({ call_id: write.call_id, status: 'pending', sent_to: 'pc-a' }),
    ]);
    a.send({ type: 'command_result', task_id: unbound, call_id: write.call_id, ok: true, result: {} });
    const run = await a.waitFor('command_call', { task_id: unbound, command: 'run_program' });
    a.send({ type: 'command_result', task_id: unbound, call_id: run.call_id, ok: true, result: {} });
    await eventually(
      async () => ((await json(await h.http(`/api/tasks/${unbound}`))).task as Json).status === 'completed',
    );
    expect(await calls(unbound)).toEqual([
      expect.objectContaining({ call_id: write.call_id, status: 'succeeded', sent_to: 'pc-a' }),
      expect.objectContaining({ call_id: run.call_id, status: 'succeeded', sent_to: 'pc-a' }),
    ]);
    // A follower's page carries the calls of its tool records, each with the client it went to.
    const steps = (await json(await h.http(`/api/tasks/${unbound}/steps`))).steps as Json[];
    const lastToolRecord = steps.filter((x) => x.kind === 'tool_result').at(-1) as Json;
    const page = await json(
      await h.http(`/api/tasks/${unbound}/steps?after_seq=${(lastToolRecord.seq as number) - 1}`),
    );
    expect(page.command_calls).toEqual([
      expect.objectContaining({ call_id: run.call_id, status: 'succeeded', sent_to: 'pc-a' }),
    ]);

    const bound = await t.createTask(a, 'pc-a');
    const boundCall = await a.waitFor('command_call', { task_id: bound });
    const [shown] = await calls(bound);
    expect(shown).toMatchObject({ call_id: boundCall.call_id, status: 'pending' });
    expect(shown).not.toHaveProperty('sent_to');
    a.send({ type: 'command_result', task_id: bound, call_id: boundCall.call_id, ok: true, result: {} });
    await a.waitFor('command_ack', { call_id: boundCall.call_id });
    const boundPage = await json(await h.http(`/api/tasks/${bound}/steps`));
    expect(boundPage.command_calls).toEqual([
      expect.objectContaining({ call_id: boundCall.call_id, status: 'succeeded' }),
    ]);
    expect((boundPage.command_calls as Json[])[0]).not.toHaveProperty('sent_to');
  });

  it('GET /metrics exposes tasks by status, command round trips, connected clients, pending calls in Prometheus text (guards against a recorded call left pending in the executor)', async () => {
    const h = await t.start({ strategies: everyKind(writeThenRun) });
    const c = await t.connect('pc-1');
    c.send({
      type: 'create_task',
      request_id: 'r',
      task_kind: 'code_job',
      client_id: 'pc-1',
      prompt: 'p',
      allowed_commands: [],
    });
    for (const cmd of ['fs_write', 'run_program']) {
      const call = await c.waitFor('command_call', { command: cmd });
      if (cmd === 'fs_write') {
        expect(await (await h.http('/metrics')).text()).toMatch(/^ccagent_pending_command_calls 1$/m);
      }
      c.send({ type: 'command_result', task_id: call.task_id, call_id: call.call_id, ok: true, result: {} });
    }
    await c.waitFor('task_completed');
    const res = await h.http('/metrics');
    expect(res.headers.get('content-type')).toMatch(/text\/plain/);
    const text = await res.text();
    expect(text).toMatch(/^ccagent_tasks\{status="completed"\} 1$/m);
    expect(text).toMatch(/^ccagent_tasks\{status="running"\} 0$/m);
    expect(text).toMatch(/^ccagent_connected_clients 1$/m);
    expect(text).toMatch(/^ccagent_pending_command_calls 0$/m);
    expect(text).toMatch(/^ccagent_command_round_trip_seconds_count\{command="fs_write"\} 1$/m);
    expect(text).toMatch(/ccagent_model_call_duration_seconds/);
    expect(text).toMatch(/ccagent_model_tokens_total/);
  });

  it('answers unknown routes with 404 and wrong methods with 405, as JSON', async () => {
    const h = await t.start();
    const a = await h.http('/nope');
    expect(a.status).toBe(404);
    expect(((await json(a)).error as Json).code).toBe('not_found');
    const b = await h.http('/health', { method: 'POST', json: {} });
    expect(b.status).toBe(405);
  });
});

/** GET with a chosen Host header (fetch does not allow setting it). */
function getWithHost(base: string, p: string, host: string): Promise<{ status: number; body: string }> {
  const u = new URL(base);
  return new Promise((resolve, reject) => {
    const req = request({ host: u.hostname, port: u.port, path: p, headers: { host } }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (c: Buffer) => chunks.push(c));
      res.on('end', () =>
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') }),
      );
    });
    req.on('error', reject);
    req.end();
  });
}

describe('Lua client bundle', () => {
  function luaDir(): string {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-lua-'));
    mkdirSync(path.join(dir, 'ccagent'));
    writeFileSync(
      path.join(dir, 'install.lua'),
      'local SERVER = "__CCAGENT_SERVER_URL__"\nprint(SERVER .. "/lua/manifest.json")\n',
    );
    writeFileSync(path.join(dir, 'ccagent', 'json.lua'), 'return {}\n');
    return dir;
  }

  it('serves install.lua with the server URL as the requester addressed it', async () => {
    const h = await t.start({ luaDir: luaDir() });
    const port = new URL(h.url).port;
    const res = await getWithHost(h.url, '/lua/install.lua', `localhost:${port}`);
    expect(res.status).toBe(200);
    const text = res.body;
    expect(text).toContain(`local SERVER = "http://localhost:${port}"`);
    expect(text).not.toContain('__CCAGENT_SERVER_URL__');
  });

  it('refuses a Host header that could inject Lua', async () => {
    const h = await t.start({ luaDir: luaDir() });
    const res = await getWithHost(h.url, '/lua/install.lua', 'x"..os.shutdown()..".y');
    // Refused by the Host allow-list (421) before the installer's own check (400) is reached.
    expect(res.status).toBe(421);
    expect(res.body).not.toContain('os.shutdown');
  });

  it('lists files with size and sha256 and serves each; no path traversal', async () => {
    const dir = luaDir();
    const h = await t.start({ luaDir: dir });
    const manifest = await json(await h.http('/lua/manifest.json'));
    const files = manifest.files as Array<{ path: string; size: number; sha256: string }>;
    expect(files.map((f) => f.path)).toEqual(['ccagent/json.lua', 'install.lua']);
    const body = Buffer.from('return {}\n');
    expect(files[0]).toEqual({
      path: 'ccagent/json.lua',
      size: body.length,
      sha256: createHash('sha256').update(body).digest('hex'),
    });
    const f = await h.http('/lua/files/ccagent/json.lua');
    expect(await f.text()).toBe('return {}\n');
    writeFileSync(path.join(path.dirname(dir), 'secret.txt'), 'secret');
    for (const p of [
      '/lua/files/../secret.txt',
      '/lua/files/%2e%2e/secret.txt',
      '/lua/files/..%2fsecret.txt',
      '/lua/files//etc/passwd',
    ]) {
      const r = await h.http(p);
      expect(r.status, p).toBe(404);
      expect(await r.text()).not.toContain('secret"');
    }
  });

  it('serves the bundled Lua client from dist/lua by default (the build copies lua-client/src)', async () => {
    const h = await t.start({ luaDir: path.join(import.meta.dirname, '..', 'dist', 'lua') });
    const manifest = await json(await h.http('/lua/manifest.json'));
    const paths = (manifest.files as Array<{ path: string }>).map((f) => f.path);
    expect(paths).toContain('ccagent.lua');
    expect(paths).toContain('ccagent/json.lua');
  });
});
