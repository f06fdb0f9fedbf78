/**
 * The screen mirror's server side (issue 36 item 3): `screen_frame` over a real WebSocket, the screen kept in memory,
 * served at `GET /api/clients/:id/screen` and streamed at `/screen/stream`; bad frames refused with a structured error
 * and no change; the frame budget; a viewer may watch. The Lua side and the browser are in lua-client's e2e tier.
 */
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { haveChromium, launchBrowser } from './support/browser.js';
import { startHarness, type Harness } from './support/harness.js';
import { TestClient } from './support/ws-test-client.js';

const TOKEN = 'screen-test-token';
let h: Harness | undefined;
const clients: TestClient[] = [];
const aborts: AbortController[] = [];

afterEach(async () => {
  for (const a of aborts.splice(0)) a.abort();
  for (const c of clients.splice(0)) c.terminate();
  await h?.close();
  h = undefined;
});

const DASHBOARD = fileURLToPath(new URL('../dist/dashboard/', import.meta.url));

async function start(): Promise<Harness> {
  h = await startHarness({ token: TOKEN, dashboardDir: DASHBOARD });
  return h;
}

async function connect(id: string): Promise<TestClient> {
  const c = await TestClient.connect(h!.url, id, { token: TOKEN });
  clients.push(c);
  return c;
}

const row = (y: number, text: string, fg = '0'.repeat(text.length), bg = 'f'.repeat(text.length)) => ({
  y,
  text,
  fg,
  bg,
});

function full(seq: number, rows: string[], width = rows[0]!.length) {
  return {
    type: 'screen_frame',
    seq,
    width,
    height: rows.length,
    full: true,
    cursor: { x: 1, y: 1, blink: true },
    lines: rows.map((t, i) => row(i + 1, t)),
  };
}

function diff(seq: number, width: number, height: number, lines: ReturnType<typeof row>[]) {
  return {
    type: 'screen_frame',
    seq,
    width,
    height,
    full: false,
    cursor: { x: 2, y: 2, blink: false },
    lines,
  };
}

interface Screen {
  width: number;
  height: number;
  full: boolean;
  frames: number;
  connected: boolean;
  lines: { y: number; text: string; fg: string; bg: string }[];
}

async function screen(id: string, token = TOKEN): Promise<{ status: number; screen?: Screen }> {
  const res = await fetch(`${h!.url}/api/clients/${id}/screen`, {
    headers: { authorization: `Bearer ${token}` },
  });
  if (res.status !== 200) return { status: res.status };
  return { status: 200, screen: ((await res.json()) as { screen: Screen }).screen };
}

/** Frames are handled in order per connection: a ping answered after them means they were handled. */
async function settled(c: TestClient, id: string): Promise<void> {
  c.send({ type: 'ping', id });
  await c.waitFor('pong', { id });
}

/** Read the stream's events as they come. */
function stream(
  id: string,
  token = TOKEN,
): { events: { event: string; data: Screen }[]; status: Promise<number> } {
  const ctl = new AbortController();
  aborts.push(ctl);
  const events: { event: string; data: Screen }[] = [];
  const status = fetch(`${h!.url}/api/clients/${id}/screen/stream`, {
    headers: { authorization: `Bearer ${token}` },
    signal: ctl.signal,
  }).then((res) => {
    if (res.ok && res.body) {
      void (async () => {
        let buf = '';
        try {
          const reader = res.body!.pipeThrough(new TextDecoderStream()).getReader();
          for (;;) {
            const { value, done } = await reader.read();
            if (done) break;
            buf += value;
            let i;
            while ((i = buf.indexOf('\n\n')) >= 0) {
              const rec = buf.slice(0, i);
              buf = buf.slice(i + 2);
              const ev = /^event: (.*)$/m.exec(rec)?.[1];
              const data = /^data: (.*)$/m.exec(rec)?.[1];
              if (ev && data) events.push({ event: ev, data: JSON.parse(data) as Screen });
            }
          }
        } catch {
          // aborted
        }
      })();
    }
    return res.status;
  });
  return { events, status };
}

async function until<T>(fn: () => T | undefined, ms = 5000): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = fn();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error('timed out');
    await new Promise((r) => setTimeout(r, 20));
  }
}

describe('the screen mirror on the server', () => {
  it('keeps the latest screen: a full frame, then only the changed rows', async () => {
    await start();
    expect((await screen('pc-1')).status).toBe(404);
    const c = await connect('pc-1');
    c.send(full(0, ['Hello', '     ', 'world']));
    c.send(diff(1, 5, 3, [row(2, 'a b c', '0e0b0', 'f1f2f')]));
    await settled(c, 'p1');
    const s = (await screen('pc-1')).screen!;
    expect(s.full).toBe(true);
    expect(s.frames).toBe(2);
    expect(s.connected).toBe(true);
    expect(s.lines).toEqual([row(1, 'Hello'), row(2, 'a b c', '0e0b0', 'f1f2f'), row(3, 'world')]);
  });

  it('refuses a frame that does not fit with a structured error, and the screen stays as it was', async () => {
    await start();
    const c = await connect('pc-2');
    c.send(diff(0, 3, 1, [row(1, 'abc')]));
    const none = await c.waitFor('error');
    expect(none).toMatchObject({ code: 'invalid_message', path: '$.full' });
    expect(String(none['message'])).toContain('screen_frame');
    expect((await screen('pc-2')).status).toBe(404);

    c.send(full(1, ['abc', 'def']));
    await settled(c, 'p1');
    const before = (await screen('pc-2')).screen!;
    const bad = [
      { ...diff(2, 3, 2, [row(1, 'ab')]), why: '$.lines[0].text' }, // short row
      { ...diff(3, 3, 2, [row(3, 'abc')]), why: '$.lines[0].y' }, // below the screen
      { ...diff(4, 3, 2, [row(1, 'abc', '0z0')]), why: '$.lines[0].fg' }, // not a colour digit
      { ...diff(5, 4, 2, [row(1, 'abcd')]), why: '$.full' }, // another size than the screen held
      { ...full(6, ['abc']), height: 2, why: '$.lines' }, // a full frame without every row
    ];
    for (const { why, ...f } of bad) {
      const from = c.messages.length;
      c.send(f);
      const err = await c.next((m) => m.type === 'error', 5000, from);
      expect(['invalid_field', 'invalid_message', 'missing_field'], why).toContain(err['code']);
      expect(String(err['path'] ?? '') + String(err['message']), why).toContain(
        why.replace(/^lines/, 'lines'),
      );
    }
    await settled(c, 'p2');
    const after = (await screen('pc-2')).screen!;
    expect(after.lines).toEqual(before.lines);
    expect(after.frames).toBe(before.frames);

    // A partial frame from a new connection cannot be placed on the old connection's screen.
    c.terminate();
    const c2 = await connect('pc-2');
    c2.send(diff(0, 3, 2, [row(1, 'xyz')]));
    expect(await c2.waitFor('error')).toMatchObject({ code: 'invalid_message', path: '$.full' });
    expect((await screen('pc-2')).screen!.lines[0]!.text).toBe('abc');
  });

  it('limits frames to 10 a second (burst 20): over it a frame is refused and the next must be full', async () => {
    await start();
    const c = await connect('pc-3');
    c.send(full(0, ['a']));
    for (let i = 1; i <= 30; i++) c.send(diff(i, 1, 1, [row(1, String(i % 10))]));
    await settled(c, 'p1');
    const limited = c.messages.filter((m) => m.type === 'error' && m['code'] === 'rate_limited');
    const refusedAfter = c.messages.filter((m) => m.type === 'error' && m['code'] === 'invalid_message');
    expect(limited.length).toBeGreaterThan(0);
    expect(limited.length + refusedAfter.length).toBeGreaterThanOrEqual(10);
    const s = (await screen('pc-3')).screen!;
    expect(s.frames).toBeLessThanOrEqual(21);
    // After the refusal only a full frame is taken (once the budget refills).
    await new Promise((r) => setTimeout(r, 300));
    c.send(diff(40, 1, 1, [row(1, 'x')]));
    expect(await c.nextNew('error')).toMatchObject({ code: 'invalid_message' });
    c.send(full(41, ['y']));
    await settled(c, 'p2');
    expect((await screen('pc-3')).screen!.lines[0]!.text).toBe('y');
  });

  it('streams every row first, then changed rows at most 10 events a second, and offline on disconnect', async () => {
    await start();
    const watch = stream('pc-4');
    expect(await watch.status).toBe(200);
    const c = await connect('pc-4');
    c.send(full(0, ['....', '....']));
    const first = await until(() => watch.events[0]);
    expect(first.event).toBe('screen');
    expect(first.data.full).toBe(true);
    expect(first.data.lines.map((l) => l.text)).toEqual(['....', '....']);
    // 15 frames within a few ms: the watcher gets the end state in far fewer events.
    const t0 = Date.now();
    for (let i = 1; i <= 15; i++) c.send(diff(i, 4, 2, [row(2, `r${String(i).padStart(2, '0')} `)]));
    const last = await until(() =>
      watch.events.find((e) => e.event === 'screen' && e.data.lines.some((l) => l.text === 'r15 ')),
    );
    const took = Date.now() - t0;
    expect(last.data.full).toBe(false);
    expect(last.data.lines.map((l) => l.y)).toEqual([2]);
    const screenEvents = watch.events.filter((e) => e.event === 'screen').length - 1;
    expect(screenEvents).toBeLessThanOrEqual(Math.ceil(took / 100) + 1);
    // A second watcher starts from the whole screen.
    const late = stream('pc-4');
    const lateFirst = await until(() => late.events[0]);
    expect(lateFirst.data.full).toBe(true);
    expect(lateFirst.data.lines[1]!.text).toBe('r15 ');
    c.close();
    await until(() => watch.events.find((e) => e.event === 'offline'));
    expect((await screen('pc-4')).screen!.connected).toBe(false);
  });

  it('is read-only and open to viewers; no key, no screen', async () => {
    await start();
    const res = await h!.http('/api/credentials/keys', {
      method: 'POST',
      json: { role: 'viewer', name: 'wall' },
    });
    expect(res.status).toBe(201);
    const viewer = ((await res.json()) as { key: string }).key;
    const c = await connect('pc-5');
    c.send(full(0, ['hi']));
    await settled(c, 'p1');
    expect((await screen('pc-5', viewer)).screen!.lines[0]!.text).toBe('hi');
    const w = stream('pc-5', viewer);
    expect(await w.status).toBe(200);
    expect((await until(() => w.events[0])).data.lines[0]!.text).toBe('hi');
    expect((await fetch(`${h!.url}/api/clients/pc-5/screen`)).status).toBe(401);
    expect((await fetch(`${h!.url}/api/clients/pc-5/screen/stream`)).status).toBe(401);
    const post = await fetch(`${h!.url}/api/clients/pc-5/screen`, {
      method: 'POST',
      headers: { authorization: `Bearer ${viewer}` },
    });
    expect([404, 405]).toContain(post.status);
  });

  it('draws hostile row text (HTML, script, ANSI escapes) as characters in the browser, never as markup', async () => {
    expect(haveChromium, 'Chromium at /usr/bin/chromium').toBe(true);
    await start();
    const c = await connect('pc-6');
    const rows = [
      '<img src=x onerror="window.__pwned=1">',
      '<script>window.__pwned=2</script>',
      '\u001b[31mred?\u001b[0m',
    ];
    const width = 40;
    c.send({
      type: 'screen_frame',
      seq: 0,
      width,
      height: 3,
      full: true,
      cursor: { x: 1, y: 1, blink: false },
      lines: rows.map((t, i) => row(i + 1, t.padEnd(width).slice(0, width))),
    });
    await settled(c, 'p1');
    const browser = await launchBrowser();
    try {
      const page = await browser.page();
      await page.goto(`${h!.url}/#/computers/pc-6`);
      await page.fill('input[type="password"]', TOKEN);
      await page.keyboard.press('Enter');
      const grid = page.locator('[data-testid="cc-screen"]');
      await grid.waitFor();
      const text = (await grid.textContent()) ?? '';
      expect(text).toContain('<img src=x onerror="window.__pwned=1">');
      expect(text).toContain('<script>window.__pwned=2</script>');
      // ESC is drawn as a visible dot, not interpreted
      expect(text).toContain('\u00b7[31mred?');
      expect(await grid.locator('img, script').count()).toBe(0);
      expect(await page.evaluate('window.__pwned')).toBeUndefined();
    } finally {
      await browser.close();
    }
  });
});
