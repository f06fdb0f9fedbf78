/// <reference lib="dom" />
/**
 * The dashboard's Kinds page in a real browser (Debian Chromium via playwright-core) against the BUILT server with a
 * token: an operator sees every kind with its source, models per role, allowed commands, budgets and confirmation
 * rules; creates a kind and edits a config file's kind through the form (hostile text stays inert text); a refused
 * definition shows the server's field and saves nothing; the created kind is offered on the New task page and the
 * next task created with it runs with its system prompt; an operator picks a kind's model and server per role (a model
 * the server lacks is refused with the pull hint), and the kind's next task calls that model. A viewer key sees the
 * kinds and no way to change them.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, signIn as signInAt, type Browser } from './support/browser.js';
import { type Served, serveWithConfig } from './support/spawn.js';

const MODEL = 'kinds-model';
/** A second allowed model, installed. */
const OTHER = 'other-model:3b';
/** Allowed by limits.models, installed nowhere. */
const ABSENT = 'absent-model:1b';
const TOKEN = 'operator-token-for-the-kinds-page';
const HOSTILE =
  '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> \u001b[31mRED\u001b[0m';
const PIRATE = 'You are PIRATE-42: answer like a pirate.';

let dir: string;
let fake: FakeOllama;
let server: Served;
let browser: Browser;
let viewerKey: string;

type Kind = { name: string; source: string; revision?: number; definition: Record<string, unknown> };

async function http(route: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${server.url}${route}`, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${TOKEN}` },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

async function kinds(): Promise<Kind[]> {
  return ((await (await http('/api/task-kinds')).json()) as { kinds: Kind[] }).kinds;
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-dash-kinds-'));
  fake = await startFakeOllama({ installed: [MODEL] });
  // Every reply names the system prompt it was given: the page shows which definition a task ran with.
  fake.script(OTHER, ['answered by the other model'], { repeat: true });
  fake.script(
    MODEL,
    (req) => {
      const messages = req.body.messages as Array<{ role: string; content: string }>;
      const system = messages.find((m) => m.role === 'system')?.content ?? '';
      return { content: `reply under [${system.slice(0, 40)}]` };
    },
    { repeat: true },
  );
  server = await serveWithConfig(
    dir,
    fake.url,
    {
      models: { planner: { name: MODEL }, executor: { name: MODEL }, native: { name: MODEL } },
      limits: { models: [MODEL, OTHER, ABSENT] },
      taskKinds: {
        careful_agent: {
          description: 'Native agent that asks before deleting or writing outside /work.',
          strategy: 'native',
          allowedCommands: ['fs_read', 'fs_write', 'fs_delete', 'shell_exec'],
          budgets: { maxSteps: 30, maxToolCalls: 40, deadlineMs: 1_800_000 },
          confirm: { commands: ['fs_delete'], sandbox: '/work', shellPatterns: ['\\brm\\b'] },
        },
      },
    },
    ['--token', TOKEN, '--log-level', 'warn'],
  );
  const key = await http('/api/credentials/keys', { method: 'POST', body: { role: 'viewer', name: 'wall' } });
  expect(key.status).toBe(201);
  viewerKey = ((await key.json()) as { key: string }).key;
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.kill9();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

async function signIn(credential: string): Promise<Page> {
  const page = await browser.page(1280, 1000);
  await signInAt(page, `${server.url}/#/kinds`, credential);
  await page.goto(`${server.url}/#/kinds`);
  await page.waitForSelector('li[data-kind="careful_agent"]');
  return page;
}

const pwned = (page: Page) => page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned);

describe('the Kinds page in Chromium', { timeout: 90_000 }, () => {
  it('shows each kind with its source, models, commands, budgets and confirmation rules', async () => {
    const page = await signIn(TOKEN);
    const card = page.locator('li[data-kind="careful_agent"]');
    expect(await card.getAttribute('data-source')).toBe('config');
    expect(await card.locator('.badge').textContent()).toBe('config file');
    const facts = await card.locator('.kind-facts').textContent();
    expect(facts).toContain('fs_read, fs_write, fs_delete, shell_exec');
    expect(facts).toContain('30 steps · 40 tool calls · 30 min');
    expect(facts).toContain('always: fs_delete · writes outside /work · shell lines matching /\\brm\\b/');
    expect(facts).toContain(`native: ${MODEL} (ollama)`);
    expect(await page.locator('li[data-kind="chat"] .kind-facts').textContent()).toContain(
      'none: a chat kind calls no tools',
    );
    const code = await page.locator('li[data-kind="code_job"] .kind-facts').textContent();
    expect(code).toContain(`planner: ${MODEL} (ollama)`);
    expect(code).toContain(`executor: ${MODEL} (ollama)`);
    expect(await page.locator('li[data-kind="general_agent"] .kind-facts').textContent()).toContain(
      'general, agent',
    );
    expect(await page.locator('ul.kinds > li').count()).toBe(5);
  });

  it('creates a kind (hostile text stays text), refuses a bad one with its field, and the next task uses the new kind', async () => {
    const page = await signIn(TOKEN);
    // a refused definition: the server's field is shown and nothing is saved
    await page.click('button:text("New kind")');
    await page.fill('input[name="name"]', 'pirate_chat');
    await page.selectOption('select[name="strategy"]', 'chat');
    await page.fill('input[name="maxSteps"]', '-5');
    await page.click('.kind-editor button[type="submit"]');
    const refusal = await page.waitForSelector('[data-testid="kind-error"]');
    expect(await refusal.textContent()).toContain('$.definition.budgets.maxSteps');
    expect((await kinds()).map((k) => k.name)).not.toContain('pirate_chat');
    // not JSON in "other settings": refused in the page, nothing sent
    await page.fill('input[name="maxSteps"]', '');
    await page.fill('textarea[name="more"]', '{ not json');
    await page.click('.kind-editor button[type="submit"]');
    await page.waitForSelector('[data-testid="kind-error"]:has-text("not valid JSON")');
    expect((await kinds()).map((k) => k.name)).not.toContain('pirate_chat');

    await page.fill('textarea[name="more"]', '{ "maxIterations": 2 }');
    await page.fill('input[name="description"]', HOSTILE);
    await page.fill('textarea[name="systemPrompt"]', PIRATE);
    await page.fill('input[name="maxSteps"]', '12');
    await page.fill('input[name="deadlineMin"]', '5');
    await page.click('.kind-editor button[type="submit"]');
    await page.waitForSelector('[data-testid="kinds-notice"]:has-text("Saved pirate_chat (revision 1)")');
    const card = page.locator('li[data-kind="pirate_chat"]');
    await card.waitFor();
    expect(await card.getAttribute('data-source')).toBe('stored');
    expect(await card.locator('.badge').textContent()).toBe('saved here');
    // hostile text: shown as text, ANSI escapes as visible symbols, nothing ran or was made an element
    const description = await card.locator('.kind-description').textContent();
    expect(description).toContain('<script>window.__pwned = 1</script><img src=x');
    expect(description).toContain('␛[31mRED');
    expect(await card.locator('img, script').count()).toBe(0);
    expect(await pwned(page)).toBeUndefined();
    expect(await card.locator('.kind-facts').textContent()).toContain('12 steps · 5 min');
    const stored = (await kinds()).find((k) => k.name === 'pirate_chat');
    expect(stored).toMatchObject({
      source: 'stored',
      revision: 1,
      definition: {
        strategy: 'chat',
        systemPrompt: PIRATE,
        maxIterations: 2,
        budgets: { maxSteps: 12, deadlineMs: 300_000 },
      },
    });
    await card.scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollBy(0, 200));
    await screenshot(page, 'dashboard-kinds');

    // the New task page offers it, and the next task created with it runs with its system prompt
    await page.goto(`${server.url}/#/new`);
    await page.waitForSelector('datalist#kinds option[value="pirate_chat"]', { state: 'attached' });
    await page.fill('input[name="kind"]', 'pirate_chat');
    await page.fill('textarea[name="prompt"]', 'Where is the treasure?');
    await page.click('button:text("Create task")');
    await page.waitForURL(/#\/tasks\/[^/]+$/);
    const id = decodeURIComponent(/#\/tasks\/([^/]+)$/.exec(page.url())?.[1] ?? '');
    await page.waitForSelector(`text=reply under [${PIRATE.slice(0, 40)}]`, { timeout: 20_000 });
    const task = (await (await http(`/api/tasks/${id}?steps=0`)).json()) as {
      task: { kind: string; status: string };
    };
    expect(task.task).toMatchObject({ kind: 'pirate_chat', status: 'completed' });
    expect(await pwned(page)).toBeUndefined();
  });

  it('edits a config file’s kind: the saved one wins and shows it; “Use the config file’s” brings the file’s back', async () => {
    const page = await signIn(TOKEN);
    const card = page.locator('li[data-kind="careful_agent"]');
    await card.locator('button:text("Edit")').click();
    await page.waitForSelector('form.kind-editor');
    expect(await page.inputValue('input[name="confirmCommands"]')).toBe('fs_delete');
    await page.fill('input[name="confirmCommands"]', 'fs_delete, fs_move');
    await page.fill('input[name="maxSteps"]', '25');
    await screenshot(page, 'dashboard-kind-editor');
    await page.click('.kind-editor button[type="submit"]');
    await page.waitForSelector('[data-testid="kinds-notice"]:has-text("Saved careful_agent")');
    await page.waitForSelector('li[data-kind="careful_agent"][data-source="stored_over_config"]');
    expect(await card.locator('.badge').textContent()).toBe('saved here, over the config file');
    expect(await card.locator('.kind-facts').textContent()).toContain('always: fs_delete, fs_move');
    expect(await card.locator('.kind-facts').textContent()).toContain('25 steps · 40 tool calls');
    await card.locator('button:text("Use the config file’s")').click();
    await page.waitForSelector('li[data-kind="careful_agent"][data-source="config"]');
    expect(await card.locator('.kind-facts').textContent()).toContain('30 steps · 40 tool calls');
    const audit = (await (await http('/api/audit?action=task_kind.save')).json()) as {
      entries: Array<{ target?: string }>;
    };
    expect(audit.entries.map((e) => e.target).sort()).toEqual(['careful_agent', 'pirate_chat']);
  });

  it('picks a kind’s model and server per role; a model the server lacks is refused; the next task calls the chosen model', async () => {
    const page = await signIn(TOKEN);
    const card = page.locator('li[data-kind="code_job"]');
    await card.locator('button:text("Edit")').click();
    await page.waitForSelector('form.kind-editor select[name="model-planner"]');
    // the roles of a planner/executor kind, each offering the allowed models and the configured servers
    expect(await page.locator('select[name="model-planner"] option').allTextContents()).toEqual([
      'the config file’s',
      MODEL,
      OTHER,
      ABSENT,
    ]);
    expect(await page.locator('select[name="model-native"]').count()).toBe(0);
    await page.selectOption('select[name="model-planner"]', OTHER);
    await page.selectOption('select[name="endpoint-executor"]', 'native');
    // Readable: each server a short label (its URL in the title) that the select shows whole, and the role rows
    // apart by the form's spacing, not touching.
    const server = page.locator('select[name="endpoint-executor"] option[value="native"]');
    expect(await server.textContent()).toBe('native (ollama)');
    expect(await server.getAttribute('title')).toBe(fake.url);
    const fits = await page.$eval('select[name="endpoint-executor"]', (el) => {
      const s = el as HTMLSelectElement;
      const c = document.createElement('canvas').getContext('2d')!;
      c.font = getComputedStyle(s).font;
      return c.measureText(s.selectedOptions[0]!.text).width < s.clientWidth - 24;
    });
    expect(fits).toBe(true);
    const rows = await page.$$eval('fieldset:has(legend:text("Models")) [data-role]', (els) =>
      els.map((e) => e.getBoundingClientRect()),
    );
    expect(rows).toHaveLength(2);
    expect(rows[1]!.top - rows[0]!.bottom).toBeGreaterThanOrEqual(8);
    await page.locator('fieldset:has(legend:text("Models"))').scrollIntoViewIfNeeded();
    await page.evaluate(() => window.scrollBy(0, -120));
    await screenshot(page, 'dashboard-kind-models');
    // a model the operator allows but the server lacks: refused with the pull hint, nothing saved
    await page.selectOption('select[name="model-planner"]', ABSENT);
    await page.click('.kind-editor button[type="submit"]');
    const refusal = await page.waitForSelector('[data-testid="kind-error"]');
    expect(await refusal.textContent()).toContain('$.definition.models.planner.name');
    expect(await refusal.textContent()).toContain(`ollama pull ${ABSENT}`);
    expect((await kinds()).find((k) => k.name === 'code_job')?.source).toBe('config');

    await page.selectOption('select[name="model-planner"]', OTHER);
    await page.click('.kind-editor button[type="submit"]');
    await page.waitForSelector('[data-testid="kinds-notice"]:has-text("Saved code_job")');
    await page.waitForSelector('li[data-kind="code_job"][data-source="stored_over_config"]');
    const facts = await card.locator('.kind-facts').textContent();
    expect(facts).toContain(`planner: ${OTHER} (ollama)`);
    expect(facts).toContain(`executor: ${MODEL} (ollama, on the native server)`);
    expect((await kinds()).find((k) => k.name === 'code_job')?.definition.models).toEqual({
      planner: { name: OTHER },
      executor: { endpoint: 'native' },
    });

    // the chat kind on the other model: its next task's reply comes from that model
    await page.locator('li[data-kind="chat"] button:text("Edit")').click();
    await page.selectOption('select[name="model-native"]', OTHER);
    await page.click('.kind-editor button[type="submit"]');
    await page.waitForSelector('[data-testid="kinds-notice"]:has-text("Saved chat")');
    await page.waitForSelector('li[data-kind="chat"][data-source="stored_over_config"]');
    expect(await page.locator('li[data-kind="chat"] .kind-facts').textContent()).toContain(
      `chat: ${OTHER} (ollama)`,
    );
    const before = fake.chatRequests(OTHER).length;
    const r = await http('/api/tasks', { method: 'POST', body: { task_kind: 'chat', prompt: 'hello?' } });
    expect(r.status).toBe(201);
    const id = ((await r.json()) as { task: { id: string } }).task.id;
    await expect
      .poll(
        async () =>
          ((await (await http(`/api/tasks/${id}?steps=0`)).json()) as { task: { status: string } }).task
            .status,
        { timeout: 20_000 },
      )
      .toBe('completed');
    expect(fake.chatRequests(OTHER).length).toBe(before + 1);
  });

  it('a viewer key sees the kinds and no way to change them', async () => {
    const page = await signIn(viewerKey);
    await page.waitForSelector('.kinds-page .note:text("viewer key")');
    expect(await page.locator('button:text("New kind")').count()).toBe(0);
    expect(await page.locator('.kind-actions button').count()).toBe(0);
    expect(await page.locator('select').count()).toBe(0);
    expect(await page.locator('ul.kinds > li').count()).toBeGreaterThanOrEqual(5);
  });
});
