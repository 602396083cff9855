/**
 * Applications that are not a browser's public client (issue 26): they register through the
 * registration endpoint with an operator's initial access token, prove themselves at the token
 * endpoint with a secret (basic or post) or a signed assertion, keep a person signed in with
 * refresh tokens, and check tokens by introspection. `openid-client` v6, unmodified, is the
 * relying party of every flow.
 */
import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createRemoteJWKSet, exportJWK, generateKeyPair, jwtVerify, SignJWT } from 'jose';
import * as client from 'openid-client';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { isPostgres } from '../../db/postgres.ts';
import { RefreshRepository } from '../../server/oidc/refresh-repository.ts';
import { startServer, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { admin, approvedRegistrationToken, REDIRECT, registerByHttp, startLogoutReceiver, UserAgent } from './helpers.ts';

/** Each test's admin commands start a process: a few seconds each on a loaded machine. */
const LONG = 60_000;

let server: TestServer;
let person: { id: string; email: string; password: string };

beforeAll(async () => {
  server = await startServer();
  person = { ...(await createActiveUser(server, { fullname: 'Conference Tool User' })), password: PASSWORD };
}, LONG);
afterAll(() => server.close());

/** Every secret the tests saw: none may be in the log or stored in clear (the last test). */
const seen: string[] = [];

async function registered(metadata: Record<string, unknown>) {
  const token = await approvedRegistrationToken(server);
  const answer = await registerByHttp(server, token, { redirect_uris: [REDIRECT], ...metadata });
  expect(answer.status, JSON.stringify(answer.body)).toBe(201);
  seen.push(token, answer.body.registration_access_token, ...(answer.body.client_secret ? [answer.body.client_secret] : []));
  return answer.body;
}

const insecure = { execute: [client.allowInsecureRequests] };

/** The code flow through the pages (sign in, consent), redeemed by `config`. */
async function codeFlow(config: client.Configuration, scope = 'openid profile email', extra: Record<string, string> = {}) {
  const verifier = client.randomPKCECodeVerifier();
  const state = client.randomState();
  const url = client.buildAuthorizationUrl(config, { redirect_uri: REDIRECT, scope, state, code_challenge: await client.calculatePKCECodeChallenge(verifier), code_challenge_method: 'S256', ...extra });
  const page = await new UserAgent().authorize(url, person);
  expect(page.location, page.html.slice(0, 300)).toMatch(/^http:\/\/127\.0\.0\.1:9\/callback\?/);
  const tokens = await client.authorizationCodeGrant(config, new URL(page.location ?? ''), { pkceCodeVerifier: verifier, expectedState: state, idTokenExpected: true });
  seen.push(verifier, tokens.access_token, ...(tokens.refresh_token ? [tokens.refresh_token] : []));
  return tokens;
}

describe('a confidential client with a secret', () => {
  it('registers (basic by default), signs a person in with client_secret_basic, and reads UserInfo', async () => {
    const app = await registered({ client_name: 'Reviews Dashboard' });
    expect(app).toMatchObject({ token_endpoint_auth_method: 'client_secret_basic', client_secret_expires_at: 0, client_secret: expect.any(String), registration_access_token: expect.any(String) });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const tokens = await codeFlow(config);
    expect(tokens.claims()).toMatchObject({ sub: person.id, aud: app.client_id, iss: server.url, amr: expect.arrayContaining(['pwd']) });
    const info = await client.fetchUserInfo(config, tokens.access_token, person.id);
    expect(info).toMatchObject({ sub: person.id, email: person.email });
  }, LONG);

  it('signs in with client_secret_post; a wrong secret, a public client’s request or none at all is invalid_client', async () => {
    const app = await registered({ token_endpoint_auth_method: 'client_secret_post' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretPost(app.client_secret ?? ''), insecure);
    await codeFlow(config);
    const token = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/oidc/token`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, ...body }) });
    const wrong = await token({ client_id: app.client_id, client_secret: 'not-the-secret' });
    expect(wrong.status).toBe(401);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_client' });
    // The secret in the Basic header proves this client too (RFC 6749 §2.3.1): the made-up code is then what is refused.
    const basic = await token({}, { authorization: `Basic ${Buffer.from(`${app.client_id}:${app.client_secret}`).toString('base64')}` });
    expect(basic.status).toBe(400);
    expect(await basic.json()).toMatchObject({ error: 'invalid_grant' });
    const wrongBasic = await token({}, { authorization: `Basic ${Buffer.from(`${app.client_id}:not-the-secret`).toString('base64')}` });
    expect(wrongBasic.status).toBe(401);
    expect(wrongBasic.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect((await token({ client_id: app.client_id })).status).toBe(401);
  }, LONG);
});

describe('private_key_jwt', () => {
  it('signs in with an assertion signed by a registered key, and refuses the same assertion twice', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const jwk = { ...(await exportJWK(publicKey)), kid: 'k1', alg: 'ES256', use: 'sig' };
    const app = await registered({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [jwk] } });
    expect(app.client_secret).toBeUndefined();
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.PrivateKeyJwt({ key: privateKey, kid: 'k1' }), insecure);
    await codeFlow(config);

    const assertion = await new SignJWT({ jti: 'one-use' })
      .setProtectedHeader({ alg: 'ES256', kid: 'k1' })
      .setIssuer(app.client_id)
      .setSubject(app.client_id)
      .setAudience(server.url)
      .setIssuedAt()
      .setExpirationTime('1m')
      .sign(privateKey);
    seen.push(assertion);
    const introspect = () =>
      fetch(`${server.url}/oidc/introspect`, {
        method: 'POST',
        headers: { 'content-type': 'application/x-www-form-urlencoded' },
        body: new URLSearchParams({ token: 'anything', client_id: app.client_id, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion }),
      });
    const first = await introspect();
    expect(first.status).toBe(200);
    expect(await first.json()).toEqual({ active: false });
    const replay = await introspect();
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ error: 'invalid_client' });
  }, LONG);

  it('refuses an assertion for another audience, or one living more than ten minutes', async () => {
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const app = await registered({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] } });
    const sign = (aud: string, exp: string, jti: string) => new SignJWT({ jti }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(app.client_id).setSubject(app.client_id).setAudience(aud).setIssuedAt().setExpirationTime(exp).sign(privateKey);
    const introspect = async (assertion: string) =>
      (
        await fetch(`${server.url}/oidc/introspect`, {
          method: 'POST',
          headers: { 'content-type': 'application/x-www-form-urlencoded' },
          body: new URLSearchParams({ token: 'x', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion }),
        })
      ).status;
    expect(await introspect(await sign('https://elsewhere.example', '1m', 'a'))).toBe(401);
    expect(await introspect(await sign(server.url, '1h', 'b'))).toBe(401);
    expect(await introspect(await sign(`${server.url}/oidc/introspect`, '1m', 'c'))).toBe(200);
  }, LONG);
});

describe('private_key_jwt with a registered signing algorithm', () => {
  it('takes assertions signed with that algorithm only (Dynamic Client Registration §2); the value must be one this provider verifies', async () => {
    const rsa = await generateKeyPair('RS256', { extractable: true });
    const ec = await generateKeyPair('ES256', { extractable: true });
    const keys = [{ ...(await exportJWK(rsa.publicKey)), kid: 'rsa' }, { ...(await exportJWK(ec.publicKey)), kid: 'ec' }];
    const app = await registered({ token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'RS256', jwks: { keys } });
    const introspect = async (assertion: string) =>
      (await fetch(`${server.url}/oidc/introspect`, { method: 'POST', body: new URLSearchParams({ token: 'x', client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion }) })).status;
    const sign = (alg: string, kid: string, key: Parameters<SignJWT['sign']>[0], jti: string) => new SignJWT({ jti }).setProtectedHeader({ alg, kid }).setIssuer(app.client_id).setSubject(app.client_id).setAudience(server.url).setIssuedAt().setExpirationTime('1m').sign(key);
    expect(await introspect(await sign('ES256', 'ec', ec.privateKey, 'with-es256'))).toBe(401);
    expect(await introspect(await sign('RS256', 'rsa', rsa.privateKey, 'with-rs256'))).toBe(200);
    const token = await approvedRegistrationToken(server);
    for (const metadata of [
      { token_endpoint_auth_method: 'private_key_jwt', token_endpoint_auth_signing_alg: 'HS256', jwks: { keys } },
      { token_endpoint_auth_method: 'client_secret_basic', token_endpoint_auth_signing_alg: 'RS256' },
    ]) {
      const refused = await registerByHttp(server, token, { redirect_uris: [REDIRECT], ...metadata });
      expect(refused.body, JSON.stringify(metadata)).toMatchObject({ error: 'invalid_client_metadata' });
    }
  }, LONG);
});

describe('private_key_jwt with keys that cannot be read', () => {
  it('is invalid_client (401), never a 500, when the jwks_uri does not answer', async () => {
    const { privateKey } = await generateKeyPair('ES256', { extractable: true });
    // Nothing listens on port 9 of the loopback interface.
    const app = await registered({ token_endpoint_auth_method: 'private_key_jwt', jwks_uri: 'http://127.0.0.1:9/jwks.json' });
    const assertion = await new SignJWT({ jti: 'unreadable-keys' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(app.client_id).setSubject(app.client_id).setAudience(server.url).setIssuedAt().setExpirationTime('1m').sign(privateKey);
    const res = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded' },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion }),
    });
    expect(res.status).toBe(401);
    expect(await res.json()).toMatchObject({ error: 'invalid_client' });
  }, LONG);
});

describe('refresh tokens', () => {
  it('are issued for offline_access on a consent, rotate on every use, and a reused one revokes the family', async () => {
    const app = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid email offline_access' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    // Without prompt=consent, offline_access is dropped: no refresh token.
    const plain = await codeFlow(config, 'openid offline_access');
    expect(plain.refresh_token).toBeUndefined();
    expect(plain.scope).toBe('openid');

    const first = await codeFlow(config, 'openid email offline_access', { prompt: 'consent' });
    expect(first.refresh_token).toEqual(expect.any(String));
    let current = first.refresh_token ?? '';
    const used: string[] = [];
    for (let i = 0; i < 3; i += 1) {
      const next = await client.refreshTokenGrant(config, current);
      seen.push(next.access_token, next.refresh_token ?? '');
      expect(next.refresh_token).not.toBe(current);
      expect(next.claims()).toMatchObject({ sub: person.id });
      expect(await client.fetchUserInfo(config, next.access_token, person.id)).toMatchObject({ email: person.email });
      used.push(current);
      current = next.refresh_token ?? '';
    }
    // Introspected, a live refresh token names no token_type: RFC 7662 means an access token's type by it.
    const introspected = await client.tokenIntrospection(config, current);
    expect(introspected).toMatchObject({ active: true, client_id: app.client_id, sub: person.id, scope: 'openid email offline_access' });
    expect(introspected.token_type).toBeUndefined();
    expect((await client.tokenIntrospection(config, first.access_token)).token_type).toBe('Bearer');
    const live = await client.refreshTokenGrant(config, current);
    // The first token again: refused, and the family (the live token too) is revoked.
    await expect(client.refreshTokenGrant(config, used[0] ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
    await expect(client.refreshTokenGrant(config, live.refresh_token ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await client.tokenIntrospection(config, live.access_token)).active).toBe(false);
  }, LONG);

  it('narrowed to leave openid out, give an access token UserInfo refuses with 403 insufficient_scope; an empty scope narrows nothing', async () => {
    const app = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid email offline_access' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const first = await codeFlow(config, 'openid email offline_access', { prompt: 'consent' });
    const same = await client.refreshTokenGrant(config, first.refresh_token ?? '', { scope: '' });
    expect(same.scope).toBe('openid email offline_access');
    expect(same.id_token).toEqual(expect.any(String));
    const narrowed = await client.refreshTokenGrant(config, same.refresh_token ?? '', { scope: 'email' });
    seen.push(same.access_token, same.refresh_token ?? '', narrowed.access_token, narrowed.refresh_token ?? '');
    expect(narrowed.scope).toBe('email');
    const answer = await fetch(`${server.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${narrowed.access_token}` } });
    expect(answer.status).toBe(403);
    expect(await answer.json()).toMatchObject({ error: 'insufficient_scope' });
    expect(answer.headers.get('www-authenticate')).toMatch(/^Bearer realm="[^"]+", error="insufficient_scope", error_description="[^"]+", scope="openid"$/);
  }, LONG);

  it('are refused to another client without revoking anything, and end when the person resets their password', async () => {
    const offline = { grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' };
    const owner = await registered(offline);
    const other = await registered(offline);
    const ownerConfig = await client.discovery(new URL(server.url), owner.client_id, undefined, client.ClientSecretBasic(owner.client_secret ?? ''), insecure);
    const otherConfig = await client.discovery(new URL(server.url), other.client_id, undefined, client.ClientSecretBasic(other.client_secret ?? ''), insecure);
    const tokens = await codeFlow(ownerConfig, 'openid offline_access', { prompt: 'consent' });
    await expect(client.refreshTokenGrant(otherConfig, tokens.refresh_token ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
    await client.tokenRevocation(otherConfig, tokens.refresh_token ?? '');
    const still = await client.refreshTokenGrant(ownerConfig, tokens.refresh_token ?? '');

    // A reset (or logout everywhere, a block, a merge) moves the person's tokenVersion on.
    await server.service.db('profiles').where({ id: person.id }).increment('token_version', 1);
    await expect(client.refreshTokenGrant(ownerConfig, still.refresh_token ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
  }, LONG);

  it('end at their first use when their family was revoked without them (a successor stored while the revocation ran)', async () => {
    const app = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const first = await codeFlow(config, 'openid offline_access', { prompt: 'consent' });
    const second = await client.refreshTokenGrant(config, first.refresh_token ?? '');
    seen.push(second.access_token, second.refresh_token ?? '');
    // The revocation's statement saw the family's first token but not its successor (PostgreSQL's
    // read committed, a successor committed meanwhile): the successor alone is left unrevoked.
    const row = (await server.service.db('oidc_refresh_tokens').where({ client_id: app.client_id }).whereNotNull('used_at').first('family_id')) as { family_id: string };
    await server.service.db('oidc_refresh_tokens').where({ family_id: row.family_id }).whereNotNull('used_at').update({ revoked_at: Date.now() });
    // Introspection says what a use would find: inactive.
    expect((await client.tokenIntrospection(config, second.refresh_token ?? '')).active).toBe(false);
    await expect(client.refreshTokenGrant(config, second.refresh_token ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
    const live = (await server.service.db('oidc_refresh_tokens').where({ family_id: row.family_id }).whereNull('revoked_at').count({ n: '*' }).first()) as { n: number | string };
    expect(Number(live.n)).toBe(0);
  }, LONG);

  it('used twice at once: at most one use is answered, and the family ends whichever came first', async () => {
    const app = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const tokens = await codeFlow(config, 'openid offline_access', { prompt: 'consent' });
    const uses = await Promise.allSettled([client.refreshTokenGrant(config, tokens.refresh_token ?? ''), client.refreshTokenGrant(config, tokens.refresh_token ?? '')]);
    const answered = uses.flatMap((use) => (use.status === 'fulfilled' ? [use.value] : []));
    expect(answered.length).toBeLessThanOrEqual(1);
    for (const use of uses) if (use.status === 'rejected') expect(use.reason).toMatchObject({ error: 'invalid_grant' });
    for (const answer of answered) {
      seen.push(answer.access_token, answer.refresh_token ?? '');
      await expect(client.refreshTokenGrant(config, answer.refresh_token ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
      expect((await client.tokenIntrospection(config, answer.access_token)).active).toBe(false);
    }
    const live = await server.service.db('oidc_refresh_tokens').where({ client_id: app.client_id }).whereNull('revoked_at').select('token_hash');
    expect(live).toEqual([]);
  }, LONG);

  it("a family's revocation is one transaction: stopped at the access tokens, its refresh tokens stay as they were", async () => {
    const app = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const tokens = await codeFlow(config, 'openid offline_access', { prompt: 'consent' });
    const db = server.service.db;
    const { family_id: family } = (await db('oidc_refresh_tokens').where({ client_id: app.client_id }).first('family_id')) as { family_id: string };
    const liveOf = async (table: string) => ((await db(table).where({ family_id: family }).whereNull('revoked_at').count({ n: '*' })) as Array<{ n: unknown }>)[0]?.n;
    // The second write fails, as a process stopped there would never make it.
    const [install, remove] = isPostgres(db)
      ? [
          ["create function refuse_revocation() returns trigger language plpgsql as $$ begin raise exception 'stopped here'; end $$", 'create trigger refuse_revocation before update on oidc_tokens for each row execute function refuse_revocation()'],
          ['drop trigger refuse_revocation on oidc_tokens', 'drop function refuse_revocation()'],
        ]
      : [["create trigger refuse_revocation before update on oidc_tokens begin select raise(abort, 'stopped here'); end"], ['drop trigger refuse_revocation']];
    for (const sql of install) await db.raw(sql);
    try {
      await expect(new RefreshRepository(db).revokeFamily(family, Date.now())).rejects.toThrow(/stopped here/);
    } finally {
      for (const sql of remove) await db.raw(sql);
    }
    expect(Number(await liveOf('oidc_refresh_tokens'))).toBe(1);
    expect((await client.fetchUserInfo(config, tokens.access_token, client.skipSubjectCheck)).sub).toBeTruthy();
    await new RefreshRepository(db).revokeFamily(family, Date.now());
    expect(Number(await liveOf('oidc_refresh_tokens'))).toBe(0);
    expect(Number(await liveOf('oidc_tokens'))).toBe(0);
  }, LONG);

  it('rotate in one statement: the successor stored and the used token marked, or, for a token rotated, revoked or deleted meanwhile, refused and nothing left live', async () => {
    const app = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    await codeFlow(config, 'openid offline_access', { prompt: 'consent' });
    const db = server.service.db;
    const repo = new RefreshRepository(db);
    const hash = ((await db('oidc_refresh_tokens').where({ client_id: app.client_id }).first('token_hash')) as { token_hash: string }).token_hash;
    const used = (await repo.find(hash))!;
    const successor = (n: number) => ({ ...used, tokenHash: `successor-${n}-${app.client_id}`.padEnd(43, 'x').slice(0, 64) });
    const access = (n: number) => ({ tokenHash: `access-${n}-${app.client_id}`.padEnd(43, 'x').slice(0, 64), scopes: used.scopes, expiresAt: 10_000 });
    // Only this table's statements: the server's own background work shares the pool.
    const statements: string[] = [];
    const count = (query: { sql: string }) => {
      if (query.sql.includes('oidc_refresh_tokens')) statements.push(query.sql);
    };
    db.on('query', count);
    try {
      expect(await repo.rotate(successor(1), access(1), used, 1_000)).toBe(true);
    } finally {
      db.off('query', count);
    }
    expect(statements).toHaveLength(1);
    expect(await repo.find(successor(1).tokenHash)).toMatchObject({ usedAt: null, familyId: used.familyId });
    // The access token, stored by the same statement (its trigger), for the successor.
    const stored = await db('oidc_tokens').where({ token_hash: access(1).tokenHash }).first();
    expect({ ...stored, expires_at: Number(stored.expires_at), created_at: Number(stored.created_at) }).toMatchObject({
      code_hash: successor(1).tokenHash,
      family_id: used.familyId,
      client_id: app.client_id,
      profile_id: used.profileId,
      scopes: JSON.stringify(used.scopes),
      token_version: used.tokenVersion,
      sid: used.sid,
      created_at: used.createdAt,
      expires_at: 10_000,
      revoked_at: null,
    });
    expect(await repo.find(hash)).toMatchObject({ usedAt: 1_000 });
    // Rotated already: the mark stays the first one's.
    expect(await repo.rotate(successor(2), access(2), used, 2_000)).toBe(false);
    expect(await repo.find(hash)).toMatchObject({ usedAt: 1_000 });
    // Revoked (the successor of the first rotation, never used): not marked.
    const first = (await repo.find(successor(1).tokenHash))!;
    await db('oidc_refresh_tokens').where({ token_hash: first.tokenHash }).update({ revoked_at: 3_000 });
    expect(await repo.rotate(successor(3), access(3), first, 4_000)).toBe(false);
    expect(await repo.find(first.tokenHash)).toMatchObject({ usedAt: null, revokedAt: 3_000 });
    // Deleted since it was read (the sweep, at its expiry): not brought back live, and refused.
    const live = (await repo.find(successor(3).tokenHash))!;
    await db('oidc_refresh_tokens').where({ token_hash: live.tokenHash }).delete();
    expect(await repo.rotate(successor(4), access(4), live, 5_000)).toBe(false);
    expect(await repo.find(live.tokenHash)).toMatchObject({ usedAt: 5_000, revokedAt: 5_000 });
    // The used token's row put back revoked carries no access token, and gave none: its own is
    // the one its rotation gave (3), and only the successor's insert gave another.
    expect(await db('oidc_refresh_tokens').where({ token_hash: live.tokenHash }).first('access_token_hash')).toEqual({ access_token_hash: null });
    expect(await db('oidc_tokens').where({ code_hash: live.tokenHash }).select('token_hash')).toEqual([{ token_hash: access(3).tokenHash }]);
    expect(await db('oidc_tokens').where({ code_hash: successor(4).tokenHash }).select('token_hash')).toEqual([{ token_hash: access(4).tokenHash }]);
  }, LONG);

  it('are revoked with their family by the client that holds them', async () => {
    const app = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const tokens = await codeFlow(config, 'openid offline_access', { prompt: 'consent' });
    await client.tokenRevocation(config, tokens.refresh_token ?? '');
    await expect(client.refreshTokenGrant(config, tokens.refresh_token ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
    expect((await client.tokenIntrospection(config, tokens.access_token)).active).toBe(false);
  }, LONG);
});

describe('an app revoked after the sessions it signed the person in through expired', () => {
  it('is told once, by a logout token with sub alone, when it could act offline', async () => {
    const receiver = await startLogoutReceiver();
    try {
      const app = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid offline_access', backchannel_logout_uri: `${receiver.url}/bc` });
      const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
      const tokens = await codeFlow(config, 'openid offline_access', { prompt: 'consent' });
      // The browser session expired and the sweep forgot which clients it signed in to.
      await server.service.db('oidc_session_clients').where({ client_id: app.client_id }).delete();
      const { client: api } = await loggedIn(server, person.email);
      expect((await api.request('DELETE', `/oidc/consents/${app.client_id}`)).status).toBe(200);
      await expect.poll(() => receiver.received.get('/bc')?.length ?? 0).toBe(1);
      const { payload, protectedHeader } = await jwtVerify(receiver.received.get('/bc')?.[0] ?? '', createRemoteJWKSet(new URL(`${server.url}/oidc/jwks`)), { issuer: server.url, audience: app.client_id, typ: 'logout+jwt' });
      expect(protectedHeader.alg).toBe('RS256');
      expect(payload).toMatchObject({ sub: person.id, events: { 'http://schemas.openid.net/event/backchannel-logout': {} }, jti: expect.any(String) });
      expect(payload.sid).toBeUndefined();
      await expect(client.refreshTokenGrant(config, tokens.refresh_token ?? '')).rejects.toMatchObject({ error: 'invalid_grant' });
    } finally {
      await receiver.close();
    }
  }, LONG);
});

describe('revocation by a confidential client', () => {
  it('is invalid_client for a wrong secret, an unknown client or a replayed assertion, and leaves another client\'s token alone', async () => {
    const app = await registered({});
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const tokens = await codeFlow(config);
    const revoke = (body: Record<string, string>, headers: Record<string, string> = {}) =>
      fetch(`${server.url}/oidc/revoke`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded', ...headers }, body: new URLSearchParams(body) });
    const basic = (secret: string) => ({ authorization: `Basic ${Buffer.from(`${app.client_id}:${secret}`).toString('base64')}` });

    const wrong = await revoke({ token: tokens.access_token }, basic('not-the-secret'));
    expect(wrong.status).toBe(401);
    expect(wrong.headers.get('www-authenticate')).toMatch(/^Basic /);
    expect(await wrong.json()).toMatchObject({ error: 'invalid_client' });
    const unknown = await revoke({ token: tokens.access_token, client_id: 'no-such-client', client_secret: 'x' });
    expect(unknown.status).toBe(401);
    expect(await unknown.json()).toMatchObject({ error: 'invalid_client' });
    const missing = await revoke({}, basic(app.client_secret ?? ''));
    expect(missing.status).toBe(400);
    expect(await missing.json()).toMatchObject({ error: 'invalid_request' });
    // Another client, proving itself, revokes nothing of this one's: 200 (the interface), and the token lives on.
    const other = await registered({ token_endpoint_auth_method: 'client_secret_post' });
    const byOther = await revoke({ token: tokens.access_token, client_id: other.client_id, client_secret: other.client_secret ?? '' });
    expect(byOther.status).toBe(200);
    // This client's token sent alone: its client has a secret to show, and is told the token lives.
    const alone = await revoke({ token: tokens.access_token });
    expect(alone.status).toBe(401);
    expect(await alone.json()).toMatchObject({ error: 'invalid_client' });
    expect((await client.tokenIntrospection(config, tokens.access_token)).active).toBe(true);

    // private_key_jwt at revocation, with `aud` the token endpoint (openid-client's other choice): once, not twice.
    const { publicKey, privateKey } = await generateKeyPair('ES256', { extractable: true });
    const keyed = await registered({ token_endpoint_auth_method: 'private_key_jwt', jwks: { keys: [{ ...(await exportJWK(publicKey)), kid: 'k1' }] } });
    const assertion = await new SignJWT({ jti: 'revocation-once' }).setProtectedHeader({ alg: 'ES256', kid: 'k1' }).setIssuer(keyed.client_id).setSubject(keyed.client_id).setAudience(`${server.url}/oidc/token`).setIssuedAt().setExpirationTime('1m').sign(privateKey);
    seen.push(assertion);
    const form = { token: 'anything', client_id: keyed.client_id, client_assertion_type: 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer', client_assertion: assertion };
    expect((await revoke(form)).status).toBe(200);
    const replay = await revoke(form);
    expect(replay.status).toBe(401);
    expect(await replay.json()).toMatchObject({ error: 'invalid_client' });
    // Still live after all of it: only its own client may revoke it, and that one did not.
    expect((await client.tokenIntrospection(config, tokens.access_token)).active).toBe(true);
  }, LONG);
});

describe('introspection', () => {
  it('tells a client about its own tokens only, and refuses a public client', async () => {
    const app = await registered({});
    const other = await registered({ token_endpoint_auth_method: 'client_secret_post' });
    const config = await client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
    const otherConfig = await client.discovery(new URL(server.url), other.client_id, undefined, client.ClientSecretPost(other.client_secret ?? ''), insecure);
    const tokens = await codeFlow(config);
    expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({ active: true, client_id: app.client_id, sub: person.id, scope: 'openid profile email', token_type: 'Bearer' });
    expect(await client.tokenIntrospection(otherConfig, tokens.access_token)).toEqual({ active: false });
    const unauthenticated = await fetch(`${server.url}/oidc/introspect`, { method: 'POST', headers: { 'content-type': 'application/x-www-form-urlencoded' }, body: new URLSearchParams({ token: tokens.access_token, client_id: app.client_id }) });
    expect(unauthenticated.status).toBe(401);
  }, LONG);
});

describe('a resource server', () => {
  it('registered by an operator, introspects the access tokens of the apps it serves and nothing else, and signs nobody in', async () => {
    const served = await registered({ grant_types: ['authorization_code', 'refresh_token'], scope: 'openid profile offline_access' });
    const elsewhere = await registered({});
    const printed = (await admin(server, 'oidc-client', 'resource-server', '--id', 'reviews-api', '--name', 'Reviews API', '--for', served.client_id)).trim().split('\n');
    expect(printed[0]).toBe('reviews-api\tapproved');
    const secret = printed.at(-1) ?? '';
    seen.push(secret);
    const api = await client.discovery(new URL(server.url), 'reviews-api', undefined, client.ClientSecretBasic(secret), insecure);
    const servedConfig = await client.discovery(new URL(server.url), served.client_id, undefined, client.ClientSecretBasic(served.client_secret ?? ''), insecure);
    const elsewhereConfig = await client.discovery(new URL(server.url), elsewhere.client_id, undefined, client.ClientSecretBasic(elsewhere.client_secret ?? ''), insecure);

    const tokens = await codeFlow(servedConfig, 'openid profile offline_access', { prompt: 'consent' });
    // As the served app would see it: its client_id, its sub.
    expect(await client.tokenIntrospection(api, tokens.access_token)).toMatchObject({ active: true, client_id: served.client_id, aud: served.client_id, sub: person.id, scope: 'openid profile offline_access' });
    // Another app's token, and the served app's refresh token: nothing.
    expect(await client.tokenIntrospection(api, (await codeFlow(elsewhereConfig)).access_token)).toEqual({ active: false });
    expect(await client.tokenIntrospection(api, tokens.refresh_token ?? '')).toEqual({ active: false });
    // Revoked by its app: inactive for the API at once.
    await client.tokenRevocation(servedConfig, tokens.access_token);
    expect(await client.tokenIntrospection(api, tokens.access_token)).toEqual({ active: false });
    // It has no grant: the token endpoint refuses it.
    const token = await fetch(`${server.url}/oidc/token`, {
      method: 'POST',
      headers: { 'content-type': 'application/x-www-form-urlencoded', authorization: `Basic ${Buffer.from(`reviews-api:${secret}`).toString('base64')}` },
      body: new URLSearchParams({ grant_type: 'authorization_code', code: 'x', redirect_uri: REDIRECT }),
    });
    expect(token.status).toBe(400);
    expect(await token.json()).toMatchObject({ error: 'unauthorized_client' });
    // An operator cannot make one for an app that does not exist.
    await expect(admin(server, 'oidc-client', 'resource-server', '--id', 'other-api', '--name', 'Other', '--for', 'no-such-app')).rejects.toThrow(/No application no-such-app/);
  }, LONG);
});

describe('pairwise subjects', () => {
  it('give the same person a different sub at each sector, the same within one, everywhere the client sees it', async () => {
    // A sector identifier document (OpenID Connect Registration §5) listing the client's redirect URI.
    const sector = createServer((_req, res) => res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify([REDIRECT])));
    await new Promise<void>((resolve) => sector.listen(0, '127.0.0.1', resolve));
    const sectorUri = `http://127.0.0.1:${(sector.address() as AddressInfo).port}/sector.json`;
    try {
      const configOf = async (metadata: Record<string, unknown>) => {
        const app = await registered({ subject_type: 'pairwise', ...metadata });
        return client.discovery(new URL(server.url), app.client_id, undefined, client.ClientSecretBasic(app.client_secret ?? ''), insecure);
      };
      const byHost = await configOf({});
      const sameHost = await configOf({});
      const bySector = await configOf({ sector_identifier_uri: sectorUri });
      const subs = [];
      for (const config of [byHost, sameHost, bySector]) {
        const tokens = await codeFlow(config);
        const sub = tokens.claims()?.sub ?? '';
        expect(sub).not.toBe(person.id);
        expect(await client.fetchUserInfo(config, tokens.access_token, sub)).toMatchObject({ sub });
        expect(await client.tokenIntrospection(config, tokens.access_token)).toMatchObject({ active: true, sub });
        subs.push(sub);
      }
      expect(subs[1]).toBe(subs[0]);
      expect(subs[2]).not.toBe(subs[0]);
      // A sector document that does not list the redirect URI is refused.
      const refused = await registerByHttp(server, await approvedRegistrationToken(server), { redirect_uris: ['https://other.example/cb'], subject_type: 'pairwise', sector_identifier_uri: sectorUri });
      expect(refused.body).toMatchObject({ error: 'invalid_client_metadata' });
    } finally {
      await new Promise((resolve) => sector.close(resolve));
    }
  }, LONG);
});

describe('the secrets of these flows', () => {
  it('are never logged, and stored only as hashes', async () => {
    expect(seen.length).toBeGreaterThan(20);
    const log = server.logs.join('\n');
    const tables = ['oidc_clients', 'oidc_client_secrets', 'oidc_registration_tokens', 'oidc_refresh_tokens', 'oidc_tokens', 'oidc_assertions'];
    const stored = JSON.stringify(await Promise.all(tables.map((table) => server.service.db(table).select())));
    for (const value of seen) {
      expect(log).not.toContain(value);
      expect(stored).not.toContain(value);
    }
  });
});
