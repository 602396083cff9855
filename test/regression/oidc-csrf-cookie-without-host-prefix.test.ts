/**
 * The failure (issue 24, defect 5): over https the account pages' CSRF cookie is `__Host-`
 * prefixed (no other host of the domain can plant one), but the sign-in provider's
 * (`service.oidc-csrf`, `Path=/oidc`) was not. Now it is too, and its forms still pass.
 */
import { createHash, randomBytes } from 'node:crypto';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser } from '../helpers/users.ts';
import { REDIRECT, registerClient } from '../oidc/helpers.ts';

let https: TestServer;
let http: TestServer;
beforeAll(async () => {
  [https, http] = await Promise.all([startServer({ BASE_URL: 'https://review.example.org' }), startServer()]);
  await Promise.all([registerClient(https, 'csrf-app'), registerClient(http, 'csrf-app')]);
});
afterAll(async () => {
  await Promise.all([https.close(), http.close()]);
});

/** Starts a sign-in request and loads the provider's login page (on the server's own address). */
async function loginPage(server: TestServer) {
  const verifier = randomBytes(32).toString('base64url');
  const query = new URLSearchParams({
    client_id: 'csrf-app',
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    state: 'state-1',
    code_challenge: createHash('sha256').update(verifier).digest('base64url'),
    code_challenge_method: 'S256',
  });
  const authorize = await fetch(`${server.url}/oidc/authorize?${query}`, { redirect: 'manual' });
  const location = new URL(authorize.headers.get('location') ?? '', server.config.baseUrl);
  const page = await fetch(`${server.url}${location.pathname}${location.search}`, { redirect: 'manual' });
  const html = await page.text();
  const [cookie = ''] = page.headers.getSetCookie().filter((line) => line.includes('oidc-csrf'));
  return {
    cookie,
    interaction: /name="interaction" value="([^"]+)"/.exec(html)?.[1] ?? '',
    csrf: /name="csrf" value="([^"]+)"/.exec(html)?.[1] ?? '',
  };
}

describe("the sign-in provider's CSRF cookie", () => {
  it('over https is __Host-service.oidc-csrf: Secure, Path=/, and its form is accepted', async () => {
    const user = await createActiveUser(https);
    const { cookie, interaction, csrf } = await loginPage(https);
    expect(cookie).toMatch(/^__Host-service\.oidc-csrf=/);
    expect(cookie).toMatch(/; Path=\/(;|$)/);
    expect(cookie).toMatch(/; Secure/);
    expect(cookie).toMatch(/; HttpOnly/);
    const res = await fetch(`${https.url}/oidc/login`, {
      method: 'POST',
      redirect: 'manual',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie.split(';')[0]! },
      body: new URLSearchParams({ interaction, csrf, email: user.email, password: 'Not-The-Password-1' }),
    });
    // Past the CSRF check: the password is what is refused.
    const html = await res.text();
    expect(html).not.toMatch(/form has expired|did not come from this site/);
    expect(html).toMatch(/password/i);
  });

  it('refuses its form, right token and all, from a browser saying it came from another site, as the account pages do', async () => {
    const user = await createActiveUser(http);
    const { cookie, interaction, csrf } = await loginPage(http);
    const post = (site: string) =>
      fetch(`${http.url}/oidc/login`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookie.split(';')[0]!, 'sec-fetch-site': site },
        body: new URLSearchParams({ interaction, csrf, email: user.email, password: 'Not-The-Password-1' }),
      });
    const crossSite = await post('cross-site');
    expect(crossSite.status).toBe(403);
    expect(await crossSite.text()).toContain('did not come from this site');
    expect(await (await post('same-origin')).text()).not.toMatch(/form has expired|did not come from this site/);
  });

  it('over http stays service.oidc-csrf on Path=/oidc (a __Host- cookie needs https)', async () => {
    const { cookie } = await loginPage(http);
    expect(cookie).toMatch(/^service\.oidc-csrf=/);
    expect(cookie).toMatch(/; Path=\/oidc(;|$)/);
  });
});
