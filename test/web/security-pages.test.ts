/**
 * "Password & security" in Chromium (issue 27): the overview and each area's own page pass axe
 * at desktop and phone width, with times in the browser's own time zone; a sign-in from a second
 * browser is mailed and the mail's "This was not me" ends it; recovery codes are copied,
 * downloaded and printed; a wrong second-step code says how many tries are left.
 */
import { readFile } from 'node:fs/promises';
import type { Browser, BrowserContext } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader, keepCookies } from '../helpers/cookies.ts';
import { readOutbox } from '../helpers/outbox.ts';
import type { TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { checkPage, codeInMail, signIn, closeServerAndBrowser, openServerAndBrowser } from './helpers.ts';

const LONG = { timeout: 120_000 };
const AREAS = [
  ['password', 'Password'],
  ['two-step', 'Two-step verification'],
  ['passkeys', 'Passkeys'],
  ['sessions', 'Sessions and devices'],
  ['apps', 'Applications'],
  ['activity', 'Activity'],
] as const;

let server: TestServer;
let browser: Browser;

beforeAll(async () => ({ server, browser } = await openServerAndBrowser()), 60_000);
afterAll(() => closeServerAndBrowser({ server, browser }));

/** A browser in New York (so a local time is not UTC); `bypassCSP` only so that the test can inject axe-core. */
function context(opts: { phone?: boolean; clipboard?: boolean } = {}): Promise<BrowserContext> {
  return browser.newContext({
    bypassCSP: true,
    viewport: opts.phone ? { width: 390, height: 844 } : { width: 1000, height: 800 },
    locale: 'en-US',
    timezoneId: 'America/New_York',
    ...(opts.clipboard ? { permissions: ['clipboard-read', 'clipboard-write'] } : {}),
  });
}

describe('Password & security, area by area', () => {
  it('the overview links every area; each area passes axe at desktop and phone width', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Area Reader' });
    for (const phone of [false, true]) {
      const browserContext = await context({ phone });
      const page = await browserContext.newPage();
      await signIn(page, server, person.email, PASSWORD);
      await checkPage(page, phone ? 'security-overview-phone' : 'security-overview');
      for (const [area, title] of AREAS) {
        await page.goto(`${server.url}/account/security`);
        await page.getByRole('link', { name: title, exact: true }).first().click();
        await page.getByRole('heading', { name: title, level: 1 }).waitFor();
        expect(new URL(page.url()).pathname).toBe(`/account/security/${area}`);
        await checkPage(page, `security-area-${area}${phone ? '-phone' : ''}`);
      }
      await browserContext.close();
    }
  });

  it('shows times in the browser’s time zone, with the UTC time kept in the title', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Time Reader' });
    const browserContext = await context();
    const page = await browserContext.newPage();
    await signIn(page, server, person.email, PASSWORD);
    await page.goto(`${server.url}/account/security/activity`);
    const time = page.locator('table time').first();
    await expect.poll(() => time.textContent()).not.toMatch(/UTC$/);
    expect(await time.textContent()).toMatch(/EST|EDT/);
    expect(await time.getAttribute('title')).toMatch(/ UTC$/);
    expect(await page.getByRole('cell', { name: /Signed in with the password/ }).count()).toBeGreaterThan(0);
    await browserContext.close();
  });
});

/** A new person signed in without a browser: posts an account form (with its CSRF token) as their browser would. */
async function formsOf(fullname: string): Promise<(path: string, fields: Record<string, string>) => Promise<Response>> {
  const person = await createActiveUser(server, { fullname });
  const jar = new Map<string, string>();
  keepCookies(jar, await fetch(`${server.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: person.email, password: PASSWORD }) }));
  const page = await fetch(`${server.url}/account/security/apps`, { headers: { cookie: cookieHeader(jar) } });
  keepCookies(jar, page);
  const csrf = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
  return (path, fields) =>
    fetch(`${server.url}${path}`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar) }, body: new URLSearchParams({ csrf, ...fields }).toString() });
}

describe('"Register an application" refused', () => {
  it('says what is wrong in plain words, next to the field, never the schema\'s or RFC 7591\'s text', async () => {
    const post = await formsOf('App Maker');
    const cases: Array<[Record<string, string>, string, RegExp]> = [
      [{ name: '', redirectUri: 'https://app.example/cb' }, 'appName', /^Enter a name for the application/],
      [{ name: 'n'.repeat(300), redirectUri: 'https://app.example/cb' }, 'appName', /^The name .*200/],
      [{ name: 'App', redirectUri: '' }, 'appRedirectUri', /^(Check|Enter) the address people come back to/],
      [{ name: 'App', redirectUri: 'http://evil.example/cb' }, 'appRedirectUri', /^The address must use https/],
      [{ name: 'App', redirectUri: 'https://a.example/cb#frag' }, 'appRedirectUri', /^The address must not have a fragment/],
    ];
    for (const [form, id, words] of cases) {
      const res = await post('/account/security/applications/register', { kind: 'confidential', ...form });
      expect(res.status, JSON.stringify(form)).toBe(400);
      const html = await res.text();
      const said = new RegExp(`<a href="#${id}">([^<]+)</a>`).exec(html)?.[1] ?? html.slice(0, 2000);
      expect(said.replaceAll('&#39;', "'").replaceAll('&rsquo;', '’'), JSON.stringify(form)).toMatch(words);
      expect(html).not.toMatch(/redirect_uris|expected string|Too big|redirectUris:|name:/);
    }
    // Nothing was registered.
    expect(Number(((await server.service.db('oidc_clients').where({ name: 'App' }).count({ n: '*' }).first()) as { n: number | string }).n)).toBe(0);
  });
});

describe('ending a session or revoking an application twice', () => {
  it('the second press leads where the first did, with its notice, never an error page', async () => {
    const post = await formsOf('Double Press');
    for (const [path, fields, to] of [
      ['/account/security/sessions/end', { id: 'no-such-session' }, '/account/security/sessions?notice=session-ended'],
      ['/account/security/applications/revoke', { clientId: 'no-such-app' }, '/account/security/apps?notice=revoked'],
    ] as const) {
      const res = await post(path, fields);
      expect([res.status, res.headers.get('location')], path).toEqual([303, to]);
    }
  });
});

describe('the pages in a new browser', () => {
  it('load with nothing in the console and no request that fails (no /favicon.ico asked for)', LONG, async () => {
    const fresh = await browser.newContext();
    const page = await fresh.newPage();
    const problems: string[] = [];
    page.on('console', (message) => {
      if (message.type() === 'error' || message.type() === 'warning') problems.push(`console: ${message.text()}`);
    });
    page.on('response', (response) => {
      if (response.status() >= 400) problems.push(`${response.status()} ${response.url()}`);
    });
    for (const path of ['/account/login', '/account/signup', '/account/reset']) {
      await page.goto(`${server.url}${path}`);
      await page.waitForLoadState('networkidle');
    }
    expect(problems).toEqual([]);
    await fresh.close();
  });
});

describe('a long address at phone width', () => {
  it('wraps, the page scrolling down only (WCAG 1.4.10)', LONG, async () => {
    const phone = await context({ phone: true });
    const page = await phone.newPage();
    const email = `firstname.lastname.${'x'.repeat(30)}@department.faculty.university.example.ac.uk`;
    await page.goto(`${server.url}/account/check-mail?kind=signup&email=${encodeURIComponent(email)}`);
    await page.getByText(email).waitFor();
    await checkPage(page, 'check-mail-long-address-phone');
    await phone.close();
  });
});

describe('a sign-in from a new browser', () => {
  it('is mailed, and the mail’s "This was not me" ends that browser’s session', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Mailed Person' });
    const own = await context();
    const mine = await own.newPage();
    await signIn(mine, server, person.email, PASSWORD);
    const other = await context();
    const theirs = await other.newPage();
    await signIn(theirs, server, person.email, PASSWORD);

    const mail = (await readOutbox(server.dataDir)).find((m) => m.to === person.email && m.subject === 'A new sign-in to your account');
    expect(mail, 'the new-browser mail').toBeDefined();
    const link = /https?:\/\/\S+\/account\/security\/not-me\?token=\S+/.exec(mail?.text ?? '')?.[0] ?? '';
    // A passkey registered since that sign-in (written here: the ceremony is another test's), which confirming removes.
    await server.service.db('passkeys').insert({ credential_id: `cred-${person.id}`, profile_id: person.id, public_key: 'pAEC', counter: 0, transports: '[]', backed_up: false, device_type: 'singleDevice', name: 'Their key', created_at: Date.now() });
    await mine.goto(link);
    await mine.getByRole('heading', { name: 'Was this you?' }).waitFor();
    await mine.getByText('the passkey “Their key”').waitFor();
    await checkPage(mine, 'security-not-me');
    await mine.getByRole('button', { name: /This was not me/ }).click();
    await expect.poll(() => mine.getByRole('status').textContent()).toContain('Every session of your account was ended');

    await theirs.goto(`${server.url}/account/security`);
    await theirs.getByRole('heading', { name: 'Sign in' }).waitFor();
    const reset = (await readOutbox(server.dataDir)).filter((m) => m.to === person.email && m.subject === 'Password reset');
    expect(reset).toHaveLength(1);
    expect(await server.service.db('passkeys').where({ profile_id: person.id })).toEqual([]);
    await own.close();
    await other.close();
  });
});

describe('recovery codes', () => {
  it('are copied, downloaded as a text file, and printed alone', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Code Keeper' });
    const browserContext = await context({ clipboard: true });
    const page = await browserContext.newPage();
    await signIn(page, server, person.email, PASSWORD);
    await page.goto(`${server.url}/account/security/two-step`);
    await page.getByRole('button', { name: 'Turn on codes by email' }).click();
    await page.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    await checkPage(page, 'recovery-codes');
    const codes = await page.locator('ul.codes code').allTextContents();
    expect(codes).toHaveLength(10);

    await page.getByRole('button', { name: 'Copy' }).click();
    await expect.poll(() => page.locator('[data-copied]').textContent()).toBe('Copied');
    expect(await page.evaluate<string>('navigator.clipboard.readText()')).toBe(`${codes.join('\n')}\n`);

    const [download] = await Promise.all([page.waitForEvent('download'), page.getByRole('link', { name: 'Download as a text file' }).click()]);
    expect(download.suggestedFilename()).toBe(`recovery-codes-${person.id}.txt`);
    const text = await readFile((await download.path()) ?? '', 'utf8');
    for (const code of codes) expect(text).toContain(code);

    await page.emulateMedia({ media: 'print' });
    expect(await page.locator('header.site').isVisible()).toBe(false);
    expect(await page.getByRole('button', { name: 'Copy' }).isVisible()).toBe(false);
    expect(await page.locator('ul.codes').isVisible()).toBe(true);
    await page.emulateMedia({ media: 'screen' });
    await browserContext.close();
  });
});

describe('the second step', () => {
  it('says how many tries are left before a wrong code locks sign-in', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Wrong Coder' });
    const setup = await context();
    const first = await setup.newPage();
    await signIn(first, server, person.email, PASSWORD);
    await first.goto(`${server.url}/account/security/two-step`);
    await first.getByRole('button', { name: 'Turn on codes by email' }).click();
    await first.getByRole('heading', { name: 'Save your recovery codes' }).waitFor();
    await setup.close();

    const browserContext = await context();
    const page = await browserContext.newPage();
    await page.goto(`${server.url}/account/login`);
    await page.getByLabel('Email or profile id').fill(person.email);
    await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
    await page.getByRole('button', { name: 'Sign in', exact: true }).click();
    await page.getByRole('heading', { name: 'Confirm it is you' }).waitFor();
    await page.getByRole('button', { name: 'Send me a code by email' }).click();
    await page.getByRole('status').filter({ hasText: 'A code was sent' }).waitFor();
    const code = await codeInMail(server, person.email);
    await page.getByLabel('Code', { exact: true }).fill(code === '000000' ? '111111' : '000000');
    await page.getByRole('button', { name: 'Verify' }).click();
    await expect.poll(() => page.locator('#error-summary').textContent()).toContain('Wrong code. 4 tries left before sign-in is locked for 15 minutes.');
    await checkPage(page, 'second-step-tries-left');
    await page.getByLabel('Code', { exact: true }).fill(code);
    await page.getByRole('button', { name: 'Verify' }).click();
    await page.getByRole('heading', { name: 'Password & security' }).waitFor();
    await browserContext.close();
  });
});
