/**
 * Authorization codes are sealed, not stored (`server/oidc/codes.ts`). What a stored code gave
 * must hold all the same: a code opens only for its client and only as issued, is redeemed once
 * whatever its spelling, dies with the consent it was issued under, and redeems on any process of
 * the install. And a sign-in with a session and a consent writes once: the token.
 */
import { createCipheriv, createHash, createHmac, hkdfSync, randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CodeSealer, type CodeGrant, type CodeRecord } from '../../server/oidc/codes.ts';
import { OidcRepository } from '../../server/oidc/repository.ts';
import { tokensOfCodes } from '../../server/oidc/token.ts';
import { TestClock } from '../helpers/clock.ts';
import { dropTestDatabase } from '../helpers/database.ts';
import { startServer, tempDir, type TestServer } from '../helpers/server.ts';
import { createActiveUser, loggedIn, PASSWORD } from '../helpers/users.ts';
import { addOfflineClient, authorizationRequest, REDIRECT, redeemCode, relyingParty, UserAgent } from './helpers.ts';

const GRANT: CodeGrant = {
  clientId: 'app',
  profileId: '~Ada_Lovelace1',
  redirectUri: REDIRECT,
  codeChallenge: 'E9Melhoa2OwvFrEMTJguCHaoeK1t8URWbuGJSstw-cM',
  scopes: ['openid', 'profile'],
  nonce: 'n-0S6_WzA2Mj',
  authTime: 1_790_000_000_000,
  tokenVersion: 3,
  sid: 'sid-1',
  consentedAt: 1_789_000_000_000,
  issuedAt: 1_790_000_001_000,
  expiresAt: 1_790_000_601_000,
};

describe('CodeSealer', () => {
  /** When the codes of `GRANT`'s hour are opened. */
  const AT = GRANT.issuedAt + 60_000;
  const SECRET = 'an install secret of at least thirty-two characters';
  const sealer = new CodeSealer(SECRET, 'https://openreview.example.org');

  it('opens what it sealed, for the client it was sealed for, with its id hashed', () => {
    const code = sealer.seal(GRANT);
    expect(code).toMatch(/^c2\.[A-Za-z0-9_-]{22}\.[A-Za-z0-9_-]+$/);
    // The id begins with the hour it was sealed in: that hour's key opens it.
    expect(Buffer.from(code.split('.')[1] ?? '', 'base64url').readUInt32BE(0)).toBe(Math.floor(GRANT.issuedAt / 3_600_000));
    const { redirectUri, ...rest } = GRANT;
    expect(sealer.open(code, 'app', AT)).toEqual({
      ...rest,
      redirectUriHash: createHash('sha256').update(redirectUri).digest('base64url'),
      codeHash: createHash('sha256').update(Buffer.from(code.split('.')[1] ?? '', 'base64url')).digest('hex'),
    });
    // Every code is new, though the grant is the same.
    expect(sealer.seal(GRANT)).not.toBe(code);
    // Nothing of the grant shows through.
    for (const value of [GRANT.profileId, GRANT.nonce, GRANT.codeChallenge, 'openid']) expect(code).not.toContain(value);
  });

  it('opens nothing for another client, under another secret or issuer, or altered anywhere', () => {
    const code = sealer.seal(GRANT);
    expect(sealer.open(code, 'other-app', AT)).toBeNull();
    expect(new CodeSealer('another install secret of thirty-two characters or more', 'https://openreview.example.org').open(code, 'app', AT)).toBeNull();
    // A copy of the install (its database, so its secret) under another address: a staging server.
    expect(new CodeSealer(SECRET, 'https://staging.openreview.example.org').open(code, 'app', AT)).toBeNull();
    expect(new CodeSealer(SECRET, 'https://openreview.example.org').open(code, 'app', AT)).not.toBeNull();
    const flip = (text: string, at: number) => text.slice(0, at) + (text[at] === 'A' ? 'B' : 'A') + text.slice(at + 1);
    // Every character of the sealed part, and the id's first one.
    const sealedFrom = code.lastIndexOf('.') + 1;
    for (let at = sealedFrom; at < code.length - 1; at += 1) expect(sealer.open(flip(code, at), 'app', AT)).toBeNull();
    expect(sealer.open(flip(code, 3), 'app', AT)).toBeNull();
    // Every character of the id (its hour, then the nonce, which only the cipher checks) but its
    // last, whose low bits base64url leaves unused.
    for (let at = 3; at < sealedFrom - 2; at += 1) expect(sealer.open(flip(code, at), 'app', AT), `id character ${at}`).toBeNull();
  });

  it('opens nothing malformed, and never throws', () => {
    const code = sealer.seal(GRANT);
    const [, id, body] = code.split('.');
    for (const text of ['', 'c1', 'c1.', 'c1..', `c3.${id}.${body}`, `c1.${id}.${body}`, `c1.${id}`, `c1.${id}.`, `c1.${id}.${body}.x`, `c1.${id}x.${body}`, `c1.${id}.${body?.slice(0, 20)}`, 'x'.repeat(5000), '\u0000.\u0000.\u0000']) {
      expect(sealer.open(text, 'app', AT), text.slice(0, 40)).toBeNull();
    }
  });

  it('opens a code in its hour, the next or the one before, on another process of the install, and never one whose hour was altered', () => {
    const HOUR = 3_600_000;
    const later = { ...GRANT, issuedAt: GRANT.issuedAt + 5 * HOUR, expiresAt: GRANT.expiresAt + 5 * HOUR };
    const codes = [sealer.seal(GRANT), sealer.seal(later), sealer.seal(GRANT)];
    const other = new CodeSealer(SECRET, 'https://openreview.example.org');
    for (const [code, at] of [[codes[0], AT], [codes[1], AT + 5 * HOUR], [codes[2], AT]] as const) {
      // Its hour; the next (sealed late in the hour, or by a process whose clock is ahead); the one before.
      for (const when of [at, at + HOUR, at - HOUR]) expect(other.open(code ?? '', 'app', when)).not.toBeNull();
      // Past those, no code can still be live: it opens to nothing, and costs no key.
      for (const when of [at + 2 * HOUR, at - 2 * HOUR]) expect(other.open(code ?? '', 'app', when)).toBeNull();
    }
    // Two codes of one hour and one grant share the hour, never the nonce.
    const ids = codes.map((code) => Buffer.from(code.split('.')[1] ?? '', 'base64url'));
    expect(ids[0]?.subarray(0, 4)).toEqual(ids[2]?.subarray(0, 4));
    expect(ids[0]?.subarray(4)).not.toEqual(ids[2]?.subarray(4));
    const [, idText, body] = (codes[0] ?? '').split('.');
    const id = Buffer.from(idText ?? '', 'base64url');
    id.writeUInt32BE(id.readUInt32BE(0) + 1, 0);
    expect(sealer.open(`c2.${id.toString('base64url')}.${body}`, 'app', AT)).toBeNull();
  });

  it('still opens a code of the earlier form (`c1`, a key per code), sealed by a process before the upgrade', () => {
    const codeKey = createHmac.bind(null, 'sha256', Buffer.from(hkdfSync('sha256', SECRET, 'oidc-codes', 'authorization codes, AES-256-GCM', 32)));
    const id = randomBytes(16);
    const { redirectUri, ...rest } = GRANT;
    const wire = [GRANT.clientId, GRANT.profileId, createHash('sha256').update(redirectUri).digest('base64url'), GRANT.codeChallenge, GRANT.scopes, GRANT.nonce, GRANT.authTime, GRANT.tokenVersion, GRANT.sid, GRANT.consentedAt, GRANT.issuedAt, GRANT.expiresAt];
    const cipher = createCipheriv('aes-256-gcm', codeKey().update(id).digest(), Buffer.alloc(12));
    cipher.setAAD(Buffer.from('https://openreview.example.org\napp\n'));
    const sealed = Buffer.concat([cipher.update(JSON.stringify(wire), 'utf8'), cipher.final(), cipher.getAuthTag()]);
    const code = `c1.${id.toString('base64url')}.${sealed.toString('base64url')}`;
    expect(sealer.open(code, 'app', AT)).toEqual({ ...rest, redirectUriHash: wire[2], codeHash: createHash('sha256').update(id).digest('hex') });
    expect(sealer.open(code, 'other-app', AT)).toBeNull();
    expect(sealer.open(code.replace(/^c1/, 'c2'), 'app', AT)).toBeNull();
  });
});

describe('authorization codes on two processes of one install', () => {
  const clock = new TestClock();
  let dir: string;
  let a: TestServer;
  let b: TestServer;
  let person: { id: string; email: string; password: string };

  beforeAll(async () => {
    dir = await tempDir();
    // One install: both name one address as theirs (as behind a load balancer), the issuer.
    a = await startServer({}, dir, { now: clock.now });
    b = await startServer({ BASE_URL: a.url }, dir, { now: clock.now });
    for (const id of ['app', 'other-app']) {
      await a.service.services.oidc.addClient({ id, name: `App ${id}`, redirectUris: [REDIRECT], scopes: ['openid', 'profile', 'email'] });
      await a.service.services.oidc.setClientStatus(id, 'approved');
    }
    // A public client that may ask for refresh tokens (`offline_access` on the consent page).
    await addOfflineClient(a, 'offline-app');
    const user = await createActiveUser(a, { fullname: 'Sealed Codes' });
    person = { ...user, password: PASSWORD };
  }, 60_000);
  afterAll(async () => {
    await Promise.all([a?.close(), b?.close()]);
    await rm(dir, { recursive: true, force: true });
    await dropTestDatabase(dir);
  });

  /** A code from process `at` (signing in and consenting on `agent`'s first visit). */
  async function codeAt(at: TestServer, agent = new UserAgent(), clientId = 'app', opts: { scope?: string; who?: typeof person } = {}) {
    const request = await requestAt(at, clientId, opts.scope ? { scope: opts.scope } : {});
    const page = await agent.authorize(request.url, opts.who ?? person);
    const code = new URL(page.location ?? 'http://x').searchParams.get('code');
    expect(code, page.html.slice(0, 300)).toMatch(/^c2\./);
    return { code: code ?? '', verifier: request.verifier, agent };
  }

  /** An authorization request sent to process `at` (discovery names the install's address, A's). */
  async function requestAt(at: TestServer, clientId: string, extra: Record<string, string> = {}) {
    const request = await authorizationRequest(await relyingParty(a, clientId), extra);
    return { ...request, url: new URL(`${request.url.pathname}${request.url.search}`, at.url) };
  }

  const redeem = (at: TestServer, code: string, verifier: string, clientId = 'app') => redeemCode(at, clientId, code, verifier);
  const refused = { status: 400, body: { error: 'invalid_grant', error_description: 'Invalid or expired authorization code' } };
  const userinfo = async (at: TestServer, token: string | undefined) => (await fetch(`${at.url}/oidc/userinfo`, { headers: { authorization: `Bearer ${token}` } })).status;

  it('a code issued on one process redeems on the other, once', async () => {
    const { code, verifier } = await codeAt(a);
    const first = await redeem(b, code, verifier);
    expect(first.status).toBe(200);
    expect(first.body.id_token).toBeDefined();
    expect(await redeem(a, code, verifier)).toEqual(refused);
    // Presented twice: the token it gave is revoked.
    expect(await userinfo(b, first.body.access_token)).toBe(401);
  });

  it('is redeemed once whatever its spelling: base64url text that decodes to the same id is the same code', async () => {
    const { code, verifier } = await codeAt(a);
    const [version, id, body] = code.split('.');
    // 16 bytes are 22 characters of 6 bits: the last one's 4 low bits are not read.
    const alphabet = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_';
    const last = alphabet.indexOf(id?.at(-1) ?? '');
    const respelled = `${version}.${id?.slice(0, -1)}${alphabet[last ^ 0b0001]}.${body}`;
    expect(respelled).not.toBe(code);
    expect(Buffer.from(respelled.split('.')[1] ?? '', 'base64url')).toEqual(Buffer.from(id ?? '', 'base64url'));
    const first = await redeem(a, code, verifier);
    expect(first.status).toBe(200);
    expect(await redeem(a, respelled, verifier)).toEqual(refused);
    expect(await userinfo(a, first.body.access_token)).toBe(401);
  });

  it('another client cannot redeem it, nor use it up for the client it was issued to', async () => {
    const { code, verifier } = await codeAt(a);
    expect(await redeem(a, code, verifier, 'other-app')).toEqual(refused);
    const sealed = code.lastIndexOf('.') + 1;
    const altered = code.slice(0, sealed) + (code[sealed] === 'A' ? 'B' : 'A') + code.slice(sealed + 1);
    expect(await redeem(a, altered, verifier)).toEqual(refused);
    expect((await redeem(a, code, verifier)).status).toBe(200);
  });

  it('presented twice, ends the refresh-token family it started too', async () => {
    const request = await requestAt(a, 'offline-app', { scope: 'openid offline_access', prompt: 'consent' });
    const page = await new UserAgent().authorize(request.url, person);
    const code = new URL(page.location ?? 'http://x').searchParams.get('code') ?? '';
    const first = await redeem(a, code, request.verifier, 'offline-app');
    const { refresh_token: refreshToken } = first.body as { refresh_token?: string };
    expect(refreshToken).toEqual(expect.any(String));
    // Its revocations are written together: one transaction, both tables.
    const writes: Array<{ sql: string; tx: unknown }> = [];
    const listener = (query: { sql: string; __knexTxId?: unknown }) => {
      if (/^update /i.test(query.sql)) writes.push({ sql: query.sql, tx: query.__knexTxId });
    };
    b.service.db.on('query', listener);
    try {
      expect(await redeem(b, code, request.verifier, 'offline-app')).toEqual(refused);
    } finally {
      b.service.db.off('query', listener);
    }
    expect(writes.map(({ sql }) => /^update [`"]?(\w+)/i.exec(sql)?.[1])).toEqual(['oidc_refresh_tokens', 'oidc_tokens']);
    expect(writes[0]!.tx).toEqual(expect.any(String));
    expect(writes[1]!.tx).toBe(writes[0]!.tx);
    const refresh = await fetch(`${a.url}/oidc/token`, { method: 'POST', body: new URLSearchParams({ grant_type: 'refresh_token', refresh_token: refreshToken ?? '', client_id: 'offline-app' }) });
    expect(await refresh.json()).toEqual({ error: 'invalid_grant', error_description: 'Invalid or expired refresh token' });
    expect(await userinfo(a, first.body.access_token)).toBe(401);
  });

  it('dies with the consent it was issued under: withdrawn, or withdrawn and given again', async () => {
    const agent = new UserAgent();
    await codeAt(a, agent);
    const { client: api } = await loggedIn(a, person.email);
    const { code: kept, verifier } = await codeAt(a, agent);
    expect((await api.request('DELETE', '/oidc/consents/app')).status).toBe(200);
    // On the other process at once: the consent's row is read by the token's own insert.
    expect(await redeem(b, kept, verifier)).toEqual(refused);
    // Consented again (the consent page once more): the codes of the withdrawn consent stay dead.
    clock.advance(1);
    const { code: after, verifier: afterVerifier } = await codeAt(a, agent);
    expect(await redeem(b, kept, verifier)).toEqual(refused);
    expect((await redeem(b, after, afterVerifier)).status).toBe(200);
  });

  it('outlives its consent widened: a consent only grows, and keeps the time it was first given', async () => {
    const user = await createActiveUser(a, { fullname: 'Widening Consent' });
    const who = { ...user, password: PASSWORD };
    const agent = new UserAgent();
    const narrow = await codeAt(a, agent, 'app', { scope: 'openid', who });
    // Another tab asks for more: the consent page again, and the consent widened.
    const wide = await codeAt(a, agent, 'app', { scope: 'openid profile email', who });
    expect((await redeem(b, narrow.code, narrow.verifier)).status).toBe(200);
    expect((await redeem(b, wide.code, wide.verifier)).status).toBe(200);
  });

  it('gives a token only under the very consent it names, once: widened, the consent keeps its time; given again, it has a new one', async () => {
    const repo = new OidcRepository(a.service.db);
    const user = await createActiveUser(a, { fullname: 'Consent Versions' });
    const now = clock.now();
    const given = await repo.widenConsent(user.id, 'app', ['openid'], now);
    expect(given).toEqual({ grantedAt: now, widened: ['openid'] });
    const widened = await repo.widenConsent(user.id, 'app', ['profile'], now + 5);
    expect(widened).toEqual({ grantedAt: now, widened: ['openid', 'profile'] });
    // Asking for less narrows nothing.
    expect(await repo.transaction((r) => r.widenConsent(user.id, 'app', ['openid'], now + 6))).toEqual({ grantedAt: now, widened: null });
    expect((await repo.findConsent(user.id, 'app'))?.scopes).toEqual(['openid', 'profile']);
    const code = (consentedAt: number): CodeRecord => ({
      codeHash: createHash('sha256').update(`${user.id} ${consentedAt} ${Math.random()}`).digest('hex'),
      clientId: 'app', profileId: user.id, redirectUriHash: '', codeChallenge: null, scopes: ['openid', 'profile'], nonce: null,
      authTime: now, tokenVersion: 0, sid: null, consentedAt, issuedAt: now, expiresAt: now + 600_000,
    });
    const issue = (c: CodeRecord) => repo.issueTokenOfCode({ code: c, tokenHash: createHash('sha256').update(Math.random().toString()).digest('hex'), now, expiresAt: now + 3_600_000, familyId: null });
    const underFirst = code(now);
    expect(await issue(underFirst)).toBe(true);
    expect(await issue(underFirst)).toBe(false);
    // Withdrawn and given again: a new consent, a new time; codes of the first give nothing.
    expect(await repo.deleteConsent(user.id, 'app')).toBe(true);
    const again = await repo.widenConsent(user.id, 'app', ['openid', 'profile'], now + 10);
    expect(again.grantedAt).toBe(now + 10);
    expect(await issue(code(now))).toBe(false);
    expect(await issue(code(now + 10))).toBe(true);

    // Several codes in one statement (the token endpoint's batch): each on its own conditions.
    const tokenHash = () => createHash('sha256').update(Math.random().toString()).digest('hex');
    const live = code(now + 10);
    const issues = [live, live, code(now), code(now + 10)].map((c) => ({ code: c, tokenHash: tokenHash(), now, expiresAt: now + 3_600_000, familyId: null }));
    const issued = await repo.issueTokensOfCodes(issues);
    // The same code twice: one token (which one is the database's choice); a withdrawn consent's
    // code: none; another live code: its own.
    const got = issues.map((i) => issued.has(i.tokenHash));
    expect([got[0] !== got[1], got[2], got[3]]).toEqual([true, false, true]);
    expect(await repo.issueTokensOfCodes(issues)).toEqual(new Set());
    expect(await repo.issueTokensOfCodes([])).toEqual(new Set());

    // The token endpoint's batch: codes redeemed in one turn go in one statement.
    const batch = tokensOfCodes(repo);
    const sent: string[] = [];
    const listener = (query: { sql: string }) => sent.push(query.sql);
    a.service.db.on('query', listener);
    try {
      const same = code(now + 10);
      const turn = [same, same, code(now), code(now + 10)].map((c) => ({ code: c, tokenHash: tokenHash(), now, expiresAt: now + 3_600_000, familyId: null }));
      const answers = await Promise.all(turn.map((i) => batch.add(i)));
      expect([answers[0] !== answers[1], answers[2], answers[3]]).toEqual([true, false, true]);
    } finally {
      a.service.db.off('query', listener);
    }
    expect(sent).toHaveLength(1);

    // A row that fails the statement (here a token hash already stored, as a client deleted
    // meanwhile fails PostgreSQL's foreign key) fails its own redemption only: the batch runs
    // again one code at a time.
    const stored = issues.find((i) => issued.has(i.tokenHash))?.tokenHash ?? '';
    const breaking = [code(now + 10), code(now + 10), code(now + 10)].map((c, i) => ({ code: c, tokenHash: i === 1 ? stored : tokenHash(), now, expiresAt: now + 3_600_000, familyId: null }));
    const settled = await Promise.allSettled(breaking.map((i) => batch.add(i)));
    expect(settled.map((r) => r.status)).toEqual(['fulfilled', 'rejected', 'fulfilled']);
    expect(settled.map((r) => (r.status === 'fulfilled' ? r.value : null))).toEqual([true, null, true]);
  });

  it('issued from a consent another process withdrew and gave again (narrower) meanwhile, gives no token', async () => {
    const user = await createActiveUser(a, { fullname: 'Stale Consent' });
    const who = { ...user, password: PASSWORD };
    const agent = new UserAgent();
    expect((await redeem(a, ...(await codeAt(a, agent, 'app', { who }).then((c) => [c.code, c.verifier] as const)))).status).toBe(200);
    // B reads the consent (and keeps that reading for up to a second).
    await codeAt(b, agent, 'app', { who });
    // Another process withdraws it and the person gives a narrower one: writes B does not see.
    const consents = a.service.db('oidc_consents');
    await consents.clone().where({ profile_id: user.id, client_id: 'app' }).delete();
    await consents.clone().insert({ profile_id: user.id, client_id: 'app', scopes: JSON.stringify(['openid']), created_at: clock.now() + 1 });
    // Within the second B may still issue a code from its old reading; the code must not redeem.
    // (Past it, B reads the narrower consent and shows the consent page: no code at all; the
    // rule itself is held, whatever the timing, by the test before this one.)
    const request = await requestAt(b, 'app');
    const page = await agent.go(request.url.toString());
    const code = page.location ? new URL(page.location).searchParams.get('code') : null;
    if (code) expect(await redeem(b, code, request.verifier)).toEqual(refused);
    else expect(page.html).toContain('action="/oidc/consent"');
  });

  it('codes redeemed at once share one statement, and each redeems once', async () => {
    const { agent } = await codeAt(a);
    const warm = await codeAt(a, agent);
    expect((await redeem(a, warm.code, warm.verifier)).status).toBe(200);
    const codes = [];
    for (let i = 0; i < 6; i += 1) codes.push(await codeAt(a, agent));
    const sent: string[] = [];
    const listener = (query: { sql: string }) => sent.push(query.sql);
    a.service.db.on('query', listener);
    let answers;
    try {
      // Each code twice, all at once: the second redemption of each is refused, and revokes the first's token.
      answers = await Promise.all(codes.flatMap(({ code, verifier }) => [redeem(a, code, verifier), redeem(a, code, verifier)]));
    } finally {
      a.service.db.off('query', listener);
    }
    // How many share a statement depends on how the requests arrive; each is in one.
    const inserts = sent.filter((sql) => /^\s*insert into oidc_tokens/.test(sql));
    expect(inserts.length).toBeGreaterThanOrEqual(1);
    expect(inserts.length).toBeLessThanOrEqual(12);
    for (let i = 0; i < codes.length; i += 1) {
      const pair = [answers[2 * i], answers[2 * i + 1]].map((answer) => answer?.status).sort();
      expect(pair).toEqual([200, 400]);
    }
    // The winner's token is revoked, as the code was presented twice.
    for (const answer of answers.filter((x) => x?.status === 200)) expect(await userinfo(a, answer?.body.access_token)).toBe(401);
  });

  it('a sign-in with a session and a consent writes once: the token', async () => {
    const { agent } = await codeAt(a);
    // The session's client is recorded on its first code, the client's last use once a minute.
    const warm = await codeAt(a, agent);
    expect((await redeem(a, warm.code, warm.verifier)).status).toBe(200);
    const sent: string[] = [];
    const listener = (query: { sql: string }) => sent.push(query.sql.replace(/\s+/g, ' ').trim());
    a.service.db.on('query', listener);
    try {
      const { code, verifier } = await codeAt(a, agent);
      expect((await redeem(a, code, verifier)).status).toBe(200);
    } finally {
      a.service.db.off('query', listener);
    }
    // Readings kept for a second (the session, the client, the consent, the person) may be read
    // again on a slow machine; the code itself is neither written nor read.
    const writes = sent.filter((sql) => /^(insert|update|delete|replace)\b/i.test(sql));
    expect(writes).toHaveLength(1);
    expect(writes[0]).toMatch(/^insert into oidc_tokens .* oidc_consents c where/);
  });
});
