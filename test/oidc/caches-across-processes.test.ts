/**
 * Issue 16: the provider keeps what rarely changes in memory (the published keys and their JWKS,
 * the client records), each read from the database at most once a second. A change is seen at
 * once by the process that made it, and within that second by every other process on the
 * database. UserInfo's answers are kept for up to a second in the same way: a revocation, a
 * logout of every device, a block or a withdrawn consent holds at once on the process that
 * handled it, and within that second on every other. On PostgreSQL, where processes run on
 * several machines, nothing that decides whether something is live is kept (`keptMsFor`): every
 * such change holds at once on every process; the keys are still read once a second.
 *
 * Two servers on one data folder (one database) stand for two processes of one install: both
 * name the first one's address as theirs (the issuer, as behind a load balancer), and both read
 * one `TestClock`, which the tests move forward instead of sleeping.
 */
import { createHash } from 'node:crypto';
import { rm } from 'node:fs/promises';
import * as client from 'openid-client';
import { afterEach, describe, expect, it } from 'vitest';
import { TestClock } from '../helpers/clock.ts';
import { dropTestDatabase } from '../helpers/database.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import type { Client } from '../helpers/http.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { authorizationRequest, REDIRECT, redeemCode, registerClient, relyingParty, UserAgent } from './helpers.ts';

/** Two servers and a full sign-in through the provider per step: slow on a loaded machine. */
const LONG = { timeout: 60_000 };

let dir: string;
const servers: TestServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((server) => server.close()));
  await rm(dir, { recursive: true, force: true });
  await dropTestDatabase(dir);
});

/** On SQLite the other process sees a change within the second its readings are kept; on PostgreSQL at once (`keptMsFor`). */
function seenByTheOther(clock: TestClock): void {
  if (process.env.DATABASE_URL === undefined) clock.advance(1000);
}

/** Two server processes of one install on one clock; keys sign as soon as they are rotated in. */
async function twoServers(clock: TestClock): Promise<[TestServer, TestServer]> {
  dir = await tempDir();
  const env = { OIDC_KEY_ACTIVATION_SECONDS: '0' };
  const a = await startServer(env, dir, { now: clock.now });
  servers.push(a);
  const b = await startServer({ ...env, BASE_URL: a.url }, dir, { now: clock.now });
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
    seenByTheOther(clock);
    expect((await authorizeAt(b, 'cached-app')).status).toBe(400);
    // Removed on the other process: refused there at once, and here within a second.
    await b.service.services.oidc.removeClient('cached-app');
    expect((await authorizeAt(b, 'cached-app')).status).toBe(400);
    seenByTheOther(clock);
    expect((await authorizeAt(a, 'cached-app')).status).toBe(400);
  });
});

/** A person signed in to `clientId` through the pages of `server`: their access token, and a logged-in API client of theirs. */
async function signedIn(server: TestServer, clientId: string, opts: { fullname?: string } = {}) {
  const user = await createActiveUser(server, { fullname: opts.fullname ?? 'Two Processes' });
  const rp = await relyingParty(server, clientId);
  const request = await authorizationRequest(rp);
  const page = await new UserAgent().authorize(request.url, { email: user.email, password: PASSWORD });
  const tokens = await client.authorizationCodeGrant(rp, new URL(page.location ?? ''), {
    pkceCodeVerifier: request.verifier,
    expectedState: request.state,
    expectedNonce: request.nonce,
  });
  const { client: api } = await loggedIn(server, user.email);
  return { user, token: tokens.access_token, api };
}

const userinfoAt = async (server: TestServer, token: string) => {
  const res = await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${token}` } });
  return { status: res.status, body: (await res.json().catch(() => null)) as Record<string, unknown> | null };
};

describe('an access token, with two processes on one database', () => {
  /**
   * UserInfo's answers are kept for up to a second: a change made on one process holds there at
   * once (its own writes drop what it kept), and on the other within that second. Each case
   * reads the token on both first, so that both hold an answer when the change comes.
   */
  const changes: Array<[string, (ctx: { a: TestServer; api: Client; user: { id: string }; token: string; clientId: string }) => Promise<void>]> = [
    [
      'revoked',
      async ({ a, token, clientId }) => {
        const res = await fetch(`${a.url}/oidc/revoke`, { method: 'POST', body: new URLSearchParams({ token, client_id: clientId }) });
        expect(res.status).toBe(200);
      },
    ],
    ['logged out of every device', async ({ api }) => expect((await api.post('/logout-all-devices')).status).toBe(200)],
    ['consent withdrawn', async ({ api, clientId }) => expect((await api.request('DELETE', `/oidc/consents/${clientId}`)).status).toBe(200)],
    [
      'blocked by a moderator',
      async ({ a, user }) => {
        const moderator = await createActiveUser(a, { role: 'moderator', fullname: 'Mo Derator' });
        const { client: mod } = await loggedIn(a, moderator.email);
        expect((await mod.post('/profile/moderate', { id: user.id, decision: 'block', sendMail: false })).status).toBe(200);
      },
    ],
    ['its client rejected', async ({ a, clientId }) => void (await a.service.services.oidc.setClientStatus(clientId, 'rejected'))],
    [
      'its token version moved on by a write the provider does not know of',
      async ({ a, user }) => void (await a.service.db('profiles').where({ id: user.id }).increment('token_version', 1)),
    ],
  ];

  it.each(changes)('once %s on one process, is refused by UserInfo there at once and on the other within a second', async (_what, change) => {
    const clock = new TestClock();
    const [a, b] = await twoServers(clock);
    const clientId = 'token-app';
    await a.service.services.oidc.addClient({ id: clientId, name: 'Token App', redirectUris: [REDIRECT], scopes: ['openid', 'profile', 'email'] });
    await a.service.services.oidc.setClientStatus(clientId, 'approved');
    const { user, token, api } = await signedIn(a, clientId);
    for (const server of [a, b, a, b]) expect((await userinfoAt(server, token)).status).toBe(200);
    await change({ a, api, user, token, clientId });
    expect((await userinfoAt(a, token)).status).toBe(401);
    seenByTheOther(clock);
    expect((await userinfoAt(b, token)).status).toBe(401);
    expect((await userinfoAt(a, token)).status).toBe(401);
  });

  it('answers with a changed name at once where it was changed, and within a second on the other process', LONG, async () => {
    const clock = new TestClock();
    const [a, b] = await twoServers(clock);
    await registerClient(a, 'name-app');
    const { user, token } = await signedIn(a, 'name-app', { fullname: 'Old Name' });
    expect((await userinfoAt(a, token)).body?.name).toBe('Old Name');
    expect((await userinfoAt(b, token)).body?.name).toBe('Old Name');
    // A change of name, as the profile's editor writes it, through this process's database.
    await a.service.db('profiles').where({ id: user.id }).update({ content: JSON.stringify({ names: [{ fullname: 'New Name', preferred: true }] }) });
    expect((await userinfoAt(a, token)).body?.name).toBe('New Name');
    seenByTheOther(clock);
    expect((await userinfoAt(b, token)).body?.name).toBe('New Name');
  });
});

describe('a sign-in, with two processes on one database', () => {
  /** An authorization request of `clientId` to `server` by `agent` (with its session): the code it is answered with at once, or null (a page). */
  async function codeAt(server: TestServer, agent: UserAgent, clientId: string): Promise<{ code: string; verifier: string } | null> {
    const verifier = 'v'.repeat(43);
    const url = new URL(`${server.url}/oidc/authorize`);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid profile',
      code_challenge: createHash('sha256').update(verifier).digest('base64url'),
      code_challenge_method: 'S256',
    }).toString();
    const page = await agent.go(url.toString());
    const code = page.location ? new URL(page.location).searchParams.get('code') : null;
    return code ? { code, verifier } : null;
  }
  const redeemAt = (server: TestServer, clientId: string, c: { code: string; verifier: string }) => redeemCode(server, clientId, c.code, c.verifier);

  /** A person who signed in to `clientId` on `a` through the pages (consent given), with their browser and API client. */
  async function consented(a: TestServer, clientId: string) {
    await registerClient(a, clientId, { scopes: 'openid profile' });
    const user = await createActiveUser(a);
    const agent = new UserAgent();
    const rp = await relyingParty(a, clientId);
    const request = await authorizationRequest(rp, { scope: 'openid profile' });
    const page = await agent.authorize(request.url, { email: user.email, password: PASSWORD });
    expect(page.location).toMatch(/code=/);
    const { client: api } = await loggedIn(a, user.email);
    return { user, agent, api };
  }

  it('once its consent is withdrawn on one process, asks for consent again there at once and on the other within a second', LONG, async () => {
    const clock = new TestClock();
    const [a, b] = await twoServers(clock);
    const { user, agent, api } = await consented(a, 'consent-app');
    // A session of the other process's own.
    const atB = new UserAgent();
    for (const [name, value] of (await loggedIn(b, user.email)).client.jar) atB.jar.set(name, value);
    // Both have read the consent: each answers with a code at once.
    for (const [server, browser] of [[a, agent], [b, atB], [a, agent], [b, atB]] as const) expect(await codeAt(server, browser, 'consent-app')).not.toBeNull();
    expect((await api.request('DELETE', '/oidc/consents/consent-app')).status).toBe(200);
    expect(await codeAt(a, agent, 'consent-app')).toBeNull();
    seenByTheOther(clock);
    expect(await codeAt(b, atB, 'consent-app')).toBeNull();
  });

  it('once its person logs out of every device on one process, refuses their codes there at once and on the other within a second', LONG, async () => {
    const clock = new TestClock();
    const [a, b] = await twoServers(clock);
    const { agent, api } = await consented(a, 'logout-app');
    const codes = [];
    for (let i = 0; i < 4; i += 1) codes.push(await codeAt(a, agent, 'logout-app'));
    const [first, second, third, fourth] = codes as Array<{ code: string; verifier: string }>;
    // Both have read the person, redeeming a code each.
    expect((await redeemAt(a, 'logout-app', first!)).status).toBe(200);
    expect((await redeemAt(b, 'logout-app', second!)).status).toBe(200);
    expect((await api.post('/logout-all-devices')).status).toBe(200);
    expect((await redeemAt(a, 'logout-app', third!)).body.error).toBe('invalid_grant');
    seenByTheOther(clock);
    expect((await redeemAt(b, 'logout-app', fourth!)).body.error).toBe('invalid_grant');
  });
});

describe('a browser session, with two processes on one database', () => {
  /** An authorization request of `clientId` to `server` with `api`'s session: whether it was answered with a code at once. */
  async function codeWith(server: TestServer, api: Client, clientId: string): Promise<boolean> {
    const agent = new UserAgent();
    for (const [name, value] of api.jar) agent.jar.set(name, value);
    const url = new URL(`${server.url}/oidc/authorize`);
    url.search = new URLSearchParams({
      client_id: clientId,
      redirect_uri: REDIRECT,
      response_type: 'code',
      scope: 'openid',
      code_challenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
      code_challenge_method: 'S256',
    }).toString();
    const page = await agent.go(url.toString());
    return page.location !== null && new URL(page.location).searchParams.has('code');
  }

  it('once logged out on one process, is asked to sign in there at once; once logged out everywhere, on the other within a second', LONG, async () => {
    const clock = new TestClock();
    const [a, b] = await twoServers(clock);
    await registerClient(a, 'session-app', { scopes: 'openid' });
    const user = await createActiveUser(a);
    // Consent given once, through the pages.
    const rp = await relyingParty(a, 'session-app');
    const first = await new UserAgent().authorize((await authorizationRequest(rp, { scope: 'openid' })).url, { email: user.email, password: PASSWORD });
    expect(first.location).toMatch(/code=/);
    // A session on each process, and more here.
    const atA = (await loggedIn(a, user.email)).client;
    const otherAtA = (await loggedIn(a, user.email)).client;
    const alsoAtA = (await loggedIn(a, user.email)).client;
    const atB = (await loggedIn(b, user.email)).client;
    for (const [server, api] of [[a, atA], [a, otherAtA], [b, atB], [a, atA], [a, otherAtA], [b, atB]] as const) {
      expect(await codeWith(server, api, 'session-app')).toBe(true);
    }
    expect((await atA.post('/logout')).status).toBe(200);
    expect(await codeWith(a, atA, 'session-app')).toBe(false);
    expect(await codeWith(a, otherAtA, 'session-app')).toBe(true);
    // Every other session of the person ends (the caller's goes on with new cookies).
    expect((await alsoAtA.post('/logout-all-devices')).status).toBe(200);
    expect(await codeWith(a, otherAtA, 'session-app')).toBe(false);
    seenByTheOther(clock);
    expect(await codeWith(b, atB, 'session-app')).toBe(false);
  });
});
