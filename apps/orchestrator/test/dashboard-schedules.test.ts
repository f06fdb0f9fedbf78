/// <reference lib="dom" />
/**
 * The dashboard's Schedules page (issue 35) in a real browser (Debian Chromium via playwright-core) against the BUILT
 * `cc-orchestrator serve` with a token: the operator sees every schedule with its next firing, policy, target and
 * paused state, and adds, pauses, resumes and removes schedules through the page (each change checked on the server);
 * a bad expression is refused with the server's message and creates nothing; a schedule added with an agent name as
 * its target fires into the live task of that name, and a hostile name is refused as text; a viewer key sees the same list with
 * every action disabled, and the server refuses the actions anyway. A schedule's hostile text (HTML, script, ANSI)
 * stays inert text. The bundle stays under its 40 KB gzip budget with the page in it.
 */
import { mkdtempSync, readdirSync, readFileSync, rmSync, statSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signIn as signInAt, type Browser } from './support/browser.js';
import { type Served, serveWithConfig } from './support/spawn.js';

const MODEL = 'sched-model';
const KIND = 'sched_job';
const TOKEN = 'operator-token-for-the-schedules-test';
const HOSTILE_NAME = '<img src=x onerror="window.__pwned=1"><script>window.__pwned=2</script>';
const HOSTILE_PROMPT =
  '\u001b[31mRED ALERT\u001b[0m <b>bold?</b> <a href="javascript:window.__pwned=3">click</a>';

interface ListedSchedule {
  id: string;
  paused: boolean;
  cron?: string;
  timezone?: string;
  every_ms?: number;
  missed: string;
  task?: { prompt: string; task_kind: string; client_id?: string };
  event?: { task_id?: string; agent?: string; client_id?: string; name: string };
}

let dir: string;
let fake: FakeOllama;
let server: Served;
let browser: Browser;
let viewerKey: string;

async function http(
  route: string,
  init: { method?: string; body?: unknown; token?: string } = {},
): Promise<Response> {
  return fetch(`${server.url}${route}`, {
    method: init.method ?? 'GET',
    headers: {
      'content-type': 'application/json',
      authorization: `Bearer ${init.token ?? TOKEN}`,
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

async function schedules(): Promise<ListedSchedule[]> {
  return ((await (await http('/api/schedules')).json()) as { schedules: ListedSchedule[] }).schedules;
}

async function until(cond: () => Promise<boolean>, what: string): Promise<void> {
  for (let i = 0; i < 200; i++) {
    if (await cond()) return;
    await new Promise((r) => setTimeout(r, 50));
  }
  throw new Error(`timed out waiting for ${what}`);
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-dash-sched-'));
  fake = await startFakeOllama({ installed: [MODEL] });
  // The farm watcher asks a question, so it stays live (waiting for a person) while schedules post to it by name.
  fake.script(
    MODEL,
    (req) =>
      JSON.stringify(req.body).includes('watch the farm')
        ? 'ASK_USER\nQUESTION: Which field first?\nWHY: two fields\nNEXT: watch it'
        : 'DONE\nSUMMARY: nothing to do',
    { repeat: true },
  );
  server = await serveWithConfig(
    dir,
    fake.url,
    {
      models: { planner: { name: MODEL }, executor: { name: MODEL }, native: { name: MODEL } },
      taskKinds: { [KIND]: { strategy: 'planner_executor', executorMode: 'parser', allowedCommands: [] } },
    },
    ['--token', TOKEN, '--log-level', 'warn'],
  );
  const key = await http('/api/credentials/keys', {
    method: 'POST',
    body: { role: 'viewer', name: 'wall screen' },
  });
  expect(key.status).toBe(201);
  viewerKey = ((await key.json()) as { key: string }).key;
  // Hourly, so it does not fire during the test: its next firing is about an hour away.
  const hostile = await http('/api/schedules', {
    method: 'POST',
    body: {
      id: 'hostile',
      name: HOSTILE_NAME,
      every_ms: 3_600_000,
      missed: 'skip',
      task: { task_kind: KIND, prompt: HOSTILE_PROMPT, client_id: 'farm-host' },
    },
  });
  expect(hostile.status).toBe(201);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.kill9();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function signIn(credential: string): Promise<Page> {
  const page = await browser.page();
  await signInAt(page, `${server.url}/#/schedules`, credential);
  await page.waitForSelector('#sched-h');
  return page;
}

describe('dashboard schedules page in Chromium', { timeout: 90_000 }, () => {
  it('shows a schedule with its next firing, policy and target, its hostile text inert', async () => {
    const page = await signIn(TOKEN);
    const row = page.locator('[data-schedule-id="hostile"]');
    await row.waitFor();
    expect(await row.locator('td.next').innerText()).toMatch(/^in (59 min|1 h)$/);
    expect(await row.innerText()).toContain('every 1 h');
    expect(await row.innerText()).toContain('skip');
    expect(await row.locator('td.target').innerText()).toContain('farm-host');
    // HTML and script arrive as text, the escape character as its visible symbol; nothing ran, nothing was parsed.
    expect(await row.locator('.schedule-name').innerText()).toBe(HOSTILE_NAME);
    expect(await row.locator('.schedule-prompt').innerText()).toBe(
      '␛[31mRED ALERT␛[0m <b>bold?</b> <a href="javascript:window.__pwned=3">click</a>',
    );
    expect(await row.locator('img, script, b, a[href^="javascript"]').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await page.close();
  });

  it('lets the operator add, pause, resume and remove schedules (each on the server), and shows a refusal', async () => {
    const page = await signIn(TOKEN);
    await page.locator('[data-schedule-id="hostile"]').waitFor();
    // A bad expression: the server's message is shown, nothing is created.
    await page.fill('input[name="id"]', 'morning');
    await page.fill('input[name="name"]', 'Morning harvest');
    await page.selectOption('select[name="mode"]', 'cron');
    await page.fill('input[name="cron"]', 'not a cron');
    await page.fill('input[name="kind"]', KIND);
    await page.fill('textarea[name="prompt"]', 'harvest the wheat');
    await page.click('button:text("Add schedule")');
    await page.waitForSelector('.add-schedule .error');
    expect(await page.locator('.add-schedule .error').innerText()).toMatch(/cron/i);
    expect((await schedules()).map((s) => s.id)).toEqual(['hostile']);

    await page.fill('input[name="cron"]', '0 7 * * *');
    await page.fill('input[name="timezone"]', 'Europe/Berlin');
    await page.click('button:text("Add schedule")');
    const row = page.locator('[data-schedule-id="morning"]');
    await row.waitFor();
    expect(await row.innerText()).toContain('cron 0 7 * * * (Europe/Berlin)');
    expect(await row.locator('td.next').innerText()).toMatch(/^in \d+ (min|h)$/);
    const added = (await schedules()).find((s) => s.id === 'morning');
    expect(added).toMatchObject({
      cron: '0 7 * * *',
      timezone: 'Europe/Berlin',
      missed: 'run_once',
      paused: false,
      task: { task_kind: KIND, prompt: 'harvest the wheat' },
    });

    await row.locator('button:text("Pause")').click();
    await row.locator('.badge:text("paused")').waitFor();
    expect((await schedules()).find((s) => s.id === 'morning')?.paused).toBe(true);
    await screenshot(page, 'dashboard-schedules');
    await row.locator('button:text("Resume")').click();
    await row.locator('button:text("Pause")').waitFor();
    expect((await schedules()).find((s) => s.id === 'morning')?.paused).toBe(false);

    await row.locator('button:text("Remove")').click();
    await row.locator('button:text("Really remove")').click();
    await row.waitFor({ state: 'detached' });
    await until(async () => !(await schedules()).some((s) => s.id === 'morning'), 'the removal');
    expect((await schedules()).map((s) => s.id)).toEqual(['hostile']);
    await page.close();
  });

  it('adds a schedule that sends an event to an agent by name: it fires into the live task of that name; a hostile name is refused and stays inert', async () => {
    // A live task named farm-watcher (it waits for a person's answer: not ended).
    const created = await http('/api/tasks', {
      method: 'POST',
      body: {
        task_kind: KIND,
        prompt: 'watch the farm',
        client_id: 'farm-host',
        allowed_commands: [],
        name: 'farm-watcher',
      },
    });
    expect(created.status).toBe(201);
    const taskId = ((await created.json()) as { task: { id: string } }).task.id;
    const page = await signIn(TOKEN);
    await page.locator('[data-schedule-id="hostile"]').waitFor();
    await page.fill('input[name="id"]', 'to-agent');
    await page.fill('input[name="every"]', '1');
    await page.selectOption('select[name="target"]', 'agent');
    expect(await page.locator('.add-schedule input[name="task"]').count()).toBe(0);
    await page.fill('input[name="agent"]', HOSTILE_NAME);
    await page.fill('input[name="event"]', 'tick');
    await page.fill('input[name="client"]', 'farm-host');
    await page.click('button:text("Add schedule")');
    // The server refuses the name (its message shown as text); nothing is stored, nothing ran.
    const refusal = page.locator('.add-schedule .error');
    await refusal.waitFor();
    expect(await refusal.innerText()).toMatch(/agent/);
    expect(await page.locator('.add-schedule img, .add-schedule script').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect((await schedules()).map((s) => s.id)).toEqual(['hostile']);

    await page.fill('input[name="agent"]', 'farm-watcher');
    await page.click('button:text("Add schedule")');
    const row = page.locator('[data-schedule-id="to-agent"]');
    await row.waitFor();
    expect(await row.locator('td.target').innerText()).toBe('event tick to agent farm-watcher');
    expect((await schedules()).find((s) => s.id === 'to-agent')).toMatchObject({
      every_ms: 1_000,
      event: { agent: 'farm-watcher', client_id: 'farm-host', name: 'tick' },
    });
    // It fires into the task of that name: the firing on the page links to it, and the event is in its history.
    await page
      .locator(`.firings a[href="#/tasks/${taskId}"]`)
      .first()
      .waitFor({ state: 'attached', timeout: 10_000 });
    const task = (await (await http(`/api/tasks/${taskId}`)).json()) as {
      history: Array<{ type: string; name?: string; data?: { schedule_id?: string } }>;
    };
    expect(
      task.history.some((h) => h.type === 'event' && h.name === 'tick' && h.data?.schedule_id === 'to-agent'),
    ).toBe(true);
    expect((await http('/api/schedules/to-agent/remove', { method: 'POST', body: {} })).status).toBe(200);
    expect((await http(`/api/tasks/${taskId}/cancel`, { method: 'POST', body: {} })).status).toBe(200);
    await row.waitFor({ state: 'detached' });
    await page.close();
  });

  it('shows a viewer key the list with every action disabled, and the server refuses them anyway', async () => {
    const page = await signIn(viewerKey);
    const row = page.locator('[data-schedule-id="hostile"]');
    await row.waitFor();
    await page.waitForSelector('.note:text("viewer key")');
    expect(await row.locator('button:text("Pause")').isDisabled()).toBe(true);
    expect(await row.locator('button:text("Remove")').isDisabled()).toBe(true);
    // The form's fields are disabled through their fieldset.
    expect(await page.locator('.add-schedule fieldset').getAttribute('disabled')).not.toBeNull();
    expect(await page.locator('.add-schedule input[name="id"]').isDisabled()).toBe(true);
    expect(await page.locator('button:text("Add schedule")').isDisabled()).toBe(true);
    const refused = await page.evaluate(async () => {
      const token = sessionStorage.getItem('ccagent.token') ?? '';
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const pause = await fetch('/api/schedules/hostile/pause', { method: 'POST', headers, body: '{}' });
      const add = await fetch('/api/schedules', {
        method: 'POST',
        headers,
        body: JSON.stringify({ every_ms: 60_000, task: { task_kind: 'sched_job', prompt: 'x' } }),
      });
      return [pause.status, add.status];
    });
    expect(refused).toEqual([403, 403]);
    expect(await schedules()).toMatchObject([{ id: 'hostile', paused: false }]);
    await page.close();
  });

  it('shows each firing on the open page within 1.5 s of it, without a reload (the page follows the live stream, no 5 s poll)', async () => {
    const page = await signIn(TOKEN);
    await page.locator('[data-schedule-id="hostile"]').waitFor();
    // When the page first shows 1, 2, 3 … firings of `ticker` (the page's clock; the server runs on this machine).
    await page.evaluate(() => {
      const w = window as unknown as { __seen: Array<{ n: number; at: number }> };
      w.__seen = [];
      new MutationObserver(() => {
        const n = Array.from(document.querySelectorAll('.firings li code')).filter(
          (c) => c.textContent === 'ticker',
        ).length;
        if (n > (w.__seen.at(-1)?.n ?? 0)) w.__seen.push({ n, at: Date.now() });
      }).observe(document.body, { childList: true, subtree: true, characterData: true });
    });
    const added = await http('/api/schedules', {
      method: 'POST',
      body: { id: 'ticker', every_ms: 1_000, missed: 'skip', task: { task_kind: KIND, prompt: 'tick' } },
    });
    expect(added.status).toBe(201);
    const addedAt = Date.now();
    await page.locator('[data-schedule-id="ticker"]').waitFor({ timeout: 1_500 });
    expect(Date.now() - addedAt).toBeLessThan(1_500);
    await page.waitForFunction(
      () => ((window as unknown as { __seen: Array<{ n: number }> }).__seen.at(-1)?.n ?? 0) >= 3,
      undefined,
      { timeout: 15_000 },
    );
    expect((await http('/api/schedules/ticker/pause', { method: 'POST', body: {} })).status).toBe(200);
    const seen = await page.evaluate(
      () => (window as unknown as { __seen: Array<{ n: number; at: number }> }).__seen,
    );
    const listed = (await (await http('/api/schedules')).json()) as {
      firings: Array<{ schedule_id: string; due_at: number; fired_at: number }>;
    };
    const fired = listed.firings
      .filter((f) => f.schedule_id === 'ticker')
      .sort((a, b) => a.due_at - b.due_at)
      .map((f) => f.fired_at);
    // Each of the first three firings on the page 1.5 s after it at most (a 5 s poll shows one of three 2 s late).
    for (let k = 1; k <= 3; k++) {
      const shown = seen.find((x) => x.n >= k)?.at;
      expect(shown).toBeDefined();
      expect(shown! - fired[k - 1]!).toBeLessThan(1_500);
    }
    expect((await http('/api/schedules/ticker/remove', { method: 'POST', body: {} })).status).toBe(200);
    await page.locator('[data-schedule-id="ticker"]').waitFor({ state: 'detached', timeout: 1_500 });
    await page.close();
  });

  it('keeps the bundle the server ships, with the schedules page in it, under 40 KB gzipped', () => {
    const dash = fileURLToPath(new URL('../dist/dashboard/', import.meta.url));
    let gz = 0;
    let sawPage = false;
    const files: string[] = [];
    const walk = (d: string): void => {
      for (const name of readdirSync(d)) {
        const full = path.join(d, name);
        if (statSync(full).isDirectory()) walk(full);
        else {
          const body = readFileSync(full);
          if (name.endsWith('.js') && body.includes('Add schedule')) sawPage = true;
          const size = gzipSync(body, { level: 9 }).length;
          files.push(`${path.relative(dash, full)} ${size} B`);
          gz += size;
        }
      }
    };
    walk(dash);
    expect(sawPage).toBe(true);
    // Over? `node tools/bench/dashboard/bundle.mjs --modules` shows where the bytes come from.
    expect(gz, `gzipped: ${files.join(', ')}`).toBeLessThan(40 * 1024);
  });
});
