/**
 * The platform's web client in a real browser, on its own origin beside the API, as the platform
 * deploys it (`example.org` for the pages, `api.example.org` for the API): here `review.test` and
 * `api.review.test`, which Chromium resolves to this machine. The page makes the web client's
 * calls as `lib/api-client.js` makes them (`mode: 'cors'`, `credentials: 'include'`, its headers),
 * reads who is signed in as `lib/clientAuth.js` does (the readable user cookie, decoded as
 * `universal-cookie` decodes it), and its own server reads the session cookies as `app/auth.js`
 * does. The API runs with `WEB_URL` naming the pages and `COOKIE_DOMAIN=review.test`.
 */
import { createServer, type Server } from 'node:http';
import { createHash, randomBytes } from 'node:crypto';
import type { AddressInfo } from 'node:net';
import { decodeJwt } from 'jose';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { publicClientRecord } from '../../server/oidc/clients.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';

let api: TestServer;
let web: Server;
let browser: Browser;
/** The web application's address, and the API's as the browser and as this process reach it. */
let webUrl: string;
let apiUrl: string;
let direct: string;

beforeAll(async () => {
  // The web application's stand-in: an empty page, and `/ssr`, where its server shows the
  // cookies it was sent (what `app/auth.js` reads to render a signed-in page).
  web = createServer((req, res) => {
    if (req.url === '/ssr') {
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify({ cookie: req.headers.cookie ?? '' }));
      return;
    }
    if (req.url?.startsWith('/oidc/authorize?')) {
      authorizePage(req.url, req.headers.cookie ?? '').then(
        (page) => (page.redirect ? res.writeHead(302, { location: page.redirect }).end() : res.writeHead(200, { 'content-type': 'text/html' }).end(page.html)),
        () => res.writeHead(500).end(),
      );
      return;
    }
    res.setHeader('content-type', 'text/html');
    res.end('<!doctype html><title>web</title>');
  });
  await new Promise<void>((resolve) => web.listen(0, '127.0.0.1', resolve));
  const webPort = (web.address() as AddressInfo).port;
  webUrl = `http://review.test:${webPort}`;
  api = await startServer({ WEB_URL: webUrl, COOKIE_DOMAIN: 'review.test' }, undefined, { hostName: 'api.review.test' });
  apiUrl = api.url;
  direct = api.url.replace('api.review.test', '127.0.0.1');
  browser = await launchBrowser({ hosts: ['review.test', 'api.review.test', 'other.review.test'] });
});
afterAll(async () => {
  await browser?.close();
  await api?.close();
  await new Promise((resolve) => web?.close(resolve));
});

/**
 * The web client's sign-in page for an application (`app/oidc/authorize/page.js`), on its server:
 * the access token from the cookie (`serverAuth`), then `POST /oidc/authorize/confirm` with it as
 * the bearer; a `redirectUri` is followed, otherwise the page asks (`AuthorizeForm.js`).
 */
async function authorizePage(url: string, cookie: string): Promise<{ redirect?: string; html?: string }> {
  const interactionId = new URL(url, webUrl).searchParams.get('interaction') ?? '';
  const token = /(?:^|; )service\.accessToken=([^;]+)/.exec(cookie)?.[1];
  if (!token) return { redirect: `/login?redirect=${encodeURIComponent(url)}` };
  const res = await fetch(`${direct}/oidc/authorize/confirm`, {
    method: 'POST',
    headers: { Accept: 'application/json,text/*;q=0.99', Authorization: `Bearer ${token}`, 'Content-Type': 'application/json; charset=UTF-8', 'X-Forwarded-For': '203.0.113.9' },
    body: JSON.stringify({ interactionId }),
  });
  const answer = (await res.json()) as { redirectUri?: string; client?: { clientName: string }; scopes?: Array<{ scope: string }> };
  if (answer.redirectUri) return { redirect: answer.redirectUri };
  // `AuthorizeForm.js` lists each `scope` of the answer's objects.
  return { html: `<!doctype html><title>authorize</title><h1>Sign in to ${answer.client?.clientName}</h1><p id="scopes">${answer.scopes?.map(({ scope }) => scope).join(' ')}</p>` };
}

interface Answer {
  status: number;
  body: Record<string, unknown> | null;
}

/**
 * Runs the web client's calls in the page, in order: each `[method, path, body?]` as
 * `lib/api-client.js` sends it. A call the browser refuses to let the page read (CORS) answers
 * status 0.
 */
async function calls(page: Page, ...steps: Array<[string, string, unknown?]>): Promise<Answer[]> {
  const script = `(async ({ api, steps }) => {
    const answers = [];
    for (const [method, path, body] of steps) {
      const headers = { Accept: 'application/json,text/*;q=0.99' };
      if (body !== undefined && body !== null) headers['Content-Type'] = 'application/json; charset=UTF-8';
      try {
        const res = await fetch(api + path, { method, mode: 'cors', credentials: 'include', headers, body: body == null ? undefined : JSON.stringify(body) });
        answers.push({ status: res.status, body: await res.json().catch(() => null) });
      } catch (error) {
        answers.push({ status: 0, body: null });
      }
    }
    return answers;
  })(${JSON.stringify({ api: apiUrl, steps })})`;
  return page.evaluate<Answer[]>(script);
}

/** `lib/clientAuth.js` `clientAuth`: the user cookie, decoded as `universal-cookie` decodes it; null for none. */
function clientAuthUser(page: Page): Promise<{ id: string; profile: { id: string; fullname?: string } } | null> {
  return page.evaluate(`(() => {
    const pair = document.cookie.split('; ').find((c) => c.startsWith('service.user='));
    return pair ? JSON.parse(decodeURIComponent(pair.slice('service.user='.length))) : null;
  })()`);
}

it('signs in from the web application\'s pages, which then read who is signed in, and whose own server reads the session', async () => {
  const { id, email } = await createActiveUser(api);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${webUrl}/`);

  const [login, profiles] = await calls(page, ['POST', '/login', { id: email, password: PASSWORD }], ['GET', `/profiles?id=${encodeURIComponent(id)}`]);
  expect(login).toMatchObject({ status: 200, body: { user: { id: email, profile: { id } } } });
  expect(profiles).toMatchObject({ status: 200, body: { profiles: [{ id }] } });

  // The pages' scripts read who is signed in, never a token: those cookies are HttpOnly.
  expect(await clientAuthUser(page)).toMatchObject({ id: email, profile: { id, fullname: 'Grace Hopper' } });
  expect(await page.evaluate<string>('document.cookie')).not.toMatch(/accessToken|refreshToken/);
  // The web application's own server is sent the session, for the domain both are under.
  await page.goto(`${webUrl}/ssr`);
  const ssr = JSON.parse((await page.textContent('body')) ?? '{}') as { cookie: string };
  expect(ssr.cookie).toMatch(/service\.accessToken=[\w-]+\.[\w-]+\.[\w-]+/);
  expect(ssr.cookie).toContain('service.refreshToken=');

  // Signing out clears them all, the readable one too.
  await page.goto(`${webUrl}/`);
  const [logout] = await calls(page, ['POST', '/logout']);
  expect(logout?.status).toBe(200);
  expect(await clientAuthUser(page)).toBeNull();
  const left = (await context.cookies([apiUrl, webUrl])).map((cookie) => cookie.name);
  expect(left.filter((name) => /accessToken|refreshToken|user/.test(name))).toEqual([]);
  await context.close();
});

it('resets a password from a signed-in browser, then signs out the other sessions, as `ResetForm.js` does', async () => {
  const { email } = await createActiveUser(api);
  const { client: elsewhere } = await loggedIn({ ...api, url: direct }, email);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${webUrl}/`);
  expect((await calls(page, ['POST', '/login', { id: email, password: PASSWORD }]))[0]?.status).toBe(200);
  await new Client(direct).post('/resettable', { id: email, token: 'dev-ok' });
  const mail = await lastMailTo(api.dataDir, email);
  const token = /\/user\/password\?token=([\w-]+)/.exec(mail.text)?.[1];

  const [reset, others, still] = await calls(page, ['PUT', `/reset/${token}`, { password: 'Brand-New-Pass9' }], ['POST', '/logout-all-devices'], ['GET', '/profiles']);
  expect(reset).toEqual({ status: 200, body: { status: 'ok' } });
  expect(others?.status).toBe(200);
  expect(still?.status).toBe(200);
  expect((await elsewhere.get('/profiles')).status).toBe(401);
  await context.close();
});

it('answers no other origin of the same site with the session: it cannot read, and its writes are refused', async () => {
  const { email } = await createActiveUser(api);
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${webUrl}/`);
  expect((await calls(page, ['POST', '/login', { id: email, password: PASSWORD }]))[0]?.status).toBe(200);

  // Same site, so the browser sends the cookies along; but no answer names this origin.
  const other = await context.newPage();
  await other.goto(`${webUrl.replace('review.test', 'other.review.test')}/`);
  const [read, write] = await calls(other, ['GET', '/profiles'], ['POST', '/logout-all-devices', {}]);
  expect(read?.status).toBe(0);
  expect(write?.status).toBe(0);
  // A write a page may send without asking first reaches the API, which refuses it (the page
  // cannot read the refusal either: the answer is the API's own origin's).
  const refusals = () => api.logs.filter((line) => line.includes('"url":"/logout"') && line.includes('"statusCode":403')).length;
  const before = refusals();
  await other.evaluate(`fetch(${JSON.stringify(`${apiUrl}/logout`)}, { method: 'POST', mode: 'no-cors', credentials: 'include' }).catch(() => null)`);
  await expect.poll(refusals).toBe(before + 1);
  expect((await calls(page, ['GET', '/profiles']))[0]?.status).toBe(200);
  await context.close();
});

it('signs a person in to an application through the web client\'s own page, asking them first and not again', async () => {
  const { id, email } = await createActiveUser(api);
  // The application's callback (the web stand-in answers it too): the browser arrives there with the code.
  const redirectUri = `${webUrl.replace('review.test', '127.0.0.1')}/callback`;
  await new OidcRepository(api.service.db).insertClient({
    ...publicClientRecord({ id: 'web-app', name: 'Web App', redirectUris: [redirectUri], scopes: ['openid', 'profile', 'email'] }, Date.now()),
    status: 'approved',
  });
  const context = await browser.newContext();
  const page = await context.newPage();
  await page.goto(`${webUrl}/`);
  expect((await calls(page, ['POST', '/login', { id: email, password: PASSWORD }]))[0]?.status).toBe(200);

  const authorize = () => {
    const verifier = randomBytes(32).toString('base64url');
    const state = randomBytes(8).toString('hex');
    const query = new URLSearchParams({ client_id: 'web-app', redirect_uri: redirectUri, response_type: 'code', scope: 'openid profile email', state, code_challenge: createHash('sha256').update(verifier).digest('base64url'), code_challenge_method: 'S256' });
    return { url: `${apiUrl}/oidc/authorize?${query}`, verifier, state };
  };
  const codeOf = (url: string, state: string) => {
    const back = new URL(url);
    expect(back.searchParams.get('state')).toBe(state);
    return back.searchParams.get('code') ?? '';
  };
  const redeem = async (code: string, verifier: string) => {
    const res = await fetch(`${direct}/oidc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'authorization_code', code, redirect_uri: redirectUri, client_id: 'web-app', code_verifier: verifier }) });
    expect(res.status).toBe(200);
    return decodeJwt(((await res.json()) as { id_token: string }).id_token);
  };

  // The provider sends the browser to the web client's page, whose server asks what is asked.
  const first = authorize();
  await page.goto(first.url);
  expect(new URL(page.url()).pathname).toBe('/oidc/authorize');
  expect(await page.textContent('h1')).toBe('Sign in to Web App');
  expect(await page.textContent('#scopes')).toBe('openid profile email');
  // "Allow": `AuthorizeForm.js` posts the decision from the browser, with its session.
  const interactionId = new URL(page.url()).searchParams.get('interaction');
  const [decided] = await calls(page, ['POST', '/oidc/authorize/consent', { interactionId, approved: true }]);
  expect(decided?.status).toBe(200);
  const idToken = await redeem(codeOf(String(decided?.body?.redirectUri), first.state), first.verifier);
  expect(idToken).toMatchObject({ iss: apiUrl, sub: id, aud: 'web-app' });

  // Consented before: the provider answers at once, without the page.
  const again = authorize();
  await page.goto(again.url);
  expect(page.url().startsWith(`${redirectUri}?`)).toBe(true);
  expect(await redeem(codeOf(page.url(), again.state), again.verifier)).toMatchObject({ sub: id });
  await context.close();
});
