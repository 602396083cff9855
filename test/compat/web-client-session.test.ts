/**
 * The session as the platform's web client reads it, from its code:
 * - `app/auth.js` `getTokenPayload` (every server-rendered page, through `serverAuth`): the access
 *   token decoded with `jwt-decode` (no signature check) is a session only while `exp` is ahead
 *   and `iss` starts with `openreview`, and `serverAuth` then needs `user.profile.id`;
 * - `middleware.js`: with no access cookie but a refresh cookie, `POST /refreshToken` with only that
 *   cookie, a JSON content type and its `X-Url`, `X-Source` and `X-User` headers (`X-User` is the
 *   text "undefined" when the refresh token is not a JWT, as ours is not); the answer's `token`
 *   must pass the same check before its `Set-Cookie` is passed on;
 * - `lib/auth.js` of earlier releases: `iss` exactly `openreview`.
 */
import { decodeJwt } from 'jose';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { cookiesOf } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';

let server: TestServer;
beforeAll(async () => {
  server = await startServer();
});
afterAll(() => server.close());

interface WebUser {
  id: string;
  profile: { id: string; fullname?: string; emails?: string[] };
  impersonator?: unknown;
}

/** `app/auth.js` `getTokenPayload`, then `serverAuth`'s own test: the signed-in user, or null for a guest. */
function serverAuthUser(token: string | undefined): WebUser | null {
  if (!token) return null;
  let payload: { exp?: number; iss?: string; user?: { id: string; profile?: { id: string } } } | null;
  try {
    payload = decodeJwt(token);
  } catch {
    payload = null;
  }
  if (!payload || (payload.exp ?? 0) * 1000 < Date.now() || !payload.iss?.startsWith('openreview')) return null;
  if (!payload.user?.profile?.id) return null;
  return payload.user as WebUser;
}

/** What the navigation bar of every page reads of that user (`app/(Home)/NavLg.js`, `NavNotificationCount.js`). */
function navigation(user: WebUser): { name: string; messagesTo: string | undefined; impersonated: boolean } {
  return { name: user.profile.fullname ?? '', messagesTo: user.profile.emails?.[0], impersonated: Boolean(user.impersonator) };
}

it('a signed-in person is signed in on the web client\'s server-rendered pages, and after its middleware refreshes', async () => {
  const { id, email } = await createActiveUser(server);
  const login = await fetch(`${server.url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: email, password: PASSWORD }),
  });
  expect(login.status).toBe(200);
  const { token } = (await login.json()) as { token: string };
  const cookies = cookiesOf(login);
  expect(serverAuthUser(token)).toMatchObject({ id: email, profile: { id } });
  expect(serverAuthUser(cookies['service.accessToken']?.value)).toMatchObject({ id: email, profile: { id } });
  expect(navigation(serverAuthUser(token)!)).toEqual({ name: 'Grace Hopper', messagesTo: email, impersonated: false });
  // Earlier releases (`lib/auth.js`): the issuer exactly.
  expect(decodeJwt(token).iss).toBe('openreview');

  const refreshed = await fetch(`${server.url}/refreshToken`, {
    method: 'POST',
    headers: {
      Accept: 'application/json,text/*;q=0.99',
      Cookie: `service.refreshToken=${cookies['service.refreshToken']?.value}`,
      'Content-Type': 'application/json; charset=UTF-8',
      'X-Url': `${server.url}/profile`,
      'X-User': 'undefined',
      'X-Source': 'middleware',
    },
  });
  expect(refreshed.status).toBe(200);
  const data = (await refreshed.json()) as { token?: string };
  expect(navigation(serverAuthUser(data.token)!)).toEqual({ name: 'Grace Hopper', messagesTo: email, impersonated: false });
  expect(refreshed.headers.get('set-cookie')).toContain('service.accessToken=');

  // And the service itself takes what it gave the web client.
  const me = await fetch(`${server.url}/mfa/status`, { headers: { authorization: `Bearer ${data.token}` } });
  expect(me.status).toBe(200);
});

it('an impersonation\'s token says so, as the web client\'s menu shows it', async () => {
  const admin = await createActiveUser(server, { role: 'superuser', fullname: 'Ada Lovelace' });
  const target = await createActiveUser(server);
  const login = await fetch(`${server.url}/login`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ id: admin.email, password: PASSWORD }),
  });
  const { token } = (await login.json()) as { token: string };
  const res = await fetch(`${server.url}/impersonate`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', authorization: `Bearer ${token}` },
    body: JSON.stringify({ groupId: target.id }),
  });
  expect(res.status).toBe(200);
  const impersonated = serverAuthUser(((await res.json()) as { token: string }).token);
  expect(impersonated).toMatchObject({ profile: { id: target.id } });
  expect(navigation(impersonated!)).toEqual({ name: 'Grace Hopper', messagesTo: target.email, impersonated: true });
});
