/// <reference lib="dom" />
/**
 * The dashboard on a server with a token, in a real browser (Debian Chromium via playwright-core) against the BUILT
 * server: the operator signs in through the login field and can act; a viewer key sees the tasks with every action
 * disabled, and the server refuses the actions anyway. No credential ever appears in a URL.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signIn as signInAt, type Browser } from './support/browser.js';
import { type Served, serveWithConfig } from './support/spawn.js';

const PLANNER = 'roles-planner';
const KIND = 'roles_job';
const TOKEN = 'operator-token-for-the-dashboard-test';

let dir: string;
let fake: FakeOllama;
let server: Served;
let browser: Browser;
let viewerKey: string;
let taskId: string;

async function http(
  route: string,
  init: { method?: string; body?: unknown; token?: string } = {},
): Promise<Response> {
  return fetch(`${server.url}${route}`, {
    method: init.method ?? 'GET',
    headers: {
      'content-type': 'application/json',
      ...(init.token !== undefined ? { authorization: `Bearer ${init.token}` } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

async function status(id: string): Promise<string> {
  const r = await http(`/api/tasks/${id}?steps=0`, { token: TOKEN });
  return ((await r.json()) as { task: { status: string } }).task.status;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-dash-roles-'));
  fake = await startFakeOllama({ installed: [PLANNER] });
  // The task asks a question and waits: something to cancel and to answer.
  fake.script(PLANNER, () => 'ASK_USER\nQUESTION: Which side is north?\nWHY: the map is missing\nNEXT: dig', {
    repeat: true,
  });
  server = await serveWithConfig(
    dir,
    fake.url,
    {
      models: { planner: { name: PLANNER }, executor: { name: PLANNER }, native: { name: PLANNER } },
      taskKinds: {
        [KIND]: { strategy: 'planner_executor', executorMode: 'parser', allowedCommands: ['fs_write'] },
      },
    },
    ['--token', TOKEN, '--log-level', 'warn'],
  );
  const key = await http('/api/credentials/keys', {
    method: 'POST',
    token: TOKEN,
    body: { role: 'viewer', name: 'wall screen' },
  });
  expect(key.status).toBe(201);
  viewerKey = ((await key.json()) as { key: string }).key;
  const created = await http('/api/tasks', {
    method: 'POST',
    token: TOKEN,
    body: { task_kind: KIND, prompt: 'find north' },
  });
  expect(created.status).toBe(201);
  taskId = ((await created.json()) as { task: { id: string } }).task.id;
  for (let i = 0; i < 200 && (await status(taskId)) !== 'waiting_for_user'; i++)
    await new Promise((r) => setTimeout(r, 50));
  expect(await status(taskId)).toBe('waiting_for_user');
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.kill9();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** Open the dashboard, sign in with `credential` in the login field; every request URL is recorded. */
async function signIn(credential: string): Promise<{ page: Page; urls: string[] }> {
  const page = await browser.page();
  const urls: string[] = [];
  page.on('request', (r) => urls.push(r.url()));
  await signInAt(page, `${server.url}/`, credential);
  return { page, urls };
}

describe('dashboard with a token and roles in Chromium', { timeout: 60_000 }, () => {
  it('a viewer key sees the tasks with every action disabled, and the server refuses the actions anyway', async () => {
    const { page, urls } = await signIn(viewerKey);
    await page.waitForSelector(`[data-task-id="${taskId}"]`);
    expect(await page.locator('a.button:text("New task")').count()).toBe(0);
    await page.goto(`${server.url}/#/tasks/${taskId}`);
    await page.waitForSelector('.question-text:text("Which side is north?")');
    await page.waitForSelector('.actions .note:text("viewer key")');
    expect(await page.locator('button:text("Cancel task")').isDisabled()).toBe(true);
    expect(await page.locator('.question button[type="submit"]').isDisabled()).toBe(true);
    expect(await page.locator('.actions button[type="submit"]').isDisabled()).toBe(true);
    await screenshot(page, 'dashboard-viewer');
    await page.goto(`${server.url}/#/new`);
    await page.waitForSelector('.note:text("viewer key")');
    expect(await page.locator('button:text("Create task")').isDisabled()).toBe(true);
    // The page's own credential, used as the page would: refused by the server, nothing changed.
    const refused = await page.evaluate(async (id) => {
      const token = sessionStorage.getItem('ccagent.token') ?? '';
      const headers = { authorization: `Bearer ${token}`, 'content-type': 'application/json' };
      const cancel = await fetch(`/api/tasks/${id}/cancel`, { method: 'POST', headers, body: '{}' });
      const create = await fetch('/api/tasks', {
        method: 'POST',
        headers,
        body: JSON.stringify({ task_kind: 'roles_job', prompt: 'x' }),
      });
      return [
        cancel.status,
        ((await cancel.json()) as { error: { code: string } }).error.code,
        create.status,
      ];
    }, taskId);
    expect(refused).toEqual([403, 'forbidden', 403]);
    expect(await status(taskId)).toBe('waiting_for_user');
    const list = (await (await http('/api/tasks', { token: TOKEN })).json()) as { total: number };
    expect(list.total).toBe(1);
    // The key travelled in headers only.
    expect(urls.length).toBeGreaterThan(3);
    expect(urls.filter((u) => u.includes(viewerKey) || u.includes(encodeURIComponent(viewerKey)))).toEqual(
      [],
    );
    expect(page.url()).not.toContain(viewerKey);
    await page.close();
  });

  it('the operator signs in through the login field (kept for the tab only, never in a URL) and cancels the task', async () => {
    const { page, urls } = await signIn(TOKEN);
    expect(await page.evaluate(() => sessionStorage.getItem('ccagent.token'))).toBe(TOKEN);
    expect(await page.evaluate(() => localStorage.getItem('ccagent.token'))).toBeNull();
    await page.waitForSelector(`[data-task-id="${taskId}"]`);
    expect(await page.locator('a.button:text("New task")').count()).toBe(1);
    await page.locator(`[data-task-id="${taskId}"]`).click();
    await page.waitForSelector('.question-text:text("Which side is north?")');
    expect(await page.locator('.actions .note').count()).toBe(0);
    await page.click('button:text("Cancel task")');
    await page.waitForSelector('[data-testid="task-status"]:text("cancelled")');
    expect(await status(taskId)).toBe('cancelled');
    expect(urls.filter((u) => u.includes(TOKEN))).toEqual([]);
    expect(page.url()).not.toContain(TOKEN);
    await page.close();
  });
});
