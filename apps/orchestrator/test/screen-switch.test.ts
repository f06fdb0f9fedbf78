/**
 * The screen mirror's server side, part two (issue 36 item 3): the operator's switch per computer (stored, sent in
 * `welcome` and as `screen_switch`, frames refused while off, kept across a restart; the config file's
 * `server.screen`) and the cap on viewers (per computer and in all; 429 over it, the others untouched, a closed
 * stream frees its slot). Real sockets and a real SQLite file.
 */
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { request, type ClientRequest, type IncomingMessage } from 'node:http';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { haveChromium, launchBrowser } from './support/browser.js';
import { startHarness, type Harness } from './support/harness.js';
import { TestClient } from './support/ws-test-client.js';

const TOKEN = 'screen-switch-token';
let h: Harness | undefined;
const clients: TestClient[] = [];
const open: ClientRequest[] = [];
const dirs: string[] = [];

afterEach(async () => {
  for (const r of open.splice(0)) r.destroy();
  for (const c of clients.splice(0)) c.terminate();
  await h?.close();
  h = undefined;
  for (const d of dirs.splice(0)) rmSync(d, { recursive: true, force: true });
});

async function connect(id: string): Promise<TestClient> {
  const c = await TestClient.connect(h!.url, id, { token: TOKEN });
  clients.push(c);
  return c;
}

function full(seq: number, text: string) {
  return {
    type: 'screen_frame',
    seq,
    width: text.length,
    height: 1,
    full: true,
    cursor: { x: 1, y: 1, blink: true },
    lines: [{ y: 1, text, fg: '0'.repeat(text.length), bg: 'f'.repeat(text.length) }],
  };
}

async function settled(c: TestClient, id: string): Promise<void> {
  c.send({ type: 'ping', id });
  await c.waitFor('pong', { id });
}

async function setSwitch(id: string, screen: unknown, token = TOKEN): Promise<Response> {
  return fetch(`${h!.url}/api/clients/${id}/screen/switch`, {
    method: 'POST',
    headers: { authorization: `Bearer ${token}`, 'content-type': 'application/json' },
    body: JSON.stringify({ screen }),
  });
}

async function getJson(p: string, token = TOKEN): Promise<{ status: number; body: Record<string, unknown> }> {
  const res = await fetch(`${h!.url}${p}`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json()) as Record<string, unknown> };
}

/** A stream held open on a raw socket: its status, and the events as they come. */
function watch(id: string): Promise<{ res: IncomingMessage; req: ClientRequest; text: () => string }> {
  return new Promise((resolve, reject) => {
    const u = new URL(`${h!.url}/api/clients/${id}/screen/stream`);
    const req = request(u, { headers: { authorization: `Bearer ${TOKEN}` } }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d: string) => (text += d));
      res.on('error', () => undefined);
      resolve({ res, req, text: () => text });
    });
    req.on('error', reject);
    req.end();
    open.push(req);
  });
}

async function until<T>(fn: () => T | undefined | false, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined && v !== false) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe("the server's screen switch", () => {
  it('an operator switches a computer off: it is told at once, its frames are refused and nothing is kept', async () => {
    h = await startHarness({ token: TOKEN });
    const c = await connect('pc-1');
    expect(c.messages.find((m) => m.type === 'welcome')?.['screen']).toBeUndefined();
    c.send(full(0, 'hello'));
    await settled(c, 'p1');
    const w = await watch('pc-1');
    expect(w.res.statusCode).toBe(200);
    await until(() => w.text().includes('hello'));

    const res = await setSwitch('pc-1', false);
    expect(res.status).toBe(200);
    expect(await res.json()).toEqual({ client_id: 'pc-1', switch: false, configured: null, server: false });
    expect(await c.waitFor('screen_switch')).toMatchObject({ screen: false });
    // Its watchers are told and their streams end; the screen the server held is gone.
    await until(() => w.text().includes('event: off'));
    await until(() => w.res.complete);
    expect((await getJson('/api/clients/pc-1/screen')).status).toBe(404);

    const from = c.messages.length;
    c.send(full(1, 'secret'));
    const err = await c.next((m) => m.type === 'error', 5000, from);
    expect(err).toMatchObject({ code: 'forbidden' });
    expect(String(err['message'])).toContain('off at the server');
    await settled(c, 'p2');
    expect((await getJson('/api/clients/pc-1/screen')).status).toBe(404);
    const again = await getJson('/api/clients/pc-1/screen/stream');
    expect(again).toMatchObject({ status: 409, body: { error: { code: 'screen_off' } } });

    // Cleared: no opinion again, the computer is told, its frames are kept.
    expect((await setSwitch('pc-1', null)).status).toBe(200);
    expect(await c.next((m) => m.type === 'screen_switch' && m['screen'] === null)).toBeTruthy();
    c.send(full(2, 'back!'));
    await settled(c, 'p3');
    const s = await getJson('/api/clients/pc-1/screen');
    expect(JSON.stringify(s.body)).toContain('back!');
  });

  it('only an operator switches; a bad body is refused and changes nothing', async () => {
    h = await startHarness({ token: TOKEN });
    const keys = await h.http('/api/credentials/keys', {
      method: 'POST',
      json: { role: 'viewer', name: 'wall' },
    });
    const viewer = ((await keys.json()) as { key: string }).key;
    const c = await connect('pc-2');
    expect((await setSwitch('pc-2', false, viewer)).status).toBe(403);
    expect((await getJson('/api/clients/pc-2/screen/switch', viewer)).body).toMatchObject({ server: null });
    for (const bad of ['off', 1, undefined]) {
      const r = await setSwitch('pc-2', bad);
      expect(r.status, String(bad)).toBe(400);
      expect(((await r.json()) as { error: { code: string } }).error.code).toMatch(/invalid_body/);
    }
    const extra = await fetch(`${h.url}/api/clients/pc-2/screen/switch`, {
      method: 'POST',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ screen: true, also: 1 }),
    });
    expect(extra.status).toBe(400);
    expect((await getJson('/api/clients/pc-2/screen/switch')).body).toMatchObject({
      switch: null,
      server: null,
    });
    expect(c.messages.some((m) => m.type === 'screen_switch')).toBe(false);
  });

  it('is stored before it is answered and holds across a restart; the config file gives the default', async () => {
    const dir = mkdtempSync(path.join(tmpdir(), 'cco-screen-'));
    dirs.push(dir);
    const config = { server: { screen: { default: true, computers: { 'pc-quiet': false } } } };
    h = await startHarness({ token: TOKEN, dir, config });
    expect((await connect('pc-a')).messages.find((m) => m.type === 'welcome')).toMatchObject({
      screen: true,
    });
    expect((await connect('pc-quiet')).messages.find((m) => m.type === 'welcome')).toMatchObject({
      screen: false,
    });
    expect((await setSwitch('pc-a', false)).status).toBe(200);
    // On disk when answered.
    const doc = JSON.parse(readFileSync(path.join(dir, 'ccagent.db.screens.json'), 'utf8')) as unknown;
    expect(doc).toEqual({ computers: { 'pc-a': false } });
    expect((await setSwitch('pc-quiet', true)).status).toBe(200);
    for (const c of clients.splice(0)) c.terminate();
    await h.close();

    h = await startHarness({ token: TOKEN, dir, config });
    expect((await connect('pc-a')).messages.find((m) => m.type === 'welcome')).toMatchObject({
      screen: false,
    });
    expect((await connect('pc-quiet')).messages.find((m) => m.type === 'welcome')).toMatchObject({
      screen: true,
    });
    expect((await getJson('/api/clients/pc-a/screen/switch')).body).toEqual({
      client_id: 'pc-a',
      switch: false,
      configured: true,
      server: false,
    });
    expect((await connect('pc-new')).messages.find((m) => m.type === 'welcome')).toMatchObject({
      screen: true,
    });
  });
});

describe("the switch on the computer's dashboard page", () => {
  it('an operator switches the mirror off and on in the browser; a viewer sees the word without a choice', async () => {
    expect(haveChromium, 'Chromium at /usr/bin/chromium').toBe(true);
    h = await startHarness({
      token: TOKEN,
      dashboardDir: fileURLToPath(new URL('../dist/dashboard/', import.meta.url)),
    });
    const keys = await h.http('/api/credentials/keys', {
      method: 'POST',
      json: { role: 'viewer', name: 'wall' },
    });
    const viewer = ((await keys.json()) as { key: string }).key;
    const c = await connect('pc-page');
    c.send(full(0, 'on the page'));
    await settled(c, 'p1');
    const browser = await launchBrowser();
    try {
      const page = await browser.page();
      await page.goto(`${h.url}/#/computers/pc-page`);
      await page.fill('input[type="password"]', TOKEN);
      await page.keyboard.press('Enter');
      await page.waitForSelector('[data-testid="cc-screen"] span:text("on the page")');
      const select = page.getByLabel('Screen mirror at the server');
      expect(await select.inputValue()).toBe('null');
      await select.selectOption('false');
      expect(await c.waitFor('screen_switch')).toMatchObject({ screen: false });
      expect((await getJson('/api/clients/pc-page/screen/switch')).body).toMatchObject({ switch: false });
      // The page's stream ends; the screen is gone from it.
      await page.waitForSelector('[data-testid="cc-screen"]', { state: 'detached' });
      await select.selectOption('true');
      await c.next((m) => m.type === 'screen_switch' && m['screen'] === true);
      c.send(full(1, 'back again'));
      await page.waitForSelector('[data-testid="cc-screen"] span:text("back again")');

      const wall = await browser.page();
      await wall.goto(`${h.url}/#/computers/pc-page`);
      await wall.fill('input[type="password"]', viewer);
      await wall.keyboard.press('Enter');
      await wall.waitForSelector('[data-testid="screen-switch"]');
      expect(await wall.locator('[data-testid="screen-switch"]').textContent()).toBe(
        'Mirror at the server: on',
      );
      expect(await wall.getByLabel('Screen mirror at the server').count()).toBe(0);
    } finally {
      await browser.close();
    }
  });
});

describe('the cap on screen viewers', () => {
  it('refuses a viewer over the cap with 429, leaves the others streaming, and frees a closed slot', async () => {
    h = await startHarness({
      token: TOKEN,
      config: { server: { screen: { maxViewersPerComputer: 2, maxViewers: 3 } } },
    });
    const a = await connect('pc-a');
    a.send(full(0, 'one'));
    await settled(a, 'p1');
    const a1 = await watch('pc-a');
    const a2 = await watch('pc-a');
    expect([a1.res.statusCode, a2.res.statusCode]).toEqual([200, 200]);
    const over = await getJson('/api/clients/pc-a/screen/stream');
    expect(over.status).toBe(429);
    expect(over.body).toMatchObject({ error: { code: 'too_many_viewers' } });
    expect(String((over.body['error'] as { message: string }).message)).toContain('maxViewersPerComputer');

    // A computer that has sent nothing yet counts too; then the server's cap.
    const b1 = await watch('pc-b');
    expect(b1.res.statusCode).toBe(200);
    const all = await getJson('/api/clients/pc-b/screen/stream');
    expect(all.status).toBe(429);
    expect(String((all.body['error'] as { message: string }).message)).toContain('maxViewers');

    // The others are unaffected: a new frame reaches both viewers of pc-a.
    a.send(full(1, 'two'));
    await until(() => a1.text().includes('two') && a2.text().includes('two'));

    // A closed viewer frees its slot (the server sees the socket close).
    a2.req.destroy();
    const next = await retryWatch('pc-a');
    expect(next.res.statusCode).toBe(200);
    await until(() => next.text().includes('two'));
  });
});

/** Open a stream until it is admitted (a closed socket is seen by the server a moment later). */
async function retryWatch(id: string): Promise<Awaited<ReturnType<typeof watch>>> {
  const end = Date.now() + 5000;
  for (;;) {
    const w = await watch(id);
    if (w.res.statusCode === 200 || Date.now() > end) return w;
    w.req.destroy();
    await new Promise((r) => setTimeout(r, 50));
  }
}
