/// <reference lib="dom" />
/**
 * The dashboard's Computers page lists the server's own tools (`GET /api/tools` `server_tools`: the built-ins and a
 * configured module's) with their descriptions and timeouts, in a real browser against the BUILT server, even with no
 * computer connected. A tool name is limited to letters, digits, `_` and `-` by the registry, so the hostile text
 * goes where a module may put any: the description, which stays inert text.
 */
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { startFakeOllama, type FakeOllama } from '@ccagent/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { haveChromium, launchBrowser, type Browser } from './support/browser.js';
import { type Served, serveWithConfig } from './support/spawn.js';

const HOSTILE =
  '<script>window.__pwned = 1</script><img src=x onerror="window.__pwned = 2"> \u001b[31mRED\u001b[0m';

let dir: string;
let fake: FakeOllama;
let server: Served;
let browser: Browser;

beforeAll(async () => {
  dir = mkdtempSync(path.join(tmpdir(), 'cco-dash-server-tools-'));
  const module = path.join(dir, 'weather.mjs');
  writeFileSync(
    module,
    `export default {
  name: 'read_weather',
  description: ${JSON.stringify(`Reads the weather. ${HOSTILE}`)},
  parameters: { type: 'object', properties: {} },
  timeoutSeconds: 7,
  execute: () => 'sunny',
};\n`,
  );
  fake = await startFakeOllama({ installed: ['qwen3:8b'] });
  server = await serveWithConfig(dir, fake.url, { serverTools: { modules: [module] } }, [
    '--log-level',
    'warn',
  ]);
  browser = await launchBrowser();
}, 60_000);

afterAll(async () => {
  await browser?.close();
  await server?.kill9();
  await fake?.close();
  if (dir) rmSync(dir, { recursive: true, force: true });
});

describe.skipIf(!haveChromium)('server tools on the Computers page in Chromium', { timeout: 60_000 }, () => {
  it('lists every server tool of /api/tools with its description and timeout; hostile text stays text', async () => {
    const api = (await (await fetch(`${server.url}/api/tools`)).json()) as {
      server_tools: Array<{ name: string }>;
    };
    const names = api.server_tools.map((t) => t.name);
    expect(names).toContain('read_weather');
    expect(names).toContain('get_time'); // a built-in

    const page = await browser.page();
    await page.goto(`${server.url}/#/computers`);
    await page.waitForSelector('ul[aria-label="Server tools"]', { state: 'attached' });
    const shown = await page.$$eval('ul[aria-label="Server tools"] > li', (lis) =>
      lis.map((li) => li.getAttribute('data-server-tool')),
    );
    expect(shown).toEqual(names);
    await page.click('summary:has-text("server tools")');
    const weather = page.locator('li[data-server-tool="read_weather"]');
    const text = (await weather.textContent()) ?? '';
    expect(text).toContain('read_weather');
    expect(text).toContain('Reads the weather. <script>window.__pwned = 1</script><img src=x');
    expect(text).toContain('␛[31mRED');
    expect(text).toContain('7 s');
    expect(await weather.locator('script, img').count()).toBe(0);
    expect(await page.evaluate(() => (window as unknown as { __pwned?: number }).__pwned)).toBeUndefined();
    expect(await page.locator('summary:has-text("server tools")').textContent()).toContain(
      `${names.length} server tools`,
    );
  });
});
