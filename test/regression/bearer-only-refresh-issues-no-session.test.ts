/**
 * Issue 12, defect 4. The attack: with nothing but a stolen access token, `POST /refreshToken`
 * (`Authorization: Bearer <token>`, no refresh cookie) answered 200, set a new 30-day refresh
 * cookie, and rotated the session's refresh token, so the owner's own refresh cookie stopped
 * working: the thief held the session and the owner was signed out.
 *
 * Now a bearer-only refresh answers a new access token for the same session that expires no
 * later than the one presented, sets no cookie and changes no session row.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SessionTokens, tokenUser } from '../../server/accounts/session-tokens.ts';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer, sessionSecret } from '../helpers/server.ts';
import { createActiveUser, loggedIn } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(async () => {
  await server.close();
});

describe('a refresh with only a bearer token', () => {
  it('issues no refresh token, rotates nothing and leaves the owner signed in', async () => {
    const user = await createActiveUser(server);
    const owner = await loggedIn(server, user.email);
    const sessionsBefore = await server.service.db('sessions').where({ profile_id: user.id }).select('id', 'refresh_hash', 'expires_at');

    const thief = new Client(server.url);
    thief.bearer = owner.token;
    const res = await thief.post('/refreshToken');
    expect(res.status).toBe(200);
    expect(res.body.user.profile.id).toBe(user.id);
    expect(res.headers.getSetCookie()).toEqual([]);
    expect(thief.jar.size).toBe(0);

    // The new token is for the same session and lives no longer than the stolen one.
    const stolen = decodeJwt(owner.token);
    const fresh = decodeJwt(res.body.token);
    expect(fresh.sid).toBe(stolen.sid);
    expect(fresh.exp).toBeLessThanOrEqual(stolen.exp as number);

    // No session row changed, none was added.
    expect(await server.service.db('sessions').where({ profile_id: user.id }).select('id', 'refresh_hash', 'expires_at')).toEqual(sessionsBefore);
    expect(await server.service.db('session_refresh_history').whereIn('session_id', sessionsBefore.map((s) => s.id))).toEqual([]);

    // The owner's refresh cookie still works.
    const own = await owner.client.post('/refreshToken');
    expect(own.status).toBe(200);
    expect(own.cookies['service.refreshToken']?.value).toBeTruthy();
  });

  it('the new token never lives longer than the one presented', async () => {
    const user = await createActiveUser(server);
    const { token } = await loggedIn(server, user.email);
    // A token of the same session that has only a minute left, signed as the service signs.
    const secret = await sessionSecret(server);
    const short = await new SessionTokens(secret, server.url).sign({ sub: user.id, sid: decodeJwt(token).sid as string, ver: 0, user: tokenUser(user.email, user.id) }, 60);
    const thief = new Client(server.url);
    thief.bearer = short;
    const res = await thief.post('/refreshToken');
    expect(res.status).toBe(200);
    expect(decodeJwt(res.body.token).exp).toBeLessThanOrEqual(decodeJwt(short).exp as number);
  });

  it('its relative, logout-all-devices with only a bearer token, issues no refresh token either', async () => {
    const user = await createActiveUser(server);
    const owner = await loggedIn(server, user.email);
    const thief = new Client(server.url);
    thief.bearer = owner.token;
    const res = await thief.post('/logout-all-devices');
    expect(res.status).toBe(200);
    expect(Object.keys(res.cookies).filter((name) => name === 'service.refreshToken')).toEqual([]);
    expect(decodeJwt(res.body.token).exp).toBeLessThanOrEqual(decodeJwt(owner.token).exp as number);
    // The owner's refresh cookie still refreshes the session (which the call kept).
    expect((await owner.client.post('/refreshToken')).status).toBe(200);
  });

  it('an invalid bearer token gets a 401 Error body', async () => {
    const thief = new Client(server.url);
    thief.bearer = 'not-a-token';
    const res = await thief.post('/refreshToken');
    expect(res.status).toBe(401);
    expect(res.body).toMatchObject({ status: 401, name: 'UnauthorizedError' });
  });
});
