/**
 * Headless Chromium for the inbox's browser tests (Debian's /usr/bin/chromium through playwright-core):
 * one browser per file, contexts signed in by bearer JWT, and polling expectations for a page that
 * updates live.
 */
import { chromium, type Browser, type BrowserContext, type Locator, type Page } from 'playwright-core';
import { mkdirSync } from 'node:fs';
import { afterAll, beforeAll, expect } from 'vitest';
import { cleanupsAfterEach } from '../harness.js';
import { bearer, CHROMIUM_ARGS, type Cleanup } from './fixture.js';

export async function launch(): Promise<Browser> {
  return chromium.launch({ executablePath: '/usr/bin/chromium', args: CHROMIUM_ARGS, headless: true });
}

/** A polled expectation (`expect.poll`). */
export type Polled = ReturnType<typeof expect.poll>;

/** The text of `locator`, polled until the expectation holds (the page updates live). */
export function see(locator: Locator, timeout = 10_000): Polled {
  return expect.poll(() => locator.innerText({ timeout: 2000 }).catch(() => ''), { timeout });
}

/** How many elements `locator` matches, polled. */
export function counted(locator: Locator, timeout = 10_000): Polled {
  return expect.poll(() => locator.count(), { timeout });
}

export interface ContextOptions {
  readonly viewport?: { width: number; height: number };
  readonly javaScriptEnabled?: boolean;
  readonly colorScheme?: 'light' | 'dark';
  /** A bearer token to send instead of one for the subject (other claims). */
  readonly token?: string;
  readonly ignoreHTTPSErrors?: boolean;
}

/** A browser context that sends `Authorization: Bearer <a JWT for subject>` (null: no token). */
export async function signedIn(
  browser: Browser,
  cleanups: Cleanup[],
  subject: string | null,
  options: ContextOptions = {},
): Promise<BrowserContext> {
  const token = options.token ?? (subject === null ? null : await bearer(subject));
  const context = await browser.newContext({
    ...(token !== null ? { extraHTTPHeaders: { authorization: `Bearer ${token}` } } : {}),
    viewport: options.viewport ?? { width: 1100, height: 900 },
    ...(options.javaScriptEnabled !== undefined ? { javaScriptEnabled: options.javaScriptEnabled } : {}),
    ...(options.colorScheme !== undefined ? { colorScheme: options.colorScheme } : {}),
    ...(options.ignoreHTTPSErrors !== undefined ? { ignoreHTTPSErrors: options.ignoreHTTPSErrors } : {}),
  });
  context.setDefaultTimeout(8000);
  cleanups.push(() => context.close());
  return context;
}

/** A new page of `context` at the inbox's root. */
export async function open(context: BrowserContext, url: string): Promise<Page> {
  const page = await context.newPage();
  await page.goto(`${url}/`);
  return page;
}

/**
 * Starts listening for the inbox's server-sent events in `page` (a second EventSource beside the page's
 * own) and returns a reader of what arrived: the data of each `changed` event, and whether `ready` came.
 */
export async function tapEvents(page: Page, base = ''): Promise<() => Promise<{ ready: boolean; changed: string[] }>> {
  await page.evaluate((b) => {
    const w = globalThis as unknown as { __tap: { ready: boolean; changed: string[] } };
    w.__tap = { ready: false, changed: [] };
    const source = new EventSource(`${b}/events`);
    source.addEventListener('ready', () => (w.__tap.ready = true));
    source.addEventListener('changed', (e) => w.__tap.changed.push((e as unknown as { data: string }).data));
  }, base);
  const read = () =>
    page.evaluate(() => (globalThis as unknown as { __tap: { ready: boolean; changed: string[] } }).__tap);
  await expect.poll(async () => (await read()).ready, { timeout: 10_000 }).toBe(true);
  return read;
}

/**
 * A test file's browser: launched before its tests, closed after them; `cleanups` run after each test, last
 * added first. Call once at the top of a file.
 */
export function browserPerFile(): { readonly browser: () => Browser; readonly cleanups: Cleanup[] } {
  let browser: Browser | undefined;
  const cleanups = cleanupsAfterEach({ strict: true });
  beforeAll(async () => {
    browser = await launch();
    mkdirSync('docs', { recursive: true }); // the tests that take the docs' screenshots write there
  });
  afterAll(async () => {
    await browser?.close();
  });
  return {
    browser: () => {
      if (!browser) throw new Error('the browser is launched in beforeAll');
      return browser;
    },
    cleanups,
  };
}
