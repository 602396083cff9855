/**
 * The profile page (`/account/profile`) in Chromium: adding a name and seeing its tilde id,
 * adding a position at an institution from the list, a link refused (in words, at its field,
 * what was typed kept) then accepted, another row on request; axe at desktop and phone width.
 */
import type { Browser, Page } from 'playwright-core';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { keepCookies, cookieHeader } from '../helpers/cookies.ts';
import { checkPage, newContext, closeServerAndBrowser, openServerAndBrowser } from './helpers.ts';

const LONG = { timeout: 120_000 };

let server: TestServer;
let browser: Browser;

beforeAll(async () => ({ server, browser } = await openServerAndBrowser()), 60_000);
afterAll(() => closeServerAndBrowser({ server, browser }));

/** Opens the profile page as a guest, signs in on the way, and lands on it. */
async function openProfile(page: Page, email: string): Promise<void> {
  await page.goto(`${server.url}/account/profile`);
  await page.getByLabel('Email or profile id').fill(email);
  await page.getByLabel('Password', { exact: true }).fill(PASSWORD);
  await page.getByRole('button', { name: 'Sign in', exact: true }).click();
  await page.getByRole('heading', { name: 'Profile', exact: true }).waitFor();
}

describe('the profile page', () => {
  it('adds a name (its tilde id shown), a position at a listed institution, and a link refused then accepted', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Ada Lovelace' });
    const context = await newContext(browser);
    const page = await context.newPage();
    await openProfile(page, person.email);
    await checkPage(page, 'profile');
    await expect.poll(() => page.locator('#names').textContent()).toContain(person.id);

    await page.getByLabel('First name').fill('Ada');
    await page.getByLabel('Last name').fill('Byron');
    await page.getByLabel('Make this new name the preferred one').check();
    // Its id, before saving: shown, nothing saved, what was typed kept.
    await page.getByRole('button', { name: 'Show the new name’s profile id' }).click();
    await expect.poll(() => page.locator('#names').textContent()).toContain('Its profile id will be ~Ada_Byron1 once you save.');
    expect(await page.getByLabel('Last name').inputValue()).toBe('Byron');
    expect(await page.getByLabel('Make this new name the preferred one').isChecked()).toBe(true);
    await page.locator('#history-0-position').fill('PhD Student');
    await page.locator('#history-0-institution').fill('Massachusetts Institute of Technology');
    // An institution from the list fills in its domain (the pages' behaviours; without them, it is typed).
    await page.locator('#history-0-institution').press('Tab');
    await expect.poll(() => page.locator('#history-0-domain').inputValue()).toBe('mit.edu');
    await page.locator('#history-0-start').fill('2021');
    await page.locator('#history-0-end').fill('20');
    await page.getByLabel('ORCID').fill('0000-0002-1825-0098');
    await page.getByRole('button', { name: 'Save your profile' }).click();

    // Refused: in words, in the order of the fields, each tied to its input; what was typed stays.
    const alert = page.getByRole('alert');
    await expect.poll(() => alert.textContent()).toContain('its last character does not match');
    const items = await alert.getByRole('listitem').allTextContents();
    expect(items[0]).toContain('Enter a year between 1900 and 2099');
    expect(items[1]).toContain('0000-0002-1825-0098 is not an ORCID iD');
    expect(await page.getByLabel('ORCID').getAttribute('aria-invalid')).toBe('true');
    expect(await page.locator('#history-0-end').getAttribute('aria-invalid')).toBe('true');
    expect(await page.getByLabel('Last name').inputValue()).toBe('Byron');
    expect(await page.locator('#history-0-institution').inputValue()).toBe('Massachusetts Institute of Technology');
    await checkPage(page, 'profile-error');

    await page.locator('#history-0-end').fill('');
    await page.getByLabel('ORCID').fill('0000-0002-1825-0097');
    await page.getByRole('button', { name: 'Save your profile' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Your profile was saved.');
    expect(page.url()).toBe(`${server.url}/account/profile?notice=profile-saved`);
    await expect.poll(() => page.locator('#names').textContent()).toContain('~Ada_Byron1');
    expect(await page.getByRole('radio', { name: 'Preferred name: Ada Byron' }).isChecked()).toBe(true);
    expect(await page.locator('#history-0-domain').inputValue()).toBe('mit.edu');
    expect(await page.getByLabel('ORCID').inputValue()).toBe('https://orcid.org/0000-0002-1825-0097');
    // The header's name is now the preferred one.
    await expect.poll(() => page.getByRole('button', { name: /Sign out/ }).textContent()).toContain('Ada Byron');

    // Another row on request, keeping what was typed; a row left empty is no entry.
    await page.locator('#expertise-0-keywords').fill('analytical engines, poetry');
    await page.getByRole('button', { name: 'Add another position' }).click();
    await page.locator('#history-2-position').waitFor();
    expect(await page.locator('#expertise-0-keywords').inputValue()).toBe('analytical engines, poetry');
    await page.getByRole('button', { name: 'Save your profile' }).click();
    await expect.poll(() => page.getByRole('status').first().textContent()).toContain('Your profile was saved.');
    const saved = await server.service.services.profiles.profiles({ id: person.id }, { profileId: person.id, isSuperUser: false, isModerator: false } as never);
    expect(saved.profiles[0]?.content).toMatchObject({
      history: [{ position: 'PhD Student', institution: { name: 'Massachusetts Institute of Technology', domain: 'mit.edu' }, start: 2021 }],
      expertise: [{ keywords: ['analytical engines', 'poetry'], start: '' }],
      orcid: 'https://orcid.org/0000-0002-1825-0097',
    });
    await context.close();
  });

  it('saving the page keeps what it has no input for (an institution’s country and city, a relation’s readers)', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Lise Meitner' });
    const { loggedIn } = await import('../helpers/users.ts');
    const api = (await loggedIn(server, person.email)).client;
    const [read] = (await api.get('/profiles')).body.profiles;
    const institution = { name: 'Kaiser Wilhelm Institute', domain: 'kwi.example.org', country: 'Germany', city: 'Berlin', department: 'Chemistry' };
    const relation = { relation: 'Collaborator', name: 'Otto Hahn', email: 'otto@example.org', readers: ['everyone'] };
    const posted = await api.post('/profiles', { id: read.id, signatures: [read.id], content: { ...read.content, history: [{ position: 'Professor', institution, start: 1926 }], relations: [relation] } });
    expect(posted.status, JSON.stringify(posted.body)).toBe(200);
    const context = await newContext(browser);
    const page = await context.newPage();
    await openProfile(page, person.email);
    await page.getByRole('button', { name: 'Save your profile' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBeTruthy();
    const [saved] = (await api.get('/profiles')).body.profiles;
    expect(saved.content.history[0].institution).toEqual(institution);
    expect(saved.content.relations[0]).toMatchObject(relation);
    await context.close();
  });

  it('saves a profile of many rows (more fields than a sign-in form may post), and answers a form past every limit with the account error page', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Many Rows' });
    const { loggedIn } = await import('../helpers/users.ts');
    const api = (await loggedIn(server, person.email)).client;
    const [read] = (await api.get('/profiles')).body.profiles;
    const history = Array.from({ length: 10 }, (_, i) => ({ position: `Position ${i}`, institution: { name: `Institute ${i}`, domain: `i${i}.example.org` }, start: 2000 + i }));
    const relations = Array.from({ length: 4 }, (_, i) => ({ relation: 'Collaborator', name: `Colleague ${i}`, email: `c${i}@example.org`, readers: ['everyone'] }));
    expect((await api.post('/profiles', { id: read.id, signatures: [read.id], content: { ...read.content, history, relations } })).status).toBe(200);
    const context = await newContext(browser);
    const page = await context.newPage();
    await openProfile(page, person.email);
    expect(await page.locator('form input, form select, form textarea').count()).toBeGreaterThan(50);
    await page.getByLabel('Homepage').fill('https://many-rows.example.org');
    await page.getByRole('button', { name: 'Save your profile' }).click();
    await expect.poll(() => page.getByRole('status').textContent()).toBeTruthy();
    const [saved] = (await api.get('/profiles')).body.profiles;
    expect([saved.content.homepage, saved.content.history.length, saved.content.relations.length]).toEqual(['https://many-rows.example.org', 10, 4]);
    await context.close();
    // Past 2,000 fields: the account pages' own error page, in plain words.
    const jar = new Map<string, string>();
    keepCookies(jar, await fetch(`${server.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: person.email, password: PASSWORD }) }));
    const res = await fetch(`${server.url}/account/profile`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar) },
      body: Array.from({ length: 2001 }, (_, i) => `f${i}=x`).join('&'),
    });
    expect(res.status).toBe(413);
    const html = await res.text();
    expect(html).toContain('This did not work');
    expect(html).not.toContain('Sign-in error');
  });

  it('passes axe at phone width', LONG, async () => {
    const person = await createActiveUser(server, { fullname: 'Grace Hopper' });
    const phone = await newContext(browser, { phone: true });
    const page = await phone.newPage();
    await openProfile(page, person.email);
    await checkPage(page, 'profile-phone');
    await page.getByLabel('Homepage').fill('javascript:alert(1)');
    await page.getByRole('button', { name: 'Save your profile' }).click();
    await expect.poll(() => page.getByRole('alert').textContent()).toContain('Enter a web address');
    await checkPage(page, 'profile-phone-error');
    await phone.close();
  });

  it('answers an odd or forged form with the page and its errors, never a 5xx, escaping what it echoes, changing nothing', async () => {
    const person = await createActiveUser(server, { fullname: 'Odd Form' });
    const other = await createActiveUser(server, { fullname: 'Someone Else' });
    const jar = new Map<string, string>();
    keepCookies(jar, await fetch(`${server.url}/login`, { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ id: person.email, password: PASSWORD }) }));
    const page = await fetch(`${server.url}/account/profile`, { headers: { cookie: cookieHeader(jar) } });
    keepCookies(jar, page);
    const token = /name="csrf" value="([^"]+)"/.exec(await page.text())?.[1] ?? '';
    const before = await server.service.db('profiles').where({ id: person.id }).first();
    const forms: Array<Record<string, string>> = [
      {},
      { 'names-rows': '99999', 'history-rows': '-5', 'names-0-username': other.id, 'names-0-first': '<script>x</script>', preferred: 'x', yearOfBirth: 'abc', 'history-0-start': '1e3', intent: 'nonsense' },
      { 'names-rows': '2', 'names-0-username': person.id, 'names-0-remove': 'yes', intent: 'add-names' },
    ];
    for (const form of forms) {
      const res = await fetch(`${server.url}/account/profile`, {
        method: 'POST',
        redirect: 'manual',
        headers: { 'content-type': 'application/x-www-form-urlencoded', cookie: cookieHeader(jar) },
        body: new URLSearchParams({ csrf: token, ...form }).toString(),
      });
      expect(res.status, JSON.stringify(form)).toBeLessThan(500);
      const html = await res.text();
      expect(html).not.toContain('<script>x</script>');
    }
    expect(await server.service.db('profiles').where({ id: person.id }).first()).toEqual(before);
  });
});
