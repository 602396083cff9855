/**
 * A person's emails and data in Chromium (issue 27): adding an address, making it preferred,
 * removing the old one (whose mail's undo link gives it back and signs the account out
 * everywhere), downloading the data, deleting the account (a sign-in within the grace period
 * cancels it; after the grace period, with the clock moved, it is anonymised), and axe on each
 * new page at desktop and phone width.
 */
import { readFile } from 'node:fs/promises';
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import type { TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { checkPage, codeInMail, IPHONE, linkInMail, newContext, closeServerAndBrowser, openServerAndBrowser } from './helpers.ts';

/** Each test drives Chromium through many pages: slow on a loaded 2-core machine. */
const LONG = { timeout: 180_000 };
const DAY = 24 * 60 * 60 * 1000;

let server: TestServer;
let browser: Browser;
const clock = new TestClock();

beforeAll(async () => ({ server, browser } = await openServerAndBrowser({}, undefined, { now: clock.now })), 60_000);
afterAll(() => closeServerAndBrowser({ server, browser }));

/** Signs in on the sign-in page and waits for the page it leads to (whichever it is). */
async function signInTo(page: Page, id: string, next: string): Promise<void> {
  await page.goto(`${server.url}/account/login?next=${encodeURIComponent(next)}`);
  await page.getByLabel('Email or profile id').fill(id);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.waitForURL((url) => url.pathname === next);
}

/** The addresses the emails page lists. */
async function listed(page: Page): Promise<string[]> {
  return page.locator('table.emails tbody tr td:first-child').allTextContents();
}

describe('emails', () => {
  it('adds an address, makes it preferred, removes the old one, and the old one’s mail undoes it', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Ada Lovelace' });
    const second = `new-${person.email}`;
    const context = await newContext(browser);
    const page = await context.newPage();
    await signInTo(page, person.email, '/account/emails');
    await page.getByRole('heading', { name: 'Emails', exact: true }).waitFor();
    await checkPage(page, 'emails');

    await page.getByLabel('Email address').fill(second);
    await page.getByRole('button', { name: 'Send a code' }).click();
    await page.getByRole('heading', { name: 'Confirm an email' }).waitFor();
    await page.getByLabel('Code').fill(await codeInMail(server, second));
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByRole('heading', { name: 'Emails', exact: true }).waitFor();
    expect(await listed(page)).toEqual([person.email, second]);
    expect((await lastMailTo(server.dataDir, person.email)).subject).toBe('An email address was added to your account');

    await page.getByRole('button', { name: `Make preferred: ${second}` }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('The preferred address was changed');
    expect((await lastMailTo(server.dataDir, person.email)).subject).toBe('Your preferred email address was changed');

    await page.getByRole('button', { name: `Remove: ${person.email}` }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toContain('The address was removed');
    expect(await listed(page)).toEqual([second]);
    expect((await lastMailTo(server.dataDir, person.email)).subject).toBe('This email address was removed from your account');

    // The old address's owner opens the link in another browser: the page says what it undoes and changes nothing yet.
    const link = await linkInMail(server, person.email, '/account/emails/undo');
    const mailbox = await newContext(browser);
    const other = await mailbox.newPage();
    await other.goto(link);
    await other.getByRole('heading', { name: 'Undo a change to your emails' }).waitFor();
    expect(await other.locator('main').textContent()).toContain(`The address ${person.email} was removed`);
    await checkPage(other, 'email-undo');
    const phone = await newContext(browser, { userAgent: IPHONE, phone: true });
    const small = await phone.newPage();
    await small.goto(link);
    await checkPage(small, 'email-undo-phone');
    await page.reload();
    expect(await listed(page)).toEqual([second]);

    await other.getByRole('button', { name: 'Undo this change' }).click();
    await other.waitForURL((url) => url.pathname === '/account/reset');
    expect(await other.getByRole('status').textContent()).toContain('The change was undone');
    // The account was signed out everywhere, this browser too.
    await page.goto(`${server.url}/account/emails`);
    await page.waitForURL((url) => url.pathname === '/account/login');
    await signInTo(page, person.email, '/account/emails');
    expect((await listed(page)).sort()).toEqual([person.email, second].sort());
    await small.goto(`${server.url}/account/login`);
    await signInTo(small, person.email, '/account/emails');
    await checkPage(small, 'emails-phone');
    await Promise.all([context.close(), mailbox.close(), phone.close()]);
  });
});

describe('your data', () => {
  it('downloads the data, and deletes the account: a sign-in within 14 days cancels it, after them it is anonymised', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Charles Babbage' });
    const context = await newContext(browser);
    const page = await context.newPage();
    await signInTo(page, person.email, '/account/data');
    await page.getByRole('heading', { name: 'Your data', exact: true }).waitFor();
    await checkPage(page, 'data');
    const phone = await newContext(browser, { userAgent: IPHONE, phone: true });
    const small = await phone.newPage();
    await signInTo(small, person.email, '/account/data');
    await checkPage(small, 'data-phone');
    await phone.close();

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download your data' }).click()]);
    expect(download.suggestedFilename()).toMatch(/^account-data-.+\.json$/);
    const text = await readFile(await download.path(), 'utf8');
    const data = JSON.parse(text);
    expect(data.profile.id).toBe(person.id);
    expect(data.emails).toEqual([{ email: person.email, confirmed: true, preferred: true }]);
    const hash = (await server.service.services.db('profiles').where({ id: person.id }).first('password_hash')).password_hash;
    expect(text).not.toContain(hash);

    // A wrong password deletes nothing.
    await page.getByLabel('Your password, to confirm').fill('Not-the-password-1');
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('The password is not correct');
    await checkPage(page, 'data-error');

    await page.getByLabel('Your password, to confirm').fill(PASSWORD);
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await page.waitForURL((url) => url.pathname === '/account/login');
    expect(await page.getByRole('status').textContent()).toContain('Your account will be deleted in 14 days');
    expect((await lastMailTo(server.dataDir, person.email)).subject).toBe('Your account will be deleted');

    // Signing in within the grace period cancels it, and the page after the sign-in says so.
    clock.advance(10 * DAY);
    await signInTo(page, person.email, '/account/data');
    expect(await page.getByRole('status').textContent()).toContain('your account will not be deleted');
    clock.advance(5 * DAY);
    await server.service.sweep();
    await page.goto(`${server.url}/account/data`);
    if (new URL(page.url()).pathname === '/account/login') await signInTo(page, person.email, '/account/data');
    await page.getByRole('heading', { name: 'Your data', exact: true }).waitFor();
    expect(await page.locator('main').textContent()).not.toContain('will be deleted on');

    // Asked again, and left: after 14 days it is anonymised and cannot sign in.
    await page.getByLabel('Your password, to confirm').fill(PASSWORD);
    await page.getByRole('button', { name: 'Delete my account' }).click();
    await page.waitForURL((url) => url.pathname === '/account/login');
    clock.advance(15 * DAY);
    await server.service.sweep();
    await page.getByLabel('Email or profile id').fill(person.email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Invalid username or password');
    const row = await server.service.services.db('profiles').where({ id: person.id }).first();
    expect(JSON.parse(row.content).names).toEqual([{ fullname: 'Deleted User', first: 'Deleted', middle: '', last: 'User', username: person.id, preferred: true }]);
    expect(await server.service.services.db('profile_emails').where({ profile_id: person.id })).toEqual([]);
    await context.close();
  });
});
