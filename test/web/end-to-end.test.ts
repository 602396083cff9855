/**
 * Issue 18's check, as a new person does it, all in Chromium and nothing through the API by
 * hand: sign up, follow the mail, activate, add a TOTP factor and a passkey, sign out, sign in
 * with both (password and a code from the app; the passkey alone), reset the password from the
 * mail, see and end the other session, and revoke an application signed into through our
 * OpenID Connect provider (whose sign-in page asks for the second step too).
 *
 * The server runs on `http://localhost` (browsers refuse WebAuthn on an IP address) with a
 * controlled clock, so that every TOTP code is computed at the server's own time.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import * as client from 'openid-client';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { TestClock } from '../helpers/clock.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { authorizationRequest, registerClient, relyingParty } from '../oidc/helpers.ts';
import { addAuthenticator, checkPage, IPHONE, linkInMail, newContext, totpCode } from './helpers.ts';

/** A browser walk through every flow of the pages (Chromium, many pages): minutes on a loaded 2-core machine. */
const LONG = { timeout: 180_000 };

const EMAIL = 'katherine@example.org';
const FIRST_PASSWORD = 'Correct-Horse-9';
const NEW_PASSWORD = 'Orbital-Horse-62';

let server: TestServer;
let browser: Browser;
/** The application that signs people in through our provider, and its redirect URI. */
let app: Server;
let callback: string;
const clock = new TestClock();

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now, hostName: 'localhost' });
  browser = await launchBrowser();
  app = createServer((_req, res) => res.end('<!doctype html><html lang="en"><title>Paper Finder</title><p>Back in Paper Finder.</p></html>'));
  await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve));
  callback = `http://127.0.0.1:${(app.address() as AddressInfo).port}/callback`;
  await registerClient(server, 'paper-finder', { name: 'Paper Finder', redirect: callback });
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await new Promise<void>((resolve) => (app ? app.close(() => resolve()) : resolve()));
  await server?.close();
});

/** The next 30-second step of the server's clock: each code typed is a new one (a code is taken once). */
function nextStep(): void {
  clock.advance(30_000 - (clock.now() % 30_000) + 1_000);
}

/** Password & security: its overview (after signing in), or the area page a change goes back to. */
async function security(page: Page): Promise<void> {
  await page.getByRole('heading', { name: /^(Password & security|Two-step verification|Passkeys)$/, level: 1 }).waitFor();
}

async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: /Sign out/ }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
}

/** The password, then a code from the app on the second step. */
async function signInWithTotp(page: Page, password: string, secret: string): Promise<void> {
  await page.goto(`${server.url}/account/login`);
  await page.getByLabel('Email or profile id').fill(EMAIL);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
  await page.getByLabel('A code from your authenticator app').check();
  nextStep();
  await page.getByLabel('Code', { exact: true }).fill(totpCode(secret, clock.now()));
  await page.getByRole('button', { name: 'Verify' }).click();
  await security(page);
}

describe('a new person, from signing up to revoking an application', () => {
  it('does everything issue 18 names, in Chromium', LONG, async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await addAuthenticator(context, page);

    // 1. Sign up, follow the mail, activate.
    await page.goto(`${server.url}/account/signup`);
    await page.getByLabel('Full name').fill('Katherine Johnson');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(FIRST_PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await page.goto(await linkInMail(server, EMAIL, '/account/profile/activate'));
    await page.getByRole('heading', { name: 'Complete your profile' }).waitFor();
    await page.getByLabel('Position').fill('Research Mathematician');
    await page.getByLabel('Institution', { exact: true }).fill('NASA Langley Research Center');
    await page.getByLabel('Institution domain').fill('nasa.gov');
    await page.getByLabel('Since (year)').fill('1953');
    await page.getByRole('button', { name: 'Activate my profile' }).click();
    await security(page);
    expect(await page.getByRole('status').textContent()).toContain('Your profile is active and you are signed in');

    // 2. A TOTP factor (scanned from its QR code; its key read as text here) and a passkey.
    await page.getByRole('link', { name: 'Two-step verification' }).click();
    await security(page);
    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor();
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replaceAll(' ', '');
    nextStep();
    await page.getByLabel('The 6-digit code the app shows now').fill(totpCode(secret, clock.now()));
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    expect(await page.locator('ul.codes code').count()).toBe(10);
    await page.getByRole('link', { name: /back to Password & security/ }).click();
    await security(page);
    await page.getByRole('link', { name: 'Passkeys', exact: true }).click();
    await page.getByLabel('Name of the new passkey').fill('Office computer');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Your passkey was added');
    expect(await page.locator('main').textContent()).toContain('Office computer');
    await page.goto(`${server.url}/account/security/two-step`);
    expect(await page.locator('main').textContent()).toMatch(/authenticator app; your passkey/);

    // 3. Sign out; sign in with the password and a code from the app; then with the passkey alone.
    await signOut(page);
    await signInWithTotp(page, FIRST_PASSWORD, secret);
    await signOut(page);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await security(page);
    await page.goto(`${server.url}/account/security/passkeys`);
    expect(await page.locator('main').textContent()).not.toMatch(/Last used\s*never/);
    await signOut(page);

    // 4. Reset the password from the mail (a reset does not turn the second step off).
    await page.getByRole('link', { name: 'Forgot your password?' }).click();
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByRole('button', { name: 'Send the reset link' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await page.goto(await linkInMail(server, EMAIL, '/account/user/password'));
    await page.getByLabel('New password', { exact: true }).fill(NEW_PASSWORD);
    await page.getByLabel('Confirm new password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Change password' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Please sign in with your new password');
    await signInWithTotp(page, NEW_PASSWORD, secret);

    // 5. Another session (a phone), seen on the security page and ended there.
    const phone = await newContext(browser, { userAgent: IPHONE, phone: true });
    const phonePage = await phone.newPage();
    await signInWithTotp(phonePage, NEW_PASSWORD, secret);
    await page.goto(`${server.url}/account/security/sessions`);
    expect(await page.locator('main').textContent()).toMatch(/Safari 17 on iOS 17/);
    await page.getByRole('button', { name: /End this session.*Safari/ }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('The session was ended');
    await phonePage.goto(`${server.url}/account/security`);
    await phonePage.getByRole('heading', { name: 'Sign in' }).waitFor();
    await phone.close();

    // 6. Sign in to an application through our provider (its sign-in page asks for the second
    //    step too), then revoke it on the security page.
    const rp = await relyingParty(server, 'paper-finder');
    const { url, verifier, state, nonce } = await authorizationRequest(rp, { redirect_uri: callback, prompt: 'login' });
    await page.goto(url.toString());
    await page.getByRole('heading', { name: 'Sign in to continue to Paper Finder' }).waitFor();
    await checkPage(page, 'oidc-sign-in');
    await page.getByLabel('Email').fill(EMAIL);
    await page.getByLabel('Password').fill(NEW_PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await checkPage(page, 'oidc-second-step');
    await page.getByLabel('A code from your authenticator app').check();
    nextStep();
    await page.getByLabel('Code', { exact: true }).fill(totpCode(secret, clock.now()));
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'Paper Finder wants to sign you in' }).waitFor();
    await checkPage(page, 'oidc-consent');
    await page.getByRole('button', { name: 'Allow' }).click();
    await page.waitForURL((u) => u.toString().startsWith(callback));
    const tokens = await client.authorizationCodeGrant(rp, new URL(page.url()), { pkceCodeVerifier: verifier, expectedState: state, expectedNonce: nonce });
    expect(tokens.claims()?.amr).toEqual(expect.arrayContaining(['pwd', 'otp', 'mfa']));

    await page.goto(`${server.url}/account/security/apps`);
    expect(await page.locator('main').textContent()).toContain('Paper Finder');
    await page.getByRole('button', { name: /Revoke access.*Paper Finder/ }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('can no longer sign you in');
    expect(await page.locator('main').textContent()).toContain('You have not signed in to any application');
    // Everything above is in the person's activity.
    await page.goto(`${server.url}/account/security/activity`);
    const events = (await page.locator('main table').textContent()) ?? '';
    for (const what of [
      'Authenticator app set up',
      'Passkey added',
      'Password reset from a mailed link',
      'A session was ended',
      'Signed in with the password and an authenticator app code',
      'Signed in with a passkey alone',
      'Paper Finder was allowed to sign you in',
      'Paper Finder was revoked',
    ]) expect(events).toContain(what);
    await checkPage(page, 'end-to-end-security');
    await context.close();
  });
});
