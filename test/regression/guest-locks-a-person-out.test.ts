/**
 * The failure (issue 24, defect 1): ten wrong passwords for a person's email or tilde id, from any
 * address, locked the account for 15 minutes: the owner's right password, from any browser,
 * answered 429, and a guest could repeat it forever (before a deadline, a denial of service
 * against a chosen author). Likewise five wrong second-step codes locked the owner's second step.
 *
 * Now, as OWASP advises: a browser that signed in to the account before carries a device cookie
 * (`service.device`) and keeps its own allowance, untouched by others' failures; everyone else,
 * past the account's limit, is asked for human verification (429 with
 * `details.humanVerification: "required"`, then a `token` on `POST /login`) instead of being
 * refused. The same for the second step, and for a signed-in person proving it again.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { DEVICE_COOKIE } from '../../shared/index.ts';
import { cookiesOf, sentBack } from '../helpers/cookies.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

/** A browser that signed in to the account once and signed out again: it keeps only its device cookie. */
async function ownersBrowser(email: string): Promise<Client> {
  const owner = new Client(server.url);
  const res = await owner.post('/login', { id: email, password: PASSWORD });
  expect(res.status).toBe(200);
  expect(res.cookies[DEVICE_COOKIE]?.attributes).toMatch(/HttpOnly/i);
  expect((await owner.post('/logout')).status).toBe(200);
  expect([...owner.jar.keys()]).toEqual([DEVICE_COOKIE]);
  return owner;
}

async function exhaust(id: string, from = new Client(server.url)): Promise<Client> {
  for (let i = 0; i < 10; i += 1) expect((await from.post('/login', { id, password: `Wrong-Password-${i}` })).status).toBe(400);
  return from;
}

describe('a guest failing to sign in as someone', () => {
  it('does not lock out a browser that signed in to the account before, by email or by tilde id', async () => {
    const person = await createActiveUser(server);
    const owner = await ownersBrowser(person.email);
    // Half the guesses by email, half by tilde id: one counter for the account.
    const stranger = new Client(server.url);
    for (let i = 0; i < 10; i += 1) expect((await stranger.post('/login', { id: i % 2 ? person.id : person.email, password: `Wrong-${i}` })).status).toBe(400);
    expect((await stranger.post('/login', { id: person.email, password: PASSWORD })).status).toBe(429);
    expect((await owner.post('/login', { id: person.email, password: PASSWORD })).status).toBe(200);
    expect((await owner.post('/logout')).status).toBe(200);
    expect((await owner.post('/login', { id: person.id, password: PASSWORD })).status).toBe(200);
  });

  it('asks everyone else for human verification past the limit, and a verified attempt gets in', async () => {
    const person = await createActiveUser(server);
    const other = await exhaust(person.email);
    const asked = await other.post('/login', { id: person.email, password: PASSWORD });
    expect(asked.status).toBe(429);
    expect(asked.body).toMatchObject({ status: 429, name: 'TooManyError', details: { humanVerification: 'required', retryAfter: expect.any(Number) } });
    expect(asked.headers.get('retry-after')).not.toBeNull();
    // A token that is not accepted is refused as at sign-up; a wrong password with a good one is still wrong.
    expect((await other.post('/login', { id: person.email, password: PASSWORD, token: 'not-a-token' })).body).toMatchObject({ name: 'HumanVerificationRequiredError' });
    expect((await other.post('/login', { id: person.email, password: 'Wrong-Again-1', token: 'dev-ok' })).status).toBe(400);
    const verified = await other.post('/login', { id: person.email, password: PASSWORD, token: 'dev-ok' });
    expect(verified.status).toBe(200);
    expect(verified.body.user.profile.id).toBe(person.id);
  });

  it('a browser’s own allowance counts only its own failures, and is no key to another account', async () => {
    const person = await createActiveUser(server);
    const someoneElse = await createActiveUser(server);
    const owner = await ownersBrowser(person.email);
    // The device cookie of one account is none for another: strangers' failures there still count.
    await exhaust(someoneElse.email, owner);
    expect((await owner.post('/login', { id: someoneElse.email, password: PASSWORD })).body).toMatchObject({ status: 429, details: { humanVerification: 'required' } });
    // The owner's own ten wrong passwords use up the browser's allowance; then it shares the
    // account's, as any browser: the right password still gets in, and past both it is asked
    // for human verification (never a plain refusal a copy of the cookie could force).
    await exhaust(person.email, owner);
    expect((await owner.post('/login', { id: person.email, password: PASSWORD })).status).toBe(200);
    expect((await owner.post('/logout')).status).toBe(200);
    // That sign-in renewed the browser's entry (a fresh allowance); ten more use it up, ten more the account's.
    await exhaust(person.email, owner);
    await exhaust(person.email, owner);
    expect((await owner.post('/login', { id: person.email, password: PASSWORD })).body).toMatchObject({ status: 429, details: { humanVerification: 'required' } });
    // A device cookie made up or copied onto another account's entry is worth nothing (the
    // account's allowance is used up by now). Every test here shares one client address, whose
    // own limit (100 wrong passwords a quarter of an hour) the file stays under.
    const forged = new Client(server.url);
    forged.jar.set(DEVICE_COOKIE, `${'a'.repeat(16)}.${'b'.repeat(22)}.${'c'.repeat(43)}`);
    expect((await forged.post('/login', { id: person.email, password: PASSWORD })).body).toMatchObject({ status: 429, details: { humanVerification: 'required' } });
  });

  it('does not lock out the owner’s second step with a stranger’s wrong codes, nor a remembered browser', async () => {
    const person = await createActiveUser(server);
    const setup = new Client(server.url);
    expect((await setup.post('/login', { id: person.email, password: PASSWORD })).status).toBe(200);
    expect((await setup.post('/mfa/setup/email')).status).toBe(200);
    const code = async () => /\*\*(\d{6})\*\*/.exec((await lastMailTo(server.dataDir, person.email)).text)?.[1] ?? '';
    const signInWithCode = async (browser: Client, remember = false) => {
      const first = await browser.post('/login', { id: person.email, password: PASSWORD });
      expect(first.body.mfaPending).toBe(true);
      expect((await browser.post('/mfa/challenge', { mfaPendingToken: first.body.mfaPendingToken, method: 'emailOtp' })).status).toBe(200);
      return browser.post('/mfa/verify', { mfaPendingToken: first.body.mfaPendingToken, method: 'emailOtp', code: await code(), rememberDevice: remember });
    };
    // The owner's browser signs in fully once (and a second browser is remembered).
    const owner = new Client(server.url);
    expect((await signInWithCode(owner)).status).toBe(200);
    const remembered = new Client(server.url);
    expect((await signInWithCode(remembered, true)).status).toBe(200);

    // Someone who knows the password types five wrong codes: the person's second step is locked for them.
    const thief = new Client(server.url);
    const pending = (await thief.post('/login', { id: person.email, password: PASSWORD })).body.mfaPendingToken;
    for (let i = 0; i < 5; i += 1) await thief.post('/mfa/verify', { mfaPendingToken: pending, method: 'emailOtp', code: '000000' });
    const thiefAgain = (await thief.post('/login', { id: person.email, password: PASSWORD })).body.mfaPendingToken;
    expect((await thief.post('/mfa/challenge', { mfaPendingToken: thiefAgain, method: 'emailOtp' })).body).toMatchObject({ status: 429, message: expect.stringContaining('Account temporarily locked') });

    // The owner's browser still gets through, and the remembered one skips the step.
    expect((await owner.post('/logout')).status).toBe(200);
    const again = await signInWithCode(owner);
    expect(again.status).toBe(200);
    expect(again.body.user.profile.id).toBe(person.id);
    expect((await remembered.post('/logout')).status).toBe(200);
    expect((await remembered.post('/login', { id: person.email, password: PASSWORD })).body.token).toEqual(expect.any(String));
  });

  it('does not keep a signed-in owner from proving it again or changing the password', async () => {
    const person = await createActiveUser(server);
    const owner = new Client(server.url);
    expect((await owner.post('/login', { id: person.email, password: PASSWORD })).status).toBe(200);
    await exhaust(person.email);
    expect((await owner.post('/mfa/reauthenticate', { password: PASSWORD })).status).toBe(200);
    expect((await owner.post('/password', { currentPassword: PASSWORD, newPassword: 'Another-Horse-7' })).status).toBe(200);
  });
});

describe('the sign-in page of a browser past the account’s limit', () => {
  it('shows the human verification, and signs in once it is answered', async () => {
    const person = await createActiveUser(server);
    await exhaust(person.email);
    const form = await fetch(`${server.url}/account/login`);
    const cookie = sentBack(form);
    const csrf = /name="csrf" value="([^"]+)"/.exec(await form.text())?.[1] ?? '';
    const post = (fields: Record<string, string>) =>
      fetch(`${server.url}/account/login`, { method: 'POST', redirect: 'manual', headers: { 'content-type': 'application/x-www-form-urlencoded', cookie }, body: new URLSearchParams({ csrf, email: person.email, password: PASSWORD, ...fields }) });
    const asked = await post({});
    expect(asked.status).toBe(429);
    const page = await asked.text();
    expect(page).toContain('Human verification');
    expect(page).toContain('name="token" value="dev-ok"');
    const answered = await post({ token: 'dev-ok' });
    expect(answered.status).toBe(303);
    expect('service.accessToken' in cookiesOf(answered)).toBe(true);
  });
});

describe('in development mode, outside the test suite', () => {
  it('keeps the account’s limit a hard one: the public token dev-ok proves no person', { timeout: 60_000 }, async () => {
    // NODE_ENV other than test (and so OWASP's hash cost): what an install without a verification service runs.
    const dev = await startServer({ NODE_ENV: 'development', PASSWORD_HASH_COST: 'owasp' });
    try {
      const person = await createActiveUser(dev);
      const stranger = new Client(dev.url);
      for (let i = 0; i < 10; i += 1) expect((await stranger.post('/login', { id: person.email, password: `Wrong-${i}` })).status).toBe(400);
      const refused = await stranger.post('/login', { id: person.email, password: PASSWORD, token: 'dev-ok' });
      expect(refused.status).toBe(429);
      expect(refused.body.details.humanVerification).toBeUndefined();
    } finally {
      await dev.close();
    }
  });
});

describe('someone who knows the password asking for a person’s mailed codes', () => {
  it('cannot use up the codes of a browser that signed in to the account before', async () => {
    const person = await createActiveUser(server);
    const setup = new Client(server.url);
    expect((await setup.post('/login', { id: person.email, password: PASSWORD })).status).toBe(200);
    expect((await setup.post('/mfa/setup/email')).status).toBe(200);
    const challenge = async (browser: Client) => {
      const pending = (await browser.post('/login', { id: person.email, password: PASSWORD })).body.mfaPendingToken;
      return browser.post('/mfa/challenge', { mfaPendingToken: pending, method: 'emailOtp' });
    };
    const thief = new Client(server.url);
    for (let i = 0; i < 5; i += 1) expect((await challenge(thief)).status).toBe(200);
    expect((await challenge(thief)).status).toBe(429);
    // The set-up browser signed in fully: it asks on its own allowance.
    expect((await setup.post('/logout')).status).toBe(200);
    expect((await challenge(setup)).status).toBe(200);
  });
});

describe('a guest asking for a person’s reset mails', () => {
  it('cannot use up the reset mails of a browser that signed in to the account before', async () => {
    const person = await createActiveUser(server);
    const owner = await ownersBrowser(person.email);
    const stranger = new Client(server.url);
    for (let i = 0; i < 5; i += 1) expect((await stranger.post('/resettable', { id: person.email, token: 'dev-ok' })).status).toBe(200);
    expect((await stranger.post('/resettable', { id: person.email, token: 'dev-ok' })).status).toBe(429);
    expect((await owner.post('/resettable', { id: person.email, token: 'dev-ok' })).status).toBe(200);
  });
});
