/**
 * The procedures of "Password & security" over REST: changing the password (the current one
 * required, other sessions ended unless told otherwise, audited, mailed), one's sessions with
 * their browser and address, ending another one, and the recent security events.
 */
import { Secret, TOTP } from 'otpauth';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { approvedRegistrationToken, REDIRECT, registerByHttp, UserAgent } from '../oidc/helpers.ts';
import * as oidcClient from 'openid-client';

/** The details of the person's newest password change in the audit log (a JSON column: text on SQLite). */
async function auditDetails(profileId: string): Promise<unknown> {
  const entry = await server.service.db('audit_log').where({ target: profileId, action: 'password:change' }).orderBy('id', 'desc').first();
  return typeof entry?.details === 'string' ? JSON.parse(entry.details) : entry?.details;
}

const FIREFOX = 'Mozilla/5.0 (Windows NT 10.0; Win64; x64; rv:132.0) Gecko/20100101 Firefox/132.0';
let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

async function signedIn(id: string, password = PASSWORD, userAgent?: string): Promise<Client> {
  const client = new Client(server.url);
  const res = await client.request('POST', '/login', { id, password }, userAgent ? { 'user-agent': userAgent } : {});
  expect(res.status).toBe(200);
  return client;
}

describe('password & security procedures', () => {
  it('lists the caller’s sessions with browser, system and address, this one first', async () => {
    const user = await createActiveUser(server);
    const laptop = await signedIn(user.email, PASSWORD, FIREFOX);
    await signedIn(user.email);
    const res = await laptop.get('/sessions');
    expect(res.status).toBe(200);
    expect(res.body.sessions).toHaveLength(2);
    expect(res.body.sessions[0]).toMatchObject({ current: true, browser: 'Firefox 132', os: 'Windows 10', platform: 'desktop', address: '127.0.0.1' });
    expect(res.body.sessions[0].lastSeenAt).toBeGreaterThanOrEqual(res.body.sessions[0].createdAt);
    expect(res.body.sessions[1]).toMatchObject({ current: false });
    // A guest has none.
    expect((await new Client(server.url).get('/sessions')).status).toBe(401);
  });

  it('ends another of one’s sessions, but not this one and not someone else’s', async () => {
    const user = await createActiveUser(server);
    const stranger = await createActiveUser(server);
    const laptop = await signedIn(user.email);
    const phone = await signedIn(user.email);
    const theirs = await signedIn(stranger.email);
    const [mine, other] = (await laptop.get('/sessions')).body.sessions;
    const strangers = (await theirs.get('/sessions')).body.sessions[0];

    expect((await laptop.request('DELETE', `/sessions/${mine.id}`)).status).toBe(400);
    expect((await laptop.request('DELETE', `/sessions/${strangers.id}`)).body).toMatchObject({ status: 404, name: 'NotFoundError' });
    expect((await theirs.get('/profiles')).status).toBe(200);

    expect((await laptop.request('DELETE', `/sessions/${other.id}`)).status).toBe(200);
    expect((await phone.get('/profiles')).status).toBe(401);
    expect((await laptop.get('/sessions')).body.sessions.map((s: { id: string }) => s.id)).toEqual([mine.id]);
    expect((await laptop.get('/security/events')).body.events[0]).toMatchObject({ action: 'session:end' });
  });

  it('changes the password only with the current one; other sessions end, this one goes on; audited and mailed', async () => {
    const user = await createActiveUser(server);
    const laptop = await signedIn(user.email);
    const phone = await signedIn(user.email);

    const wrong = await laptop.post('/password', { currentPassword: 'Wrong-Horse-9', newPassword: 'Brand-New-Horse-1' });
    expect(wrong.body).toMatchObject({ status: 400, name: 'ValidationError', message: 'The current password is not correct', details: { path: 'currentPassword' } });
    const weak = await laptop.post('/password', { currentPassword: PASSWORD, newPassword: 'short' });
    expect(weak.status).toBe(400);

    const changed = await laptop.post('/password', { currentPassword: PASSWORD, newPassword: 'Brand-New-Horse-1' });
    expect(changed.status).toBe(200);
    expect(changed.body).toEqual({ status: 'ok', token: expect.any(String) });
    expect((await laptop.get('/profiles')).status).toBe(200);
    expect((await phone.get('/profiles')).status).toBe(401);
    expect((await new Client(server.url).post('/login', { id: user.email, password: PASSWORD })).status).toBe(400);
    await signedIn(user.email, 'Brand-New-Horse-1');
    expect((await lastMailTo(server.dataDir, user.email)).subject).toBe('Your password was changed');
    const actions = (await laptop.get('/security/events')).body.events.map((e: { action: string }) => e.action);
    // The old password, tried after the change, is a failed sign-in in the activity log.
    expect(actions.slice(0, 3)).toEqual(['sign-in', 'sign-in:failed', 'password:change']);
    // Which sessions ended, in the words a reset's entry uses ('all', 'others' or 'none').
    expect(await auditDetails(user.id)).toMatchObject({ sessionsEnded: 'others' });
  });

  it('keeps the other sessions when told to', async () => {
    const user = await createActiveUser(server);
    const laptop = await signedIn(user.email);
    const phone = await signedIn(user.email);
    const changed = await laptop.post('/password', { currentPassword: PASSWORD, newPassword: 'Brand-New-Horse-2', logoutOtherSessions: false });
    expect(changed.body).toEqual({ status: 'ok' });
    expect((await phone.get('/profiles')).status).toBe(200);
    expect(await auditDetails(user.id)).toMatchObject({ sessionsEnded: 'none' });
  });

  it('records every sign-in in the person’s events, with the browser', async () => {
    const user = await createActiveUser(server);
    const laptop = await signedIn(user.email, PASSWORD, FIREFOX);
    const events = (await laptop.get('/security/events')).body.events;
    expect(events[0]).toMatchObject({ action: 'sign-in', actor: user.id, address: '127.0.0.1', browser: 'Firefox 132', os: 'Windows 10' });
  });

  it('lets sign-ins go after 90 days, and keeps the other events', async () => {
    const clock = new TestClock();
    const own = await startServer({}, undefined, { now: clock.now });
    try {
      const user = await createActiveUser(own);
      const first = new Client(own.url);
      await first.post('/login', { id: user.email, password: PASSWORD });
      await first.post('/password', { currentPassword: PASSWORD, newPassword: 'Brand-New-Horse-3' });
      clock.advance(91 * 24 * 60 * 60 * 1000);
      expect(await own.service.sweep()).toBe(true);
      const later = new Client(own.url);
      await later.post('/login', { id: user.email, password: 'Brand-New-Horse-3' });
      const actions = (await later.get('/security/events')).body.events.map((e: { action: string }) => e.action);
      expect(actions).toEqual(['sign-in', 'password:change']);
    } finally {
      await own.close();
    }
  });
});

describe('the activity log', () => {
  const events = async (client: Client, query = '') => (await client.get(`/security/events${query}`)).body;

  it('records a wrong password for an existing account, with the browser; an unknown account gets no line anywhere', async () => {
    const user = await createActiveUser(server);
    const failed = await new Client(server.url).request('POST', '/login', { id: user.email, password: 'Wrong-Horse-1' }, { 'user-agent': FIREFOX });
    expect(failed.status).toBe(400);
    const before = await server.service.db('audit_log').where({ action: 'sign-in:failed' }).count({ n: '*' }).first();
    expect((await new Client(server.url).post('/login', { id: 'nobody-here@example.org', password: 'Wrong-Horse-1' })).status).toBe(400);
    expect(await server.service.db('audit_log').where({ action: 'sign-in:failed' }).count({ n: '*' }).first()).toEqual(before);
    const laptop = await signedIn(user.email);
    expect((await events(laptop)).events.slice(0, 2)).toMatchObject([
      { action: 'sign-in', method: 'password' },
      { action: 'sign-in:failed', actor: 'system', address: '127.0.0.1', browser: 'Firefox 132', os: 'Windows 10' },
    ]);
  });

  it('keeps at most 20 failed sign-ins of an account an hour, so guesses cannot fill it', async () => {
    const user = await createActiveUser(server);
    for (let i = 0; i < 24; i += 1) {
      // Past the account's allowance a browser proves it is a person (the test suite's token).
      const res = await new Client(server.url).post('/login', { id: user.email, password: `Wrong-Horse-${i}`, token: 'dev-ok' });
      expect(res.status).toBe(400);
    }
    expect(await server.service.db('audit_log').where({ target: user.id, action: 'sign-in:failed' }).count({ n: '*' }).first()).toEqual({ n: 20 });
  });

  it('says how each sign-in was made, and records wrong codes with how many tries are left', async () => {
    const clock = new TestClock();
    const own = await startServer({}, undefined, { now: clock.now });
    try {
      const user = await createActiveUser(own);
      const laptop = new Client(own.url);
      await laptop.post('/login', { id: user.email, password: PASSWORD });
      const init = await laptop.post('/mfa/setup/totp/init');
      const code = (at: number) => TOTP.generate({ secret: Secret.fromBase32(init.body.secret), timestamp: at });
      expect((await laptop.post('/mfa/setup/totp/verify', { code: code(clock.now()) })).status).toBe(200);
      clock.advance(60_000);

      const phone = new Client(own.url);
      const pending = (await phone.request('POST', '/login', { id: user.email, password: PASSWORD }, { 'user-agent': FIREFOX })).body.mfaPendingToken;
      const wrong = await phone.post('/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: '000000' });
      expect(wrong.body).toMatchObject({ status: 400, name: 'BadRequestError', message: 'Invalid verification code', details: { triesLeft: 4 } });
      expect((await phone.post('/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: '000001' })).body.details).toMatchObject({ triesLeft: 3 });
      const right = await phone.request('POST', '/mfa/verify', { mfaPendingToken: pending, method: 'totp', code: code(clock.now()) }, { 'user-agent': FIREFOX });
      expect(right.status).toBe(200);

      const log = (await events(phone)).events;
      expect(log.slice(0, 3)).toMatchObject([
        { action: 'sign-in', method: 'password+totp', browser: 'Firefox 132' },
        { action: 'mfa.code.wrong', factor: 'totp', address: '127.0.0.1' },
        { action: 'mfa.code.wrong', factor: 'totp' },
      ]);
      expect(log.find((e: { action: string }) => e.action === 'sign-in' && e !== log[0])).toMatchObject({ method: 'password' });
      expect((await phone.get('/sessions')).body.sessions[0]).toMatchObject({ current: true, method: 'password+totp' });
      // Sign-ins, failed ones and wrong codes are let go after 90 days; the factor's line stays.
      clock.advance(91 * 24 * 60 * 60 * 1000);
      expect(await own.service.sweep()).toBe(true);
      const kept = await own.service.db('audit_log').where({ target: user.id }).pluck('action');
      expect(kept).not.toContain('mfa.code.wrong');
      expect(kept).toContain('mfa.totp.enabled');
    } finally {
      await own.close();
    }
  });

  it('records the applications allowed and revoked, by name', async () => {
    const user = await createActiveUser(server);
    const registered = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: [REDIRECT], client_name: 'Paper Finder' });
    const config = await oidcClient.discovery(new URL(server.url), registered.body.client_id, undefined, oidcClient.ClientSecretBasic(registered.body.client_secret ?? ''), { execute: [oidcClient.allowInsecureRequests] });
    const verifier = oidcClient.randomPKCECodeVerifier();
    const url = oidcClient.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid email', code_challenge: await oidcClient.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const page = await new UserAgent().authorize(url, { email: user.email, password: PASSWORD });
    expect(page.location).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?code=/);
    const laptop = await signedIn(user.email);
    expect((await laptop.request('DELETE', `/oidc/consents/${registered.body.client_id}`)).status).toBe(200);
    const log = (await events(laptop)).events;
    expect(log[0]).toMatchObject({ action: 'app:revoked', client: 'Paper Finder' });
    expect(log.find((e: { action: string }) => e.action === 'app:granted')).toMatchObject({ client: 'Paper Finder' });
    expect(log.find((e: { action: string; client?: string }) => e.action === 'sign-in' && e.client)).toMatchObject({ method: 'password', client: 'Paper Finder' });
  });

  it('shows 30 events at a time, and pages back with `before`', async () => {
    const user = await createActiveUser(server);
    const laptop = await signedIn(user.email);
    for (let i = 0; i < 32; i += 1) await server.service.services.db('audit_log').insert({ at: Date.now(), actor: user.id, action: 'mfa.preferred', target: user.id });
    const first = await events(laptop);
    expect(first.events).toHaveLength(30);
    expect(first.older).toEqual(expect.any(Number));
    const second = await events(laptop, `?before=${first.older}`);
    expect(second.events.map((e: { action: string }) => e.action)).toEqual(['mfa.preferred', 'mfa.preferred', 'sign-in']);
    expect(second.older).toBeNull();
    expect((await laptop.get('/security/events?before=abc')).status).toBe(400);
  });
});

