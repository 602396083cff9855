/**
 * Issue 16: the provider keeps what rarely changes in memory (the published keys and their JWKS,
 * the client records), each read from the database at most once a second. A change is seen at
 * once by the process that made it, and within that second by every other process on the
 * database. Access tokens are not kept: a revocation holds everywhere at once.
 *
 * Two servers on one data folder (one database) stand for two processes; both read one
 * `TestClock`, which the tests move forward instead of sleeping.
 */
import { rm } from 'node:fs/promises';
import * as client from 'openid-client';
import { afterEach, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { dropTestDatabase } from '../helpers/database.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { authorizationRequest, REDIRECT, relyingParty, UserAgent } from './helpers.ts';

let dir: string;
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await rm(dir, { recursive: true, force: true });
  await dropTestDatabase(dir);
});

/** Two server processes of one install on one clock; keys sign as soon as they are rotated in. */
async function twoServers(clock: TestClock): Promise<[TestServer, TestServer]> {
  dir = await tempDir();
  const env = { OIDC_KEY_ACTIVATION_SECONDS: '0' };
  const a = await startServer(env, dir, { now: clock.now });
  servers.push(a);
  const b = await startServer(env, dir, { now: clock.now });
  servers.push(b);
  return [a, b];
}

const kidsOf = async (server: TestServer): Promise<string[]> => {
  const res = await fetch(`${server.url}/oidc/jwks`);
  expect(res.status).toBe(200);
  return ((await res.json()) as { keys: Array<{ kid: string }> }).keys.map((k) => k.kid);
};

/** An authorization request to `server` by `clientId`: where the browser is sent first. */
async function authorizeAt(server: TestServer, clientId: string): Promise<{ status: number; location: string | null }> {
  const url = new URL(`${server.url}/oidc/authorize`);
  url.search = new URLSearchParams({
    client_id: clientId,
    redirect_uri: REDIRECT,
    response_type: 'code',
    scope: 'openid',
    code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
    code_challenge_method: 'S256',
  }).toString();
  const res = await fetch(url, { redirect: 'manual' });
  await res.arrayBuffer();
  return { status: res.status, location: res.headers.get('location') };
}

describe('the key set, with two processes on one database', () => {
  it('is, after a rotation, the new set at once where it was rotated and within a second on the other', async () => {
    const clock = new TestClock();
    const [a, b] = await twoServers(clock);
    const before = await kidsOf(b);
    expect(await kidsOf(a)).toEqual(before);
    const rotated = await a.service.services.oidc.keys.rotate();
    expect(await kidsOf(a)).toEqual([rotated, ...before]);
    clock.advance(1000);
    expect(await kidsOf(b)).toEqual([rotated, ...before]);
  });

  it('answers a request that names the ETag it has with 304, and a changed set with its new ETag', async () => {
    const clock = new TestClock();
    const [a] = await twoServers(clock);
    const first = await fetch(`${a.url}/oidc/jwks`);
    const etag = first.headers.get('etag');
    expect(etag).toMatch(/^"[\w-]+"$/);
    await first.arrayBuffer();
    // As a browser revalidates (fetch would otherwise add `Cache-Control: no-cache`, which asks for the body).
    const revalidate = { 'if-none-match': etag ?? '', 'cache-control': 'max-age=0' };
    const again = await fetch(`${a.url}/oidc/jwks`, { headers: revalidate });
    expect(again.status).toBe(304);
    await a.service.services.oidc.keys.rotate();
    const changed = await fetch(`${a.url}/oidc/jwks`, { headers: revalidate });
    expect(changed.status).toBe(200);
    expect(changed.headers.get('etag')).not.toBe(etag);
    await changed.arrayBuffer();
  });
});

describe('a client record, with two processes on one database', () => {
  it('once rejected on one process, is refused there at once and on the other within a second', async () => {
    const clock = new TestClock();
    const [a, b] = await twoServers(clock);
    const oidc = a.service.services.oidc;
    await oidc.addClient({ id: 'cached-app', name: 'Cached App', redirectUris: [REDIRECT], scopes: ['openid'] });
    await oidc.setClientStatus('cached-app', 'approved');
    // Both read the approved record: each sends the browser on to sign in.
    expect((await authorizeAt(a, 'cached-app')).status).toBe(303);
    expect((await authorizeAt(b, 'cached-app')).status).toBe(303);
    await oidc.setClientStatus('cached-app', 'rejected');
    expect((await authorizeAt(a, 'cached-app')).status).toBe(400);
    clock.advance(1000);
    expect((await authorizeAt(b, 'cached-app')).status).toBe(400);
    // Removed on the other process: refused there at once, and here within a second.
    await b.service.services.oidc.removeClient('cached-app');
    expect((await authorizeAt(b, 'cached-app')).status).toBe(400);
    clock.advance(1000);
    expect((await authorizeAt(a, 'cached-app')).status).toBe(400);
  });
});

describe('an access token, with two processes on one database', () => {
  it('once revoked on one process, is refused by UserInfo on both at once', async () => {
    const clock = new TestClock();
    const [a, b] = await twoServers(clock);
    const oidc = a.service.services.oidc;
    await oidc.addClient({ id: 'token-app', name: 'Token App', redirectUris: [REDIRECT], scopes: ['openid', 'profile', 'email'] });
    await oidc.setClientStatus('token-app', 'approved');
    const user = await createActiveUser(a, { fullname: 'Two Processes' });
    const rp = await relyingParty(a, 'token-app');
    const request = await authorizationRequest(rp);
    const page = await new UserAgent().authorize(request.url, { email: user.email, password: PASSWORD });
    const tokens = await client.authorizationCodeGrant(rp, new URL(page.location ?? ''), {
      pkceCodeVerifier: request.verifier,
      expectedState: request.state,
      expectedNonce: request.nonce,
    });
    const userinfo = (server: TestServer) => fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${tokens.access_token}` } });
    expect((await userinfo(a)).status).toBe(200);
    expect((await userinfo(b)).status).toBe(200);
    const revoked = await fetch(`${a.url}/oidc/revoke`, { method: 'POST', body: new URLSearchParams({ token: tokens.access_token, client_id: 'token-app' }) });
    expect(revoked.status).toBe(200);
    expect((await userinfo(a)).status).toBe(401);
    expect((await userinfo(b)).status).toBe(401);
  });
});
