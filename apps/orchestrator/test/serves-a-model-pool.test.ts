/**
 * A role with several model servers, end to end: the built `cc-orchestrator serve` with a config whose `native` role
 * names two fake Ollama servers. Chat tasks spread over both, a follow-up stays on its task's server (cache
 * affinity), `/api/models` and `/metrics` show each server's figures, and when one server dies a new task goes on on
 * the other, its step log holding the failed attempt (`model_failover`) before the answer. The dashboard's Computers
 * page shows the pool in its Models panel (real Chromium).
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { ModelsResponse } from '@ccagent/protocol';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterEach, beforeEach, expect, it } from 'vitest';
import { launchBrowser, screenshot } from './support/browser.js';
import { serve, type Served } from './support/spawn.js';

type Rec = Record<string, unknown>;
const MODEL = 'qwen3:8b';

let dir: string;
let fakes: FakeOllama[];
const servers: Served[] = [];

beforeEach(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-pool-'));
  fakes = [await startFakeOllama(), await startFakeOllama()];
  for (const [i, f] of fakes.entries()) f.script(MODEL, () => `answer from server ${i}`, { repeat: true });
});
afterEach(async () => {
  for (const s of servers.splice(0)) await s.kill9();
  await Promise.all(fakes.map((f) => f.close()));
  rmSync(dir, { recursive: true, force: true });
});

async function api<T = Rec>(s: Served, method: string, p: string, body?: unknown): Promise<T> {
  const res = await fetch(`${s.url}${p}`, {
    method,
    ...(body !== undefined
      ? { headers: { 'content-type': 'application/json' }, body: JSON.stringify(body) }
      : {}),
  });
  const json = (await res.json()) as T;
  if (!res.ok) throw new Error(`${method} ${p}: ${res.status} ${JSON.stringify(json)}`);
  return json;
}

async function settled(s: Served, id: string, count = 1): Promise<Rec> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const { task } = await api<{ task: Rec }>(s, 'GET', `/api/tasks/${id}?steps=0`);
    const replies = (task.result as { message?: string } | undefined)?.message;
    if (task.status === 'completed' && replies !== undefined) {
      const detail = await api<{ steps: Rec[] }>(s, 'GET', `/api/tasks/${id}`);
      if (detail.steps.filter((st) => st.kind === 'native').length >= count)
        return { ...task, steps: detail.steps };
    }
    if (task.status === 'failed') throw new Error(`task ${id} failed: ${JSON.stringify(task.error)}`);
    if (Date.now() > deadline) throw new Error(`task ${id} did not complete: ${JSON.stringify(task)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

it('spreads tasks over the servers, keeps a follow-up on its server, reports each server, and goes on when one dies (guards: a second GPU box left idle, a warm cache thrown away, a dead box failing tasks)', async () => {
  const [a, b] = fakes as [FakeOllama, FakeOllama];
  const config = path.join(dir, 'config.json');
  writeFileSync(
    config,
    JSON.stringify({
      models: {
        native: {
          name: MODEL,
          servers: [
            { baseUrl: a.url, concurrency: 1 },
            { baseUrl: b.url, concurrency: 1 },
          ],
          pool: { probeIntervalMs: 0, probeBackoffMs: 60_000 },
        },
      },
    }),
  );
  const s = await serve([
    '--port',
    '0',
    '--db',
    path.join(dir, 'ccagent.db'),
    '--config',
    config,
    '--log-level',
    'error',
  ]);
  servers.push(s);

  // Two chats at once: one on each server.
  const created = await Promise.all(
    ['first', 'second'].map((prompt) =>
      api<{ task: Rec }>(s, 'POST', '/api/tasks', { task_kind: 'chat', prompt }),
    ),
  );
  const ids = created.map((c) => String(c.task.id));
  const done = await Promise.all(ids.map((id) => settled(s, id)));
  const serverOf = (t: Rec, n = 0): unknown =>
    ((t.steps as Rec[]).filter((st) => st.kind === 'native')[n]?.output as Rec).server;
  expect(new Set(done.map((t) => serverOf(t)))).toEqual(new Set([a.url, b.url]));
  expect(a.chatRequests()).toHaveLength(1);
  expect(b.chatRequests()).toHaveLength(1);

  // A follow-up message continues the first chat on the server that holds its conversation.
  await api(s, 'POST', `/api/tasks/${ids[0]}/messages`, { text: 'and more?' });
  const followed = await settled(s, ids[0] as string, 2);
  expect(serverOf(followed, 1)).toBe(serverOf(done[0] as Rec));

  const view = await api<ModelsResponse>(s, 'GET', '/api/models');
  expect(view.roles.find((r) => r.role === 'native')).toMatchObject({ name: MODEL, provider: 'pool' });
  expect(view.pools).toHaveLength(1);
  const pool = view.pools[0]!;
  expect(pool.servers.map((x) => x.name)).toEqual([a.url, b.url]);
  expect(pool.servers.reduce((n, x) => n + x.calls, 0)).toBe(3);
  expect(pool.servers.reduce((n, x) => n + x.affinity_hits, 0)).toBe(1);
  expect(pool.servers.every((x) => x.state === 'up' && x.in_flight === 0)).toBe(true);
  const metrics = await (await fetch(`${s.url}/metrics`)).text();
  const calls = (url: string): number =>
    Number(
      new RegExp(`ccagent_model_server_calls_total\\{pool="[^"]*",server="${url}"\\} (\\d+)`).exec(
        metrics,
      )?.[1],
    );
  expect(calls(a.url) + calls(b.url)).toBe(3);
  expect(metrics).toMatch(new RegExp(`ccagent_model_server_up\\{pool="[^"]*",server="${b.url}"\\} 1`));

  // Server a dies. A new chat lands on it (least loaded, first), fails, and is answered by b.
  await a.close();
  const third = await api<{ task: Rec }>(s, 'POST', '/api/tasks', { task_kind: 'chat', prompt: 'third' });
  const t3 = await settled(s, String(third.task.id));
  const kinds = (t3.steps as Rec[]).map((st) => String(st.kind)).filter((k) => k !== 'decision');
  expect(kinds.filter((k) => ['model_request', 'model_failover', 'native'].includes(k))).toEqual([
    'model_request',
    'model_failover',
    'native',
  ]);
  const failover = (t3.steps as Rec[]).find((st) => st.kind === 'model_failover') as Rec;
  expect(failover.output).toMatchObject({ server: a.url, attempt: 1 });
  expect((failover.error as Rec).code).toBe('connection');
  expect(serverOf(t3)).toBe(b.url);
  expect((t3.result as Rec).message).toBe('answer from server 1');
  const after = await api<ModelsResponse>(s, 'GET', '/api/models');
  expect(after.pools[0]!.servers[0]).toMatchObject({ state: 'down', failovers: 1 });
  expect(after.pools[0]!.servers[0]!.last_error?.code).toBe('connection');
});

// A browser and a spawned server on a shared machine: a minute.
it(
  'shows each pool server in the Computers page Models panel, and a dead one going down without a reload (guards: an operator who cannot see which GPU box is out)',
  { timeout: 60_000 },
  async () => {
    const [a, b] = fakes as [FakeOllama, FakeOllama];
    const config = path.join(dir, 'config.json');
    writeFileSync(
      config,
      JSON.stringify({
        models: {
          native: {
            name: MODEL,
            servers: [
              { baseUrl: a.url, concurrency: 2 },
              { baseUrl: b.url, concurrency: 1 },
            ],
            pool: { probeIntervalMs: 0, probeBackoffMs: 60_000 },
          },
        },
      }),
    );
    const s = await serve([
      '--port',
      '0',
      '--db',
      path.join(dir, 'ccagent.db'),
      '--config',
      config,
      '--log-level',
      'error',
    ]);
    servers.push(s);
    const first = await api<{ task: Rec }>(s, 'POST', '/api/tasks', { task_kind: 'chat', prompt: 'hello' });
    await settled(s, String(first.task.id));

    const browser = await launchBrowser();
    try {
      const page = await browser.page();
      await page.goto(`${s.url}/#/computers`);
      const row = (url: string) => page.locator(`.models-panel tr[data-server="${url}"]`);
      await row(a.url).waitFor();
      expect(await page.locator('.models-panel [data-role="native"]').textContent()).toContain(MODEL);
      expect(await row(a.url).getAttribute('data-state')).toBe('up');
      expect(await row(a.url).locator('td').nth(2).textContent()).toBe('0 / 2');
      expect(await row(a.url).locator('td').nth(4).textContent()).toBe('1');
      expect(await row(b.url).locator('td').nth(2).textContent()).toBe('0 / 1');
      await screenshot(page, 'dashboard-models');

      // a dies; the next task fails over to b. The panel shows a down with its error, on its own (no reload).
      await a.close();
      const next = await api<{ task: Rec }>(s, 'POST', '/api/tasks', { task_kind: 'chat', prompt: 'again' });
      await settled(s, String(next.task.id));
      await page
        .locator(`.models-panel tr[data-server="${a.url}"][data-state="down"]`)
        .waitFor({ timeout: 10_000 });
      expect(await row(a.url).locator('td').nth(1).textContent()).toContain('connection');
      expect(await row(a.url).locator('td').nth(5).textContent()).toBe('1 / 1');
      expect(await row(b.url).getAttribute('data-state')).toBe('up');
      await page.close();
    } finally {
      await browser.close();
    }
  },
);
