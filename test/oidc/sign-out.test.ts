/**
 * Signing out (issue 26): RP-initiated logout at `end_session_endpoint`, and back-channel logout
 * to each application a browser session signed in to, checked by a receiver on 127.0.0.1 that
 * verifies each logout token's signature and claims. `openid-client` v6 is the relying party.
 */
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, decodeJwt, jwtVerify } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { cookieHeader } from '../helpers/cookies.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { approvedRegistrationToken, REDIRECT, registerByHttp, UserAgent } from './helpers.ts';

const LONG = 60_000;
const AFTER = `${REDIRECT}/signed-out`;

let server: TestServer;
let person: { id: string; email: string; password: string };
let receiver: Server;
let receiverUrl: string;
/** What the receiver was sent, by path; `failFirst` paths answer 500 once. */
const received = new Map<string, string[]>();
const failFirst = new Set<string>();

beforeAll(async () => {
  server = await startServer();
  person = { ...(await createActiveUser(server, { fullname: 'Leaving Person' })), password: PASSWORD };
  receiver = createServer((req, res) => {
    let body = '';
    req.on('data', (chunk: Buffer) => (body += chunk.toString()));
    req.on('end', () => {
      const path = req.url ?? '';
      if (failFirst.delete(path)) {
        res.writeHead(500).end();
        return;
      }
      received.set(path, [...(received.get(path) ?? []), new URLSearchParams(body).get('logout_token') ?? '']);
      res.writeHead(200).end();
    });
  });
  await new Promise<void>((resolve) => receiver.listen(0, '127.0.0.1', resolve));
  receiverUrl = `http://127.0.0.1:${(receiver.address() as AddressInfo).port}`;
}, LONG);
afterAll(async () => {
  await server.close();
  await new Promise((resolve) => receiver.close(resolve));
});

const insecure = { execute: [client.allowInsecureRequests] };

/** A client that wants to hear of sign-outs at `path` on the receiver. */
async function app(path: string) {
  const answer = await registerByHttp(server, await approvedRegistrationToken(server), {
    redirect_uris: [REDIRECT],
    post_logout_redirect_uris: [AFTER],
    backchannel_logout_uri: `${receiverUrl}${path}`,
    backchannel_logout_session_required: true,
  });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  const config = await client.discovery(new URL(server.url), answer.body.client_id, undefined, client.ClientSecretBasic(answer.body.client_secret ?? ''), insecure);
  return { id: answer.body.client_id, config };
}

/** Signs the person in to `config` through `agent`'s browser session. */
async function signIn(config: client.Configuration, agent: UserAgent) {
  const verifier = client.randomPKCECodeVerifier();
  const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
  const page = await agent.authorize(url, person);
  return client.authorizationCodeGrant(config, new URL(page.location ?? ''), { pkceCodeVerifier: verifier, idTokenExpected: true });
}

/** Waits for a logout token at `path`, and checks it as a relying party must (Back-Channel Logout §2.6). */
async function logoutTokenAt(path: string, clientId: string) {
  await expect.poll(() => received.get(path)?.length ?? 0, { timeout: 10_000 }).toBeGreaterThan(0);
  const token = received.get(path)?.[0] ?? '';
  const { payload, protectedHeader } = await jwtVerify(token, createRemoteJWKSet(new URL(`${server.url}/oidc/jwks`)), { issuer: server.url, audience: clientId, typ: 'logout+jwt' });
  expect(protectedHeader.alg).toBe('RS256');
  expect(payload).toMatchObject({ events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, jti: expect.any(String), iat: expect.any(Number) });
  expect(payload.nonce).toBeUndefined();
  return payload;
}

describe('RP-initiated logout', () => {
  it('with an id_token_hint: ends the session at once, tells every app of the session, and returns with state', async () => {
    const agent = new UserAgent();
    const first = await app('/first');
    const second = await app('/second');
    const tokens = await signIn(first.config, agent);
    const other = await signIn(second.config, agent);
    const sid = tokens.claims()?.sid;
    expect(sid).toEqual(expect.any(String));
    // Each app is told its own sid for the one browser session (as node-oidc-provider does): two
    // apps, pairwise ones included, cannot match a person by it.
    const otherSid = other.claims()?.sid;
    expect(otherSid).toEqual(expect.any(String));
    expect(otherSid).not.toBe(sid);
    const before = new Map(agent.jar);

    const url = client.buildEndSessionUrl(first.config, { id_token_hint: tokens.id_token ?? '', post_logout_redirect_uri: AFTER, state: 'bye' });
    const page = await agent.go(url.toString());
    expect(page.location).toBe(`${AFTER}?state=bye`);

    for (const [path, id, itsSid] of [['/first', first.id, sid], ['/second', second.id, otherSid]] as const) {
      expect(await logoutTokenAt(path, id)).toMatchObject({ sub: person.id, sid: itsSid });
    }
    // A copy of the session cookie taken before is signed out too: prompt=none needs a sign-in.
    const stale = new UserAgent();
    for (const [name, value] of before) stale.jar.set(name, value);
    const verifier = client.randomPKCECodeVerifier();
    const silent = client.buildAuthorizationUrl(first.config, { redirect_uri: REDIRECT, scope: 'openid', prompt: 'none', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const answer = await stale.go(silent.toString());
    expect(new URL(answer.location ?? 'http://x').searchParams.get('error')).toBe('login_required');
  }, LONG);

  it('without a hint: asks first (its button says "Sign out"), then signs out and returns', async () => {
    const agent = new UserAgent();
    const { id, config } = await app('/asked');
    await signIn(config, agent);
    const question = await agent.go(`${server.url}/oidc/logout?client_id=${id}&post_logout_redirect_uri=${encodeURIComponent(AFTER)}&state=s1`);
    expect(question.status).toBe(200);
    expect(question.html).toContain('>Sign out</button>');
    const done = await agent.submit(question, {});
    expect(done.location).toBe(`${AFTER}?state=s1`);
    await logoutTokenAt('/asked', id);
  }, LONG);

  it('never redirects to an unregistered post_logout_redirect_uri, and then ends nothing', async () => {
    const agent = new UserAgent();
    const { id, config } = await app('/unregistered');
    const tokens = await signIn(config, agent);
    const page = await agent.go(`${server.url}/oidc/logout?id_token_hint=${tokens.id_token}&post_logout_redirect_uri=${encodeURIComponent('https://evil.example/')}`);
    expect(page.status).toBe(400);
    expect(page.location).toBeNull();
    expect(page.html).toContain('post_logout_redirect_uri is not registered for this client');
    const sessions = await fetch(`${server.url}/sessions`, { headers: { cookie: cookieHeader(agent.jar) } });
    expect(sessions.status).toBe(200);
    expect(received.get('/unregistered')).toBeUndefined();
    expect(id).toBeTruthy();
  }, LONG);
});

describe('back-channel logout', () => {
  it('tells an app when the person signs out of the service itself, retrying a failed delivery', async () => {
    const agent = new UserAgent();
    const { id, config } = await app('/retried');
    await signIn(config, agent);
    failFirst.add('/retried');
    const out = await fetch(`${server.url}/logout`, { method: 'POST', headers: { cookie: cookieHeader(agent.jar), 'content-type': 'application/json' }, body: '{}' });
    expect(out.status).toBe(200);
    const payload = await logoutTokenAt('/retried', id);
    expect(payload.sub).toBe(person.id);
    const rows = await server.service.db('oidc_logout_deliveries').where({ client_id: id });
    expect(rows).toMatchObject([{ attempts: 2, delivered_at: expect.anything() }]);
  }, LONG);

  it('tells an app when the person logs out everywhere, or is blocked, whichever process did it', async () => {
    const everywhere = new UserAgent();
    const first = await app('/everywhere');
    await signIn(first.config, everywhere);
    const all = await fetch(`${server.url}/logout-all-devices`, { method: 'POST', headers: { cookie: cookieHeader(everywhere.jar), 'content-type': 'application/json' }, body: '{}' });
    expect(all.status).toBe(200);
    // Logging out everywhere keeps the caller's own session but moves the tokenVersion on, which
    // ends every app's tokens, this browser's apps' too: they are told.
    expect(await logoutTokenAt('/everywhere', first.id)).toMatchObject({ sub: person.id });

    const other = await createActiveUser(server, { fullname: 'Blocked Person' });
    const blocked = new UserAgent();
    const second = await app('/blocked');
    const verifier = client.randomPKCECodeVerifier();
    const url = client.buildAuthorizationUrl(second.config, { redirect_uri: REDIRECT, scope: 'openid', code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256' });
    const page = await blocked.authorize(url, { email: other.email, password: PASSWORD });
    await client.authorizationCodeGrant(second.config, new URL(page.location ?? ''), { pkceCodeVerifier: verifier, idTokenExpected: true });
    // A block made by another process (an operator's tool) straight in the database.
    await server.service.db('profiles').where({ id: other.id }).update({ state: 'Blocked' });
    expect(await logoutTokenAt('/blocked', second.id)).toMatchObject({ sub: other.id });
  }, LONG);

  it('tells an app the person revokes', async () => {
    const agent = new UserAgent();
    const { id, config } = await app('/revoked');
    await signIn(config, agent);
    const revoked = await fetch(`${server.url}/oidc/consents/${id}`, { method: 'DELETE', headers: { cookie: cookieHeader(agent.jar) } });
    expect(revoked.status).toBe(200);
    expect(decodeJwt(await logoutTokenAt('/revoked', id).then(() => received.get('/revoked')?.[0] ?? '')).aud).toBe(id);
    // Signed in to it again in the same browser session: a sign-out later is told again.
    await signIn(config, agent);
    const out = await fetch(`${server.url}/logout`, { method: 'POST', headers: { cookie: cookieHeader(agent.jar), 'content-type': 'application/json' }, body: '{}' });
    expect(out.status).toBe(200);
    await expect.poll(() => received.get('/revoked')?.length ?? 0, { timeout: 10_000 }).toBe(2);
  }, LONG);
});
