/**
 * A person signs in to another application in a real browser: Debian's Chromium driven by
 * playwright-core, against the real server, with openid-client as the application.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { checkPage } from '../web/helpers.ts';
import { admin } from './helpers.ts';

let server: TestServer;
let app: Server;
let callback: string;
let browser: Browser;
let rp: client.Configuration;
let person: { id: string; email: string };
const posted: string[] = [];

beforeAll(async () => {
  server = await startServer();
  // The application's callback: what a browser posted to it (response_mode=form_post) is kept.
  app = createServer((req, res) => {
    let body = '';
    req.setEncoding('utf8');
    req.on('data', (chunk: string) => (body += chunk));
    req.on('end', () => {
      if (req.method === 'POST') posted.push(body);
      res.end('<!doctype html><title>Signed in</title><p>Back in the application.</p>');
    });
  });
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
  await admin(server, 'oidc-client', 'add', '--id', 'browser-app', '--name', 'Paper Finder', '--redirect-uri', callback, '--scopes', 'openid profile email');
  await admin(server, 'oidc-client', 'approve', 'browser-app');
  rp = await client.discovery(new URL(server.url), 'browser-app', undefined, client.None(), { execute: [client.allowInsecureRequests] });
  client.enableNonRepudiationChecks(rp);
  person = await createActiveUser(server, { fullname: 'Rosalind Franklin' });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => app.close(() => resolve()));
  await server.close();
});

async function start(extra: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const nonce = client.randomNonce();
  const url = client.buildAuthorizationUrl(rp, {
    redirect_uri: callback,
    scope: 'openid profile email',
    code_challenge: await client.calculatePKCECodeChallenge(verifier),
    code_challenge_method: 'S256',
    state,
    nonce,
    ...extra,
  });
  return { url, verifier, state, nonce };
}

describe('signing in to an application in a real browser', () => {
  it('signs in, consents with "Allow", and the application gets a valid ID token', async () => {
    // No JavaScript: the pages work without it.
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const request = await start();
    await page.goto(request.url.toString());

    await expect.poll(() => page.title()).toBe('Sign in');
    expect(await page.getByRole('link', { name: 'Forgot your password?' }).count()).toBe(1);
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();

    await page.getByRole('heading', { name: 'Paper Finder wants to sign you in' }).waitFor();
    expect(await page.getByRole('listitem').allTextContents()).toEqual([
      'Know who you are (your profile id)',
      'See your name',
      'See your email address and whether it is confirmed',
    ]);
    await page.screenshot({ path: `${server.dataDir}/consent.png` });
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.toString().startsWith(callback));

    const tokens = await client.authorizationCodeGrant(rp, new URL(page.url()), {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ iss: server.url, aud: 'browser-app', sub: person.id, name: 'Rosalind Franklin', email: person.email });
    expect(await client.fetchUserInfo(rp, tokens.access_token, person.id)).toMatchObject({ sub: person.id, email_verified: true });
    await client.tokenRevocation(rp, tokens.access_token);
    expect((await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).status).toBe(401);

    // The second time, with the session and the consent, the browser goes straight back.
    const again = await start();
    await page.goto(again.url.toString());
    await page.waitForURL((url) => url.toString().startsWith(callback));
    expect(new URL(page.url()).searchParams.get('code')).toBeTruthy();
    await context.close();
  });

  it('posts the answer to an application that asks for form_post: by itself with JavaScript, by a button without', async () => {
    const redeem = async (request: Awaited<ReturnType<typeof start>>, body: string) => {
      const answer = new Request(callback, { method: 'POST', body, headers: { 'content-type': 'application/x-www-form-urlencoded' } });
      const tokens = await client.authorizationCodeGrant(rp, answer, { pkceCodeVerifier: request.verifier, expectedState: request.state, expectedNonce: request.nonce, idTokenExpected: true });
      expect(tokens.claims()).toMatchObject({ iss: server.url, aud: 'browser-app', sub: person.id });
    };
    const quiet = await browser.newContext({ javaScriptEnabled: false });
    const page = await quiet.newPage();
    const first = await start({ response_mode: 'form_post' });
    await page.goto(first.url.toString());
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Returning to the application' }).waitFor();
    posted.length = 0;
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.waitForURL(callback);
    expect(new URL(page.url()).search).toBe('');
    expect(posted).toHaveLength(1);
    await redeem(first, posted[0] ?? '');
    // With JavaScript, and a session and consent already there: straight back, posted.
    const cookies = await quiet.cookies();
    await quiet.close();
    const scripted = await browser.newContext();
    await scripted.addCookies(cookies);
    const again = await scripted.newPage();
    const second = await start({ response_mode: 'form_post' });
    posted.length = 0;
    await again.goto(second.url.toString());
    await again.waitForURL(callback);
    await expect.poll(() => posted.length).toBe(1);
    expect(new URLSearchParams(posted[0]).get('state')).toBe(second.state);
    await redeem(second, posted[0] ?? '');
    await scripted.close();
  });

  it('shows a wrong password on the login page, and "Deny" sends access_denied back', async () => {
    const other = await createActiveUser(server);
    const context = await browser.newContext();
    const page = await context.newPage();
    await page.goto((await start()).url.toString());
    await page.getByLabel('Email').fill(other.email);
    await page.getByLabel('Password').fill('Not-The-Password-1');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    // In the account pages' error summary; a wrong password is no failure of ours, so no request id to quote.
    await expect.poll(() => page.locator('#error-summary li').textContent()).toBe('Invalid username or password');
    expect(await page.locator('.request-id').count()).toBe(0);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: 'Deny' }).click();
    await page.waitForURL((url) => url.toString().startsWith(callback));
    expect(new URL(page.url()).searchParams.get('error')).toBe('access_denied');
    await context.close();
  });

  it('shows an error it cannot send back to the application on its own page, with the request id of its X-Request-Id', async () => {
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    const answer = await page.goto(`${server.url}/oidc/authorize?client_id=nobody&redirect_uri=${encodeURIComponent(callback)}&response_type=code&scope=openid`);
    expect(answer?.status()).toBe(400);
    await page.getByRole('heading', { name: 'Sign-in error' }).waitFor();
    const requestId = answer?.headers()['x-request-id'];
    expect(requestId).toBeTruthy();
    expect(await page.locator('.request-id').textContent()).toContain(requestId);
    await checkPage(page, 'oidc-error');
    await context.close();
  });

  it('lets an application in the browser on another origin redeem its code and read the user and the keys (CORS)', async () => {
    const someone = await createActiveUser(server, { fullname: 'Chien-Shiung Wu' });
    const context = await browser.newContext();
    const page = await context.newPage();
    const request = await start();
    await page.goto(request.url.toString());
    await page.getByLabel('Email').fill(someone.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.toString().startsWith(callback));
    const code = new URL(page.url()).searchParams.get('code');
    expect(code).toBeTruthy();
    expect(new URL(page.url()).origin).not.toBe(server.url);

    // The application's own script, on its own origin: a form POST (no preflight), then a
    // bearer GET (preflighted for its Authorization header), then the keys.
    const seen = await page.evaluate(
      async ({ base, code, verifier, redirectUri }) => {
        const form = new URLSearchParams({ grant_type: 'authorization_code', code, code_verifier: verifier, redirect_uri: redirectUri, client_id: 'browser-app' });
        const tokens = (await (await fetch(`${base}/oidc/token`, { method: 'POST', body: form })).json()) as { access_token: string; id_token: string };
        const user = (await (await fetch(`${base}/oidc/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } })).json()) as { sub: string; name: string };
        const keys = (await (await fetch(`${base}/oidc/jwks`)).json()) as { keys: unknown[] };
        // Why a token is refused is in the challenge, which the script may read.
        const refused = await fetch(`${base}/oidc/userinfo`, { headers: { authorization: 'Bearer not-a-token' } });
        return { hasIdToken: typeof tokens.id_token === 'string', user, keys: keys.keys.length, refused: [refused.status, refused.headers.get('www-authenticate')] };
      },
      { base: server.url, code: code!, verifier: request.verifier, redirectUri: callback },
    );
    expect(seen).toEqual({
      hasIdToken: true,
      user: expect.objectContaining({ sub: someone.id, name: 'Chien-Shiung Wu' }),
      keys: expect.any(Number),
      refused: [401, expect.stringContaining('error="invalid_token"')],
    });
    expect(seen.keys).toBeGreaterThan(0);
    await context.close();
  });

  it('names what a request may send in the preflight’s answer only, and any origin on every answer', async () => {
    const preflight = await fetch(`${server.url}/oidc/userinfo`, {
      method: 'OPTIONS',
      headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization,dpop' },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get('access-control-allow-origin')).toBe('*');
    // The headers asked for, an application's own among them, as node-oidc-provider allows them.
    expect(preflight.headers.get('access-control-allow-headers')).toBe('authorization,dpop');
    expect(preflight.headers.get('vary')).toContain('Access-Control-Request-Headers');
    expect(preflight.headers.get('access-control-allow-methods')).toBe('GET, POST, OPTIONS');
    expect(preflight.headers.get('access-control-max-age')).toBe('600');
    for (const path of ['/oidc/jwks', '/.well-known/openid-configuration']) {
      const asked = await fetch(`${server.url}${path}`, {
        method: 'OPTIONS',
        headers: { origin: 'https://app.example', 'access-control-request-method': 'GET', 'access-control-request-headers': 'authorization' },
      });
      expect(asked.status, path).toBe(200);
      expect(asked.headers.get('allow'), path).toBe('GET, HEAD');
      expect(asked.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(asked.headers.get('access-control-allow-methods'), path).toBe('GET, POST, OPTIONS');
      const answer = await fetch(`${server.url}${path}`, { headers: { origin: 'https://app.example' } });
      expect(answer.headers.get('access-control-allow-origin'), path).toBe('*');
      expect(answer.headers.get('access-control-allow-methods'), path).toBeNull();
      expect(answer.headers.get('access-control-allow-headers'), path).toBeNull();
    }
  });
});
