/**
 * The API reference page (`/docs`, Swagger UI on the API document) passes axe-core at desktop
 * and phone width, and leads back to the account pages.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { checkPage, newContext, closeServerAndBrowser, openServerAndBrowser } from './helpers.ts';

let server: TestServer;
let browser: Browser;

/**
 * How long Swagger UI may take to draw the first operation: it loads its 1.5 MB script, then asks
 * for the API document, which the server builds at its first request (about 0.3 s alone, several
 * seconds on a machine running two suites and Chromium at once).
 */
const DRAWN = 60_000;

beforeAll(async () => ({ server, browser } = await openServerAndBrowser()), 60_000);
afterAll(() => closeServerAndBrowser({ server, browser }));

/** axe-core's landmark and heading rules (best practices, beyond `checkPage`'s WCAG set): every part of the page in a landmark, one main, headings in order. */
async function landmarks(page: Page): Promise<string[]> {
  // `checkPage` has put axe-core on the page already.
  const result = await page.evaluate<{ violations: Array<{ id: string }> }>(
    `axe.run(document, { runOnly: { type: 'rule', values: ['region', 'landmark-one-main', 'landmark-no-duplicate-main', 'landmark-unique', 'landmark-main-is-top-level', 'heading-order', 'page-has-heading-one'] } })`,
  );
  return result.violations.map((v) => v.id);
}

describe('the API reference page', () => {
  it('passes axe at desktop and phone width, with an operation opened too, and links back to the account pages', async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${server.url}/docs`);
    await page.locator('.opblock').first().waitFor({ timeout: DRAWN });
    // The servers' menu is labelled once Swagger UI has drawn it.
    await expect.poll(() => page.locator('select#servers').getAttribute('aria-label')).toBe('Server');
    // An operation opened shows its parameters, body and answers, with controls of their own;
    // the rest of the page is as it was, so one run of axe covers both (axe on this page is slow).
    await page.locator('.opblock-summary-control').first().click();
    await page.locator('.opblock-body').first().waitFor();
    await checkPage(page, 'docs');
    expect(await landmarks(page)).toEqual([]);
    // The same page at a phone's width (`newContext`'s phone viewport): Swagger UI lays itself
    // out in CSS alone, so resizing shows what a phone loading it would; loading the page and
    // its 1.5 MB script again took seconds on a loaded machine.
    await page.setViewportSize({ width: 390, height: 844 });
    await checkPage(page, 'docs-phone');
    expect(await landmarks(page)).toEqual([]);
    await page.getByRole('link', { name: 'Your account' }).click();
    await page.waitForURL((url) => url.pathname === '/account/login');
    await context.close();
  }, 180_000);
});
