/**
 * Two-step verification on the account pages, in Chromium against the real server: setting up
 * an authenticator app (its QR code and secret, a code computed by `otpauth` at the server's own
 * controlled clock), codes by email, passkeys (Chromium's virtual authenticator through the
 * DevTools protocol; the server runs on `http://localhost`, since browsers refuse WebAuthn on an
 * IP address), recovery codes, remembered devices; the sign-in's second step with each of them
 * and its lockout; and "Confirm it is you" before a change that needs a recent proof.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { TestClock } from '../helpers/clock.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { addAuthenticator, checkPage, codeInMail, IPHONE, newContext, signIn, totpCode } from './helpers.ts';

/** Each test drives Chromium through several pages: slow on a loaded 2-core machine. */
const LONG = { timeout: 120_000 };

let server: TestServer;
let browser: Browser;
const clock = new TestClock();

beforeAll(async () => {
  server = await startServer({}, undefined, { now: clock.now, hostName: 'localhost' });
  browser = await launchBrowser();
}, 60_000);
afterAll(async () => {
  await browser?.close();
  await server?.close();
});

/** Moves the server's clock to the next 30-second step, so that each code of a test is a new one (a code is taken once). */
function nextStep(): void {
  clock.advance(30_000 - (clock.now() % 30_000) + 1_000);
}

/** Past the ten minutes in which a sign-in counts as a recent proof of the person. */
const LATER = 11 * 60_000;

/** The password step of the sign-in page; the page after it is the second step's (or the security page). */
async function passwordStep(page: Page, email: string, password = PASSWORD): Promise<void> {
  await page.goto(`${server.url}/account/login`);
  await page.getByLabel('Email or profile id').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: /Confirm it is you|Password & security/ }).waitFor();
}

async function signOut(page: Page): Promise<void> {
  await page.getByRole('button', { name: /Sign out/ }).click();
  await page.getByRole('heading', { name: 'Sign in' }).waitFor();
}

/** Password & security: its overview (after signing in), or the area page a change goes back to. */
async function securityHeading(page: Page): Promise<void> {
  await page.getByRole('heading', { name: /^(Password & security|Two-step verification|Passkeys)$/, level: 1 }).waitFor();
}

/** The two-step area's page. */
async function twoStep(page: Page): Promise<void> {
  await page.goto(`${server.url}/account/security/two-step`);
}

/** Sets up the authenticator app on the security page; answers its secret and the recovery codes shown. */
async function setUpTotp(page: Page): Promise<{ secret: string; codes: string[] }> {
  await twoStep(page);
  await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
  await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor();
  const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replaceAll(' ', '');
  nextStep();
  await page.getByLabel('The 6-digit code the app shows now').fill(totpCode(secret, clock.now()));
  await page.getByRole('button', { name: 'Turn on' }).click();
  await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
  const codes = await page.locator('ul.codes code').allTextContents();
  await page.getByRole('link', { name: /back to Password & security/ }).click();
  await securityHeading(page);
  return { secret, codes };
}

describe('an authenticator app', () => {
  it('is set up from its QR code, then asked for at sign-in; a remembered browser skips it until forgotten; a recovery code stands in', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Grace Hopper' });
    const context = await newContext(browser);
    const page = await context.newPage();
    await signIn(page, server, person.email, PASSWORD);
    await twoStep(page);
    expect(await page.locator('main').textContent()).toContain('Off.');
    await checkPage(page, 'security-two-step-off');

    await page.getByRole('button', { name: 'Set up an authenticator app' }).click();
    await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor();
    // The QR code is the data URL `POST /mfa/setup/totp/init` answers; the secret is there as text too.
    expect(await page.getByRole('img', { name: /QR code/ }).getAttribute('src')).toMatch(/^data:image\/png;base64,/);
    const secret = ((await page.locator('#totp-secret').textContent()) ?? '').replaceAll(' ', '');
    expect(secret).toMatch(/^[A-Z2-7]{32}$/);
    await checkPage(page, 'two-step-totp-setup');
    nextStep();
    const right = totpCode(secret, clock.now());
    await page.getByLabel('The 6-digit code the app shows now').fill(right === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Turn on' }).click();
    // A wrong code is a typing mistake: said at the top, with no request id to quote (that is for our own failures).
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('There is a problem');
    expect(await page.getByRole('alert').textContent()).not.toContain('request id');
    // The same secret is shown again, so the app already scanned still works.
    expect(((await page.locator('#totp-secret').textContent()) ?? '').replaceAll(' ', '')).toBe(secret);
    await checkPage(page, 'two-step-totp-setup-error');
    await page.getByLabel('The 6-digit code the app shows now').fill(right);
    await page.getByRole('button', { name: 'Turn on' }).click();
    await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    const codes = await page.locator('ul.codes code').allTextContents();
    expect(codes).toHaveLength(10);
    for (const code of codes) expect(code).toMatch(/^[A-Z0-9]{4}-[A-Z0-9]{4}$/);
    await checkPage(page, 'two-step-recovery-codes');
    await page.getByRole('link', { name: /back to Password & security/ }).click();
    await securityHeading(page);
    expect(new URL(page.url()).pathname).toBe('/account/security/two-step');
    expect(await page.locator('main').textContent()).toMatch(/On\..*authenticator app.*10 of 10 recovery codes left/s);
    await checkPage(page, 'security-two-step-on');
    await page.goto(`${server.url}/account/security/activity`);
    expect(await page.locator('main table').textContent()).toContain('Authenticator app set up');

    // Signing in now asks for a code; a wrong one is refused, tied to its field.
    await signOut(page);
    await passwordStep(page, person.email);
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    expect(await page.getByLabel('A code from your authenticator app').isChecked()).toBe(true);
    await checkPage(page, 'sign-in-second-step');
    nextStep();
    const code = totpCode(secret, clock.now());
    await page.getByLabel('Code', { exact: true }).fill(code === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Verify' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('There is a problem');
    expect(await page.getByRole('alert').textContent()).not.toContain('request id');
    // The wrong code is tied to its field: marked invalid, and linked from the summary.
    expect(await page.getByLabel('Code', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#error-summary a[href="#code"]').textContent()).toContain('Wrong code. 4 tries left before sign-in is locked for 15 minutes.');
    await checkPage(page, 'sign-in-second-step-error');
    await page.getByLabel('Code', { exact: true }).fill(code);
    await page.getByLabel('Remember this device for 30 days').check();
    await page.getByRole('button', { name: 'Verify' }).click();
    await securityHeading(page);
    await twoStep(page);
    expect(await page.locator('main').textContent()).toContain('1 browser skips the second step');

    // The remembered browser goes straight in; once forgotten, it is asked again.
    await signOut(page);
    await passwordStep(page, person.email);
    await securityHeading(page);
    await twoStep(page);
    await page.getByRole('button', { name: 'Forget them all' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Every remembered browser will ask for the second step again');
    await signOut(page);
    await passwordStep(page, person.email);
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();

    // A recovery code stands in for the app, once.
    await page.getByLabel('A recovery code').check();
    await page.getByLabel('Code', { exact: true }).fill(codes[0] ?? '');
    await page.getByRole('button', { name: 'Verify' }).click();
    await securityHeading(page);
    await twoStep(page);
    expect(await page.locator('main').textContent()).toContain('9 of 10 recovery codes left');
    await context.close();
  });
});

describe('codes by email', () => {
  it('are turned on, mailed at sign-in on "Send me a code", and five wrong codes lock the second step with the time it unlocks', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Barbara Liskov' });
    // On a phone: the pages fit a 390-pixel screen.
    const context = await newContext(browser, { userAgent: IPHONE, phone: true });
    const page = await context.newPage();
    await signIn(page, server, person.email, PASSWORD);
    await twoStep(page);
    await page.getByRole('button', { name: 'Turn on codes by email' }).click();
    // The first factor comes with its recovery codes.
    await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    await page.getByRole('link', { name: /back to Password & security/ }).click();
    expect(await page.locator('main').textContent()).toContain('On: signing in can mail a 6-digit code');
    await checkPage(page, 'security-two-step-phone');

    await signOut(page);
    await passwordStep(page, person.email);
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    expect(await page.getByLabel('A code sent to your email').isChecked()).toBe(true);
    await page.getByRole('button', { name: 'Send me a code by email' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('A code was sent to your email');
    await checkPage(page, 'sign-in-second-step-email-sent-phone');
    const code = await codeInMail(server, person.email);
    await page.getByLabel('Code', { exact: true }).fill(code);
    await page.getByRole('button', { name: 'Verify' }).click();
    await securityHeading(page);

    // Five wrong codes in a row: locked for 15 minutes, and the page says until when.
    await signOut(page);
    await passwordStep(page, person.email);
    const wrong = code === '000000' ? '111111' : '000000';
    for (let i = 0; i < 5; i++) {
      await page.getByLabel('Code', { exact: true }).fill(wrong);
      await page.getByRole('button', { name: 'Verify' }).click();
      await page.getByRole('alert').waitFor();
    }
    const until = new Date(clock.now() + 15 * 60_000).toISOString().slice(0, 16).replace('T', ' ');
    expect(await page.getByRole('alert').textContent()).toContain(`locked due to too many failed MFA attempts. You can try again after ${until} UTC`);
    await checkPage(page, 'sign-in-second-step-locked');
    clock.advance(16 * 60_000);
    await context.close();
  });
});

describe('changes that need a recent proof', () => {
  it('ask "Confirm it is you" (the password, or a code) and then carry on', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Frances Allen' });
    const context = await newContext(browser);
    const page = await context.newPage();
    await signIn(page, server, person.email, PASSWORD);
    const { secret } = await setUpTotp(page);
    // Adding a factor later needs a recent proof too (a stolen old session cannot add its own).
    clock.advance(LATER);
    await page.getByRole('button', { name: 'Turn on codes by email' }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Codes by email are on');

    // The preferred method is offered first at sign-in.
    await page.getByLabel('Offered first when you sign in').selectOption('emailOtp');
    await page.getByRole('button', { name: 'Save' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('The method offered first');

    // Eleven minutes on, new recovery codes need the password first; a wrong one is refused.
    clock.advance(LATER);
    await page.getByRole('button', { name: 'Make new recovery codes' }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await checkPage(page, 'security-confirm-identity');
    await page.getByLabel('Your password').fill('Wrong-Horse-9');
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Invalid password');
    await checkPage(page, 'security-confirm-identity-error');
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('replace the old ones');
    await page.getByRole('link', { name: /back to Password & security/ }).click();

    // Replacing the app, later: "Confirm it is you", then the setup page of a new key.
    clock.advance(LATER);
    await page.getByRole('button', { name: 'Replace the app' }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByRole('heading', { name: 'Set up an authenticator app' }).waitFor();
    expect(((await page.locator('#totp-secret').textContent()) ?? '').replaceAll(' ', '')).not.toBe(secret);
    await page.getByRole('link', { name: 'Cancel' }).click();
    await securityHeading(page);

    // Later again: turning the app off, confirmed with a code from the app itself (the old one: a replacement not finished leaves it on).
    clock.advance(LATER);
    await page.getByRole('button', { name: 'Turn off the authenticator app' }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.getByLabel('A code from your authenticator app').check();
    nextStep();
    const appCode = totpCode(secret, clock.now());
    await page.getByLabel('Code', { exact: true }).fill(appCode === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Confirm with the code' }).click();
    // The session's own allowance of wrong codes: the page says how many are left.
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Wrong code. 4 tries left before sign-in is locked for 15 minutes.');
    expect(await page.getByLabel('Code', { exact: true }).getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#error-summary a[href="#code"]').count()).toBe(1);
    expect(await page.getByLabel('Your password').getAttribute('aria-invalid')).toBeNull();
    await page.getByLabel('A code from your authenticator app').check();
    await page.getByLabel('Code', { exact: true }).fill(appCode);
    await page.getByRole('button', { name: 'Confirm with the code' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('The authenticator app was removed');
    expect(await page.locator('main').textContent()).toContain('Set up an authenticator app');

    // And codes by email off, confirmed with a mailed code.
    clock.advance(LATER);
    await page.getByRole('button', { name: 'Turn off codes by email' }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.getByLabel('A code sent to your email').check();
    await page.getByRole('button', { name: 'Send me a code by email' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('A code was sent to your email');
    await page.getByLabel('A code sent to your email').check();
    await page.getByLabel('Code', { exact: true }).fill(await codeInMail(server, person.email));
    await page.getByRole('button', { name: 'Confirm with the code' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('Codes by email were turned off');
    expect(await page.locator('main').textContent()).toContain('Off.');
    await context.close();
  });
});

describe('the forms of the second step', () => {
  it('refuse a post without the page’s CSRF token, with the request id', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Mary Jackson' });
    const context = await newContext(browser);
    const page = await context.newPage();
    await signIn(page, server, person.email, PASSWORD);
    await setUpTotp(page);
    await signOut(page);
    await passwordStep(page, person.email);
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    // (A string, evaluated in the page: the tests are compiled without the DOM's types.)
    await page.evaluate(`document.querySelectorAll('input[name=csrf]').forEach((input) => { input.value = 'forged-forged-forged-forged-1234' })`);
    await page.getByLabel('Code', { exact: true }).fill('123456');
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'This did not work' }).waitFor();
    expect(await page.locator('main').textContent()).toMatch(/did not come from this site.*request id/s);
    await context.close();
  });
});

describe('passkeys', () => {
  it('are added with a name, sign in without a password and as the second step, and are removed after confirming', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Radia Perlman' });
    const context = await newContext(browser);
    const page = await context.newPage();
    await addAuthenticator(context, page);
    await signIn(page, server, person.email, PASSWORD);
    await page.goto(`${server.url}/account/security/passkeys`);
    await page.getByLabel('Name of the new passkey').fill('Work laptop');
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    // The first factor: its recovery codes, once.
    await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    await page.getByRole('link', { name: /back to Password & security/ }).click();
    await securityHeading(page);
    const list = page.getByRole('list', { name: 'Your passkeys' });
    expect(await list.textContent()).toMatch(/Work laptop.*Added.*UTC.*Last used.*never/s);
    await checkPage(page, 'security-passkeys');

    // Without a password.
    await signOut(page);
    await page.getByRole('button', { name: 'Sign in with a passkey' }).click();
    await securityHeading(page);
    await page.goto(`${server.url}/account/security/activity`);
    expect(await page.locator('main table').textContent()).toContain('Signed in with a passkey alone');

    // As the second step after the password.
    await signOut(page);
    await passwordStep(page, person.email);
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await checkPage(page, 'sign-in-second-step-passkey');
    await page.getByRole('button', { name: 'Use your passkey' }).click();
    await securityHeading(page);

    // Later, adding another passkey asks "Confirm it is you" first (the script cannot show that form).
    clock.advance(LATER);
    await page.goto(`${server.url}/account/security/passkeys`);
    await page.getByRole('button', { name: 'Add a passkey' }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('you can change how you sign in for the next 10 minutes');

    // Removing needs a recent proof too: confirmed, it goes on.
    clock.advance(LATER);
    await page.getByRole('button', { name: /Remove the passkey Work laptop/ }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.getByLabel('Your password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('The passkey was removed');
    expect(await page.locator('main').textContent()).toContain('No passkey yet');
    await context.close();
  });
});
