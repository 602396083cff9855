/**
 * Multi-factor sign-in on the sign-in provider's own pages: after the password, a second step
 * (a code from an authenticator app or an email, or a recovery code; "remember this device"),
 * and the ID token's `amr`/`acr` (RFC 8176) saying what was used. In Debian's Chromium (no
 * JavaScript) and with a fetch-based browser stand-in, with openid-client as the application.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import { Secret, TOTP } from 'otpauth';
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { cookieHeader } from '../helpers/cookies.ts';
import { TestClock } from '../helpers/clock.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { authorizationRequest, registerClient, relyingParty, UserAgent } from './helpers.ts';

let server: TestServer;
const clock = new TestClock();
let rp: client.Configuration;

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
  await registerClient(server, 'mfa-app');
  rp = await relyingParty(server, 'mfa-app');
}, 60_000);
afterAll(() => server.close());

function codeAt(secret: string): string {
  return TOTP.generate({ secret: Secret.fromBase32(secret), timestamp: clock.now() });
}

function nextStep(): void {
  clock.advance(30_000 - (clock.now() % 30_000) + 1_000);
}

/** A person with TOTP on; the secret and recovery codes. */
async function personWithTotp(): Promise<{ email: string; id: string; secret: string; recoveryCodes: string[] }> {
  const person = await createActiveUser(server);
  const { client: api } = await loggedIn(server, person.email);
  const init = await api.post('/mfa/setup/totp/init');
  const verified = await api.post('/mfa/setup/totp/verify', { code: codeAt(init.body.secret) });
  return { ...person, secret: init.body.secret, recoveryCodes: verified.body.recoveryCodes };
}

/** The tokens for a code the browser was sent back with. */
async function exchange(callbackUrl: string, request: Awaited<ReturnType<typeof authorizationRequest>>) {
  return client.authorizationCodeGrant(rp, new URL(callbackUrl), {
    pkceCodeVerifier: request.verifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
    idTokenExpected: true,
  });
}

describe('the second step on the login page', () => {
  it('a password alone gives amr ["pwd"] and acr "1"', async () => {
    const person = await createActiveUser(server);
    const request = await authorizationRequest(rp);
    const done = await new UserAgent().authorize(request.url, { email: person.email, password: PASSWORD });
    expect(done.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    const claims = (await exchange(done.location!, request)).claims();
    expect(claims).toMatchObject({ sub: person.id, amr: ['pwd'], acr: '1' });
  });

  it('after the password, a TOTP code; then amr ["pwd","otp","mfa"] and acr "2"', async () => {
    const person = await personWithTotp();
    const agent = new UserAgent();
    const request = await authorizationRequest(rp);
    const login = await agent.go(request.url.toString());
    const second = await agent.submit(login, { email: person.email, password: PASSWORD });
    expect(second.status).toBe(200);
    expect(second.html).toContain('<h1>Confirm it is you</h1>');
    expect(second.html).not.toContain('action="/oidc/consent"');
    // No session yet: the provider's own consent page would send the browser back to sign in.
    expect(agent.jar.has('service.accessToken')).toBe(false);

    const wrong = await agent.submit(second, { method: 'totp', code: codeAt(person.secret) === '000000' ? '111111' : '000000', step: 'verify' });
    expect(wrong.status).toBe(400);
    // The page says how many wrong codes are left before the lockout.
    expect(wrong.html).toContain('Wrong code. 4 tries left before sign-in is locked for 15 minutes.');

    nextStep();
    const consent = await agent.submit(wrong, { method: 'totp', code: codeAt(person.secret), step: 'verify' });
    expect(consent.html).toContain('action="/oidc/consent"');
    const done = await agent.submit(consent, { decision: 'allow' });
    expect(done.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    const tokens = await exchange(done.location!, request);
    expect(tokens.claims()).toMatchObject({ sub: person.id, amr: ['pwd', 'otp', 'mfa'], acr: '2' });
  });

  it('a recovery code works there too, once', async () => {
    const person = await personWithTotp();
    const agent = new UserAgent();
    const request = await authorizationRequest(rp);
    const second = await agent.submit(await agent.go(request.url.toString()), { email: person.email, password: PASSWORD });
    const consent = await agent.submit(second, { method: 'recovery', code: person.recoveryCodes[0]!, step: 'verify' });
    expect(consent.html).toContain('action="/oidc/consent"');
    const again = new UserAgent();
    const secondAgain = await again.submit(await again.go((await authorizationRequest(rp)).url.toString()), { email: person.email, password: PASSWORD });
    const refused = await again.submit(secondAgain, { method: 'recovery', code: person.recoveryCodes[0]!, step: 'verify' });
    expect(refused.status).toBe(400);
    expect(refused.html).toMatch(/Wrong code\. \d tries? left before sign-in is locked/);
  });

  it('a second step that is not live (expired, completed, made up) goes back to the password', async () => {
    const person = await personWithTotp();
    const agent = new UserAgent();
    const second = await agent.submit(await agent.go((await authorizationRequest(rp)).url.toString()), { email: person.email, password: PASSWORD });
    nextStep();
    const back = await agent.submit(second, { mfaPendingToken: 'made-up', method: 'totp', code: codeAt(person.secret), step: 'verify' });
    expect(back.status).toBe(400);
    expect(back.html).toContain('The sign-in has expired or was already completed. Please log in again.');
    expect(back.html).toContain('name="password"');
    expect(agent.jar.has('service.accessToken')).toBe(false);
  });
});

describe('acr_values=2: a sign-in proved with a second factor', () => {
  it('sends a person without a second factor back to the application with unmet_authentication_requirements, state and iss', async () => {
    const person = await createActiveUser(server);
    const request = await authorizationRequest(rp, { acr_values: '2' });
    const page = await new UserAgent().authorize(request.url, { email: person.email, password: PASSWORD });
    expect(page.status).toBe(303);
    const back = new URL(page.location ?? 'http://x');
    expect(`${back.origin}${back.pathname}`).toBe('http://127.0.0.1:9/callback');
    expect(Object.fromEntries(back.searchParams)).toEqual({
      error: 'unmet_authentication_requirements',
      error_description: 'The application asks for a sign-in with a second factor, and this account has none turned on',
      state: request.state,
      iss: server.url,
    });
  });

  it('with 1 among the values (1 2, as discovery lists them; unknown values ignored), a password alone signs in, with acr "1"', async () => {
    const person = await createActiveUser(server);
    for (const acrValues of ['1 2', 'urn:example:gold 1 2']) {
      const request = await authorizationRequest(rp, { acr_values: acrValues });
      const done = await new UserAgent().authorize(request.url, { email: person.email, password: PASSWORD });
      expect(done.location, acrValues).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
      expect((await exchange(done.location!, request)).claims(), acrValues).toMatchObject({ sub: person.id, amr: ['pwd'], acr: '1' });
    }
    // Only unknown values beside 2: a second factor is still required.
    const required = await authorizationRequest(rp, { acr_values: 'urn:example:gold 2' });
    const refused = await new UserAgent().authorize(required.url, { email: person.email, password: PASSWORD });
    expect(new URL(refused.location ?? 'http://x').searchParams.get('error')).toBe('unmet_authentication_requirements');
  });

  it('prompt=none with acr_values=1 2 and a password session answers with a code, not login_required', async () => {
    const person = await createActiveUser(server);
    const agent = new UserAgent();
    await agent.authorize((await authorizationRequest(rp)).url, { email: person.email, password: PASSWORD });
    const silent = await authorizationRequest(rp, { acr_values: '1 2', prompt: 'none' });
    const answer = await agent.go(silent.url.toString());
    expect(answer.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    expect((await exchange(answer.location!, silent)).claims()).toMatchObject({ acr: '1' });
    // With 2 alone, the same session is short of it.
    const strict = await agent.go((await authorizationRequest(rp, { acr_values: '2', prompt: 'none' })).url.toString());
    expect(new URL(strict.location ?? 'http://x').searchParams.get('error')).toBe('login_required');
  });

  it('with 2 before 1: a person with a second factor is asked for it even in a remembered browser (acr "2"); one without signs in with the password (acr "1")', async () => {
    const withFactor = await personWithTotp();
    const agent = new UserAgent();
    const first = await authorizationRequest(rp);
    const second = await agent.submit(await agent.go(first.url.toString()), { email: withFactor.email, password: PASSWORD });
    nextStep();
    await agent.submit(await agent.submit(second, { method: 'totp', code: codeAt(withFactor.secret), step: 'verify', rememberDevice: 'on' }), { decision: 'allow' });
    expect(agent.jar.has('service.mfaTrustedDevice')).toBe(true);
    const preferred = await authorizationRequest(rp, { acr_values: '2 1', prompt: 'login' });
    const asked = await agent.submit(await agent.go(preferred.url.toString()), { email: withFactor.email, password: PASSWORD });
    expect(asked.html).toContain('<h1>Confirm it is you</h1>');
    nextStep();
    const done = await agent.submit(asked, { method: 'totp', code: codeAt(withFactor.secret), step: 'verify' });
    expect((await exchange(done.location!, preferred)).claims()).toMatchObject({ sub: withFactor.id, acr: '2' });

    const without = await createActiveUser(server);
    const plain = await authorizationRequest(rp, { acr_values: '2 1' });
    const signedIn = await new UserAgent().authorize(plain.url, { email: without.email, password: PASSWORD });
    expect(signedIn.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    expect((await exchange(signedIn.location!, plain)).claims()).toMatchObject({ sub: without.id, acr: '1' });
  });

  it('is not passed by the JSON endpoints a web application uses: a password-only session is sent to sign in again', async () => {
    const person = await createActiveUser(server);
    const { client: browser } = await loggedIn(server, person.email);
    const request = await authorizationRequest(rp, { acr_values: '2' });
    const started = await fetch(request.url, { redirect: 'manual', headers: { cookie: cookieHeader(browser) } });
    const interactionId = new URL(started.headers.get('location') ?? '').searchParams.get('interaction');
    expect(interactionId).toBeTruthy();
    // The session's sign-in was the password alone: the login page takes it from there.
    const confirm = await browser.post('/oidc/authorize/confirm', { interactionId });
    expect(confirm.body.redirectUri).toBe(`${server.url}/oidc/login?interaction=${interactionId}`);
    const consent = await browser.post('/oidc/authorize/consent', { interactionId, approved: true });
    expect(consent.status).toBe(401);
    expect(consent.body.message).toBe('Please sign in (again) before consenting.');
    // The consent page sends it to the login page too, rather than a form that ends in an error.
    const page = await fetch(`${server.url}/oidc/consent?interaction=${interactionId}`, { redirect: 'manual', headers: { cookie: cookieHeader(browser) } });
    expect(page.status).toBe(303);
    expect(page.headers.get('location')).toBe(`${server.url}/oidc/login?interaction=${interactionId}`);
  });

  it('asks the second step of a person with one, even in a remembered browser, and then signs them in with acr "2"', async () => {
    const person = await personWithTotp();
    const agent = new UserAgent();
    // A sign-in with "remember this device": the next one in this browser would skip the second step.
    const first = await authorizationRequest(rp);
    const second = await agent.submit(await agent.go(first.url.toString()), { email: person.email, password: PASSWORD });
    nextStep();
    const consent = await agent.submit(second, { method: 'totp', code: codeAt(person.secret), step: 'verify', rememberDevice: 'on' });
    await agent.submit(consent, { decision: 'allow' });
    expect(agent.jar.has('service.mfaTrustedDevice')).toBe(true);

    // The session's sign-in used the factor: acr_values=2 is satisfied without a page.
    const satisfied = await authorizationRequest(rp, { acr_values: '2' });
    const straight = await agent.go(satisfied.url.toString());
    expect(straight.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    expect((await exchange(straight.location!, satisfied)).claims()).toMatchObject({ acr: '2' });

    // prompt=login with max_age and acr_values=2: the password, then the second step despite the remembered browser.
    const fresh = await authorizationRequest(rp, { acr_values: '2', prompt: 'login', max_age: '0' });
    const again = await agent.submit(await agent.go(fresh.url.toString()), { email: person.email, password: PASSWORD });
    expect(again.html).toContain('<h1>Confirm it is you</h1>');
    nextStep();
    const done = await agent.submit(again, { method: 'totp', code: codeAt(person.secret), step: 'verify' });
    expect(done.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    expect((await exchange(done.location!, fresh)).claims()).toMatchObject({ sub: person.id, amr: ['pwd', 'otp', 'mfa'], acr: '2', auth_time: expect.any(Number) });
  });
});

describe('in a real browser', () => {
  let browser: Browser;
  let app: Server;
  let callback: string;
  let browserRp: client.Configuration;

  beforeAll(async () => {
    app = createServer((_req, res) => res.end('<!doctype html><title>Signed in</title><p>Back in the application.</p>'));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
    callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
    await registerClient(server, 'mfa-browser-app', { name: 'Paper Finder', redirect: callback });
    browserRp = await relyingParty(server, 'mfa-browser-app');
    browser = await launchBrowser();
  }, 60_000);
  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((resolve) => app.close(() => resolve()));
  });

  const start = (extra: Record<string, string> = {}) => authorizationRequest(browserRp, { redirect_uri: callback, ...extra });

  it('an emailed code, "remember this device", and the next sign-in on that browser asks for the password only', async () => {
    const person = await createActiveUser(server);
    const { client: api } = await loggedIn(server, person.email);
    expect((await api.post('/mfa/setup/email')).status).toBe(200);

    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    const request = await start();
    await page.goto(request.url.toString());
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();

    await expect.poll(() => page.title()).toBe('Confirm it is you');
    await page.getByRole('radio', { name: 'A code sent to your email' }).check();
    await page.getByRole('button', { name: 'Send a code by email' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('A code was sent to your email');
    const mail = await lastMailTo(server.dataDir, person.email);
    const code = /verification code is: \*\*(\d{6})\*\*/.exec(mail.text)?.[1] ?? '';
    expect(await page.getByRole('radio', { name: 'A code sent to your email' }).isChecked()).toBe(true);
    await page.getByLabel('Code', { exact: true }).fill(code);
    await page.getByLabel('Remember this device for 30 days').check();
    await page.getByRole('button', { name: 'Verify' }).click();

    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((url) => url.toString().startsWith(callback));
    const tokens = await client.authorizationCodeGrant(browserRp, new URL(page.url()), {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
      idTokenExpected: true,
    });
    expect(tokens.claims()).toMatchObject({ sub: person.id, amr: ['pwd', 'otp', 'mfa'], acr: '2' });
    expect((await context.cookies()).map((c) => c.name)).toContain('service.mfaTrustedDevice');

    // prompt=login: the password again, and this browser is remembered, so no second step.
    const again = await start({ prompt: 'login' });
    await page.goto(again.url.toString());
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByLabel('Email').fill(person.email);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.waitForURL((url) => url.toString().startsWith(callback));
    const second = await client.authorizationCodeGrant(browserRp, new URL(page.url()), {
      pkceCodeVerifier: again.verifier,
      expectedState: again.state,
      expectedNonce: again.nonce,
      idTokenExpected: true,
    });
    expect(second.claims()).toMatchObject({ sub: person.id, amr: ['pwd'], acr: '1' });
    await context.close();
  });

  it('the second step has no accessibility violations axe-core can find', async () => {
    const person = await personWithTotp();
    const context = await browser.newContext({ bypassCSP: true });
    const page = await context.newPage();
    await page.goto((await start()).url.toString());
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.title()).toBe('Confirm it is you');
    await page.addScriptTag({ path: 'node_modules/axe-core/axe.min.js' });
    const violations = await page.evaluate(async () => {
      const result = await (globalThis as unknown as { axe: { run(): Promise<{ violations: Array<{ id: string }> }> } }).axe.run();
      return result.violations.map((v) => v.id);
    });
    expect(violations).toEqual([]);
    await context.close();
  });

  it('a TOTP code typed in the browser, with a wrong one shown first', async () => {
    const person = await personWithTotp();
    const context = await browser.newContext({ javaScriptEnabled: false });
    const page = await context.newPage();
    await page.goto((await start()).url.toString());
    await page.getByLabel('Email').fill(person.email);
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.title()).toBe('Confirm it is you');
    expect(await page.getByRole('radio', { name: 'A code from your authenticator app' }).isChecked()).toBe(true);
    await page.getByLabel('Code', { exact: true }).fill('12345x');
    await page.getByRole('button', { name: 'Verify' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toBe('Wrong code. 4 tries left before sign-in is locked for 15 minutes.');
    nextStep();
    await page.getByLabel('Code', { exact: true }).fill(codeAt(person.secret));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('button', { name: 'Allow' }).waitFor();
    await context.close();
  });
});

