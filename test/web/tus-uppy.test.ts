/**
 * Issue 29's check in a browser: Uppy's Tus plugin, unmodified, on a page of the service's own
 * origin, uploads to `/attachment/tus` with the session cookies of a person signed in through
 * the pages. The page (`fixtures/uppy-tus.html`, with `fixtures/uppy-tus.js` bundled by esbuild)
 * is served by the test through Playwright's routing at the service's address, so it is
 * same-origin with the service as a venue's page behind the same host would be.
 */
import { createHash, randomBytes } from 'node:crypto';
import { readFile } from 'node:fs/promises';
import path from 'node:path';
import { build } from 'esbuild';
import type { Browser, BrowserContext, Page, Route } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import type { TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { venueConfig } from '../helpers/venue.ts';
import { closeServerAndBrowser, newContext, openServerAndBrowser, signIn } from './helpers.ts';

/** Sign-in through the pages, bundling and a few MB through Chromium: generous on a loaded 2-core machine. */
const SLOW = { timeout: 90_000 };
const FIXTURES = path.join(import.meta.dirname, 'fixtures');
const VENUE = 'Uppy.org/2027';
const SUBMISSION = `${VENUE}/-/Submission`;
const MB = 1024 * 1024;

let server: TestServer;
let browser: Browser;
let author: { id: string; email: string };
let html: string;
let bundle: string;

beforeAll(async () => {
  ({ server, browser } = await openServerAndBrowser());
  const admin = await createActiveUser(server, { role: 'superuser', fullname: 'Uppy Admin' });
  const venue = await (await loggedIn(server, admin.email)).client.post('/venues', venueConfig(VENUE));
  if (venue.status !== 200) throw new Error(`venue: ${JSON.stringify(venue.body)}`);
  author = await createActiveUser(server, { fullname: 'Uppy Author' });
  html = await readFile(path.join(FIXTURES, 'uppy-tus.html'), 'utf8');
  const built = await build({
    entryPoints: [path.join(FIXTURES, 'uppy-tus.js')],
    bundle: true,
    format: 'iife',
    platform: 'browser',
    target: 'chrome120',
    write: false,
    logLevel: 'silent',
  });
  bundle = built.outputFiles[0]?.text ?? '';
}, 60_000);
afterAll(async () => closeServerAndBrowser({ server, browser }));

const sha1 = (data: Uint8Array) => createHash('sha1').update(data).digest('hex');

/** A PDF of `size` bytes: the signature, then random bytes (every one a new file). */
function pdfBytes(size: number): Buffer {
  const data = randomBytes(size);
  Buffer.from('%PDF-1.7\n').copy(data);
  return data;
}

interface UppyOptions {
  source: string;
  filename: string;
  invitation: string;
  field: string;
  /** How the field is named in `Upload-Metadata`: `name` (per file) or `field` (with Uppy's own `name`). */
  metadata: 'name' | 'field';
  chunkSize: number;
  retryDelays: number[];
}

interface UppyResult {
  successful: number;
  failed: string[];
  uploadURL?: string;
  attachmentUrl?: string | null;
  head?: { status: number; attachmentUrl: string | null; offset: string | null };
}

/** A tus request the page sent: its method, path and the tus headers it carried. */
interface Sent {
  method: string;
  path: string;
  offset: string | undefined;
  metadata: string | undefined;
}

/**
 * A signed-in browser context (the author's session cookies) and a page of the service's origin
 * with Uppy loaded; `paper` is served at `/uppy-test-paper.pdf` for the page to fetch.
 */
async function signedInWithUppy(paper: Buffer): Promise<{ context: BrowserContext; page: Page; sent: Sent[] }> {
  const context = await newContext(browser);
  const page = await context.newPage();
  await signIn(page, server, author.email, PASSWORD);
  await context.route(`${server.url}/uppy-test.html`, (route) => route.fulfill({ contentType: 'text/html; charset=utf-8', body: html }));
  await context.route(`${server.url}/uppy-test.js`, (route) => route.fulfill({ contentType: 'text/javascript; charset=utf-8', body: bundle }));
  await context.route(`${server.url}/uppy-test-paper.pdf`, (route) => route.fulfill({ contentType: 'application/pdf', body: paper }));
  const sent: Sent[] = [];
  context.on('request', (request) => {
    const url = new URL(request.url());
    if (!url.pathname.startsWith('/attachment/tus')) return;
    const headers = request.headers();
    sent.push({ method: request.method(), path: url.pathname, offset: headers['upload-offset'], metadata: headers['upload-metadata'] });
  });
  await openUppyPage(page);
  return { context, page, sent };
}

/** Opens the Uppy page, or reloads it (a new Uppy; what tus-js-client keeps in `localStorage` stays). */
async function openUppyPage(page: Page, reload = false): Promise<void> {
  await (reload ? page.reload() : page.goto(`${server.url}/uppy-test.html`));
  await page.waitForFunction('typeof uppyUpload === "function"');
}

/** Runs the page's `uppyUpload` (fixtures/uppy-tus.js). */
function uppyUpload(page: Page, options: Partial<UppyOptions> & Pick<UppyOptions, 'filename' | 'metadata'>): Promise<UppyResult> {
  const all: UppyOptions = { source: '/uppy-test-paper.pdf', invitation: SUBMISSION, field: 'pdf', chunkSize: MB, retryDelays: [], ...options };
  // The page's global, reached without the DOM's types (the tests are compiled without them).
  return page.evaluate((args) => (globalThis as unknown as { uppyUpload(a: UppyOptions): Promise<UppyResult> }).uppyUpload(args), all);
}

/** `Upload-Metadata` as key → decoded value. */
function metadataOf(header: string | undefined): Record<string, string> {
  return Object.fromEntries(
    (header ?? '')
      .split(',')
      .filter(Boolean)
      .map((pair) => {
        const [key = '', value = ''] = pair.trim().split(' ');
        return [key, Buffer.from(value, 'base64').toString('utf8')];
      }),
  );
}

/** The session cookies of a context, as a `Cookie` header for requests sent from the test. */
async function contextCookieHeader(context: BrowserContext): Promise<string> {
  return cookieHeader((await context.cookies(server.url)).map((c) => [c.name, c.value] as const));
}

const b64 = (text: string) => Buffer.from(text).toString('base64');
const METADATA = `invitation ${b64(SUBMISSION)},name ${b64('pdf')},filename ${b64('paper.pdf')}`;

describe("Uppy's Tus plugin in Chromium, on the service's origin", () => {
  it('uploads a PDF in chunks with the session cookies, reads the Attachment-Url from Uppy and a HEAD, and the file reads back identical', SLOW, async () => {
    // The field as the contract's `name`, set per file over Uppy's own (the file's name).
    const paper = pdfBytes(3 * MB + 12_345);
    const { context, page, sent } = await signedInWithUppy(paper);
    try {
      const result = await uppyUpload(page, { filename: 'paper.pdf', metadata: 'name' });
      const url = `/pdf/${sha1(paper)}.pdf`;
      expect(result).toEqual({
        successful: 1,
        failed: [],
        uploadURL: expect.stringMatching(new RegExp(`^${server.url}/attachment/tus/[^/]+$`)),
        attachmentUrl: url,
        head: { status: 200, attachmentUrl: url, offset: String(paper.length) },
      });

      // One creation, then 1 MB parts at their offsets; Uppy sent exactly the three metadata keys.
      const tus = sent.filter((r) => r.method === 'POST' || r.method === 'PATCH');
      expect(tus.map((r) => `${r.method} ${r.offset ?? ''}`)).toEqual(['POST ', 'PATCH 0', `PATCH ${MB}`, `PATCH ${2 * MB}`, `PATCH ${3 * MB}`]);
      expect(metadataOf(tus[0]?.metadata)).toEqual({ invitation: SUBMISSION, name: 'pdf', filename: 'paper.pdf' });

      // The bytes stored are the bytes sent, served to their uploader.
      const stored = await context.request.get(`${server.url}${url}`);
      expect(stored.status()).toBe(200);
      expect(sha1(await stored.body())).toBe(sha1(paper));

      // A note's file field takes the URL, as it takes PUT /attachment's.
      const content = {
        title: { value: 'Sent with Uppy' },
        authors: { value: ['Uppy Author'] },
        authorids: { value: [author.id] },
        abstract: { value: 'Resumable.' },
        pdf: { value: url },
      };
      const note = await context.request.post(`${server.url}/notes`, { data: { invitation: SUBMISSION, content } });
      expect(note.status(), await note.text()).toBe(200);
    } finally {
      await context.close();
    }
  });

  it('resumes after the page is reloaded: the new Uppy finds the stored upload and sends only what is missing; once complete a HEAD gives the URL', SLOW, async () => {
    // Uppy's own metadata as it comes (`name` is the file's name), with the field as `field`.
    const paper = pdfBytes(3 * MB + 777);
    const { context, page, sent } = await signedInWithUppy(paper);
    try {
      // The connection drops on the second part; no retries, so the upload fails as a tab closed mid-way would leave it.
      let patches = 0;
      const cutSecondPart = (route: Route) => (route.request().method() === 'PATCH' && (patches += 1) === 2 ? route.abort('connectionreset') : route.fallback());
      await context.route(`${server.url}/attachment/tus/*`, cutSecondPart);
      const cut = await uppyUpload(page, { filename: 'resumed.pdf', metadata: 'field' });
      expect(cut.successful).toBe(0);
      expect(cut.failed).toHaveLength(1);
      await context.unroute(`${server.url}/attachment/tus/*`, cutSecondPart);
      const created = sent.filter((r) => r.method === 'POST');
      expect(created).toHaveLength(1);
      expect(metadataOf(created[0]?.metadata)).toEqual({
        invitation: SUBMISSION,
        field: 'pdf',
        name: 'resumed.pdf',
        type: 'application/pdf',
        filename: 'resumed.pdf',
        filetype: 'application/pdf',
      });

      // A new page: tus-js-client finds the upload's URL in localStorage, asks where it stands, and goes on from there.
      await openUppyPage(page, true);
      const before = sent.length;
      const resumed = await uppyUpload(page, { filename: 'resumed.pdf', metadata: 'field' });
      const url = `/pdf/${sha1(paper)}.pdf`;
      expect(resumed).toMatchObject({ successful: 1, failed: [], attachmentUrl: url, head: { status: 200, attachmentUrl: url } });
      const again = sent.slice(before).filter((r) => r.method !== 'OPTIONS');
      expect(again[0]).toMatchObject({ method: 'HEAD', path: new URL(resumed.uploadURL ?? '').pathname });
      expect(again.filter((r) => r.method === 'POST')).toEqual([]);
      expect(again.filter((r) => r.method === 'PATCH').map((r) => r.offset)).toEqual([String(MB), String(2 * MB), String(3 * MB)]);

      // Reloaded once more after it finished (say the answer was lost): the stored upload is complete, and its HEAD alone gives Uppy the URL.
      await openUppyPage(page, true);
      const after = sent.length;
      const done = await uppyUpload(page, { filename: 'resumed.pdf', metadata: 'field' });
      expect(done).toMatchObject({ successful: 1, failed: [], attachmentUrl: url });
      expect(sent.slice(after).filter((r) => r.method === 'PATCH' || r.method === 'POST')).toEqual([]);

      const stored = await context.request.get(`${server.url}${url}`);
      expect(sha1(await stored.body())).toBe(sha1(paper));
    } finally {
      await context.close();
    }
  });

  it('takes an application/offset+octet-stream body with the session cookie only from the service’s own origin', SLOW, async () => {
    const paper = pdfBytes(256 * 1024);
    const context = await newContext(browser);
    try {
      await signIn(await context.newPage(), server, author.email, PASSWORD);
      const cookie = await contextCookieHeader(context);
      const tus = (extra: Record<string, string>) => ({ 'tus-resumable': '1.0.0', cookie, ...extra });
      const body = { 'content-type': 'application/offset+octet-stream' };
      const creation = { 'upload-length': String(paper.length), 'upload-metadata': METADATA };

      // Creation with its bytes, from another site (by Origin, or by Sec-Fetch-Site alone): refused.
      const elsewhere: Record<string, string>[] = [{ origin: 'https://elsewhere.example' }, { 'sec-fetch-site': 'cross-site' }];
      for (const from of elsewhere) {
        const res = await fetch(`${server.url}/attachment/tus`, { method: 'POST', headers: tus({ ...creation, ...body, ...from }), body: paper });
        expect(res.status, JSON.stringify(from)).toBe(403);
        expect(res.headers.get('tus-resumable')).toBe('1.0.0');
        expect(await res.json()).toMatchObject({ name: 'ForbiddenError' });
      }

      // From the service's own origin: created.
      const created = await fetch(`${server.url}/attachment/tus`, { method: 'POST', headers: tus({ ...creation, origin: server.url, 'sec-fetch-site': 'same-origin' }) });
      expect(created.status).toBe(201);
      const location = new URL(created.headers.get('location') ?? '', server.url).href;

      // Its bytes from another site: refused, and nothing of them kept.
      const crossSite = await fetch(location, { method: 'PATCH', headers: tus({ ...body, 'upload-offset': '0', origin: 'https://elsewhere.example' }), body: paper });
      expect(crossSite.status).toBe(403);
      const head = await fetch(location, { method: 'HEAD', headers: tus({ origin: server.url }) });
      expect(head.status).toBe(200);
      expect(head.headers.get('upload-offset')).toBe('0');

      // From the service's own origin: taken, and the file is made.
      const sameOrigin = await fetch(location, { method: 'PATCH', headers: tus({ ...body, 'upload-offset': '0', origin: server.url, 'sec-fetch-site': 'same-origin' }), body: paper });
      expect(sameOrigin.status).toBe(204);
      expect(sameOrigin.headers.get('upload-offset')).toBe(String(paper.length));
      expect(sameOrigin.headers.get('attachment-url')).toBe(`/pdf/${sha1(paper)}.pdf`);
    } finally {
      await context.close();
    }
  });
});
