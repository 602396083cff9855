/**
 * The mail on a sign-in from a new browser (issue 27), and its "This was not me" link: which
 * sign-ins are mailed (a browser without the account's device cookie; an API client from a new
 * User-Agent and address; never the first sign-in after activation), and what the link does:
 * its page changes nothing; confirming it ends every session, revokes every application (its
 * refresh token then fails, and it is told by back-channel logout) and mails a reset link, once.
 * And one session per browser: a browser signing in again as the same person keeps one session.
 */
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { Client } from '../helpers/http.ts';
import { Secret, TOTP } from 'otpauth';
import { lastMailTo, readOutbox, type Mail } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD, registerAndGetToken } from '../helpers/users.ts';
import { approvedRegistrationToken, REDIRECT, registerByHttp, startLogoutReceiver, UserAgent, type LogoutReceiver } from '../oidc/helpers.ts';

const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:132.0) Gecko/20100101 Firefox/132.0';
const CHROME_MAC = 'Mozilla/5.0 (Macintosh; Intel Mac OS X 10_15_7) AppleWebKit/537.36 (KHTML, like Gecko) Chrome/131.0.0.0 Safari/537.36';
const SUBJECT = 'A new sign-in to your account';
const LONG = 60_000;

let server: TestServer;
let receiver: LogoutReceiver;

beforeAll(async () => {
  server = await startServer();
  receiver = await startLogoutReceiver();
}, LONG);
afterAll(async () => {
  await server.close();
  await receiver?.close();
});

async function login(browser: Client, email: string, userAgent?: string): Promise<void> {
  const res = await browser.request('POST', '/login', { id: email, password: PASSWORD }, userAgent ? { 'user-agent': userAgent } : {});
  expect(res.status, JSON.stringify(res.body)).toBe(200);
}

async function newBrowserMails(email: string): Promise<Mail[]> {
  return (await readOutbox(server.dataDir)).filter((m) => m.to === email && m.subject === SUBJECT);
}

function notMeToken(mail: Mail): string {
  const link = /https?:\/\/\S+\/account\/security\/not-me\?token=([\w-]+)/.exec(mail.text);
  expect(link, mail.text).not.toBeNull();
  return link?.[1] ?? '';
}

describe('the mail on a sign-in from a new browser', () => {
  it('is not sent for the first sign-in after activation, nor for a browser that signed in before; a new browser gets one', async () => {
    const user = await createActiveUser(server);
    const laptop = new Client(server.url);
    await login(laptop, user.email, FIREFOX);
    // Signed out, then in again: the device cookie names this browser.
    await laptop.post('/logout');
    await login(laptop, user.email, FIREFOX);
    expect(await newBrowserMails(user.email)).toHaveLength(0);

    const phone = new Client(server.url);
    await login(phone, user.email, CHROME_MAC);
    const mails = await newBrowserMails(user.email);
    expect(mails).toHaveLength(1);
    expect(mails[0]?.text).toContain('Chrome 131 on macOS');
    expect(mails[0]?.text).toContain('(127.0.0.1)');
    expect(mails[0]?.text).toContain(user.id);
    notMeToken(mails[0] as Mail);
    await phone.post('/logout');
    await login(phone, user.email, CHROME_MAC);
    expect(await newBrowserMails(user.email)).toHaveLength(1);
  });

  it('is sent to an API client without a browser only from a User-Agent and address not seen in the kept sign-ins', async () => {
    const user = await createActiveUser(server);
    await login(new Client(server.url), user.email);
    await login(new Client(server.url), user.email);
    expect(await newBrowserMails(user.email)).toHaveLength(0);
    await login(new Client(server.url), user.email, 'python-requests/2.32.3');
    await login(new Client(server.url), user.email, 'python-requests/2.32.3');
    expect(await newBrowserMails(user.email)).toHaveLength(1);
  });
});

describe('"This was not me"', () => {
  it('shows the sign-in and changes nothing; confirmed, it makes the password stop working, ends every session, revokes every app (which is told), and mails a reset link, once', async () => {
    const user = await createActiveUser(server);
    // The person's own browser, signed in to an application that keeps a refresh token.
    const token = await approvedRegistrationToken(server);
    const registered = await registerByHttp(server, token, { redirect_uris: [REDIRECT], client_name: 'Reviews Dashboard', grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access', backchannel_logout_uri: `${receiver.url}/not-me`, backchannel_logout_session_required: true });
    expect(registered.status).toBe(201);
    const config = await client.discovery(new URL(server.url), registered.body.client_id, undefined, client.ClientSecretBasic(registered.body.client_secret ?? ''), { execute: [client.allowInsecureRequests] });
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid offline_access', prompt: 'consent', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const own = new UserAgent();
    const page = await own.authorize(url, { email: user.email, password: PASSWORD });
    const tokens = await client.authorizationCodeGrant(config, new URL(page.location ?? ''), { pkceCodeVerifier: verifier, idTokenExpected: true });
    expect(tokens.refresh_token).toEqual(expect.any(String));

    // Someone else, in another browser.
    const stranger = new Client(server.url);
    await login(stranger, user.email, FIREFOX);
    const [mail] = await newBrowserMails(user.email);
    const notMe = notMeToken(mail as Mail);

    const asked = await new UserAgent().go(`${server.url}/account/security/not-me?token=${notMe}`);
    expect(asked.status).toBe(200);
    expect(asked.html).toContain('Was this you?');
    expect(asked.html).toContain('Firefox 132 on Windows 10 (127.0.0.1)');
    // Looking changed nothing.
    expect((await stranger.get('/profiles')).status).toBe(200);
    expect((await new UserAgent().go(`${server.url}/account/security/not-me?token=${notMe}`)).status).toBe(200);

    const reader = new UserAgent();
    const done = await reader.submit(await reader.go(`${server.url}/account/security/not-me?token=${notMe}`), {});
    expect(done.url).toContain('/account/login?notice=not-me-done');
    expect(done.html).toContain('Every session of your account was ended');

    expect((await stranger.get('/profiles')).status).toBe(401);
    // Whoever signed in knew the password: it no longer signs anyone in, in that browser or any other.
    expect((await stranger.request('POST', '/login', { id: user.email, password: PASSWORD }, { 'user-agent': FIREFOX })).status).toBe(400);
    expect((await new Client(server.url).post('/login', { id: user.email, password: PASSWORD })).status).toBe(400);
    expect((await fetch(`${server.url}/sessions`, { headers: { cookie: cookieHeader(own.jar) } })).status).toBe(401);
    await expect(client.refreshTokenGrant(config, tokens.refresh_token ?? '')).rejects.toThrow();
    await expect.poll(() => receiver.received.get('/not-me')?.length ?? 0, { timeout: 10_000 }).toBeGreaterThan(0);
    expect((await server.service.services.oidc.consents({ profileId: user.id } as never)).length).toBe(0);
    const reset = (await readOutbox(server.dataDir)).filter((m) => m.to === user.email && m.subject === 'Password reset');
    expect(reset).toHaveLength(1);
    expect(reset[0]?.text).toMatch(/\/user\/password\?token=/);
    const events = await server.service.services.security.events({ profileId: user.id } as never);
    expect(events.events.map((e) => e.action)).toContain('sign-in:not-me');

    // Once only: the page and the API say the link no longer works, and nothing more is mailed.
    const again = await new UserAgent().go(`${server.url}/account/security/not-me?token=${notMe}`);
    expect(again.status).toBe(400);
    expect(again.html).toContain('This link no longer works');
    const api = await new Client(server.url).post('/security/not-me', { token: notMe });
    expect(api.body).toMatchObject({ status: 400, name: 'ValidationError', details: { path: 'token' } });
    expect((await readOutbox(server.dataDir)).filter((m) => m.to === user.email && m.subject === 'Password reset')).toHaveLength(1);
  }, LONG);
});

describe('"This was not me" after the intruder changed the account', () => {
  /** A passkey row as a registration stores it, `ageMs` old. */
  async function passkeyRow(profileId: string, name: string, ageMs: number): Promise<void> {
    await server.service.db('passkeys').insert({ credential_id: `cred-${name}-${profileId}`, profile_id: profileId, public_key: 'pAEC', counter: 0, transports: '[]', backed_up: false, device_type: 'singleDevice', name, created_at: Date.now() - ageMs });
  }

  it('removes the passkeys, second factors and addresses added since that sign-in, and mails the reset link to an address held before', async () => {
    const user = await createActiveUser(server);
    await login(new Client(server.url), user.email, FIREFOX);

    // Someone who knows the password signs in from another browser and makes the account theirs.
    const intruder = new Client(server.url);
    await login(intruder, user.email, CHROME_MAC);
    const init = await intruder.post('/mfa/setup/totp/init');
    expect(init.status, JSON.stringify(init.body)).toBe(200);
    const code = new TOTP({ secret: Secret.fromBase32(init.body.secret), algorithm: 'SHA1', digits: 6, period: 30 }).generate();
    expect((await intruder.post('/mfa/setup/totp/verify', { code })).status).toBe(200);
    const theirs = `taken-${user.id.slice(1).toLowerCase()}@attacker.test`;
    expect((await intruder.post('/user/confirm', { alternate: theirs, username: user.id })).status).toBe(200);
    const confirmation = /code: (\d{6})/.exec((await lastMailTo(server.dataDir, theirs)).text)?.[1];
    expect((await intruder.request('PUT', '/activatelink', { email: theirs, token: confirmation })).status).toBe(200);
    expect((await intruder.post('/trpc/accounts.setPreferredEmail', { email: theirs })).status).toBe(200);
    await passkeyRow(user.id, 'their key', 0);
    // The person's own, registered the day before (written here: a passkey asks a second step of a password sign-in).
    await passkeyRow(user.id, 'own laptop', 24 * 60 * 60 * 1000);

    const [mail] = await newBrowserMails(user.email);
    // The link's page says what confirming removes.
    expect(await server.service.services.notMe.link(notMeToken(mail as Mail))).toMatchObject({ live: true, addedSince: { passkeys: ['their key'], authenticatorApp: true, emailCodes: false, emails: [theirs] } });
    const done = await new Client(server.url).post('/security/not-me', { token: notMeToken(mail as Mail) });
    expect(done.body).toEqual({ status: 'ok', maskedEmail: `${user.email[0]}•••@${user.email.split('@')[1]}` });

    const db = server.service.db;
    expect((await db('passkeys').where({ profile_id: user.id })).map((p) => p.name)).toEqual(['own laptop']);
    expect(await db('mfa_factors').where({ profile_id: user.id }).first()).toMatchObject({ totp_secret: null, totp_enabled_at: null });
    expect(await db('mfa_recovery_codes').where({ profile_id: user.id })).toEqual([]);
    expect((await db('profile_emails').where({ profile_id: user.id })).map((e) => e.email)).toEqual([user.email]);
    const content = JSON.parse((await db('profiles').where({ id: user.id }).first()).content);
    expect(content.preferredEmail).not.toBe(theirs);
    const resets = (await readOutbox(server.dataDir)).filter((m) => m.subject === 'Password reset');
    expect(resets.filter((m) => m.to === theirs)).toEqual([]);
    expect(resets.filter((m) => m.to === user.email)).toHaveLength(1);
    // Nor can the address they added ask for a reset: it is no one's now.
    await new Client(server.url).post('/resettable', { id: theirs });
    expect((await readOutbox(server.dataDir)).filter((m) => m.to === theirs && m.subject === 'Password reset')).toEqual([]);
    const audited = await db('audit_log').where({ target: user.id, action: 'sign-in:not-me' }).first();
    expect(JSON.parse(audited.details)).toMatchObject({ undone: { totp: true, passkeys: 1, emails: [theirs] } });
  }, LONG);
});

/**
 * A person signed in once in their own browser; then someone who knows the password signs in from
 * another, adds an address of their own (confirmed), makes it preferred and removes the person's.
 * The new-browser mail, the intruder's client and their address.
 */
async function takenOver(prefix: string): Promise<{ user: Awaited<ReturnType<typeof createActiveUser>>; mail: Mail; intruder: Client; theirs: string }> {
  const user = await createActiveUser(server);
  await login(new Client(server.url), user.email, FIREFOX);
  const intruder = new Client(server.url);
  await login(intruder, user.email, CHROME_MAC);
  const [mail] = await newBrowserMails(user.email);
  const theirs = `${prefix}-${user.id.slice(1).toLowerCase()}@attacker.test`;
  expect((await intruder.post('/user/confirm', { alternate: theirs, username: user.id })).status).toBe(200);
  const code = /code: (\d{6})/.exec((await lastMailTo(server.dataDir, theirs)).text)?.[1];
  expect((await intruder.request('PUT', '/activatelink', { email: theirs, token: code })).status).toBe(200);
  expect((await intruder.post('/trpc/accounts.setPreferredEmail', { email: theirs })).status).toBe(200);
  expect((await intruder.post('/trpc/accounts.removeEmail', { email: user.email })).status).toBe(200);
  return { user, mail: mail as Mail, intruder, theirs };
}

describe('"This was not me" after the intruder took the address the mail went to', () => {
  it("gives the person's address back, makes it preferred, and voids the links and codes the intruder was sent", async () => {
    const { user, mail, intruder, theirs } = await takenOver('own');
    // A second address asked for and kept for later, and a reset link to their address.
    const later = `later-${user.id.slice(1).toLowerCase()}@attacker.test`;
    expect((await intruder.post('/user/confirm', { alternate: later, username: user.id })).status).toBe(200);
    const laterCode = /code: (\d{6})/.exec((await lastMailTo(server.dataDir, later)).text)?.[1];
    expect((await new Client(server.url).post('/resettable', { id: theirs, token: 'dev-ok' })).status).toBe(200);
    const theirReset = /token=([\w-]+)/.exec((await lastMailTo(server.dataDir, theirs)).text)?.[1];

    const done = await new Client(server.url).post('/security/not-me', { token: notMeToken(mail) });
    expect(done.body).toEqual({ status: 'ok', maskedEmail: `${user.email[0]}•••@${user.email.split('@')[1]}` });
    const db = server.service.db;
    expect((await db('profile_emails').where({ profile_id: user.id })).map((e) => [e.email, Boolean(e.confirmed)])).toEqual([[user.email, true]]);
    expect(JSON.parse((await db('profiles').where({ id: user.id }).first()).content).preferredEmail).toBe(user.email);
    const resets = (await readOutbox(server.dataDir)).filter((m) => m.subject === 'Password reset' && m.to === user.email);
    expect(resets).toHaveLength(1);
    // What they were sent no longer works: the kept code, their reset link.
    expect((await new Client(server.url).request('PUT', '/activatelink', { email: later, token: laterCode })).status).toBe(400);
    expect((await new Client(server.url).request('PUT', `/reset/${theirReset}`, { password: 'An0ther-Long-Passphrase!' })).status).toBe(400);
    expect((await db('profile_emails').where({ profile_id: user.id })).map((e) => e.email)).toEqual([user.email]);
  }, LONG);
});

describe('"This was not me" when a sign-up was parked on the removed address', () => {
  it('takes the address back from the unconfirmed sign-up, and the reset link mailed there works', async () => {
    const { user, mail } = await takenOver('parked');
    // The person's address, claimed by a new sign-up that no one confirms.
    await registerAndGetToken(server, { email: user.email, fullname: 'Parked Here' });

    const done = await new Client(server.url).post('/security/not-me', { token: notMeToken(mail as Mail) });
    expect(done.body).toEqual({ status: 'ok', maskedEmail: `${user.email[0]}•••@${user.email.split('@')[1]}` });
    const db = server.service.db;
    expect((await db('profile_emails').where({ email: user.email })).map((e) => [e.profile_id, Boolean(e.confirmed)])).toEqual([[user.id, true]]);
    expect((await db('profile_emails').where({ profile_id: user.id })).map((e) => e.email)).toEqual([user.email]);
    const reset = (await readOutbox(server.dataDir)).filter((m) => m.subject === 'Password reset' && m.to === user.email);
    expect(reset).toHaveLength(1);
    const token = /token=([\w-]+)/.exec(reset[0]?.text ?? '')?.[1];
    expect((await new Client(server.url).request('PUT', `/reset/${token}`, { password: 'An0ther-Long-Passphrase!' })).status).toBe(200);
  }, LONG);
});

describe('one session per browser', () => {
  it('a browser signing in again as the same person signs its session in again: one session, a new sign-in time', async () => {
    const user = await createActiveUser(server);
    const laptop = new Client(server.url);
    await login(laptop, user.email, FIREFOX);
    const [before] = (await laptop.get('/sessions')).body.sessions;
    await login(laptop, user.email, FIREFOX);
    const after = (await laptop.get('/sessions')).body.sessions;
    expect(after).toHaveLength(1);
    expect(after[0]).toMatchObject({ id: before.id, current: true, method: 'password' });
    // Another browser is another session.
    await login(new Client(server.url), user.email, CHROME_MAC);
    expect((await laptop.get('/sessions')).body.sessions).toHaveLength(2);
  });

  it('an application forcing a new sign-in (prompt=login) keeps the browser at one session, with the same sid', async () => {
    const user = await createActiveUser(server);
    const token = await approvedRegistrationToken(server);
    const registered = await registerByHttp(server, token, { redirect_uris: [REDIRECT], client_name: 'Forced Login App' });
    const config = await client.discovery(new URL(server.url), registered.body.client_id, undefined, client.ClientSecretBasic(registered.body.client_secret ?? ''), { execute: [client.allowInsecureRequests] });
    const agent = new UserAgent();
    const signIn = async (extra: Record<string, string>) => {
      const verifier = client.randomPKCECodeVerifier();
      const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra });
      const page = await agent.authorize(url, { email: user.email, password: PASSWORD });
      return client.authorizationCodeGrant(config, new URL(page.location ?? ''), { pkceCodeVerifier: verifier, idTokenExpected: true });
    };
    const first = await signIn({});
    const forced = await signIn({ prompt: 'login' });
    expect(forced.claims()?.sid).toBe(first.claims()?.sid);
    expect(Number(forced.claims()?.auth_time)).toBeGreaterThanOrEqual(Number(first.claims()?.auth_time));
    const cookie = cookieHeader(agent.jar);
    const sessions = (await (await fetch(`${server.url}/sessions`, { headers: { cookie } })).json()) as { sessions: Array<{ method?: string; client?: string }> };
    expect(sessions.sessions).toHaveLength(1);
    expect(sessions.sessions[0]).toMatchObject({ method: 'password', client: 'Forced Login App' });
    // No logout was sent for the session signed in again.
    const events = await server.service.services.security.events({ profileId: user.id } as never);
    expect(events.events.filter((e) => e.action === 'sign-in').map((e) => e.client)).toEqual(['Forced Login App', 'Forced Login App']);
    expect(events.events.find((e) => e.action === 'app:granted')).toMatchObject({ client: 'Forced Login App' });
  }, LONG);
});
