/// <reference lib="dom" />
/**
 * The dashboard's look in a real browser (Debian Chromium via playwright-core) against the BUILT server, in the light
 * theme and in the dark one (the system's colour scheme emulated): every page's text is readable (WCAG AA, ≥ 4.5:1
 * against the background it is painted on), the dark theme is dark, and the task states have one set of colours — six
 * different ones (queued, running, waiting, completed, failed, cancelled), the same in every place that shows a state.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import type { Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser, type Browser } from './support/browser.js';
import { type Served, serveWithConfig } from './support/spawn.js';

const PLANNER = 'look-planner';
const KIND = 'look_job';
const SCHEMES = ['light', 'dark'] as const;
const AA = 4.5;

let dir: string;
let fake: FakeOllama;
let server: Served;
let browser: Browser;
let waitingId: string;
let cancelledId: string;

async function http(route: string, init: { method?: string; body?: unknown } = {}): Promise<Response> {
  return fetch(`${server.url}${route}`, {
    method: init.method ?? 'GET',
    headers: { 'content-type': 'application/json' },
    ...(init.body !== undefined ? { body: JSON.stringify(init.body) } : {}),
  });
}

async function createAndWait(prompt: string): Promise<string> {
  const created = await http('/api/tasks', { method: 'POST', body: { task_kind: KIND, prompt } });
  expect(created.status).toBe(201);
  const id = ((await created.json()) as { task: { id: string } }).task.id;
  for (let i = 0; i < 200; i++) {
    const r = await http(`/api/tasks/${id}?steps=0`);
    if (((await r.json()) as { task: { status: string } }).task.status === 'waiting_for_user') return id;
    await new Promise((res) => setTimeout(res, 50));
  }
  throw new Error(`task ${id} never asked its question`);
}

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-dash-look-'));
  fake = await startFakeOllama({ installed: [PLANNER] });
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
    ['--log-level', 'warn', '--durability', 'normal'],
  );
  waitingId = await createAndWait('find north');
  cancelledId = await createAndWait('find south');
  expect((await http(`/api/tasks/${cancelledId}/cancel`, { method: 'POST', body: {} })).status).toBe(200);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.kill9();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

interface Finding {
  text: string;
  tag: string;
  cls: string;
  ratio: number;
  fg: number[];
  bg: number[];
}

/**
 * In the page: every visible piece of text (an element with its own text, or a form field with a value) and its
 * contrast against the background it is painted on (the backgrounds of its ancestors composited from the page down).
 * Disabled controls are left out (WCAG exempts them); so are elements under a partly transparent ancestor, which
 * this cannot composite, and screen-reader-only text.
 */
function contrastOfPage(): Finding[] {
  const canvas = document.createElement('canvas');
  canvas.width = 1;
  canvas.height = 1;
  const ctx = canvas.getContext('2d', { willReadFrequently: true })!;
  const rgba = (css: string): number[] => {
    ctx.clearRect(0, 0, 1, 1);
    ctx.fillStyle = '#000';
    ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const d = ctx.getImageData(0, 0, 1, 1).data;
    // The canvas premultiplies nothing on read; alpha is 0..255.
    return [d[0]!, d[1]!, d[2]!, d[3]! / 255];
  };
  const over = (top: number[], under: number[]): number[] => {
    const a = top[3]!;
    return [0, 1, 2].map((i) => top[i]! * a + under[i]! * (1 - a)).concat(1);
  };
  const lum = (c: number[]): number => {
    const ch = c.slice(0, 3).map((v) => {
      const s = v / 255;
      return s <= 0.04045 ? s / 12.92 : ((s + 0.055) / 1.055) ** 2.4;
    });
    return 0.2126 * ch[0]! + 0.7152 * ch[1]! + 0.0722 * ch[2]!;
  };
  const ratio = (a: number[], b: number[]): number => {
    const [x, y] = [lum(a), lum(b)].sort((p, q) => q - p);
    return (x! + 0.05) / (y! + 0.05);
  };
  const out: Finding[] = [];
  for (const el of Array.from(document.querySelectorAll<HTMLElement>('body *'))) {
    if (el.closest('.sr-only, .skip, script, style, noscript, svg')) continue;
    const field =
      el instanceof HTMLInputElement || el instanceof HTMLTextAreaElement || el instanceof HTMLSelectElement;
    const own = Array.from(el.childNodes).some(
      (n) => n.nodeType === Node.TEXT_NODE && (n.textContent ?? '').trim() !== '',
    );
    if (!own && !(field && (el as HTMLInputElement).value !== '')) continue;
    if (field && ['checkbox', 'radio', 'hidden'].includes((el as HTMLInputElement).type)) continue;
    if (el.closest(':disabled, [aria-disabled="true"]')) continue;
    const r = el.getBoundingClientRect();
    const st = getComputedStyle(el);
    if (r.width === 0 || r.height === 0 || st.visibility !== 'visible') continue;
    const chain: HTMLElement[] = [];
    let translucent = false;
    for (let e: HTMLElement | null = el; e; e = e.parentElement) {
      chain.unshift(e);
      if (Number(getComputedStyle(e).opacity) < 1) translucent = true;
    }
    if (translucent) continue;
    let bg = over(rgba(getComputedStyle(document.documentElement).backgroundColor), [255, 255, 255, 1]);
    for (const e of chain) bg = over(rgba(getComputedStyle(e).backgroundColor), bg);
    const fg = over(rgba(st.color), bg);
    out.push({
      text: (field ? (el as HTMLInputElement).value : (el.textContent ?? '')).trim().slice(0, 40),
      tag: el.tagName.toLowerCase(),
      cls: el.className.toString(),
      ratio: Math.round(ratio(fg, bg) * 100) / 100,
      fg: fg.map(Math.round),
      bg: bg.map(Math.round),
    });
  }
  return out;
}

async function openIn(scheme: (typeof SCHEMES)[number], hash: string, ready: string): Promise<Page> {
  const page = await browser.page();
  await page.emulateMedia({ colorScheme: scheme });
  await page.goto(`${server.url}/#${hash}`);
  await page.waitForSelector('[data-testid="live-state"]:text("live")');
  await page.waitForSelector(ready);
  return page;
}

const PAGES: [string, string][] = [
  ['/tasks', `.task-row[data-task-id="${'{waiting}'}"]`],
  ['/tasks/{waiting}', '.question-text'],
  ['/tasks/{waiting}/timeline', '.step-row'],
  ['/tasks/{cancelled}', '[data-testid="task-status"]'],
  ['/new', '#new-h'],
  ['/computers', '#comp-h'],
  ['/chat', '#chat-h'],
  ['/minecraft', '#mc-h'],
];

describe('dashboard look in Chromium, light and dark', { timeout: 90_000 }, () => {
  for (const scheme of SCHEMES) {
    it(`every page's text is readable (≥ ${AA}:1) in the ${scheme} theme, and the theme follows the system`, async () => {
      const fill = (s: string) => s.replace('{waiting}', waitingId).replace('{cancelled}', cancelledId);
      for (const [hash, ready] of PAGES) {
        const page = await openIn(scheme, fill(hash), fill(ready));
        const found = await page.evaluate(contrastOfPage);
        // Enough text was looked at for the check to mean something (the header alone has 7 pieces).
        expect(found.length, hash).toBeGreaterThan(8);
        const poor = found.filter((f) => f.ratio < AA);
        expect(poor, `${scheme} ${hash}: text below ${AA}:1`).toEqual([]);
        const bodyBg = await page.evaluate(() => {
          const c = document.createElement('canvas').getContext('2d')!;
          // The page's background is the root element's (the body has none of its own).
          c.fillStyle = getComputedStyle(document.documentElement).backgroundColor;
          c.fillRect(0, 0, 1, 1);
          const d = c.getImageData(0, 0, 1, 1).data;
          return (d[0]! + d[1]! + d[2]!) / 3;
        });
        if (scheme === 'dark') expect(bodyBg, hash).toBeLessThan(40);
        else expect(bodyBg, hash).toBeGreaterThan(230);
        await page.close();
      }
    });

    it(`gives the six task states six colours, the same in badges, dots and notes (${scheme})`, async () => {
      const page = await openIn(scheme, '/tasks', `.task-row[data-task-id="${waitingId}"]`);
      const seen = await page.evaluate(() => {
        const main = document.getElementById('main')!;
        const box = document.createElement('div');
        main.append(box);
        const states = [
          'queued',
          'running',
          'waiting_for_command',
          'waiting_for_user',
          'completed',
          'failed',
          'cancelled',
        ];
        const colour = (cls: string, tag = 'span'): string => {
          const el = document.createElement(tag);
          el.className = cls;
          el.textContent = cls;
          box.append(el);
          return getComputedStyle(el).color;
        };
        const background = (cls: string): string => {
          const el = document.createElement('span');
          el.className = cls;
          box.append(el);
          return getComputedStyle(el).backgroundColor;
        };
        const token = (name: string): string => {
          const el = document.createElement('span');
          el.style.color = `var(${name})`;
          box.append(el);
          return getComputedStyle(el).color;
        };
        return {
          badge: Object.fromEntries(states.map((s) => [s, colour(`badge s-${s}`)])),
          token: Object.fromEntries(
            ['queued', 'running', 'waiting', 'completed', 'failed', 'cancelled'].map((s) => [
              s,
              token(`--st-${s}`),
            ]),
          ),
          // A connected computer's dot is "completed" green, one in its grace period "waiting", an offline one grey.
          dotOn: background('dot on'),
          dotGrace: background('dot grace'),
          dotOff: background('dot off'),
          // Errors and failed calls in the conversation and the timeline use the failed colour.
          error: colour('error', 'p'),
          callError: colour('call-error', 'div'),
          bounce: colour('note-item n-bounce', 'li'),
        };
      });
      const t = seen.token;
      expect(seen.badge).toEqual({
        queued: t.queued,
        running: t.running,
        waiting_for_command: t.waiting,
        waiting_for_user: t.waiting,
        completed: t.completed,
        failed: t.failed,
        cancelled: t.cancelled,
      });
      const rgb = (c: string): number[] => (c.match(/[\d.]+/g) ?? []).slice(0, 3).map(Number);
      const six = Object.entries(t);
      for (const [a, ca] of six)
        for (const [b, cb] of six) {
          if (a >= b) continue;
          const d = Math.hypot(...rgb(ca).map((v, i) => v - rgb(cb)[i]!));
          expect(d, `${scheme}: ${a} ${ca} vs ${b} ${cb}`).toBeGreaterThan(60);
        }
      expect([seen.dotOn, seen.dotGrace, seen.dotOff]).toEqual([t.completed, t.waiting, t.cancelled]);
      expect([seen.error, seen.callError, seen.bounce]).toEqual([t.failed, t.failed, t.waiting]);
      await page.close();
    });
  }
});
