/**
 * The pages' stylesheet and passkey script are files (`server/web/assets/`), linked by a name
 * with their content's hash and cached for a year; the old names without a hash still answer.
 */
import { createHash } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

describe('the pages’ assets', () => {
  it('are linked by their content’s hash and served for a year, with the page’s CSP allowing only our origin', async () => {
    const page = await fetch(`${server.url}/account/login`);
    const html = await page.text();
    expect(page.headers.get('content-security-policy')).toMatch(/style-src 'self'/);
    const css = /<link rel="stylesheet" href="(\/assets\/pages\.([0-9a-f]{16})\.css)">/.exec(html);
    const js = /<script src="(\/assets\/passkey\.([0-9a-f]{16})\.js)"><\/script>/.exec(html);
    expect(css, 'the stylesheet link').not.toBeNull();
    expect(js, 'the passkey script').not.toBeNull();
    for (const [url, hash, type] of [[css![1]!, css![2]!, 'text/css'], [js![1]!, js![2]!, 'javascript']] as const) {
      const res = await fetch(`${server.url}${url}`);
      expect(res.status).toBe(200);
      expect(res.headers.get('content-type')).toContain(type);
      expect(res.headers.get('cache-control')).toBe('public, max-age=31536000, immutable');
      expect(createHash('sha256').update(await res.text()).digest('hex').slice(0, 16)).toBe(hash);
    }
  });

  it('under an unknown name are the service’s 404, and the old names still answer the same bodies', async () => {
    const missing = await fetch(`${server.url}/assets/pages.0000000000000000.css`);
    expect(missing.status).toBe(404);
    expect(await missing.json()).toMatchObject({ status: 404, name: 'NotFoundError' });
    const html = await (await fetch(`${server.url}/account/login`)).text();
    const hashed = /href="(\/assets\/pages\.[0-9a-f]{16}\.css)"/.exec(html)![1]!;
    expect(await (await fetch(`${server.url}/account/pages.css`)).text()).toBe(await (await fetch(`${server.url}${hashed}`)).text());
    const old = await fetch(`${server.url}/webauthn/passkey.js`);
    expect(old.headers.get('cache-control')).toBe('public, max-age=3600');
    expect(await old.text()).toContain('SimpleWebAuthnBrowser');
  });

  it('carry an ETag of their content, and a browser that names it gets a 304 without the body', async () => {
    const html = await (await fetch(`${server.url}/account/login`)).text();
    const hashed = /href="(\/assets\/pages\.[0-9a-f]{16}\.css)"/.exec(html)![1]!;
    for (const url of [hashed, '/account/pages.css']) {
      const first = await fetch(`${server.url}${url}`);
      const etag = first.headers.get('etag');
      expect(etag).toMatch(/^"[\w-]{27}"$/);
      const again = await fetch(`${server.url}${url}`, { headers: { 'if-none-match': etag!, 'cache-control': 'max-age=0' } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe('');
      const other = await fetch(`${server.url}${url}`, { headers: { 'if-none-match': '"another"', 'cache-control': 'max-age=0' } });
      expect(other.status).toBe(200);
      expect(other.headers.get('etag')).toBe(etag);
    }
  });
});
