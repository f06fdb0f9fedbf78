/// <reference lib="dom" />
/**
 * The web dashboard in a real browser (Debian Chromium via playwright-core) against the BUILT `cc-orchestrator serve`,
 * the scripted fake model server behind the real agent strategies, and real WebSocket clients standing in for CC
 * computers. Each test is named for what a person at the browser would notice going wrong.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import {
  scriptByMarker,
  startFakeOllama,
  type FakeChatRequest,
  type FakeOllama,
  type FakeReply,
} from '@ccagent/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, screenshot, type Browser } from './support/browser.js';
import { serveWithConfig, type Served } from './support/spawn.js';
import { TestClient, type Msg } from './support/ws-test-client.js';

const PLANNER = 'dash-planner';
const KIND = 'dash_job';

let dir: string;
let fake: FakeOllama;
let server: Served;
let browser: Browser;
let port: string;
const clients: TestClient[] = [];

/** Planner replies by prompt marker: each task's prompt starts with "#dash:<name>#", which picks its script. */
const { scripts, script } = scriptByMarker('dash', 'DONE\nSUMMARY: nothing scripted');

const CONFIG = {
  models: { planner: { name: PLANNER }, executor: { name: PLANNER }, native: { name: PLANNER } },
  taskKinds: {
    [KIND]: {
      strategy: 'planner_executor',
      executorMode: 'parser',
      allowedCommands: ['fs_write', 'run_program'],
      budgets: { maxSteps: 40 },
    },
  },
};
const ARGS = ['--log-level', 'warn', '--durability', 'normal'];

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-dash-'));
  fake = await startFakeOllama({ installed: [PLANNER] });
  fake.script(PLANNER, script);
  server = await serveWithConfig(dir, fake.url, CONFIG, ARGS);
  port = new URL(server.url).port;
  browser = await launchBrowser();
  const pc = await TestClient.connect(server.url, 'pc-1');
  answerCommands(pc);
  clients.push(pc);
}, 60_000);

afterAll(async () => {
  for (const c of clients) c.terminate();
  await browser?.close();
  await server?.kill9();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Answer command_calls as a CC agent host would: writes succeed, a run prints the file it runs. */
function answerCommands(c: TestClient): void {
  const files = new Map<string, string>();
  c.ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8')) as Msg;
    if (m.type !== 'command_call') return;
    const a = m.args as { path?: string; content?: string };
    const base = { type: 'command_result', task_id: m.task_id, call_id: m.call_id };
    if (m.command === 'run_program') {
      c.send({ ...base, ok: true, result: { ok: true, output: files.get(String(a.path)) ?? '' } });
    } else {
      files.set(String(a.path), String(a.content));
      c.send({ ...base, ok: true, result: { ok: true } });
    }
  });
}

/** A planner that writes and runs `n` files, each reply `delayMs` late, then says DONE. */
function writer(n: number, delayMs: number): () => (req: FakeChatRequest) => FakeReply {
  return () => {
    let i = 0;
    return () => {
      i++;
      if (i > n) return { content: 'DONE\nSUMMARY: wrote every file', fault: { latencyMs: delayMs } };
      return {
        content: [
          'WRITE_FILE',
          `PATH: f${i}.lua`,
          'LANGUAGE: lua',
          'CONTENT:',
          '```lua',
          `print(${i})`,
          '```',
          'THEN:',
          `- f${i}.lua`,
        ].join('\n'),
        fault: { latencyMs: delayMs },
        promptEvalCount: 100 + i,
        evalCount: 20 + i,
      };
    };
  };
}

async function api<T>(
  route: string,
  init: { method?: string; body?: unknown; token?: string } = {},
): Promise<T> {
  const res = await fetch(`${server.url}${route}`, {
    method: init.method ?? 'GET',
    headers: {
      'content-type': 'application/json',
      ...(init.token !== undefined ? { authorization: `Bearer ${init.token}` } : {}),
    },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function createTask(prompt: string, clientId = 'pc-1'): Promise<string> {
  const r = await api<{ task: { id: string } }>('/api/tasks', {
    method: 'POST',
    body: { task_kind: KIND, prompt, client_id: clientId },
  });
  return r.task.id;
}

async function waitStatus(id: string, status: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const t = await api<{ task: { status: string } }>(`/api/tasks/${id}?steps=0`);
    if (t.task.status === status) return;
    if (Date.now() > end) throw new Error(`task ${id} is ${t.task.status}, not ${status}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

interface SummaryRow {
  seq: number;
  step: number;
  kind: string;
  role?: string;
  started_at?: number;
}

/** Every step-log record of a task, in the summary form the timeline reads. */
async function allSteps(id: string): Promise<SummaryRow[]> {
  let after = 0;
  const all: SummaryRow[] = [];
  for (;;) {
    const p = await api<{ steps: SummaryRow[]; has_more: boolean; next_after_seq: number }>(
      `/api/tasks/${id}/steps?summary=1&limit=500&after_seq=${after}`,
    );
    all.push(...p.steps);
    after = p.next_after_seq;
    if (!p.has_more) return all;
  }
}

/**
 * The seqs the timeline must show: every record but a model request whose call's record (same step, kind = its role,
 * same start) is there, the rule of `ccagent tasks show`.
 */
async function shownSeqs(id: string): Promise<number[]> {
  const all = await allSteps(id);
  const finished = new Set(
    all.filter((s) => s.kind !== 'model_request').map((s) => `${s.step}|${s.kind}|${s.started_at}`),
  );
  return all
    .filter((s) => !(s.kind === 'model_request' && finished.has(`${s.step}|${s.role}|${s.started_at}`)))
    .map((s) => s.seq);
}

async function stepCount(id: string): Promise<number> {
  return (await shownSeqs(id)).length;
}

/** The number the timeline heading shows ("Timeline (N records)"). */
async function shownRecords(page: Page): Promise<number> {
  const text = (await page.locator('#timeline-h').textContent()) ?? '';
  return Number(/\(([\d,]+) records\)/.exec(text)?.[1]?.replace(/,/g, '') ?? NaN);
}

async function open(hash: string, width?: number): Promise<Page> {
  const page = await browser.page(width);
  await page.goto(`${server.url}/#${hash}`);
  await page.waitForSelector('[data-testid="live-state"]:text("live")');
  return page;
}

// A browser and a spawned server on a machine shared with other test suites: allow each test a minute.
describe('dashboard in Chromium', { timeout: 60_000 }, () => {
  it('creates a task from the form and shows its steps as they are committed, without a reload', async () => {
    scripts.set('live', writer(3, 400));
    const page = await open('/new');
    await page.evaluate(() => ((window as unknown as { marker: number }).marker = 42));
    await page.fill('input[name="kind"]', KIND);
    await page.fill('textarea[name="prompt"]', '#dash:live# write three files and run them');
    await page.selectOption('select[name="client"]', 'pc-1');
    await screenshot(page, 'dashboard-new-task');
    await page.click('button[type="submit"]');
    await page.waitForURL(/#\/tasks\/.+/);
    const id = decodeURIComponent(page.url().split('#/tasks/')[1] as string);
    // The record timeline is one click from the conversation (the default view).
    await page.click('.tabs a:text("Timeline")');
    await page.waitForSelector('#timeline-h');
    // Steps arrive while the model is still writing (each reply is 400 ms late): the count grows in place.
    const seen = new Set<number>();
    const end = Date.now() + 20_000;
    while (Date.now() < end) {
      seen.add(await shownRecords(page));
      const status = await page.locator('[data-testid="task-status"]').textContent();
      if (status === 'completed') break;
      await page.waitForTimeout(50);
    }
    await page.waitForSelector('[data-testid="task-status"]:text("completed")');
    expect([...seen].filter((n) => n > 0).length).toBeGreaterThanOrEqual(3);
    expect(await shownRecords(page)).toBe(await stepCount(id));
    expect(await page.evaluate(() => (window as unknown as { marker: number }).marker)).toBe(42);
    // Each model call was announced by a model_request record; like `tasks show`, the timeline shows the call's own
    // record only (the request is inside it), so no call is listed twice.
    const requests = (await allSteps(id)).filter((s) => s.kind === 'model_request');
    expect(requests.length).toBeGreaterThanOrEqual(4);
    expect(requests.every((r) => r.role === 'planner')).toBe(true);
    expect(await page.locator('.step-row .kind', { hasText: 'model_request' }).count()).toBe(0);
    // A model step opens with what went in and came out.
    // The list may still re-render from the last live events: a click that lands on a row being replaced is
    // clicked again (up to 5 times), then the detail must show the model's output.
    for (let i = 0; i < 5; i++) {
      await page.locator('.step-row .kind', { hasText: 'planner' }).first().click();
      const opened = await page
        .waitForSelector('#step-detail .clip-label:text("Text out")', { timeout: 5000 })
        .then(() => true)
        .catch(() => false);
      if (opened) break;
    }
    await page.waitForSelector('#step-detail .clip-label:text("Text out")');
    await expect.poll(() => page.locator('#step-detail').textContent()).toContain('WRITE_FILE');
    expect(await page.locator('#step-detail').textContent()).toContain('tokens');
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'dashboard-task');
    await page.close();
  });

  it('answers the model’s question from the page and the task goes on with the answer', async () => {
    scripts.set('ask', () => {
      let i = 0;
      return (req) => {
        i++;
        if (i === 1)
          return 'ASK_USER\nQUESTION: Which colour should the lamp be?\nWHY: the task does not say\nNEXT: write lamp.lua';
        const prompt = (req.body.messages as { content: string }[]).map((m) => m.content).join('\n');
        const answer = /# USER ANSWERS(?: \(new\))?\nQ: [^\n]*\nA: ([^\n]*)/.exec(prompt)?.[1] ?? 'none';
        // The kind's completion rule wants a successful run before DONE.
        if (i === 2)
          return [
            'WRITE_FILE',
            'PATH: lamp.lua',
            'LANGUAGE: lua',
            'CONTENT:',
            '```lua',
            `print("${answer}")`,
            '```',
            'THEN:',
            '- lamp.lua',
          ].join('\n');
        return `DONE\nSUMMARY: the lamp is ${answer}`;
      };
    });
    const id = await createTask('#dash:ask# make a lamp');
    await waitStatus(id, 'waiting_for_user');
    const page = await open(`/tasks/${id}/timeline`);
    await page.waitForSelector('.question-text:text("Which colour should the lamp be?")');
    await screenshot(page, 'dashboard-question');
    await expect.poll(() => shownRecords(page)).toBe(await stepCount(id));
    // From here the timeline's new rows come from the live `step` records' short form: no read of the step log.
    const reads: string[] = [];
    page.on('request', (r) => {
      if (r.url().includes('/steps?')) reads.push(r.url());
    });
    await page.fill('.question textarea', 'teal');
    await page.click('.question button[type="submit"]');
    await page.waitForSelector('[data-testid="task-status"]:text("completed")');
    await expect
      .poll(() => page.locator('.clip', { hasText: 'Result' }).textContent())
      .toContain('the lamp is teal');
    expect(await page.locator('.question').count()).toBe(0);
    const total = await stepCount(id);
    await expect.poll(() => shownRecords(page)).toBe(total);
    expect(reads).toEqual([]);
    // The rows painted from the events read exactly like the rows of a fresh load of the step log.
    const rows = (p: Page): Promise<string[]> =>
      p.locator('.step-row').evaluateAll((els) => els.map((e) => e.textContent ?? ''));
    const fresh = await open(`/tasks/${id}/timeline`);
    await expect.poll(() => shownRecords(fresh)).toBe(total);
    expect(await rows(page)).toEqual(await rows(fresh));
    await fresh.close();
    await page.close();
  });

  it('cancels a running task with the Cancel button', async () => {
    scripts.set('slow', writer(50, 1500));
    const id = await createTask('#dash:slow# take your time');
    const page = await open(`/tasks/${id}`);
    await page.waitForSelector('[data-testid="task-status"]:text("running")');
    await page.click('button:text("Cancel task")');
    await page.waitForSelector('[data-testid="task-status"]:text("cancelled")');
    await waitStatus(id, 'cancelled');
    expect(await page.locator('button:text("Cancel task")').isDisabled()).toBe(true);
    await page.close();
  });

  it('sends a follow-up message the model reads on its next call, and retries the task after cancelling it', async () => {
    scripts.set('steer', writer(60, 600));
    const id = await createTask('#dash:steer# build slowly');
    const page = await open(`/tasks/${id}`);
    await page.waitForSelector('[data-testid="task-status"]:text("running")');
    const asked = fake.requests.length;
    await page.fill('.actions input', 'use blue wool for the roof');
    await page.click('.actions button[type="submit"]');
    await page.waitForSelector('.actions .note:text("Message: done")');
    // The model's next request carries the message.
    await expect
      .poll(
        () =>
          fake.requests
            .slice(asked)
            .some((r) => (JSON.stringify(r.body) ?? '').includes('use blue wool for the roof')),
        {
          timeout: 20_000,
        },
      )
      .toBe(true);
    await page.click('button:text("Cancel task")');
    await page.waitForSelector('[data-testid="task-status"]:text("cancelled")');
    expect(await page.locator('button:text("Retry")').isDisabled()).toBe(false);
    await page.click('button:text("Retry")');
    await page.waitForSelector('.actions .note:text("Retry: done")');
    await expect.poll(() => page.locator('[data-testid="task-status"]').textContent()).not.toBe('cancelled');
    expect(['queued', 'running', 'waiting for command']).toContain(
      await page.locator('[data-testid="task-status"]').textContent(),
    );
    await api(`/api/tasks/${id}/cancel`, { method: 'POST', body: {} });
    await page.close();
  });

  it('shows a computer connecting and disconnecting without a reload', async () => {
    const page = await open('/computers');
    await page.waitForSelector('[data-client-id="pc-1"] .client-state:text("connected")');
    const c = await TestClient.connect(server.url, 'pc-live', {
      tools: [{ name: 'quarry', status: 'active', version: 3, description: 'digs a 3x3 quarry' }],
    });
    await page.waitForSelector('[data-client-id="pc-live"] .client-state:text("connected")');
    await page.waitForSelector('[data-client-id="pc-live"] td:text("quarry")');
    await screenshot(page, 'dashboard-computers');
    c.close();
    await page.waitForSelector('[data-client-id="pc-live"] .client-state:not(:text("connected"))', {
      timeout: 15_000,
    });
    await page.close();
  });

  it('renders hostile prompts, model output and tool results as text, never as HTML (no script runs, no image loads)', async () => {
    const hostile =
      '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">' +
      '\u001b[31mRED\u001b[0m <b>bold?</b>';
    // The model says 1 MiB; the prompt is as long as a request body may be (1 MiB with the JSON around it).
    const huge = 'A'.repeat(1024 * 1024);
    const longPrompt = 'P'.repeat(1000 * 1000);
    scripts.set('evil', () => {
      let i = 0;
      return () => {
        i++;
        if (i === 1)
          return [
            'WRITE_FILE',
            'PATH: evil.lua',
            'LANGUAGE: lua',
            'CONTENT:',
            '```lua',
            `-- ${hostile}`,
            '```',
            'THEN:',
            '- evil.lua',
          ].join('\n');
        return `DONE\nSUMMARY: ${hostile} ${huge}`;
      };
    });
    const id = await createTask(`#dash:evil# ${hostile} ${longPrompt}`);
    await waitStatus(id, 'completed');
    const requests: string[] = [];
    const page = await browser.page();
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`${server.url}/#/tasks/${encodeURIComponent(id)}/timeline`);
    await page.waitForSelector('[data-testid="task-status"]:text("completed")');
    // Open every record so each one's content is rendered.
    const n = await shownRecords(page);
    for (let i = 0; i < n; i++) {
      await page.locator(`#timeline-row-${i}`).click();
      await page.waitForSelector(`#step-detail h2:text("Record #")`);
    }
    await page.goto(`${server.url}/#/tasks`);
    await page.waitForSelector(`[data-task-id="${id}"]`);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('main img').count()).toBe(0);
    expect(await page.locator('main script, main b').count()).toBe(0);
    // The text is there to read, with the escape character made visible.
    await expect
      .poll(() => page.locator(`[data-task-id="${id}"] .task-prompt`).textContent())
      .toContain('<script>window.__pwned');
    expect(await page.locator(`[data-task-id="${id}"] .task-prompt`).textContent()).toContain(
      '\u241b[31mRED',
    );
    expect(requests.filter((u) => !u.startsWith(server.url))).toEqual([]);
    await page.goto(`${server.url}/#/tasks/${encodeURIComponent(id)}/timeline`);
    const prompt = page.locator('.clip', { hasText: 'Prompt' }).first();
    await expect.poll(() => prompt.textContent()).toContain('<img src=x onerror=');
    await expect.poll(() => shownRecords(page)).toBe(await stepCount(id));
    await screenshot(page, 'dashboard-hostile');
    // The 1 MiB prompt is cut to a preview until asked for.
    expect(((await prompt.locator('pre').textContent()) ?? '').length).toBeLessThan(5000);
    await prompt.locator('button:text("Show all")').click();
    expect(((await prompt.locator('pre').textContent()) ?? '').length).toBeGreaterThan(1000 * 1000);
    const result = page.locator('.clip', { hasText: 'Result' }).first();
    await result.locator('button:text("Show all")').click();
    expect(((await result.locator('pre').textContent()) ?? '').length).toBeGreaterThan(1024 * 1024);
    expect(await result.locator('pre').textContent()).toContain('<script>window.__pwned');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await page.close();
  });

  it('is usable from the keyboard alone: Tab to the list, arrows, Enter opens a task, Tab reaches Cancel', async () => {
    scripts.set('keys', writer(40, 2000));
    const id = await createTask('#dash:keys# newest task for the keyboard');
    const page = await open('/tasks');
    await page.waitForSelector(`[data-task-id="${id}"]`);
    await screenshot(page, 'dashboard-tasks');
    // Tab until the task list has the focus (skip link, nav, filters come first).
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press('Tab');
      if (await page.evaluate(() => document.activeElement?.id === 'task-list')) break;
    }
    expect(await page.evaluate(() => document.activeElement?.id)).toBe('task-list');
    await page.keyboard.press('ArrowDown');
    await page.keyboard.press('ArrowUp');
    await page.keyboard.press('Enter');
    await page.waitForURL(new RegExp(`#/tasks/${id}`));
    for (let i = 0; i < 20; i++) {
      await page.keyboard.press('Tab');
      if (await page.evaluate(() => document.activeElement?.textContent === 'Cancel task')) break;
    }
    expect(await page.evaluate(() => document.activeElement?.textContent)).toBe('Cancel task');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-testid="task-status"]:text("cancelled")');
    await page.close();
  });

  it('stays usable in a 560 px wide window: no sideways scrolling, the list and the timeline fit', async () => {
    const page = await open('/tasks', 560);
    await page.waitForSelector('.task-row');
    const overflow = (): Promise<number> =>
      page.evaluate(() => document.documentElement.scrollWidth - document.documentElement.clientWidth);
    expect(await overflow()).toBeLessThanOrEqual(0);
    await screenshot(page, 'dashboard-narrow');
    // A task with steps: filter the list to completed ones, open the first from the list.
    await page.selectOption('select', 'completed');
    await page.click('button:text("Apply")');
    // Every row shown is completed (read in one go: a live refetch may redraw the rows between two reads).
    await expect
      .poll(async () => [...new Set(await page.locator('.task-row .badge').allTextContents())])
      .toEqual(['completed']);
    await page.locator('.task-row').first().click();
    await page.waitForSelector('[data-testid="task-status"]');
    // Both views of the task fit: the conversation (the default), then the timeline.
    await page.waitForSelector('.conversation[data-loaded="true"]');
    expect(await overflow()).toBeLessThanOrEqual(0);
    await page.click('.tabs a:text("Timeline")');
    await page.waitForSelector('.step-row');
    expect(await overflow()).toBeLessThanOrEqual(0);
    await page.goto(`${server.url}/#/new`);
    await page.waitForSelector('textarea[name="prompt"]');
    expect(await overflow()).toBeLessThanOrEqual(0);
    await page.close();
  });

  it('survives a server restart: reconnects, resyncs and shows every step exactly once', async () => {
    scripts.set('restart', () => {
      let i = 0;
      return () => {
        i++;
        if (i === 1) return 'ASK_USER\nQUESTION: Go on after the restart?\nWHY: testing\nNEXT: write';
        if (i <= 3)
          return [
            'WRITE_FILE',
            `PATH: r${i}.lua`,
            'LANGUAGE: lua',
            'CONTENT:',
            '```lua',
            'print(1)',
            '```',
            'THEN:',
            `- r${i}.lua`,
          ].join('\n');
        return 'DONE\nSUMMARY: finished after the restart';
      };
    });
    const id = await createTask('#dash:restart# wait for me');
    await waitStatus(id, 'waiting_for_user');
    const page = await open(`/tasks/${id}/timeline`);
    await page.waitForSelector('.question-text');
    await expect.poll(() => shownRecords(page)).toBeGreaterThan(0);
    const before = await shownRecords(page);
    expect(before).toBe(await stepCount(id));
    await server.kill9();
    await page.waitForSelector('[data-testid="live-state"]:text("reconnecting")');
    server = await serveWithConfig(dir, fake.url, CONFIG, ARGS, {}, port);
    const pc = await TestClient.connect(server.url, 'pc-1');
    answerCommands(pc);
    clients.push(pc);
    await page.waitForSelector('[data-testid="live-state"]:text("live")', { timeout: 20_000 });
    await page.fill('.question textarea', 'yes');
    await page.click('.question button[type="submit"]');
    await page.waitForSelector('[data-testid="task-status"]:text("completed")', { timeout: 20_000 });
    const total = await stepCount(id);
    await expect.poll(() => shownRecords(page)).toBe(total);
    expect(total).toBeGreaterThan(before);
    // Every seq once, in order: read the rows the list holds by scrolling through it.
    const seqs = new Set<number>();
    const box = page.locator('#timeline');
    for (let top = 0; top < total * 40 + 400; top += 200) {
      await box.evaluate((el, t) => (el.scrollTop = t), top);
      await page.waitForTimeout(20);
      for (const s of await page
        .locator('.step-row')
        .evaluateAll((els) => els.map((e) => Number(e.getAttribute('data-seq')))))
        seqs.add(s);
    }
    expect([...seqs].sort((a, b) => a - b)).toEqual(await shownSeqs(id));
    await page.close();
  });
});
