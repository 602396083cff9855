/**
 * A relative of "a stolen access token becomes a 30-day session": `POST /impersonate` with only
 * `Authorization: Bearer <token>` set a refresh cookie for the impersonation session (refreshable
 * for as long as the impersonator's own session lives), and `POST /impersonate/exit` with only the
 * impersonation's access token rotated the impersonator's own session and handed its refresh
 * cookie to whoever held that token. An access token alone must never grow into a longer session.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Client } from '../helpers/http.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
let admin: { id: string; email: string };
let victim: { id: string; email: string };

beforeAll(async () => {
  server = await startServer();
  admin = await createActiveUser(server, { role: 'superuser', fullname: 'Root Admin' });
  victim = await createActiveUser(server, { fullname: 'Victor Victim' });
});
afterAll(() => server.close());

/** A client holding nothing but an access token of the admin's session. */
async function bearerOnly(): Promise<{ thief: Client; token: string }> {
  const login = await new Client(server.url).post('/login', { id: admin.email, password: PASSWORD });
  const thief = new Client(server.url);
  thief.bearer = login.body.token;
  return { thief, token: login.body.token };
}

describe('impersonating with nothing but an access token', () => {
  it('answers an access token that ends no later than the one shown, and sets no cookie', async () => {
    const { thief, token } = await bearerOnly();
    const res = await thief.post('/impersonate', { groupId: victim.id });
    expect(res.status).toBe(200);
    expect(res.headers.getSetCookie()).toEqual([]);
    expect(decodeJwt(res.body.token).exp).toBeLessThanOrEqual(decodeJwt(token).exp as number);
  });

  it('cannot turn the impersonation token into the impersonator’s own session, and changes nothing', async () => {
    const { thief } = await bearerOnly();
    const impersonation = (await thief.post('/impersonate', { groupId: victim.id })).body.token;
    const holder = new Client(server.url);
    holder.bearer = impersonation;
    const exit = await holder.post('/impersonate/exit');
    expect(exit.status).toBe(403);
    expect(exit.body).toMatchObject({ status: 403, name: 'ForbiddenError' });
    expect(exit.headers.getSetCookie()).toEqual([]);
    // The impersonation goes on (nothing changed), and logging out ends it.
    expect((await holder.get('/profiles')).body.profiles[0].id).toBe(victim.id);
    expect((await holder.post('/logout')).status).toBe(200);
    expect((await holder.get('/profiles')).status).toBe(401);
  });

  it('a browser holding the cookies still impersonates and comes back with them', async () => {
    const browser = new Client(server.url);
    await browser.post('/login', { id: admin.email, password: PASSWORD });
    const res = await browser.post('/impersonate', { groupId: victim.id });
    expect(Object.keys(res.cookies)).toContain('service.refreshToken');
    const back = await browser.post('/impersonate/exit');
    expect(back.status).toBe(200);
    expect(back.body.user.profile.id).toBe(admin.id);
  });
});
