/**
 * The API reference page in a real browser (Debian's Chromium): it renders the document's
 * paths, and loads nothing from anywhere but this service.
 */
import { mkdir, readFile } from 'node:fs/promises';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
let browser: Browser;

beforeAll(async () => {
  server = await startServer();
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server.close();
});

describe('GET /docs', () => {
  it('lists the paths of the API document, with nothing fetched from another origin', async () => {
    const page = await browser.newPage({ viewport: { width: 1280, height: 2000 } });
    const requested: string[] = [];
    const failures: string[] = [];
    page.on('request', (request) => requested.push(request.url()));
    page.on('response', (response) => {
      if (response.status() >= 400) failures.push(`${response.status()} ${response.url()}`);
    });
    page.on('pageerror', (error) => failures.push(error.message));
    page.on('console', (message) => {
      if (message.type() === 'error') failures.push(message.text());
    });

    await page.goto(`${server.url}/docs`);
    await page.locator('.opblock').first().waitFor({ timeout: 20_000 });

    const shown = await page.locator('.opblock-summary-path').allInnerTexts();
    const normalised = shown.map((text) => text.replace(/\u200b/g, '').trim());
    for (const path of ['/login', '/tildeusername', '/attachment/chunk', '/pdf', '/venues/{venueId}/config', '/oidc/clients']) {
      expect(normalised).toContain(path);
    }
    expect(await page.locator('.info .title').innerText()).toMatch(/1\.0\.0/);
    // Swagger UI shows its complaints about a document on the page itself.
    expect(await page.locator('.errors-wrapper, .version-pragma, .swagger-ui .info + div .warning').count()).toBe(0);
    expect(await page.getByText('Warning', { exact: true }).count()).toBe(0);
    expect(requested.filter((url) => !url.startsWith(server.url) && !url.startsWith('data:'))).toEqual([]);
    expect(failures).toEqual([]);

    await mkdir('test-results', { recursive: true });
    await page.screenshot({ path: 'test-results/docs-page.png' });
    const png = await readFile('test-results/docs-page.png');
    expect(png.subarray(1, 4).toString()).toBe('PNG');
    await page.close();
  });
});
