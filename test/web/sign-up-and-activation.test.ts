/**
 * A new person in Chromium, from the sign-up page to a signed-in account, reading every mail
 * from the outbox: sign up, "check your mail", activate (a second name's profile id shown, an
 * extra email confirmed with its code), then confirm another email by its link and by its code;
 * an expired activation link says so and sends a new one in one click.
 */
import type { Browser } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { launchBrowser } from '../helpers/browser.ts';
import { TestClock } from '../helpers/clock.ts';
import { lastMailTo, readOutbox } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { checkPage, codeInMail, linkInMail, newContext } from './helpers.ts';

/** Each test drives Chromium through several pages: slow on a loaded 2-core machine. */
const LONG = { timeout: 120_000 };

const PASSWORD = 'Correct-Horse-9';
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

describe('signing up and activating in a real browser', () => {
  it('signs up, follows the mail, completes the profile and is signed in', LONG, async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${server.url}/account/signup`);
    await checkPage(page, 'sign-up');

    // A refusal is explained at the top and at the field.
    await page.getByLabel('Full name').fill('Rosalind Franklin');
    await page.getByLabel('Email').fill('rosalind@example.org');
    await page.getByLabel('Password').fill('short');
    await page.getByRole('button', { name: 'Create account' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('There is a problem');
    // A typing mistake, in plain words; the request id to quote is only for our own failures.
    expect(await page.getByRole('alert').textContent()).toContain('The password must be at least 8 characters');
    expect(await page.getByRole('alert').textContent()).not.toMatch(/request id/);
    await checkPage(page, 'sign-up-error');

    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    expect(await page.locator('main').textContent()).toContain('rosalind@example.org');
    // It promises what a guest can use: the link, or the mail's code typed on its own page.
    expect(await page.locator('main').textContent()).toContain('Open the link');
    expect(await page.getByRole('link', { name: 'type the code' }).getAttribute('href')).toBe('/account/profile/activate/code?email=rosalind%40example.org');
    await checkPage(page, 'check-your-mail');

    // "Send it again" sends a second mail, which voids the first link.
    await page.getByRole('button', { name: 'Send it again' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    await expect.poll(async () => (await readOutbox(server.dataDir)).filter((m) => m.subject === 'Signup confirmation').length).toBe(2);

    const link = await linkInMail(server, 'rosalind@example.org', '/account/profile/activate');
    await page.goto(link);
    await page.getByRole('heading', { name: 'Complete your profile' }).waitFor();
    expect(await page.getByLabel('First name').first().inputValue()).toBe('Rosalind');
    await checkPage(page, 'activate');

    // Another name: its next free profile id is shown without JavaScript.
    await page.locator('#other-first').fill('Rosalind');
    await page.locator('#other-middle').fill('Elsie');
    await page.locator('#other-last').fill('Franklin');
    await page.getByRole('button', { name: 'Show the profile ids for these names' }).click();
    await expect.poll(() => page.locator('main').textContent()).toContain('~Rosalind_Elsie_Franklin1');
    expect(await page.locator('main').textContent()).toContain('Profile id for the name you signed up with: ~Rosalind_Franklin1');
    // A changed main name: its own next free id, then back to the name signed up with.
    await page.locator('#first').fill('Rosalinda');
    await page.getByRole('button', { name: 'Show the profile ids for these names' }).click();
    await expect.poll(() => page.locator('main').textContent()).toContain('Profile id for this name: ~Rosalinda_Franklin1');
    await page.locator('#first').fill('Rosalind');

    // An extra email, confirmed with the code mailed to it, on the same page.
    await page.getByLabel('Add another email').fill('rf@kings.example.org');
    await page.getByRole('button', { name: 'Send a code' }).click();
    await page.getByLabel('Code mailed to rf@kings.example.org').waitFor();
    await checkPage(page, 'activate-email-code');
    const code = await codeInMail(server, 'rf@kings.example.org');
    await page.getByLabel('Code mailed to rf@kings.example.org').fill(code);
    await page.getByRole('button', { name: 'Confirm this email' }).click();
    await expect.poll(() => page.locator('main').textContent()).toContain('rf@kings.example.org is confirmed');

    // Activation needs a history entry: missing fields are named.
    await page.getByRole('button', { name: 'Activate my profile' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Enter your position');
    await checkPage(page, 'activate-error');
    await page.getByLabel('Position').fill('Research Associate');
    await page.getByLabel('Institution', { exact: true }).fill("King's College London");
    await page.getByLabel('Institution domain').fill('kcl.ac.uk');
    await page.getByLabel('Since (year)').fill('1951');
    // Enter in a field activates (the form's default button), not "Show the profile ids".
    await page.getByLabel('Since (year)').press('Enter');

    await page.getByRole('heading', { name: 'Password & security' }).waitFor();
    expect(await page.getByRole('status').textContent()).toContain('Your profile is active and you are signed in');
    // The session is the API's: the same cookies answer `GET /profiles`.
    const profiles = (await page.evaluate(async () => (await fetch('/profiles')).json())) as {
      profiles: Array<{ state: string; content: { names: Array<{ username: string }>; emails: string[] } }>;
    };
    expect(profiles.profiles[0]?.content.names.map((n) => n.username)).toEqual(['~Rosalind_Franklin1', '~Rosalind_Elsie_Franklin1']);
    expect(profiles.profiles[0]?.content.emails).toEqual(expect.arrayContaining(['rosalind@example.org', 'rf@kings.example.org']));
    expect(profiles.profiles[0]?.state).toBe('Active Automatic');

    // Confirming another email by its link (the address and the code entered there), added on the emails page...
    await page.goto(`${server.url}/account/emails`);
    await page.getByLabel('Email address').fill('franklin@birkbeck.example.org');
    await page.getByRole('button', { name: 'Send a code' }).click();
    await page.getByRole('heading', { name: 'Confirm an email' }).waitFor();
    await checkPage(page, 'confirm-email');
    const confirmLink = await linkInMail(server, 'franklin@birkbeck.example.org', '/account/confirm');
    const confirmCode = await codeInMail(server, 'franklin@birkbeck.example.org');
    await page.goto(confirmLink);
    // The address comes filled in from the link.
    expect(await page.getByLabel('Email').inputValue()).toBe('franklin@birkbeck.example.org');
    await page.getByLabel('Code').fill('000000' === confirmCode ? '111111' : '000000');
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('That code is wrong. 4 tries left before it stops working.');
    expect(await page.getByLabel('Code').getAttribute('aria-invalid')).toBe('true');
    await checkPage(page, 'confirm-email-error');
    await page.getByLabel('Code').fill(confirmCode);
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByRole('heading', { name: 'Emails', exact: true }).waitFor();
    expect(await page.getByRole('status').textContent()).toContain('The email address is confirmed');
    expect(await page.locator('table.emails').textContent()).toContain('franklin@birkbeck.example.org');

    // ... and another by its code alone, typed on the page the emails page leads to.
    await page.getByLabel('Email address').fill('rosalind@ucl.example.org');
    await page.getByRole('button', { name: 'Send a code' }).click();
    await page.getByRole('heading', { name: 'Confirm an email' }).waitFor();
    expect(await page.getByLabel('Email').inputValue()).toBe('rosalind@ucl.example.org');
    await page.getByLabel('Code').fill(await codeInMail(server, 'rosalind@ucl.example.org'));
    await page.getByRole('button', { name: 'Confirm', exact: true }).click();
    await page.getByRole('heading', { name: 'Emails', exact: true }).waitFor();
    expect(await page.locator('table.emails').textContent()).toContain('rosalind@ucl.example.org');

    // The used activation link says so: to its person, signed in, that the account is active
    // (issue 24: no "Send me a new link" for an account with nothing left to activate).
    await page.goto(link);
    await page.getByRole('heading', { name: 'Your account is already active' }).waitFor();
    expect(await page.getByRole('button', { name: 'Send me a new link' }).count()).toBe(0);
    await context.close();
  });

  it('an expired activation link says so and sends a new one in one click', LONG, async () => {
    const context = await newContext(browser);
    const page = await context.newPage();
    await page.goto(`${server.url}/account/signup`);
    await page.getByLabel('Full name').fill('Dorothy Hodgkin');
    await page.getByLabel('Email').fill('dorothy@example.org');
    await page.getByLabel('Password').fill(PASSWORD);
    await page.getByRole('button', { name: 'Create account' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    const old = await linkInMail(server, 'dorothy@example.org', '/account/profile/activate');

    clock.advance(8 * 24 * 60 * 60 * 1000);
    await page.goto(old);
    await page.getByRole('heading', { name: 'This link no longer works' }).waitFor();
    expect(await page.locator('main').textContent()).toMatch(/has expired, was already used/);
    expect(await page.locator('main').textContent()).toMatch(/request id/);
    await checkPage(page, 'link-expired');

    await page.getByRole('button', { name: 'Send me a new link' }).click();
    await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
    // It says where the mail went, masked: whoever holds an old link learns no address.
    expect(await page.locator('main').textContent()).toContain('d•••@example.org');
    await checkPage(page, 'new-link-sent');
    await expect.poll(async () => (await readOutbox(server.dataDir)).filter((m) => m.to === 'dorothy@example.org').length).toBe(2);
    const fresh = await linkInMail(server, 'dorothy@example.org', '/account/profile/activate');
    expect(fresh).not.toBe(old);
    await page.goto(fresh);
    await page.getByRole('heading', { name: 'Complete your profile' }).waitFor();
    expect((await lastMailTo(server.dataDir, 'dorothy@example.org')).subject).toBe('Signup confirmation');
    await context.close();
  });

  it('with moderation on, says the profile waits; a link that belongs to nothing says there is nothing to activate', LONG, async () => {
    await server.service.services.activation.setModeration(true);
    const context = await newContext(browser);
    const page = await context.newPage();
    try {
      await page.goto(`${server.url}/account/signup`);
      await page.getByLabel('Full name').fill('Lise Meitner');
      await page.getByLabel('Email').fill('lise@example.org');
      await page.getByLabel('Password').fill(PASSWORD);
      await page.getByRole('button', { name: 'Create account' }).click();
      await page.getByRole('heading', { name: 'Check your mail' }).waitFor();
      await page.goto(await linkInMail(server, 'lise@example.org', '/account/profile/activate'));
      await page.getByLabel('Position').fill('Professor');
      await page.getByLabel('Institution', { exact: true }).fill('Kaiser Wilhelm Institute');
      await page.getByLabel('Institution domain').fill('kwi.example.org');
      await page.getByLabel('Since (year)').fill('1912');
      await page.getByRole('button', { name: 'Activate my profile' }).click();
      await page.getByRole('heading', { name: 'Your profile is waiting for moderation' }).waitFor();
      await checkPage(page, 'activate-waiting-for-moderation');
    } finally {
      await server.service.services.activation.setModeration(false);
    }

    await page.goto(`${server.url}/account/profile/activate?token=not-a-token`);
    await page.getByRole('heading', { name: 'This link no longer works' }).waitFor();
    await page.getByRole('button', { name: 'Send me a new link' }).click();
    await page.getByRole('heading', { name: 'There is nothing to activate' }).waitFor();
    expect(await page.locator('main').textContent()).toMatch(/request id/);
    await checkPage(page, 'activate-nothing-to-activate');
    await context.close();
  });
});
