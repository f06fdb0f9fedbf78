/**
 * A real browser for the dashboard tests: Debian's Chromium driven by playwright-core (no browser download), headless,
 * with a fresh profile directory per launch and the flags that keep it off the network.
 */
import { existsSync, mkdirSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { chromium, type BrowserContext, type Page } from 'playwright-core';

/** Where Debian installs Chromium (`apt-get install chromium`; `.ci/run` does it when missing). */
export const CHROMIUM = process.env.CHROMIUM_PATH ?? '/usr/bin/chromium';

/** Whether the browser is there (the tests fail with this path in the message when it is not). */
export const haveChromium = existsSync(CHROMIUM);

/** A launched browser with its own profile directory. */
export interface Browser {
  context: BrowserContext;
  page(width?: number, height?: number): Promise<Page>;
  close(): Promise<void>;
}

/** Launch Chromium headless with a new `--user-data-dir`. */
export async function launchBrowser(): Promise<Browser> {
  if (!haveChromium) throw new Error(`Chromium not found at ${CHROMIUM}: apt-get install chromium`);
  const profile = mkdtempSync(path.join(tmpdir(), 'ccagent-chromium-'));
  const context = await chromium.launchPersistentContext(profile, {
    executablePath: CHROMIUM,
    headless: true,
    args: [
      '--no-sandbox',
      '--disable-background-networking',
      '--disable-component-update',
      '--disable-gpu',
      '--disable-sync',
      '--no-first-run',
    ],
    viewport: { width: 1280, height: 800 },
  });
  return {
    context,
    async page(width = 1280, height = 800) {
      const p = await context.newPage();
      await p.setViewportSize({ width, height });
      return p;
    },
    async close() {
      await context.close();
      rmSync(profile, { recursive: true, force: true });
    },
  };
}

/**
 * Open the dashboard at `url` on `page`, sign in on its login form with `credential` (a token or an operator or viewer
 * key) and wait until its event stream is live.
 */
export async function signIn(page: Page, url: string, credential: string): Promise<void> {
  await page.goto(url);
  await page.waitForSelector('#login-h');
  await page.fill('input[name="token"]', credential);
  await page.click('.login button[type="submit"]');
  await page.waitForSelector('[data-testid="live-state"]:text("live")');
}

const docsImages = fileURLToPath(new URL('../../../../docs/images/', import.meta.url));

/**
 * Save a screenshot of `page` in the light theme (`<name>.png`) and in the dark one (`<name>-dark.png`, the page's
 * system colour scheme emulated as dark, then given back): into docs/images when `CCAGENT_SCREENSHOTS=docs` (how the
 * committed pictures of docs/dashboard.md are made), else into .test-results/screenshots for a look after a failure.
 */
export async function screenshot(page: Page, name: string): Promise<string> {
  const dir =
    process.env.CCAGENT_SCREENSHOTS === 'docs'
      ? docsImages
      : fileURLToPath(new URL('../../../../.test-results/screenshots/', import.meta.url));
  mkdirSync(dir, { recursive: true });
  const file = path.join(dir, `${name}.png`);
  await page.emulateMedia({ colorScheme: 'light' });
  await page.screenshot({ path: file, animations: 'disabled' });
  await page.emulateMedia({ colorScheme: 'dark' });
  await page.screenshot({ path: path.join(dir, `${name}-dark.png`), animations: 'disabled' });
  await page.emulateMedia({ colorScheme: null });
  return file;
}
