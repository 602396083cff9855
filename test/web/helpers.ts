import { readFileSync } from 'node:fs';
import { mkdir } from 'node:fs/promises';
import path from 'node:path';
import { Secret, TOTP } from 'otpauth';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { expect } from 'vitest';
import { lastMailTo } from '../helpers/outbox.ts';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

const ROOT = path.resolve(import.meta.dirname, '../..');
/** Where the run writes a full-page screenshot of every page (committed; the README names it). */
export const SCREENSHOTS = path.join(ROOT, 'docs/screenshots');
/**
 * axe-core's script, read once and run in the page as a string: 150–250 ms less per page than
 * `addScriptTag({ path })`, which reads the 650 kB file and adds it as a script element each time.
 */
const AXE = readFileSync(path.join(ROOT, 'node_modules/axe-core/axe.min.js'), 'utf8');

/** A server (with `startServer`'s options) and Chromium, for the pages of one test file. */
export async function openServerAndBrowser(...options: Parameters<typeof startServer>): Promise<{ server: TestServer; browser: Browser }> {
  const server = await startServer(...options);
  return { server, browser: await launchBrowser() };
}

/** Stops what `openServerAndBrowser` started (whatever of it did start). */
export async function closeServerAndBrowser(opened: { server?: TestServer | undefined; browser?: Browser | undefined }): Promise<void> {
  await opened.browser?.close();
  await opened.server?.close();
}

/** A phone-sized desktop browser; `bypassCSP` only so that the test can inject axe-core. */
export function newContext(browser: Browser, opts: { userAgent?: string; phone?: boolean } = {}): Promise<BrowserContext> {
  return browser.newContext({
    bypassCSP: true,
    viewport: opts.phone ? { width: 390, height: 844 } : { width: 1000, height: 800 },
    ...(opts.userAgent ? { userAgent: opts.userAgent } : {}),
    locale: 'en-GB',
  });
}

interface AxeResult {
  violations: Array<{ id: string; help: string; nodes: Array<{ target: unknown }> }>;
}

/**
 * The page passes axe-core's WCAG 2.1 A and AA rules (no violation at all) and fits its viewport's
 * width, scrolling down only (WCAG 1.4.10 Reflow: a long name or address wraps). With
 * `UPDATE_SCREENSHOTS=1` (`npm run screenshots`) its full-page screenshot is written to
 * `docs/screenshots/<name>.png`; an ordinary run leaves the committed pictures alone, so that
 * running the tests does not change the work tree.
 */
export async function checkPage(page: Page, name: string): Promise<void> {
  await page.evaluate(AXE);
  // A string, evaluated in the page: the tests are compiled without the DOM's types.
  const result = await page.evaluate<AxeResult>(`axe.run(document, { runOnly: { type: 'tag', values: ['wcag2a', 'wcag2aa', 'wcag21a', 'wcag21aa'] } })`);
  expect(result.violations.map((v) => `${v.id} (${v.help}): ${v.nodes.map((n) => JSON.stringify(n.target)).join(', ')}`), `axe on ${name}`).toEqual([]);
  const widths = await page.evaluate<[number, number]>('[document.documentElement.scrollWidth, window.innerWidth]');
  expect(widths[0], `${name} is wider than its viewport`).toBeLessThanOrEqual(widths[1]);
  if (!process.env.UPDATE_SCREENSHOTS) return;
  await mkdir(SCREENSHOTS, { recursive: true });
  await page.screenshot({ path: path.join(SCREENSHOTS, `${name}.png`), fullPage: true });
}

/** The link of the newest mail to an address whose path is `pathname` (under the pages' prefix). */
export async function linkInMail(server: TestServer, to: string, pathname: string): Promise<string> {
  const mail = await lastMailTo(server.dataDir, to);
  const link = mail.text.match(/https?:\/\/\S+/g)?.find((url) => new URL(url).pathname === pathname);
  if (!link) throw new Error(`no ${pathname} link in the mail "${mail.subject}" to ${to}:\n${mail.text}`);
  return link;
}

export async function codeInMail(server: TestServer, to: string): Promise<string> {
  const mail = await lastMailTo(server.dataDir, to);
  const code = /\b(\d{6})\b/.exec(mail.text)?.[1];
  if (!code) throw new Error(`no code in the mail to ${to}:\n${mail.text}`);
  return code;
}

/** Signs in on the pages. */
export async function signIn(page: Page, server: TestServer, id: string, password: string): Promise<void> {
  await page.goto(`${server.url}/account/login`);
  await page.getByLabel('Email or profile id').fill(id);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Password & security' }).waitFor();
}

export const IPHONE = 'Mozilla/5.0 (iPhone; CPU iPhone OS 17_5 like Mac OS X) AppleWebKit/605.1.15 (KHTML, like Gecko) Version/17.5 Mobile/15E148 Safari/604.1';

/** The code an authenticator app shows at `now` (the server's clock) for a base32 secret. */
export function totpCode(secret: string, now: number): string {
  return new TOTP({ secret: Secret.fromBase32(secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate({ timestamp: now });
}

/**
 * Gives a browser page Chromium's virtual authenticator (the DevTools protocol's WebAuthn
 * domain): a platform authenticator that keeps discoverable credentials and verifies its user.
 * WebAuthn needs the server on `http://localhost` (`startServer`'s `hostName`).
 */
export async function addAuthenticator(context: BrowserContext, page: Page): Promise<void> {
  const cdp = await context.newCDPSession(page);
  await cdp.send('WebAuthn.enable');
  await cdp.send('WebAuthn.addVirtualAuthenticator', {
    options: { protocol: 'ctap2', transport: 'internal', hasResidentKey: true, hasUserVerification: true, isUserVerified: true, automaticPresenceSimulation: true },
  });
}
