/**
 * A signed-up person in Chromium: signing in and out, resetting the password from the mailed
 * link with and without "Log me out of all other sessions", an expired reset link's one-click
 * renewal, changing the password on "Password & security", seeing and ending another session
 * (a phone's), and revoking an application signed into through our OpenID Connect provider.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { Browser, BrowserContext, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { TestClock } from '../helpers/clock.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import * as client from 'openid-client';
import { admin, approvedRegistrationToken, authorizationRequest, registerByHttp, registerClient, relyingParty } from '../oidc/helpers.ts';
import { checkPage, IPHONE, linkInMail, newContext, signIn } from './helpers.ts';

/** Each test drives Chromium through several pages and browsers: slow on a loaded 2-core machine. */
const LONG = { timeout: 120_000 };

let server: TestServer;
let browser: Browser;
const clock = new TestClock();

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** Whether a browser's session still opens the security page. */
async function stillSignedIn(page: Page): Promise<boolean> {
  await page.goto(`${server.url}/account/security`);
  return (await page.getByRole('heading', { name: 'Password & security' }).count()) === 1;
}

async function requestReset(page: Page, email: string): Promise<string> {
  await page.goto(`${server.url}/account/reset`);
  await page.getByLabel('Email').fill(email);
  await page.getByRole('button', { name: 'Send the reset link' }).click();
  await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
  return linkInMail(server, email, '/account/user/password');
}

describe('signing in and out', () => {
  it('signs in (a wrong password is refused), shows who is signed in, and signs out', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Ada Lovelace' });
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${server.url}/account/login`);
    await checkPage(page, 'sign-in');
    const phone = await newContext(browser, { userAgent: IPHONE, phone: true });
    const small = await phone.newPage();
    for (const [path, name] of [['login', 'sign-in-phone'], ['signup', 'sign-up-phone'], ['reset', 'reset-request-phone']] as const) {
      await small.goto(`${server.url}/account/${path}`);
      await checkPage(small, name);
    }
    await phone.close();
    await page.getByLabel('Email or profile id').fill(person.email);
    await page.getByLabel('Password', { exact: true }).fill('Wrong-Horse-9');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Invalid username or password');
    await checkPage(page, 'sign-in-error');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Password & security' }).waitFor();
    expect(await page.locator('main').textContent()).toContain(person.id);
    // The sign-in is in the person's activity, with this browser and how it was made.
    await page.goto(`${server.url}/account/security/activity`);
    expect(await page.locator('main table').textContent()).toMatch(/Signed in with the password.*Chrom/s);
    expect(await page.locator('main table').textContent()).toMatch(/Failed sign-in: wrong password.*Chrom/s);

    await page.getByRole('button', { name: /Sign out/ }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('You are signed out');
    expect(await stillSignedIn(page)).toBe(false);
    expect(new URL(page.url()).pathname).toBe('/account/login');
    await context.close();
  });

  it('stays signed in when the access cookie is gone but the refresh cookie is good, as the API does', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Hedy Lamarr' });
    const context = await newContext(browser);
    const page = await context.newPage();
    await signIn(page, server, person.email, PASSWORD);
    await context.clearCookies({ name: 'service.accessToken' });
    expect(await stillSignedIn(page)).toBe(true);
    expect((await context.cookies()).map((c) => c.name)).toContain('service.accessToken');
    // Without the refresh cookie as well, the person is a guest.
    await context.clearCookies({ name: 'service.accessToken' });
    await context.clearCookies({ name: 'service.refreshToken' });
    expect(await stillSignedIn(page)).toBe(false);
    await context.close();
  });

  it('refuses a form without its CSRF token, with the request id to quote', LONG, async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${server.url}/account/login`);
    await page.locator('input[name=csrf]').first().evaluate((input) => {
      (input as unknown as { value: string }).value = 'forged';
    });
    await page.getByLabel('Email or profile id').fill('someone@example.org');
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    const answer = page.waitForResponse((res) => res.request().method() === 'POST');
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    const response = await answer;
    expect(response.status()).toBe(403);
    await page.getByRole('heading', { name: 'This did not work' }).waitFor();
    expect(await page.locator('main').textContent()).toContain(response.headers()['x-request-id']);
    await checkPage(page, 'error');
    await context.close();
  });
});

describe('resetting the password from the mail', () => {
  it('with "Log me out of all other sessions" (the default), every session ends', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Emmy Noether' });
    const phone = await newContext(browser, { userAgent: IPHONE });
    await signIn(await phone.newPage(), server, person.email, PASSWORD);

    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${server.url}/account/reset`);
    await checkPage(page, 'reset-request');
    const link = await requestReset(page, person.email);
    await page.goto(link);
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    expect(await page.getByLabel('Log me out of all other sessions').isChecked()).toBe(true);
    await checkPage(page, 'reset-password');
    await page.getByLabel('New password', { exact: true }).fill('New-Horse-10');
    await page.getByLabel('Confirm new password').fill('Other-Horse-10');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('The two passwords are not the same');
    await page.getByLabel('New password', { exact: true }).fill('New-Horse-10');
    await page.getByLabel('Confirm new password').fill('New-Horse-10');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Please sign in with your new password');

    expect(await stillSignedIn(await phone.newPage())).toBe(false);
    await signIn(page, server, person.email, 'New-Horse-10');
    await page.goto(`${server.url}/account/security/activity`);
    expect(await page.locator('main table').textContent()).toContain('Password reset from a mailed link');
    // The link is used up.
    await page.goto(link);
    await page.getByRole('heading', { name: 'This link no longer works' }).waitFor();
    await phone.close();
    await context.close();
  });

  it('without it, the other sessions stay; signed in here, this session stays too', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Lise Meitner' });
    const phone = await newContext(browser, { userAgent: IPHONE });
    await signIn(await phone.newPage(), server, person.email, PASSWORD);

    const context = await newContext(browser);
    const page = await context.newPage();
    await signIn(page, server, person.email, PASSWORD);
    const link = await requestReset(page, person.email);
    await page.goto(link);
    await page.getByLabel('New password', { exact: true }).fill('New-Horse-11');
    await page.getByLabel('Confirm new password').fill('New-Horse-11');
    await page.getByLabel('Log me out of all other sessions').uncheck();
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('heading', { name: 'Password & security' }).waitFor();
    expect(await page.getByRole('status').textContent()).toBe('Your password has been updated.');
    expect(await stillSignedIn(await phone.newPage())).toBe(true);

    // Ticked while signed in here: this session stays, the phone's ends.
    const again = await requestReset(page, person.email);
    await page.goto(again);
    await page.getByLabel('New password', { exact: true }).fill('New-Horse-12');
    await page.getByLabel('Confirm new password').fill('New-Horse-12');
    await page.getByRole('button', { name: 'Change password' }).click();
    await page.getByRole('heading', { name: 'Password & security' }).waitFor();
    expect(await page.getByRole('status').textContent()).toContain('all other sessions have been logged out');
    expect(await stillSignedIn(page)).toBe(true);
    expect(await stillSignedIn(await phone.newPage())).toBe(false);
    await phone.close();
    await context.close();
  });

  it('an expired reset link says so and sends a new one in one click', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Marie Curie' });
    const context = await newContext(browser);
    const page = await context.newPage();
    const old = await requestReset(page, person.email);
    clock.advance(2 * 60 * 60 * 1000);
    await page.goto(old);
    await page.getByRole('heading', { name: 'This link no longer works' }).waitFor();
    expect(await page.locator('main').textContent()).toMatch(/password-reset link has expired/);
    expect(await page.locator('main').textContent()).toMatch(/request id/);
    await checkPage(page, 'reset-link-expired');
    await page.getByRole('button', { name: 'Send me a new link' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await expect.poll(async () => linkInMail(server, person.email, '/account/user/password')).not.toBe(old);
    await page.goto(await linkInMail(server, person.email, '/account/user/password'));
    await page.getByRole('heading', { name: 'Choose a new password' }).waitFor();
    await context.close();
  });
});

describe('password & security', () => {
  let context: BrowserContext;
  let phone: BrowserContext;
  let page: Page;
  let person: { id: string; email: string };
  let app: Server;

  beforeAll(async () => {
    person = await createActiveUser(server, { fullname: 'Chien-Shiung Wu' });
    phone = await newContext(browser, { userAgent: IPHONE, phone: true });
    await signIn(await phone.newPage(), server, person.email, PASSWORD);
    context = await newContext(browser);
    page = await context.newPage();
    await signIn(page, server, person.email, PASSWORD);
    app = createServer((_req, res) => res.end('<!doctype html><title>Signed in</title><p>Back in the application.</p>'));
    await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  }, 60_000);
  afterAll(async () => {
    await phone?.close();
    await context?.close();
    await new Promise<void>((resolve) => app.close(() => resolve()));
  });

  it('shows the sessions with browser, system and address, and ends the phone’s', LONG, async () => {
    await page.goto(`${server.url}/account/security/sessions`);
    const sessions = page.locator('main');
    expect(await sessions.textContent()).toContain('this browser');
    expect(await sessions.textContent()).toMatch(/Safari 17 on iOS 17/);
    expect(await sessions.textContent()).toContain('127.0.0.1');
    expect(await sessions.textContent()).toContain('With the password');
    await checkPage(page, 'security-sessions');
    const phonePage = await phone.newPage();
    await phonePage.goto(`${server.url}/account/security/sessions`);
    await checkPage(phonePage, 'security-sessions-phone');

    await page.getByRole('button', { name: /End this session.*Safari/ }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('The session was ended');
    expect(new URL(page.url()).pathname).toBe('/account/security/sessions');
    expect(await page.locator('main').textContent()).not.toMatch(/Safari/);
    expect(await stillSignedIn(phonePage)).toBe(false);

    // "End all other sessions" ends every other at once.
    const tablet = await newContext(browser, { userAgent: IPHONE });
    const desktop = await newContext(browser);
    await signIn(await tablet.newPage(), server, person.email, PASSWORD);
    await signIn(await desktop.newPage(), server, person.email, PASSWORD);
    await page.goto(`${server.url}/account/security/sessions`);
    expect(await page.getByRole('button', { name: /End this session/ }).count()).toBe(2);
    await page.getByRole('button', { name: 'End all other sessions' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Every other session was ended');
    expect(await page.getByRole('button', { name: /End this session/ }).count()).toBe(0);
    expect(await stillSignedIn(await tablet.newPage())).toBe(false);
    expect(await stillSignedIn(await desktop.newPage())).toBe(false);
    expect(await stillSignedIn(page)).toBe(true);
    await tablet.close();
    await desktop.close();
  });

  it('changes the password: the current one is required, other sessions end, a mail tells', LONG, async () => {
    const other = await newContext(browser, { userAgent: IPHONE });
    await signIn(await other.newPage(), server, person.email, PASSWORD);
    await page.goto(`${server.url}/account/security/password`);
    await page.getByLabel('Current password').fill('Wrong-Horse-9');
    await page.getByLabel('New password', { exact: true }).fill('Brand-New-Horse-1');
    await page.getByLabel('Confirm new password').fill('Brand-New-Horse-1');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('The current password is not correct');
    await checkPage(page, 'security-password-error');

    await page.getByLabel('Current password').fill(PASSWORD);
    await page.getByLabel('New password', { exact: true }).fill('Brand-New-Horse-1');
    await page.getByLabel('Confirm new password').fill('Brand-New-Horse-1');
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Your password was changed, and every other session was signed out');
    expect(new URL(page.url()).pathname).toBe('/account/security/password');
    expect(await stillSignedIn(page)).toBe(true);
    expect(await stillSignedIn(await other.newPage())).toBe(false);
    await page.goto(`${server.url}/account/security/activity`);
    expect(await page.locator('main table').textContent()).toContain('Password changed');
    expect((await lastMailTo(server.dataDir, person.email)).subject).toBe('Your password was changed');
    await other.close();
  });

  it('lists an application signed into through our provider, with its scopes, and revokes it', LONG, async () => {
    const callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
    await registerClient(server, 'paper-finder', { name: 'Paper Finder', redirect: callback });
    const { url } = await authorizationRequest(await relyingParty(server, 'paper-finder'), { redirect_uri: callback });
    // Signed in on the pages, so signed in for the provider: straight to its consent page.
    await page.goto(url.toString());
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.toString().startsWith(callback));

    await page.goto(`${server.url}/account/security/apps`);
    const apps = page.locator('main');
    expect(await apps.textContent()).toContain('Paper Finder');
    expect(await apps.textContent()).toContain('See your email address and whether it is confirmed');
    await checkPage(page, 'security-with-application');
    await page.getByRole('button', { name: /Revoke access.*Paper Finder/ }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('can no longer sign you in');
    expect(await page.locator('main').textContent()).toContain('You have not signed in to any application');
    // Both are in the person's activity.
    await page.goto(`${server.url}/account/security/activity`);
    expect(await page.locator('main table').textContent()).toMatch(/Paper Finder was revoked.*Paper Finder was allowed to sign you in/s);
    // The next sign-in to it asks for consent again.
    await page.goto(url.toString());
    await page.getByRole('button', { name: 'Allow' }).waitFor();
  });

  it('registers an application from the page: its id and secret shown once, waiting for approval', LONG, async () => {
    await page.goto(`${server.url}/account/security/apps`);
    await page.getByLabel('Name, as people will see it').fill('Reviewer Matcher');
    await page.getByLabel('Address to come back to after signing in').fill('javascript:alert(1)');
    await page.getByRole('button', { name: 'Register the application' }).click();
    expect(await page.locator('#appRedirectUri-error').textContent()).toContain('must use https');
    await page.getByLabel('Address to come back to after signing in').fill('https://matcher.example/callback');
    await page.getByLabel('It may keep people signed in while they are away').check();
    await page.getByRole('button', { name: 'Register the application' }).click();
    await page.getByRole('heading', { name: 'Your application is registered' }).waitFor();
    const text = (await page.locator('main').textContent()) ?? '';
    const clientId = /Its client id: (\S+)/.exec(text)?.[1] ?? '';
    expect(text).toMatch(/Its client secret: \S{43}/);
    expect(text).toContain('waits for an operator’s approval');
    expect(await admin(server, 'oidc-client', 'list')).toContain(`${clientId}\tpending\tReviewer Matcher`);
  });

  it('signs out from an application (RP-initiated logout): back to the app, and signed out here', LONG, async () => {
    const callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
    const registered = await registerByHttp(server, await approvedRegistrationToken(server), {
      client_name: 'Session Board',
      redirect_uris: [callback],
      post_logout_redirect_uris: [`${callback}/signed-out`],
      token_endpoint_auth_method: 'none',
    });
    const rp = await relyingParty(server, registered.body.client_id);
    const request = await authorizationRequest(rp, { redirect_uri: callback });
    await page.goto(request.url.toString());
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.toString().startsWith(callback));
    const tokens = await client.authorizationCodeGrant(rp, new URL(page.url()), { pkceCodeVerifier: request.verifier, expectedState: request.state, expectedNonce: request.nonce, idTokenExpected: true });
    await page.goto(`${server.url}/account/security/apps`);
    expect(await page.locator('main').textContent()).toMatch(/Session Board.*An application in your browser or on your device\. Last used/s);

    await page.goto(client.buildEndSessionUrl(rp, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: `${callback}/signed-out`, state: 'see-you' }).toString());
    await page.waitForURL((u) => u.toString().startsWith(`${callback}/signed-out`));
    expect(new URL(page.url()).searchParams.get('state')).toBe('see-you');
    expect(await stillSignedIn(page)).toBe(false);
  });
});
