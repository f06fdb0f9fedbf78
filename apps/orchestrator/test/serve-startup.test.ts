/**
 * Acceptance: how the built `cc-orchestrator serve` starts, refuses to start, reports models, and shuts down.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { runCli, serve, type Served } from './support/spawn.js';

let dir: string;
let fake: FakeOllama | undefined;
const servers: Served[] = [];

beforeEach(() => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-start-'));
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.kill9();
  await fake?.close();
  fake = undefined;
  rmSync(dir, { recursive: true, force: true });
});

async function waitForOutput(s: Served, re: RegExp, timeoutMs = 10_000): Promise<string> {
  const end = Date.now() + timeoutMs;
  while (!re.test(s.stdout())) {
    if (Date.now() > end) throw new Error(`no ${re} in stdout:\n${s.stdout()}\nstderr:\n${s.stderr()}`);
    await new Promise((r) => setTimeout(r, 25));
  }
  return s.stdout();
}

describe('cc-orchestrator serve startup', () => {
  it('starts on an ephemeral port, prints where it listens and the DB path, answers /health', async () => {
    fake = await startFakeOllama({ installed: ['qwen3:8b'] });
    const db = path.join(dir, 'nested', 'tasks.db');
    const s = await serve(['--port', '0', '--db', db, '--ollama-url', fake.url]);
    servers.push(s);
    expect(s.url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(s.stdout()).toContain(`database:   ${db} (durability full)`);
    expect(s.stdout()).toContain(`wget run ${s.url}/lua/install.lua`);
    const out = await waitForOutput(s, /models present: qwen3:8b; missing: none/);
    expect(out).not.toMatch(/warning/);
    const health = (await (await fetch(`${s.url}/health`)).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ ok: true, version: '0.1.0', db: { ok: true, path: db } });
    // Structured JSON logs go to stderr.
    const line = s
      .stderr()
      .split('\n')
      .find((l) => l.includes('orchestrator listening'));
    expect(JSON.parse(line ?? '{}')).toMatchObject({ level: 'info', url: s.url, db });
  });

  it('--durability normal is taken and shown; an unknown level is refused (guards against silently running with another durability than asked)', async () => {
    fake = await startFakeOllama({ installed: ['qwen3:8b'] });
    const db = path.join(dir, 'normal.db');
    const s = await serve(['--port', '0', '--db', db, '--ollama-url', fake.url, '--durability', 'normal']);
    servers.push(s);
    expect(s.stdout()).toContain(`database:   ${db} (durability normal)`);
    const bad = await runCli(['serve', '--port', '0', '--db', db, '--durability', 'fast']);
    expect(bad.code).not.toBe(0);
    expect(bad.stderr).toMatch(/durability/);
  });

  it('warns about missing models with an `ollama pull` hint, and tasks needing them fail with it', async () => {
    fake = await startFakeOllama({ installed: ['other:1b'] });
    const s = await serve(['--port', '0', '--db', path.join(dir, 'x.db'), '--ollama-url', fake.url]);
    servers.push(s);
    const out = await waitForOutput(s, /warning: .*ollama pull qwen3:8b/);
    expect(out).toMatch(/missing: qwen3:8b/);
    const res = await fetch(`${s.url}/api/tasks`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ task_kind: 'general_agent', prompt: 'hi' }),
    });
    const id = ((await res.json()) as { task: { id: string } }).task.id;
    let task: { status: string; error?: { code: string; message: string } } = { status: '' };
    for (let i = 0; i < 100 && task.status !== 'failed'; i++) {
      task = ((await (await fetch(`${s.url}/api/tasks/${id}`)).json()) as { task: typeof task }).task;
      await new Promise((r) => setTimeout(r, 30));
    }
    expect(task.status).toBe('failed');
    expect(task.error).toMatchObject({ code: 'model_missing' });
    expect(task.error?.message).toContain('run: ollama pull qwen3:8b');
  });

  it('keeps serving when Ollama is unreachable (warning, /health degraded)', async () => {
    const s = await serve([
      '--port',
      '0',
      '--db',
      path.join(dir, 'x.db'),
      '--ollama-url',
      'http://127.0.0.1:9',
    ]);
    servers.push(s);
    await waitForOutput(s, /NOT reachable/);
    const health = (await (await fetch(`${s.url}/health`)).json()) as Record<string, unknown>;
    expect(health).toMatchObject({ ok: true, degraded: true, model_servers: [{ reachable: false }] });
  });

  it('refuses a non-loopback bind without a token, explaining why (exit 2)', async () => {
    const r = await runCli(['serve', '--host', '0.0.0.0', '--port', '0', '--db', path.join(dir, 'x.db')]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/refusing to listen on 0\.0\.0\.0 without a token/);
    expect(r.stdout).not.toMatch(/listening/);
  });

  it('binds off loopback with a token and then requires it (env CCAGENT_TOKEN)', async () => {
    const s = await serve(
      [
        '--host',
        '0.0.0.0',
        '--port',
        '0',
        '--db',
        path.join(dir, 'x.db'),
        '--ollama-url',
        'http://127.0.0.1:9',
      ],
      {
        CCAGENT_TOKEN: 'a-long-secret',
      },
    );
    servers.push(s);
    const port = new URL(s.url).port;
    expect((await fetch(`http://127.0.0.1:${port}/api/tasks`)).status).toBe(401);
    const ok = await fetch(`http://127.0.0.1:${port}/api/tasks`, {
      headers: { authorization: 'Bearer a-long-secret' },
    });
    expect(ok.status).toBe(200);
  });

  it('refuses an invalid config file naming the field (exit 2)', async () => {
    const cfg = path.join(dir, 'bad.json');
    writeFileSync(cfg, JSON.stringify({ taskKinds: { code_job: { budgets: { maxSteps: -1 } } } }));
    const r = await runCli(['serve', '--port', '0', '--db', path.join(dir, 'x.db'), '--config', cfg]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain('taskKinds.code_job.budgets.maxSteps');
  });

  it('refuses a database written by something else (exit 1, clear reason)', async () => {
    const db = path.join(dir, 'not-a-db.db');
    writeFileSync(db, 'this is not sqlite');
    const r = await runCli(['serve', '--port', '0', '--db', db]);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/cannot open the database/);
  });

  it('prints its version', async () => {
    const r = await runCli(['--version']);
    expect(r.stdout.trim()).toBe('0.1.0');
  });
});
