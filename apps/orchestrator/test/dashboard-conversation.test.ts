/// <reference lib="dom" />
/**
 * The dashboard's conversation view (the default task view), its export, in a real browser (Debian Chromium via
 * playwright-core) against the BUILT `cc-orchestrator serve`, the scripted fake model server behind the real agent
 * strategies, and a real WebSocket client standing in for the CC computer. Each test is named for what a person at
 * the browser would notice going wrong.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
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

const MODEL = 'conv-model';
const KIND = 'conv_job';

let dir: string;
let fake: FakeOllama;
let server: Served;
let browser: Browser;
let pc: TestClient;

/** Model replies by prompt marker (`#conv:<name>#`), each script started afresh for its task. */
const { scripts, script } = scriptByMarker('conv', 'DONE\nSUMMARY: nothing scripted');

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-conv-'));
  fake = await startFakeOllama({ installed: [MODEL] });
  fake.script(MODEL, script);
  server = await serveWithConfig(
    dir,
    fake.url,
    {
      models: { planner: { name: MODEL }, executor: { name: MODEL }, native: { name: MODEL } },
      taskKinds: {
        [KIND]: {
          strategy: 'planner_executor',
          executorMode: 'parser',
          allowedCommands: ['fs_write', 'run_program'],
          budgets: { maxSteps: 40 },
        },
      },
    },
    ['--log-level', 'warn', '--durability', 'normal'],
  );
  browser = await launchBrowser();
  pc = await TestClient.connect(server.url, 'pc-1');
  answerCommands(pc);
}, 60_000);

afterAll(async () => {
  pc?.terminate();
  await browser?.close();
  await server?.kill9();
  await fake?.close();
  rmSync(dir, { recursive: true, force: true });
});

/** Outputs a run prints, by path (else the file's own content, like a program that prints its source). */
const runOutputs = new Map<string, string>();

function answerCommands(c: TestClient): void {
  const files = new Map<string, string>();
  c.ws.on('message', (data: Buffer) => {
    const m = JSON.parse(data.toString('utf8')) as Msg;
    if (m.type !== 'command_call') return;
    const a = m.args as { path?: string; content?: string };
    const base = { type: 'command_result', task_id: m.task_id, call_id: m.call_id };
    if (m.command === 'run_program') {
      const out = runOutputs.get(String(a.path)) ?? files.get(String(a.path)) ?? '';
      c.send({ ...base, ok: true, result: { ok: true, output: out } });
    } else {
      files.set(String(a.path), String(a.content));
      c.send({ ...base, ok: true, result: { ok: true } });
    }
  });
}

function writeFile(p: string, lines: string[]): string {
  return [
    'WRITE_FILE',
    `PATH: ${p}`,
    'LANGUAGE: lua',
    'CONTENT:',
    '```lua',
    ...lines,
    '```',
    'THEN:',
    `- ${p}`,
  ].join('\n');
}

async function api<T>(route: string, init: { method?: string; body?: unknown } = {}): Promise<T> {
  const res = await fetch(`${server.url}${route}`, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json' },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
  if (!res.ok) throw new Error(`${route}: ${res.status} ${await res.text()}`);
  return (await res.json()) as T;
}

async function createTask(prompt: string, kind = KIND): Promise<string> {
  const r = await api<{ task: { id: string } }>('/api/tasks', {
    method: 'POST',
    body: { task_kind: kind, prompt, client_id: 'pc-1' },
  });
  return r.task.id;
}

async function waitStatus(id: string, status: string, ms = 20_000): Promise<void> {
  const end = Date.now() + ms;
  for (;;) {
    const t = await api<{ task: { status: string; error?: unknown } }>(`/api/tasks/${id}?steps=0`);
    if (t.task.status === status) return;
    if (Date.now() > end || t.task.status === 'failed')
      throw new Error(`task ${id} is ${t.task.status}, not ${status}: ${JSON.stringify(t.task.error)}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

async function open(hash: string, width?: number): Promise<Page> {
  const page = await browser.page(width);
  await page.goto(`${server.url}/#${hash}`);
  await page.waitForSelector('[data-testid="live-state"]:text("live")');
  return page;
}

/** A lamp task: writes lamp.lua, asks a question, rewrites lamp.lua (a diff), runs it into an error, ends. */
function lampScript(): () => (req: FakeChatRequest) => FakeReply {
  return () => {
    let i = 0;
    return () => {
      i++;
      const usage = { evalCount: 10 * i, promptEvalCount: 100 * i };
      if (i === 1)
        return {
          content: writeFile('lamp.lua', [
            'local on = true',
            'print("lamp: red")',
            'redstone.setOutput("top", on)',
          ]),
          ...usage,
        };
      if (i === 2)
        return 'ASK_USER\nQUESTION: Which colour should the lamp be?\nWHY: the task does not say\nNEXT: rewrite';
      if (i === 3)
        return {
          content: writeFile('lamp.lua', [
            'local on = true',
            'print("lamp: teal")',
            'redstone.setOutput("top", on)',
          ]),
          ...usage,
        };
      return {
        content:
          'DONE\nSUMMARY: The lamp is **teal** now: wrote `lamp.lua`, see [the docs](https://example.invalid/lamp).',
        ...usage,
      };
    };
  };
}

describe('the conversation view in Chromium', { timeout: 90_000 }, () => {
  it('tells a task as a thread: prompt, replies, a rewrite as a diff, the run with its error marked, the question and answer, the result as text, figures and the chart', async () => {
    scripts.set('lamp', lampScript());
    runOutputs.set(
      'lamp.lua',
      'lamp: teal\nlamp.lua:3: attempt to index nil value\nstack traceback:\n  [C]: in ?',
    );
    const id = await createTask(
      '#conv:lamp# Build a **lamp** that lights on a redstone signal.\n\n## Colours\n\n- red\n- teal\n\n> ask me which',
    );
    await waitStatus(id, 'waiting_for_user');
    await api(`/api/tasks/${id}/answer`, { method: 'POST', body: { text: 'teal' } });
    await waitStatus(id, 'completed');
    const page = await open(`/tasks/${encodeURIComponent(id)}`);
    // The conversation is the default view; the timeline is one click away.
    await page.waitForSelector('.msg.result');
    expect(await page.locator('.tabs a[aria-current="page"]').textContent()).toBe('Conversation');
    expect(await page.locator('.step-row').count()).toBe(0);
    // The prompt, its Markdown rendered: bold, a heading, a list, a quote.
    expect(await page.locator('.msg.prompt strong').textContent()).toBe('lamp');
    expect(await page.locator('.msg.prompt .md-h').textContent()).toBe('Colours');
    expect(await page.locator('.msg.prompt li').allTextContents()).toEqual(['red', 'teal']);
    expect(await page.locator('.msg.prompt blockquote').textContent()).toBe('ask me which');
    // The first write is a new file with Lua highlighted; the second a diff against it.
    const files = page.locator('.file');
    expect(await files.count()).toBe(2);
    expect(await files.nth(0).locator('.file-head').textContent()).toContain('lamp.lua');
    expect(await files.nth(0).locator('.tok-keyword').first().textContent()).toBe('local');
    expect(await files.nth(0).locator('.tok-string').first().textContent()).toBe('"lamp: red"');
    expect(await files.nth(1).locator('.file-head').textContent()).toMatch(/changes lamp\.lua \+1 −1/);
    expect(await files.nth(1).locator('.d-add').textContent()).toContain('print("lamp: teal")');
    expect(await files.nth(1).locator('.d-del').textContent()).toContain('print("lamp: red")');
    expect(await files.nth(1).locator('.d-same').allTextContents()).toEqual(
      expect.arrayContaining([' local on = true\n', ' redstone.setOutput("top", on)\n']),
    );
    // The run: its output with the error and traceback lines marked, the plain line not.
    const runs = page.locator('.msg.call', { hasText: 'run_program' });
    expect(await runs.count()).toBeGreaterThanOrEqual(1);
    const marked = await runs.last().locator('.err-line').allTextContents();
    expect(marked.map((l) => l.trim())).toEqual([
      'lamp.lua:3: attempt to index nil value',
      'stack traceback:',
      '[C]: in ?',
    ]);
    expect(await runs.last().locator('.line:not(.err-line)').first().textContent()).toBe('lamp: teal\n');
    // The question and its answer.
    const q = page.locator('.msg.question-item');
    expect(await q.locator('.q').textContent()).toBe('Which colour should the lamp be?');
    expect(await q.locator('.a').textContent()).toContain('teal');
    // The result as Markdown: bold, inline code; the link shown as words and address, not followed.
    const result = page.locator('.msg.result');
    expect(await result.locator('strong').textContent()).toBe('teal');
    expect(await result.locator('code').first().textContent()).toBe('lamp.lua');
    expect(await result.locator('.md-link').textContent()).toBe('the docs (https://example.invalid/lamp)');
    expect(await page.locator('main a[href^="https://example.invalid"]').count()).toBe(0);
    // Quiet figures per reply, and a chart with one bar pair per model step.
    expect(await page.locator('.msg.reply .figures').first().textContent()).toMatch(/100 → 10 tok/);
    const replies = await page.locator('.msg.reply').count();
    expect(replies).toBeGreaterThanOrEqual(4);
    expect(await page.locator('.chart rect.bar-tok').count()).toBe(
      new Set(
        await page
          .locator('.msg.reply')
          .evaluateAll((els) => els.map((e) => e.textContent?.match(/step (\d+)/)?.[1])),
      ).size,
    );
    await files.nth(1).evaluate((e) => e.scrollIntoView({ block: 'start' }));
    await page.evaluate(() => window.scrollBy(0, -120));
    await screenshot(page, 'dashboard-conversation-diff');
    await page.evaluate(() => window.scrollTo(0, 0));
    await screenshot(page, 'dashboard-conversation');
    // One click to the timeline, and back.
    await page.click('.tabs a:text("Timeline")');
    await page.waitForSelector('.step-row');
    expect(page.url()).toMatch(/\/timeline$/);
    await page.click('.tabs a:text("Conversation")');
    await page.waitForSelector('.msg.result');
    await page.close();
  });

  it('keeps hostile replies, outputs and results inert: no script runs, no image or link loads, ANSI visible, a 100 KB output collapsed', async () => {
    const hostile =
      '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2">' +
      '\u001b[31mRED\u001b[0m <b>bold?</b> [click](javascript:window.__pwned=3) ![pic](http://127.0.0.2/x.png)';
    const huge = `${'A'.repeat(100_000)}\n${hostile}`;
    runOutputs.set('evil.lua', huge);
    scripts.set('evil', () => {
      let i = 0;
      return () => {
        i++;
        if (i === 1)
          return `${hostile}\n\n${writeFile('evil.lua', [`-- ${hostile}`, `print("${'\u001b'}[2J")`])}`;
        return `DONE\nSUMMARY: ${hostile}\n\n\`\`\`lua\n-- ${hostile}\n\`\`\`\n> ${hostile}\n\n# ${hostile}`;
      };
    });
    const id = await createTask(
      `#conv:evil# ${hostile}\n\n# ${hostile}\n\n> ${hostile}\n\n\`\`\`lua\n-- ${hostile}\n\`\`\``,
    );
    await waitStatus(id, 'completed');
    // A hostile follow-up message too (the task continues with it and ends again).
    await api(`/api/tasks/${id}/messages`, {
      method: 'POST',
      body: { text: `${hostile}\n\n# ${hostile}`, from: 'dashboard' },
    });
    await expect
      .poll(
        async () =>
          (await api<{ messages?: unknown[] }>(`/api/tasks/${id}?steps=0&messages=1`)).messages?.length,
      )
      .toBe(1);
    await waitStatus(id, 'completed');
    const requests: string[] = [];
    const page = await browser.page();
    page.on('request', (r) => requests.push(r.url()));
    await page.goto(`${server.url}/#/tasks/${encodeURIComponent(id)}`);
    await page.waitForSelector('.msg.result');
    // Open everything that can be opened: every "show all", every <details>.
    for (const b of await page.locator('.conversation button:text-matches("Show all")').all())
      await b.click();
    for (const d of await page.locator('.conversation details').all())
      await d.evaluate((e) => ((e as HTMLDetailsElement).open = true));
    await page.waitForTimeout(200);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('main img, main script, main b, main iframe').count()).toBe(0);
    expect(await page.locator('main a[href^="javascript"], main a[href^="http://127.0.0.2"]').count()).toBe(
      0,
    );
    expect(requests.filter((u) => !u.startsWith(server.url))).toEqual([]);
    const text = (await page.locator('.conversation').textContent()) ?? '';
    expect(text).toContain('<script>window.__pwned = 1</script>');
    expect(text).toContain('\u241b[31mRED');
    expect(text).not.toContain('\u001b');
    expect(await page.locator('.msg.prompt .md-h').textContent()).toContain('<img src=x');
    expect(await page.locator('.msg.prompt blockquote').textContent()).toContain('<script>');
    expect(await page.locator('.msg.result').textContent()).toContain('<img src=x');
    expect(await page.locator('.msg.message-item .md-h').textContent()).toContain('<script>');
    // The chat page shows the same thread, as inert.
    await page.goto(`${server.url}/#/chat/${encodeURIComponent(id)}`);
    await page.waitForSelector('.chat-page .msg.message-item');
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('main img, main script, main b, main iframe').count()).toBe(0);
    // The 100 KB output: collapsed at first (a fresh page), whole after "show all".
    const fresh = await browser.page();
    await fresh.goto(`${server.url}/#/tasks/${encodeURIComponent(id)}`);
    const out = fresh.locator('.msg.call .output').last();
    await out.waitFor();
    expect(((await out.locator('pre').textContent()) ?? '').length).toBeLessThan(5000);
    await screenshot(fresh, 'dashboard-conversation-hostile');
    await out.locator('button:text-matches("Show all output")').click();
    expect(((await out.locator('pre').textContent()) ?? '').length).toBeGreaterThan(100_000);
    expect(await fresh.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    await fresh.close();
    await page.close();
  });

  it('shows a chat reply as the model writes it, before its record is in the step log', async () => {
    const reply =
      'A turtle is a small robot from the ComputerCraft mod. It can move, dig, place blocks and carry items, and it runs Lua programs like any computer.';
    scripts.set('chat', () => () => ({
      content: reply,
      chunkChars: 4,
      fault: { latencyMs: 300, tokenDelayMs: 40 },
    }));
    const page = await open('/tasks');
    const id = await createTask('#conv:chat# what is a turtle?', 'chat');
    await page.goto(`${server.url}/#/tasks/${encodeURIComponent(id)}`);
    // The streaming bubble shows a part of the reply, then the whole reply lands as a record.
    const partial = await page.waitForSelector('.msg.streaming', { timeout: 20_000 });
    const seen = (await partial.textContent()) ?? '';
    expect(seen).toContain('writing…');
    await page.waitForSelector('.msg.reply:not(.streaming)', { timeout: 20_000 });
    await expect
      .poll(() => page.locator('.msg.reply:not(.streaming)').first().textContent())
      .toContain('any computer.');
    expect(await page.locator('.msg.streaming').count()).toBe(0);
    await page.close();
  });

  it('chats from the keyboard: Enter sends, Shift+Enter is a new line, the reply streams in, a follow-up continues it', async () => {
    const replies = [
      'A **turtle** is a small robot from the ComputerCraft mod. It can move, dig, place blocks and carry items.',
      'Call `turtle.dig()` to mine the block in front of it, then `turtle.forward()` to move into the gap.',
    ];
    scripts.set('talk', () => {
      let i = 0;
      return () => ({
        content: replies[i++] ?? 'nothing more',
        chunkChars: 4,
        fault: { latencyMs: 200, tokenDelayMs: 30 },
      });
    });
    const page = await open('/chat');
    // The composer has the focus: typing goes straight into it.
    await page.waitForSelector('.composer textarea');
    expect(await page.evaluate(() => document.activeElement?.getAttribute('name'))).toBe('message');
    await page.keyboard.type('#conv:talk# what is a turtle?');
    await page.keyboard.press('Shift+Enter');
    await page.keyboard.type('answer in one line');
    expect(await page.locator('.composer textarea').inputValue()).toBe(
      '#conv:talk# what is a turtle?\nanswer in one line',
    );
    await page.keyboard.press('Enter');
    await page.waitForURL(/#\/chat\/.+/);
    const id = decodeURIComponent(page.url().split('#/chat/')[1] as string);
    const created = await api<{ task: { kind: string; prompt: string } }>(`/api/tasks/${id}?steps=0`);
    expect(created.task).toMatchObject({
      kind: 'chat',
      prompt: '#conv:talk# what is a turtle?\nanswer in one line',
    });
    // The reply streams in, then lands as a record with its Markdown rendered.
    await page.waitForSelector('.msg.streaming', { timeout: 20_000 });
    await expect
      .poll(() => page.locator('.msg.reply:not(.streaming) strong').first().textContent(), {
        timeout: 20_000,
      })
      .toBe('turtle');
    await page.waitForSelector('[data-testid="chat-status"]:text("completed")');
    expect(await page.locator('.composer textarea').inputValue()).toBe('');
    // A follow-up from the keyboard: the model sees it, its reply joins the same thread under the message.
    await page.locator('.composer textarea').focus();
    await page.keyboard.type('and how does it dig?');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.msg.message-item:has-text("and how does it dig?")');
    await expect
      .poll(() => page.locator('.msg.reply:not(.streaming) code').allTextContents(), { timeout: 20_000 })
      .toContain('turtle.dig()');
    const last = fake.chatRequests(MODEL).at(-1)?.body as { messages: { role: string; content: string }[] };
    expect(last.messages.map((m) => m.content).join('\n')).toContain('and how does it dig?');
    const order = await page
      .locator('.thread > li')
      .evaluateAll((els) => els.map((e) => e.className.split(' ')[1]));
    expect(order.indexOf('message-item')).toBeGreaterThan(order.indexOf('reply'));
    expect(order.lastIndexOf('reply')).toBeGreaterThan(order.indexOf('message-item'));
    await screenshot(page, 'dashboard-chat');
    await page.close();
  });

  it('answers a question inline in the chat: Enter answers while the task waits for a person', async () => {
    scripts.set('chatask', lampScript());
    runOutputs.delete('lamp.lua');
    const page = await open('/chat');
    await page.waitForSelector('.composer select[name="kind"]');
    await expect
      .poll(() => page.locator('.composer select[name="kind"] option').allTextContents())
      .toContain(KIND);
    await page.selectOption('.composer select[name="kind"]', KIND);
    await page.locator('.composer textarea').focus();
    await page.keyboard.type('#conv:chatask# build a lamp');
    await page.keyboard.press('Enter');
    await page.waitForSelector('.chat-question:has-text("Which colour should the lamp be?")', {
      timeout: 20_000,
    });
    expect(await page.locator('.composer button[type="submit"]').textContent()).toBe('Answer');
    await page.locator('.composer textarea').focus();
    await page.keyboard.type('teal');
    await page.keyboard.press('Enter');
    await page.waitForSelector('[data-testid="chat-status"]:text("completed")', { timeout: 20_000 });
    expect(await page.locator('.msg.question-item .a').textContent()).toContain('teal');
    await page.close();
  });

  it('exports the task as Markdown and as JSON from the page', async () => {
    scripts.set('export', lampScript());
    runOutputs.delete('lamp.lua');
    const id = await createTask('#conv:export# Build a <b>lamp</b>');
    await waitStatus(id, 'waiting_for_user');
    await api(`/api/tasks/${id}/answer`, { method: 'POST', body: { text: 'teal <i>please</i>' } });
    await waitStatus(id, 'completed');
    const page = await open(`/tasks/${encodeURIComponent(id)}`);
    await page.waitForSelector('.msg.result');
    const [md] = await Promise.all([
      page.waitForEvent('download'),
      page.click('button:text("Export Markdown")'),
    ]);
    expect(md.suggestedFilename()).toBe(`task-${id}.md`);
    const mdText = readFileSync((await md.path())!, 'utf8');
    expect(mdText).toMatch(new RegExp(`^# Task \`${id}\``));
    // The prompt as written, in a code block; prose outside code blocks with `<` escaped.
    expect(mdText).toContain('```\n#conv:export# Build a <b>lamp</b>\n```');
    expect(mdText).toContain('Changes `lamp.lua`');
    expect(mdText).toContain('+print("lamp: teal")');
    expect(mdText).toContain('> **Question:** Which colour should the lamp be?');
    expect(mdText).toContain('> **Answer:** teal &lt;i>please&lt;/i>');
    expect(mdText).toContain('## Result (completed)');
    const [js] = await Promise.all([page.waitForEvent('download'), page.click('button:text("Export JSON")')]);
    expect(js.suggestedFilename()).toBe(`task-${id}.json`);
    const whole = JSON.parse(readFileSync((await js.path())!, 'utf8')) as {
      task: { id: string };
      steps: { input?: unknown }[];
      questions: unknown[];
      history: unknown[];
    };
    const direct = await api<{ steps: unknown[] }>(`/api/tasks/${id}`);
    expect(whole.task.id).toBe(id);
    expect(whole.steps.length).toBe(direct.steps.length);
    expect(whole.steps.some((s) => s.input !== undefined)).toBe(true);
    expect(whole.questions.length).toBe(1);
    expect(whole.history.length).toBeGreaterThan(0);
    await page.close();
  });
});
