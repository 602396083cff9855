/**
 * A refresh token this process issued is rotated from the record it remembers (`IssuedHere`),
 * without reading it back. What the database says must still decide: a token rotated or revoked
 * on another process since, or whose family was revoked, is refused where it was issued as it is
 * everywhere else, and its family ends.
 */
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { IssuedHere } from '../../server/oidc/issued-here.ts';
import { RefreshRepository, type RefreshRecord } from '../../server/oidc/refresh-repository.ts';
import { hashSecret } from '../../server/secrets.ts';
import { dropTestDatabase } from '../helpers/database.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { createActiveUser, PASSWORD } from '../helpers/users.ts';
import { addOfflineClient, authorizationRequest, redeemCode, relyingParty, UserAgent } from './helpers.ts';

const CLIENT = 'offline-app';
const REFUSED = { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid or expired refresh token' } };

describe('IssuedHere', () => {
  const record = (n: number, clientId = CLIENT): RefreshRecord => ({
    tokenHash: `hash-${n}`,
    familyId: 'family',
    clientId,
    profileId: '~Ada_Lovelace1',
    scopes: ['openid', 'offline_access'],
    tokenVersion: 0,
    authTime: 0,
    sid: null,
    createdAt: 0,
    familyExpiresAt: 1,
    expiresAt: 1,
    usedAt: null,
    revokedAt: null,
  });

  it('gives a record once, only to its client, and lets the oldest go past a thousand', () => {
    const issued = new IssuedHere();
    issued.remember(record(1));
    expect(issued.take('hash-1', 'another-app')).toBeUndefined();
    expect(issued.take('hash-1', CLIENT)).toEqual(record(1));
    expect(issued.take('hash-1', CLIENT)).toBeUndefined();
    for (let n = 0; n <= 1_000; n += 1) issued.remember(record(n));
    expect(issued.take('hash-0', CLIENT)).toBeUndefined();
    expect(issued.take('hash-1', CLIENT)).toEqual(record(1));
    expect(issued.take('hash-1000', CLIENT)).toEqual(record(1000));
  });
});

describe('refresh tokens on two processes of one install', () => {
  let dir: string;
  let a: TestServer;
  let b: TestServer;
  let person: { id: string; email: string; password: string };

  beforeAll(async () => {
    dir = await tempDir();
    a = await startServer({}, dir);
    b = await startServer({ BASE_URL: a.url }, dir);
    await addOfflineClient(a, CLIENT);
    person = { ...(await createActiveUser(a, { fullname: 'Offline Person' })), password: PASSWORD };
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await rm(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  });

  /** Tokens from a sign-in on process `at`, with a refresh token (`offline_access` consented). */
  async function signIn(at: TestServer, who = person) {
    const request = await authorizationRequest(await relyingParty(a, CLIENT), { scope: 'openid offline_access', prompt: 'consent' });
    const page = await new UserAgent().authorize(new URL(`${request.url.pathname}${request.url.search}`, at.url).toString(), who);
    const code = new URL(page.location ?? 'http://x').searchParams.get('code') ?? '';
    const { status, body } = await redeemCode(at, CLIENT, code, request.verifier);
    expect(status).toBe(200);
    expect(body.refresh_token).toEqual(expect.any(String));
    return { accessToken: body.access_token ?? '', refreshToken: body.refresh_token ?? '' };
  }

  async function rotate(at: TestServer, refreshToken: string) {
    const res = await fetch(`${at.url}/oidc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken, client_id: CLIENT }) });
    return { status: res.status, body: (await res.json()) as { access_token?: string; refresh_token?: string; id_token?: string; error?: string } };
  }

  const userinfo = async (at: TestServer, token: string | undefined) => (await fetch(`${at.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('a token issued here rotates without being read back: its rotation, access token included, is one statement', async () => {
    const { refreshToken } = await signIn(a);
    // The successor of a rotation is remembered too.
    const first = await rotate(a, refreshToken);
    expect(first.status).toBe(200);
    const sent: string[] = [];
    const listener = (query: { sql: string }) => sent.push(query.sql.replace(/\s+/g, ' ').trim());
    a.service.db.on('query', listener);
    try {
      const second = await rotate(a, first.body.refresh_token ?? '');
      expect(second.status).toBe(200);
      expect(second.body.id_token).toEqual(expect.any(String));
    } finally {
      a.service.db.off('query', listener);
    }
    // Readings kept for a second (the client, the person, the consent) may be read again on a
    // slow machine; the token itself is not, and the access token is stored by the rotation's
    // own statement (its trigger). The client's last use was noted by the sign-in just before.
    expect(sent.filter((sql) => sql.includes('oidc_refresh_tokens') || sql.includes('oidc_tokens'))).toHaveLength(1);
    // The process's own background work (the mail outbox, deliveries) shares the pool: only the provider's tables count.
    const writes = sent.filter((sql) => /^(insert|update|delete|replace)\b/i.test(sql) && /\boidc_/.test(sql));
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatch(/^insert into .oidc_refresh_tokens. .* on conflict .* not exists \(select 1 from .oidc_refresh_tokens. as .f./);
  });

  it('rotated on the other process since: refused where it was issued, and the whole family ends', async () => {
    const issued = await signIn(a);
    const elsewhere = await rotate(b, issued.refreshToken);
    expect(elsewhere.status).toBe(200);
    expect(await rotate(a, issued.refreshToken)).toEqual(REFUSED);
    expect(await rotate(b, elsewhere.body.refresh_token ?? '')).toEqual(REFUSED);
    expect(await userinfo(b, elsewhere.body.access_token)).toBe(401);
  });

  it('revoked on the other process since: refused where it was issued, and nothing it would have given is live', async () => {
    const issued = await signIn(a);
    const revoked = await fetch(`${b.url}/oidc/revoke`, { method: 'POST', body: new URLSearchParams({ token: issued.refreshToken, client_id: CLIENT }) });
    expect(revoked.status).toBe(200);
    expect(await rotate(a, issued.refreshToken)).toEqual(REFUSED);
    const family = (await a.service.db('oidc_refresh_tokens').where({ token_hash: hashSecret(issued.refreshToken) }).first('family_id')) as { family_id: string };
    // The rotation stored a successor and an access token before its statement found the token revoked: both went with the family.
    const stored = (await a.service.db('oidc_refresh_tokens').where({ family_id: family.family_id }).count({ n: '*' }).first()) as { n: number | string };
    expect(Number(stored.n)).toBe(2);
    expect(await a.service.db('oidc_refresh_tokens').where({ family_id: family.family_id }).whereNull('revoked_at').select('token_hash')).toEqual([]);
    expect(await a.service.db('oidc_tokens').where({ family_id: family.family_id }).whereNull('revoked_at').select('token_hash')).toEqual([]);
    expect(await userinfo(a, issued.accessToken)).toBe(401);
  });

  it('its family revoked on the other process without it (a successor stored meanwhile): refused where it was issued', async () => {
    const issued = await signIn(a);
    const next = await rotate(a, issued.refreshToken);
    expect(next.status).toBe(200);
    // Another process's revocation saw the family's first token and not its successor.
    const family = (await b.service.db('oidc_refresh_tokens').where({ client_id: CLIENT }).whereNotNull('used_at').orderBy('created_at', 'desc').first('family_id')) as { family_id: string };
    await b.service.db('oidc_refresh_tokens').where({ family_id: family.family_id }).whereNotNull('used_at').update({ revoked_at: Date.now() });
    expect(await rotate(a, next.body.refresh_token ?? '')).toEqual(REFUSED);
    expect(await userinfo(a, next.body.access_token)).toBe(401);
  });

  it("a family with a token revoked is no longer an app's offline access, even with a live token left in it", async () => {
    const someone = { ...(await createActiveUser(a, { fullname: 'Revoked Family' })), password: PASSWORD };
    const issued = await signIn(a, someone);
    const repo = new RefreshRepository(a.service.db);
    expect(await repo.liveFamilies(someone.id, Date.now())).toEqual([{ clientId: CLIENT, lastUsedAt: expect.any(Number) }]);
    // A rotation refused (the token revoked meanwhile) whose family's revocation never ran: its successor is left live.
    const next = await rotate(a, issued.refreshToken);
    await a.service.db('oidc_refresh_tokens').where({ token_hash: hashSecret(issued.refreshToken) }).update({ revoked_at: Date.now() });
    expect(await a.service.db('oidc_refresh_tokens').where({ token_hash: hashSecret(next.body.refresh_token ?? '') }).first('revoked_at')).toEqual({ revoked_at: null });
    expect(await repo.liveFamilies(someone.id, Date.now())).toEqual([]);
    // The sweep finishes that revocation before it may delete the revoked row that says the family ended.
    await repo.sweep(Date.now());
    expect(await a.service.db('oidc_refresh_tokens').where({ token_hash: hashSecret(next.body.refresh_token ?? '') }).whereNull('revoked_at').select('token_hash')).toEqual([]);
    expect(await a.service.db('oidc_tokens').where({ token_hash: hashSecret(next.body.access_token ?? '') }).whereNull('revoked_at').select('token_hash')).toEqual([]);
    expect(await userinfo(a, next.body.access_token)).toBe(401);
  });
});
