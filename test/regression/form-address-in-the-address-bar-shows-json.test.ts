/**
 * Found by an independent review of the pages. A refused form, or a page shown once at a form's
 * address (recovery codes, "Your application is registered"), leaves that address in the address
 * bar; opening it again, or a bookmark of it, is a GET the address has no page for, and the
 * person was shown the API's JSON 404. A person's browser on the pages' paths gets a page; the
 * API's other paths keep their JSON 404.
 */
import { afterAll, beforeAll, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

it.each(['/account/logout', '/account/emails/remove', '/account/data/delete', '/account/no-such-page', '/oidc/logout/confirm'])('GET %s is a 404 page, not JSON', async (path) => {
  const res = await fetch(`${server.url}${path}`, { redirect: 'manual' });
  expect(res.status).toBe(404);
  expect(res.headers.get('content-type')).toMatch(/^text\/html/);
  const html = await res.text();
  expect(html).toContain('There is no page here');
  expect(html).toContain('href="/account/security"');
  expect((await fetch(`${server.url}${path}`, { method: 'HEAD' })).status).toBe(404);
});

it('the API’s paths keep the JSON 404', async () => {
  for (const [method, path] of [['GET', '/no-such-route'], ['GET', '/oidc/no-such'], ['PUT', '/account/logout']] as const) {
    const res = await fetch(`${server.url}${path}`, { method });
    expect(res.status, path).toBe(404);
    expect(res.headers.get('content-type'), path).toMatch(/^application\/json/);
  }
});
