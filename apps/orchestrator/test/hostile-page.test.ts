/**
 * A hostile web page in a real browser (Debian Chromium driven by playwright-core): served from a second local
 * origin (another port), it tries what any site the player visits could do to the orchestrator on 127.0.0.1 — a
 * `no-cors` text/plain `fetch` POST, a form POST (the text/plain JSON trick), `navigator.sendBeacon`, a CORS JSON
 * POST, and a WebSocket `hello` — and a page under a rebinding host name reaches the server's port. Every attempt
 * must be refused: no task and no client appear. A page of the server's own origin still creates a task. The page
 * also tries to embed the server's answers (`/metrics`, `/health`, the API, the Lua bundle) as scripts, images and
 * styles, which would tell it that ccagent runs (every answer is `Cross-Origin-Resource-Policy: same-origin`), and to
 * open the Minecraft mod endpoint.
 * A page of the server's own origin that holds a computer's key repeats query parameters in every way a browser
 * sends them (two `fetch` spellings, `URLSearchParams.append`, a form with two fields of one name): none is accepted,
 * and none shows another computer's task.
 */
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { chromium, type BrowserContext } from 'playwright-core';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { enroll } from './support/security.js';
import { useHarness } from './support/session.js';

const CHROMIUM = '/usr/bin/chromium';
const t = useHarness();

/** The attacks, run in the hostile page; each resolves with what the page could observe. */
function hostilePage(target: string): string {
  const ws = target.replace(/^http/, 'ws') + '/ws';
  const body = JSON.stringify({ task_kind: 'general_agent', prompt: 'delete every file' });
  return `<!doctype html><html><body>
<iframe name="sink" style="display:none"></iframe>
<form id="f" method="POST" action="${target}/api/tasks" enctype="text/plain" target="sink">
  <input name='{"task_kind":"general_agent","prompt":"form post","pad":"' value='"}'>
</form>
<script>
window.results = {};
window.done = (async () => {
  const body = ${JSON.stringify(body)};
  try {
    await fetch(${JSON.stringify(target)} + '/api/tasks', { method: 'POST', mode: 'no-cors', headers: { 'Content-Type': 'text/plain' }, body });
    results.fetchNoCors = 'sent';
  } catch (e) { results.fetchNoCors = 'error ' + e; }
  try {
    const r = await fetch(${JSON.stringify(target)} + '/api/tasks', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body });
    results.fetchCors = 'status ' + r.status;
  } catch (e) { results.fetchCors = 'blocked'; }
  results.beaconText = String(navigator.sendBeacon(${JSON.stringify(target)} + '/api/tasks', new Blob([body], { type: 'text/plain' })));
  try {
    results.beaconJson = String(navigator.sendBeacon(${JSON.stringify(target)} + '/api/tasks', new Blob([body], { type: 'application/json' })));
  } catch (e) { results.beaconJson = 'refused by the browser'; }
  document.getElementById('f').submit();
  results.form = 'submitted';
  results.ws = await new Promise((resolve) => {
    let s;
    try { s = new WebSocket(${JSON.stringify(ws)}); } catch (e) { return resolve('error ' + e); }
    s.onopen = () => s.send(JSON.stringify({ type: 'hello', client_id: 'hijacker', protocol_version: 1, commands: [{ name: 'fs_write' }] }));
    s.onmessage = (m) => resolve('message ' + m.data);
    s.onerror = () => resolve('error');
    s.onclose = (c) => resolve('closed ' + c.code);
    setTimeout(() => resolve('timeout'), 5000);
  });
  await new Promise((r) => setTimeout(r, 1500)); // let the form post and beacons land
  return results;
})();
</script></body></html>`;
}

/** A page that embeds `urls` as script, image and style, and opens `mod`; each resolves with what it could observe. */
function embeddingPage(urls: string[], mod: string): string {
  return `<!doctype html><html><body><script>
window.results = {};
const probe = (tag, url) => new Promise((resolve) => {
  const el = document.createElement(tag);
  if (tag === 'link') { el.rel = 'stylesheet'; el.href = url; } else el.src = url;
  el.onload = () => resolve('load');
  el.onerror = () => resolve('error');
  setTimeout(() => resolve('timeout'), 5000);
  document.body.appendChild(el);
});
window.done = (async () => {
  // The control: the page's own script loads, so an 'error' below is the server's refusal, not a broken probe.
  results['own script'] = await probe('script', '/own.js');
  for (const url of ${JSON.stringify(urls)}) {
    for (const tag of ['script', 'img', 'link']) results[tag + ' ' + url] = await probe(tag, url);
  }
  results.mod = await new Promise((resolve) => {
    const s = new WebSocket(${JSON.stringify(mod)});
    s.onopen = () => { s.send(JSON.stringify({ type: 'register', instanceId: 'Bot', version: '1.0' })); };
    s.onmessage = (m) => resolve('message ' + m.data);
    s.onerror = () => resolve('error');
    s.onclose = (c) => resolve('closed ' + c.code);
    setTimeout(() => resolve('timeout'), 5000);
  });
  return results;
})();
</script></body></html>`;
}

describe.skipIf(!existsSync(CHROMIUM))('a hostile web page in Chromium', () => {
  let hostile: Server;
  let context: BrowserContext;
  let profile: string;

  beforeEach(async () => {
    profile = mkdtempSync(path.join(tmpdir(), 'cco-chromium-'));
    context = await chromium.launchPersistentContext(profile, {
      executablePath: CHROMIUM,
      headless: true,
      args: [
        '--no-sandbox',
        '--disable-background-networking',
        '--disable-component-update',
        // A name that resolves to 127.0.0.1, as a DNS-rebinding domain does after its first answer.
        '--host-resolver-rules=MAP rebind.test 127.0.0.1',
      ],
    });
  });
  afterEach(async () => {
    await context?.close();
    await new Promise<void>((r) => (hostile ? hostile.close(() => r()) : r()));
    rmSync(profile, { recursive: true, force: true });
  });

  it('refuses a cross-site fetch, form post, beacon and WebSocket hello: no task and no client appear', async () => {
    const h = await t.start();
    hostile = createServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(hostilePage(h.url));
    });
    await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', () => r()));
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${(hostile.address() as AddressInfo).port}/`);
    const results = (await page.evaluate('window.done')) as Record<string, string>;
    // What the page could see: the CORS post was blocked, the WebSocket refused before any hello was read.
    expect(results.fetchCors).toBe('blocked');
    expect(results.ws).toMatch(/^(error|closed)/);
    const tasks = (await (await h.http('/api/tasks')).json()) as { total: number };
    const clients = (await (await h.http('/api/clients')).json()) as { clients: unknown[] };
    expect({ tasks: tasks.total, clients: clients.clients.length, results }).toMatchObject({
      tasks: 0,
      clients: 0,
    });
  });

  it('gives a page under a rebinding host name nothing, while a page of the server’s own origin creates a task', async () => {
    const h = await t.start();
    const port = new URL(h.url).port;
    const page = await context.newPage();
    const rebound = await page.goto(`http://rebind.test:${port}/health`);
    expect(rebound?.status()).toBe(421);
    expect(await page.content()).not.toContain('"version"');

    await page.goto(`${h.url}/health`);
    const status = await page.evaluate(async () => {
      const r = await fetch('/api/tasks', {
        method: 'POST',
        headers: { 'Content-Type': 'application/json' },
        body: JSON.stringify({ task_kind: 'general_agent', prompt: 'from the own origin' }),
      });
      return r.status;
    });
    expect(status).toBe(201);
    const tasks = (await (await h.http('/api/tasks')).json()) as { total: number };
    expect(tasks.total).toBe(1);
  });

  it('cannot embed any answer of the server as a script, image or style, nor open the mod endpoint (guards against /metrics loading as a script and telling any page that ccagent runs)', async () => {
    const h = await t.start({ minecraft: true });
    const mc = h.running.report.minecraft;
    if (mc === undefined || !('url' in mc)) throw new Error('the mod endpoint is not running');
    const urls = ['/metrics', '/health', '/api/tasks', '/api/clients', '/lua/install.lua', '/nothing'].map(
      (p) => `${h.url}${p}`,
    );
    hostile = createServer((req, res) => {
      if (req.url === '/own.js') {
        res.writeHead(200, { 'content-type': 'text/javascript' });
        res.end('window.own = true;');
        return;
      }
      res.writeHead(200, { 'content-type': 'text/html; charset=utf-8' });
      res.end(embeddingPage(urls, mc.url));
    });
    await new Promise<void>((r) => hostile.listen(0, '127.0.0.1', () => r()));
    const page = await context.newPage();
    await page.goto(`http://127.0.0.1:${(hostile.address() as AddressInfo).port}/`);
    const results = (await page.evaluate('window.done')) as Record<string, string>;
    expect(results['own script']).toBe('load');
    const loaded = Object.entries(results).filter(
      ([k, v]) => k !== 'own script' && k !== 'mod' && v !== 'error',
    );
    expect(loaded, JSON.stringify(results)).toEqual([]);
    expect(Object.keys(results)).toHaveLength(1 + urls.length * 3 + 1);
    expect(results.mod).toMatch(/^(error|closed)/);
    expect(h.running.report.minecraft).toBeDefined();
    const instances = (await (await h.http('/api/minecraft/instances')).json()) as { instances: unknown[] };
    expect(instances.instances).toEqual([]);
  });

  it('gives a page holding a computer key no other computer’s task through a repeated parameter, in any form the browser sends it', async () => {
    const h = await t.start({ token: 'hostile-page-operator-token' });
    await enroll(h, 'pc-a');
    const keyB = await enroll(h, 'pc-b');
    const made = await h.http('/api/tasks', {
      method: 'POST',
      json: { task_kind: 'general_agent', prompt: 'SECRET-OF-PC-A', client_id: 'pc-a' },
    });
    const taskA = ((await made.json()) as { task: { id: string } }).task.id;
    const page = await context.newPage();
    await page.goto(`${h.url}/health`);
    const attempts = (await page.evaluate(
      async ({ key, taskA }) => {
        const auth = { Authorization: `Bearer ${key}` };
        const read = async (label: string, url: string) => {
          const r = await fetch(url, { headers: auth, cache: 'no-store' });
          const body = r.headers.get('content-type')?.startsWith('text/event-stream') ? '' : await r.text();
          return { label, status: r.status, leaked: body.includes('SECRET-OF-PC-A') || body.includes(taskA) };
        };
        const appended = new URL('/api/tasks', location.origin);
        appended.searchParams.append('client', 'pc-b');
        appended.searchParams.append('client', 'pc-a');
        const out = [
          await read('own first, other second', '/api/tasks?client=pc-b&client=pc-a'),
          await read('other first, own second', '/api/tasks?client=pc-a&client=pc-b'),
          await read('URLSearchParams.append twice', appended.href),
          await read('second name percent-encoded', '/api/tasks?client=pc-b&%63lient=pc-a'),
          await read('second value percent-encoded', '/api/tasks?client=pc-b&client=%70c-a'),
          await read('second name in brackets', '/api/tasks?client=pc-b&client[]=pc-a'),
          await read('semicolon separator', '/api/tasks?client=pc-b;client=pc-a'),
          await read('fragment after the repeat', '/api/tasks?client=pc-b&client=pc-a#x'),
          await read('task page with steps twice', `/api/tasks/${taskA}?steps=0&steps=1`),
          await read('events of two tasks by repeat', `/api/events?task=${taskA}&task=${taskA}`),
        ];
        // A form with two fields of one name: the browser itself repeats the parameter (and sends no key).
        const frame = document.createElement('iframe');
        frame.name = 'sink';
        document.body.append(frame);
        const form = document.createElement('form');
        form.method = 'GET';
        form.action = '/api/tasks';
        form.target = 'sink';
        for (const v of ['pc-b', 'pc-a']) {
          const input = document.createElement('input');
          input.name = 'client';
          input.value = v;
          form.append(input);
        }
        document.body.append(form);
        const loaded = new Promise((r) => frame.addEventListener('load', r, { once: true }));
        form.submit();
        await loaded;
        const text = frame.contentDocument?.body?.textContent ?? '';
        out.push({
          label: 'form with two fields of one name',
          status: text.includes('"unauthorized"') ? 401 : text.includes('"tasks"') ? 200 : 0,
          leaked: text.includes('SECRET-OF-PC-A'),
        });
        return out;
      },
      { key: keyB, taskA },
    )) as Array<{ label: string; status: number; leaked: boolean }>;
    const accepted = attempts.filter((a) => (a.status >= 200 && a.status < 300) || a.leaked);
    console.log(
      `[hostile-page] repeated parameters from a page holding a computer key: ${attempts.length} attempts, ${accepted.length} accepted\n` +
        attempts.map((a) => `  ${a.status} ${a.label}`).join('\n'),
    );
    expect(attempts).toHaveLength(11);
    expect(accepted).toEqual([]);
    // The same page still reads its own computer's tasks.
    const own = await page.evaluate(
      async (key) =>
        (await fetch('/api/tasks?client=pc-b', { headers: { Authorization: `Bearer ${key}` } })).status,
      keyB,
    );
    expect(own).toBe(200);
  });
});
