/**
 * The account forms' errors in plain words, in the form's order, tied to their inputs (no
 * request id for a typing mistake); the show-password button; and a person not yet active who
 * signs in: the activation link again, or the sign-up mail's code typed, leads to activation.
 * In Chromium, with axe-core on every page.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { loginPage } from '../../server/web/pages/provider/views.ts';
import { readOutbox } from '../helpers/outbox.ts';
import type { TestServer } from '../helpers/server.ts';
import { checkPage, codeInMail, linkInMail, newContext, closeServerAndBrowser, openServerAndBrowser } from './helpers.ts';

const LONG = { timeout: 120_000 };
const PASSWORD = 'Correct-Horse-9';
let server: TestServer;
let browser: Browser;

beforeAll(async () => ({ server, browser } = await openServerAndBrowser()), 60_000);
afterAll(() => closeServerAndBrowser({ server, browser }));

/** The error summary's lines and where each links. */
async function summary(page: Page): Promise<Array<{ text: string; href: string | null }>> {
  const links = page.locator('#error-summary li a');
  const found: Array<{ text: string; href: string | null }> = [];
  for (let i = 0; i < (await links.count()); i += 1) found.push({ text: ((await links.nth(i).textContent()) ?? '').trim(), href: await links.nth(i).getAttribute('href') });
  return found;
}

/** The input is marked invalid and described by the message next to it. */
async function tiedTo(page: Page, id: string, message: string): Promise<void> {
  const input = page.locator(`#${id}`);
  expect(await input.getAttribute('aria-invalid')).toBe('true');
  const described = ((await input.getAttribute('aria-describedby')) ?? '').split(' ');
  expect(described).toContain(`${id}-error`);
  expect(await page.locator(`#${id}-error`).textContent()).toContain(message);
}

async function signUp(page: Page, fullname: string, email: string, password: string): Promise<void> {
  await page.goto(`${server.url}/account/signup`);
  await page.getByLabel('Full name').fill(fullname);
  await page.getByLabel('Email').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(password);
  await page.getByRole('button', { name: 'Create account' }).click();
}

describe('errors in plain words, in the form’s order', () => {
  it('lists the sign-up form’s errors as its fields come, each linked to its input and said next to it, without a request id', LONG, async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await signUp(page, '', 'not-an-email', 'short');
    await page.locator('#error-summary').waitFor();
    expect(await summary(page)).toEqual([
      { text: 'Enter your full name', href: '#fullname' },
      { text: 'Enter an email address like name@example.org', href: '#email' },
      { text: 'The password must be at least 8 characters', href: '#password' },
    ]);
    await tiedTo(page, 'fullname', 'Enter your full name');
    await tiedTo(page, 'email', 'Enter an email address like name@example.org');
    await tiedTo(page, 'password', 'The password must be at least 8 characters');
    expect(await page.locator('main').textContent()).not.toMatch(/request id|Too small|expected string/);
    expect(await page.title()).toBe('Error: Create your account');
    await checkPage(page, 'sign-up-errors');

    // The server's own refusal of a common password, tied to the password.
    await signUp(page, 'Chien-Shiung Wu', 'wu@example.org', 'Password123');
    await page.locator('#error-summary').waitFor();
    expect(await summary(page)).toEqual([{ text: expect.stringContaining('list of common or breached passwords') as unknown as string, href: '#password' }]);
    await tiedTo(page, 'password', 'common or breached');
    expect(await page.locator('main').textContent()).not.toMatch(/request id/);
    await context.close();
  });

  it('words the sign-in and reset forms’ errors the same way', LONG, async () => {
    const context = await newContext(browser, { phone: true });
    const page = await context.newPage();
    await page.goto(`${server.url}/account/login`);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.locator('#error-summary').waitFor();
    expect(await summary(page)).toEqual([
      { text: 'Enter your email address or profile id', href: '#email' },
      { text: 'Enter your password', href: '#password' },
    ]);
    await tiedTo(page, 'password', 'Enter your password');
    await checkPage(page, 'sign-in-errors-phone');

    await page.goto(`${server.url}/account/reset`);
    await page.getByRole('button', { name: 'Send the reset link' }).click();
    await page.locator('#error-summary').waitFor();
    expect(await summary(page)).toEqual([{ text: 'Enter your email address or profile id', href: '#email' }]);
    await checkPage(page, 'reset-request-errors-phone');
    await context.close();
  });
});

describe('the show-password button', () => {
  it('shows and hides what was typed, as a pressed button that controls the input', LONG, async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${server.url}/account/signup`);
    const input = page.locator('#password');
    await input.fill('Tea-Leaves-and-Milk');
    const toggle = page.getByRole('button', { name: 'Show password' });
    expect(await toggle.getAttribute('aria-controls')).toBe('password');
    expect(await toggle.getAttribute('aria-pressed')).toBe('false');
    expect(await toggle.getAttribute('type')).toBe('button');
    await toggle.click();
    expect(await input.getAttribute('type')).toBe('text');
    expect(await toggle.getAttribute('aria-pressed')).toBe('true');
    expect(await input.inputValue()).toBe('Tea-Leaves-and-Milk');
    await checkPage(page, 'sign-up-password-shown');
    await toggle.click();
    expect(await input.getAttribute('type')).toBe('password');
    // Pressing it never sends the form.
    expect(new URL(page.url()).pathname).toBe('/account/signup');
    await page.goto(`${server.url}/account/login`);
    expect(await page.getByRole('button', { name: 'Show password' }).getAttribute('aria-controls')).toBe('password');
    await context.close();
  });

  it('is asked for on every password input of the account pages and the provider’s login page, which work without it', async () => {
    for (const path of ['/account/signup', '/account/login']) {
      const html = await (await fetch(`${server.url}${path}`)).text();
      expect(html).toMatch(/<input id="password"[^>]* type="password"[^>]* data-show-password/);
      // The button is the script's: without it, an ordinary password input.
      expect(html).not.toContain('Show password');
    }
    const provider = loginPage({ interactionId: 'i', csrf: 'c', clientName: 'Paper Finder', resetUrl: '/account/reset', requestId: 'r1' });
    expect(provider).toMatch(/<input id="password"[^>]* type="password"[^>]* data-show-password/);
    expect(provider).toContain('<label for="email">Email or profile id');
    expect(provider).toContain('Forgot your password?');
  });
});

describe('a person not yet active who signs in', () => {
  it('is offered the activation link again, and reaches activation by typing the mailed code', LONG, async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await signUp(page, 'Emmy Noether', 'emmy@example.org', PASSWORD);
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await expect.poll(async () => (await readOutbox(server.dataDir)).filter((m) => m.to === 'emmy@example.org').length).toBe(1);

    const signIn = async () => {
      await page.goto(`${server.url}/account/login`);
      await page.getByLabel('Email or profile id').fill('emmy@example.org');
      await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
      await page.getByRole('button', { name: 'Sign in', exact: true }).click();
      await page.getByRole('heading', { name: 'Your account is not active yet' }).waitFor();
    };
    await signIn();
    expect(await page.locator('main').textContent()).not.toMatch(/request id/);
    await checkPage(page, 'sign-in-not-active');

    // "Send the activation link again": a second mail, within the usual limits.
    await page.getByRole('button', { name: 'Send the activation link again' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await expect.poll(async () => (await readOutbox(server.dataDir)).filter((m) => m.to === 'emmy@example.org').length).toBe(2);

    // A wrong code is refused at the Code field, in plain words.
    await signIn();
    const code = await codeInMail(server, 'emmy@example.org');
    await page.getByLabel('Type the code').fill(code === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Type the code' }).waitFor();
    expect(await summary(page)).toEqual([{ text: 'That code is wrong or has expired', href: '#code' }]);
    await tiedTo(page, 'code', 'That code is wrong or has expired');
    expect(await page.getByLabel('Email or profile id').inputValue()).toBe('emmy@example.org');
    await checkPage(page, 'activation-code-wrong');

    // The right one leads to the activation page.
    await page.getByLabel('Code', { exact: true }).fill(code);
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Complete your profile' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('~Emmy_Noether1');
    await context.close();
  });

  it('can type the code from the "Check your mail" page', LONG, async () => {
    const context = await newContext(browser, { phone: true });
    const page = await context.newPage();
    await signUp(page, 'Maryam Mirzakhani', 'maryam@example.org', PASSWORD);
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await page.getByRole('link', { name: 'type the code' }).click();
    await page.getByRole('heading', { name: 'Type the code' }).waitFor();
    expect(await page.getByLabel('Email or profile id').inputValue()).toBe('maryam@example.org');
    await checkPage(page, 'activation-code-phone');
    await linkInMail(server, 'maryam@example.org', '/account/profile/activate');
    await page.getByLabel('Code', { exact: true }).fill(await codeInMail(server, 'maryam@example.org'));
    await page.getByRole('button', { name: 'Continue' }).click();
    await page.getByRole('heading', { name: 'Complete your profile' }).waitFor();
    await context.close();
  });
});
