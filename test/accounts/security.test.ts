/**
 * The procedures of "Password & security" over REST: changing the password (the current one
 * required, other sessions ended unless told otherwise, audited, mailed), one's sessions with
 * their browser and address, ending another one, and the recent security events.
 */
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { Client } from '../helpers/http.ts';
import { lastMailTo } from '../helpers/outbox.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

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
    expect(actions.slice(0, 2)).toEqual(['sign-in', 'password:change']);
  });

  it('keeps the other sessions when told to', async () => {
    const user = await createActiveUser(server);
    const laptop = await signedIn(user.email);
    const phone = await signedIn(user.email);
    const changed = await laptop.post('/password', { currentPassword: PASSWORD, newPassword: 'Brand-New-Horse-2', logoutOtherSessions: false });
    expect(changed.body).toEqual({ status: 'ok' });
    expect((await phone.get('/profiles')).status).toBe(200);
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
