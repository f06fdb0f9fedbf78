/// <reference lib="dom" />
/**
 * The dashboard at scale in a real browser (Debian Chromium via playwright-core) against the BUILT server: 10,000 tasks
 * and one task of 5,000 step-log records, seeded through @ccagent/store before the server opens the file. The page
 * must keep a bounded number of rows in the DOM (virtualised lists), fetch in pages (never the whole list or log in
 * one request), and still reach the last items by scrolling.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import type { StepRecord, Task } from '@ccagent/engine';
import { openSqliteStore } from '@ccagent/store';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, type Browser } from './support/browser.js';
import { serve, type Served } from './support/spawn.js';

const TASKS = 10_000;
const STEPS = 5_000;
const BIG = 'seed-large-task';
/** No more rows than a screenful plus the lists' overscan may ever be in the DOM (the 1280×800 window shows ~16). */
const MAX_ROWS = 60;

let dir: string;
let server: Served;
let browser: Browser;

function task(id: string, i: number, createdAt: number, extra: Partial<Task> = {}): Task {
  return {
    id,
    kind: ['code_job', 'general_agent', 'fix_script'][i % 3] as string,
    status: (['completed', 'failed', 'cancelled'] as const)[i % 3] as Task['status'],
    clientId: i % 2 === 0 ? 'pc-1' : null,
    prompt: `seeded task number ${i}`,
    allowedCommands: [],
    memory: null,
    metadata: {},
    budgets: {},
    counters: { steps: 0, toolCalls: 0, questions: 0 },
    createdAt,
    updatedAt: createdAt,
    ...extra,
  };
}

function turn(n: number): StepRecord[] {
  return [
    {
      kind: 'native',
      model: 'm',
      input: { messages: [{ role: 'user', content: `turn ${n}` }] },
      output: { content: '', toolCalls: [{ name: 'run_program', arguments: { n } }] },
      usage: { promptTokens: 100 + n, completionTokens: 10 },
      durationMs: 5,
    },
    { kind: 'decision', directive: { type: 'tool_call', command: 'run_program' } },
    {
      kind: 'tool_result',
      toolCall: { command: 'run_program', args: { n } },
      toolResult: { ok: true, output: `record ${n}` },
    },
  ];
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-dash-scale-'));
  const db = path.join(dir, 'ccagent.db');
  const store = openSqliteStore({ path: db, synchronous: 'normal', checkpointer: false });
  const t0 = Date.now() - (TASKS + 100) * 60_000;
  const pending: Promise<unknown>[] = [];
  for (let i = 0; i < TASKS; i++) {
    pending.push(
      store.commit({ task: task(`seed-${String(i).padStart(5, '0')}`, i, t0 + i * 60_000), create: true }),
    );
    if (pending.length >= 500) await Promise.all(pending.splice(0));
  }
  await Promise.all(pending);
  const big = task(BIG, 0, Date.now() - 60_000, {
    status: 'completed',
    prompt: 'the large task',
    counters: { steps: Math.ceil(STEPS / 3), toolCalls: 0, questions: 0 },
  });
  await store.commit({ task: big, create: true });
  for (let n = 1, written = 0; written < STEPS; n++) {
    const recs = turn(n).slice(0, STEPS - written);
    await store.commit({ task: big, steps: recs.map((s) => ({ ...s, step: n, at: big.createdAt + n })) });
    written += recs.length;
  }
  await store.close();
  writeFileSync(path.join(dir, 'ccagent.json'), '{}');
  server = await serve([
    '--port',
    '0',
    '--db',
    db,
    '--config',
    path.join(dir, 'ccagent.json'),
    '--ollama-url',
    'http://127.0.0.1:9',
    '--log-level',
    'error',
  ]);
  browser = await launchBrowser();
}, 120_000);

afterAll(async () => {
  await browser?.close();
  await server?.kill9();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

/** The API requests a page made, as paths with their query. */
function apiRequests(page: Page): string[] {
  const seen: string[] = [];
  page.on('request', (r) => {
    const u = new URL(r.url());
    if (u.pathname.startsWith('/api/') && u.pathname !== '/api/events') seen.push(u.pathname + u.search);
  });
  return seen;
}

const rowsInDom = (page: Page, list: string): Promise<number> =>
  page.locator(`#${list} [role="option"]`).count();

describe('dashboard at scale in Chromium', { timeout: 90_000 }, () => {
  it('lists 10,000 tasks with a bounded DOM, fetched a page at a time, and scrolls to the oldest one', async () => {
    const page = await browser.page();
    const requests = apiRequests(page);
    await page.goto(`${server.url}/#/tasks`);
    await page.waitForSelector(`[data-task-id="${BIG}"]`);
    await expect.poll(() => page.locator('.tasks-page .page-head .muted').textContent()).toBe('10,001 tasks');
    expect(await rowsInDom(page, 'task-list')).toBeLessThanOrEqual(MAX_ROWS);
    await screenshot(page, 'dashboard-10000-tasks');
    // The last row: the oldest task, reached by scrolling (its page fetched on the way), with the DOM still bounded.
    await page.locator('#task-list').evaluate((el) => (el.scrollTop = el.scrollHeight));
    await page.waitForSelector('[data-task-id="seed-00000"]');
    expect(await page.locator('[data-task-id="seed-00000"] .task-prompt').textContent()).toBe(
      'seeded task number 0',
    );
    expect(await rowsInDom(page, 'task-list')).toBeLessThanOrEqual(MAX_ROWS);
    expect(await page.locator('.task-row.placeholder').count()).toBe(0);
    // Paged: every list request asked for at most 100 tasks, and only a few pages were read, not all 101.
    const lists = requests.filter((r) => r.startsWith('/api/tasks?'));
    expect(lists.length).toBeGreaterThanOrEqual(2);
    expect(lists.length).toBeLessThanOrEqual(6);
    for (const r of lists)
      expect(Number(new URLSearchParams(r.split('?')[1]).get('limit'))).toBeLessThanOrEqual(100);
    await page.close();
  });

  it('shows a 5,000-record task with a bounded DOM, from its last record back to its first', async () => {
    const page = await browser.page();
    const requests = apiRequests(page);
    await page.goto(`${server.url}/#/tasks/${BIG}/timeline`);
    await expect
      .poll(() => page.locator('#timeline-h').textContent(), { timeout: 30_000 })
      .toContain('(5,000 records)');
    // A finished task's page opens at its end: the last record is on screen.
    await page.waitForSelector(`.step-row[data-seq="${STEPS}"]`);
    await screenshot(page, 'dashboard-5000-records');
    expect(await rowsInDom(page, 'timeline')).toBeLessThanOrEqual(MAX_ROWS);
    await page.locator('#timeline').evaluate((el) => (el.scrollTop = 0));
    await page.waitForSelector('.step-row[data-seq="1"]');
    expect(await page.locator(`.step-row[data-seq="${STEPS}"]`).count()).toBe(0);
    expect(await rowsInDom(page, 'timeline')).toBeLessThanOrEqual(MAX_ROWS);
    // The record opens whole in the detail pane (the list itself holds summaries).
    await page.locator('.step-row[data-seq="1"]').click();
    await expect.poll(() => page.locator('#step-detail').textContent()).toContain('turn 1');
    // The log came in pages of summaries, never in one request.
    const pages = requests.filter((r) => r.startsWith(`/api/tasks/${BIG}/steps?`) && r.includes('summary=1'));
    expect(pages.length).toBeGreaterThanOrEqual(STEPS / 1000);
    for (const r of pages)
      expect(Number(new URLSearchParams(r.split('?')[1]).get('limit'))).toBeLessThanOrEqual(1000);
    await page.close();
  });

  it('shows a 5,000-record task as a conversation with a bounded DOM: the latest replies first, earlier ones on request', async () => {
    const page = await browser.page();
    const requests = apiRequests(page);
    await page.goto(`${server.url}/#/tasks/${BIG}`);
    await page.waitForSelector('.conversation[data-loaded="true"]', { timeout: 30_000 });
    const items = Number(await page.locator('.conversation').getAttribute('data-items'));
    expect(items).toBeGreaterThan(STEPS / 3);
    // The prompt, the "show earlier" button and the last WINDOW (150) items: not thousands of elements.
    const drawn = (): Promise<number> => page.locator('.thread > li').count();
    expect(await drawn()).toBeLessThanOrEqual(152);
    expect(await page.locator('.thread > li').first().getAttribute('class')).toContain('prompt');
    // The newest reply is there (records 3n-2 are replies, 3n-1 decisions, 3n results: record 4,999 is the last
    // reply); the first reply (record 1) is not, until asked for.
    await page.waitForSelector(`.thread .msg.reply[data-seq="${STEPS - 1}"]`);
    expect(await page.locator('.thread [data-seq="1"]').count()).toBe(0);
    await screenshot(page, 'dashboard-5000-records-conversation');
    await page.click('.earlier button');
    await expect.poll(drawn).toBeGreaterThan(152);
    expect(await drawn()).toBeLessThanOrEqual(302);
    // Every click goes further back, up to the first reply.
    for (let i = 0; i < 30 && (await page.locator('.earlier button').count()) > 0; i++)
      await page.click('.earlier button');
    await page.waitForSelector('.thread .msg.reply[data-seq="1"]');
    // Read in pages without the model input (input=0), never in one request and never with the prompts.
    const pages = requests.filter((r) => r.startsWith(`/api/tasks/${BIG}/steps?`) && r.includes('input=0'));
    expect(pages.length).toBeGreaterThanOrEqual(STEPS / 500);
    for (const r of pages)
      expect(Number(new URLSearchParams(r.split('?')[1]).get('limit'))).toBeLessThanOrEqual(500);
    await page.close();
  });
});
