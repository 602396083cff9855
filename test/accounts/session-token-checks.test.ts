/**
 * `SessionTokens.verify` remembers the tokens it verified: the same token presented again is not
 * checked by WebCrypto again, while its expiry and issue time are, and any other text is.
 */
import { decodeJwt, SignJWT } from 'jose';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { SESSION_TOKEN_ISSUER, SessionTokens, TOKEN_USERNAME_BYTES, TOKEN_USERNAMES, tokenUser } from '../../server/accounts/session-tokens.ts';

const SECRET = 'a-session-secret-of-at-least-thirty-two-characters';
const ISSUER = 'https://accounts.example.org';
const claims = { sub: '~Ada_Lovelace1', sid: 'session-1', ver: 0, user: tokenUser('ada@example.org', '~Ada_Lovelace1') };

afterEach(() => {
  vi.restoreAllMocks();
});

describe('verified session tokens', () => {
  it('checks a token presented again without WebCrypto, and each of its copies stays the caller’s own', async () => {
    let now = Date.UTC(2026, 10, 28, 12);
    const tokens = new SessionTokens(SECRET, ISSUER, () => now);
    const token = await tokens.sign(claims, 600);
    const checks = vi.spyOn(crypto.subtle, 'verify');
    const first = await tokens.verify(token);
    expect(checks).toHaveBeenCalledTimes(1);
    first.sub = 'changed by the caller';
    now += 60_000;
    expect(await tokens.verify(token)).toMatchObject({ sub: claims.sub, sid: claims.sid, ver: 0 });
    expect(checks).toHaveBeenCalledTimes(1);
  });

  it('refuses a remembered token once it expired, and one whose signature or claims differ by a character', async () => {
    let now = Date.UTC(2026, 10, 28, 12);
    const tokens = new SessionTokens(SECRET, ISSUER, () => now);
    const token = await tokens.sign(claims, 600);
    await tokens.verify(token);
    const [header, payload, signature] = token.split('.') as [string, string, string];
    const flipped = (text: string) => text.slice(0, -2) + (text.at(-2) === 'A' ? 'B' : 'A') + text.slice(-1);
    await expect(tokens.verify(`${header}.${payload}.${flipped(signature)}`)).rejects.toMatchObject({ name: 'UnauthorizedError' });
    await expect(tokens.verify(`${header}.${flipped(payload)}.${signature}`)).rejects.toMatchObject({ name: 'UnauthorizedError' });
    now += 600_000;
    await expect(tokens.verify(token)).rejects.toMatchObject({ name: 'TokenExpiredError' });
    // A clock set back (another machine's, or corrected) does not bring it back without a check.
    now -= 300_000;
    const checks = vi.spyOn(crypto.subtle, 'verify');
    expect(await tokens.verify(token)).toMatchObject({ sid: claims.sid });
    expect(checks).toHaveBeenCalledTimes(1);
  });

  it('refuses a remembered token whose issue time the clock has not reached, and forgets the oldest past a thousand', async () => {
    let now = Date.UTC(2026, 10, 28, 12);
    const tokens = new SessionTokens(SECRET, ISSUER, () => now);
    const early = await tokens.sign(claims, 600);
    await tokens.verify(early);
    now -= 120_000;
    await expect(tokens.verify(early)).rejects.toMatchObject({ name: 'UnauthorizedError' });
    now += 120_000;

    const many = await Promise.all(Array.from({ length: 1001 }, (_, i) => tokens.sign({ ...claims, sid: `session-${i}` }, 600)));
    for (const token of many) await tokens.verify(token);
    const checks = vi.spyOn(crypto.subtle, 'verify');
    await tokens.verify(many[1000]!);
    expect(checks).toHaveBeenCalledTimes(0);
    expect(await tokens.verify(many[0]!)).toMatchObject({ sid: 'session-0' });
    expect(checks).toHaveBeenCalledTimes(1);
  });

  it('does not take a token signed with another secret for one it remembers', async () => {
    const now = () => Date.UTC(2026, 10, 28, 12);
    const ours = new SessionTokens(SECRET, ISSUER, now);
    const theirs = new SessionTokens(`${SECRET}-other`, ISSUER, now);
    const token = await theirs.sign(claims, 600);
    await theirs.verify(token);
    await expect(ours.verify(token)).rejects.toMatchObject({ name: 'UnauthorizedError' });
  });

  it('issues tokens as the platform names its own, and still takes those issued under the service\'s address, but no other issuer', async () => {
    const now = Date.UTC(2026, 10, 28, 12);
    const tokens = new SessionTokens(SECRET, ISSUER, () => now);
    expect(decodeJwt(await tokens.sign(claims, 600)).iss).toBe(SESSION_TOKEN_ISSUER);
    const key = new TextEncoder().encode(SECRET);
    const issuedBy = (issuer: string) =>
      new SignJWT({ sid: claims.sid, ver: 0 })
        .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
        .setSubject(claims.sub)
        .setIssuer(issuer)
        .setAudience('session')
        .setIssuedAt(Math.floor(now / 1000))
        .setExpirationTime(Math.floor(now / 1000) + 600)
        .sign(key);
    expect(await tokens.verify(await issuedBy(ISSUER))).toMatchObject({ sub: claims.sub, sid: claims.sid });
    await expect(tokens.verify(await issuedBy('https://elsewhere.example.org'))).rejects.toMatchObject({ name: 'UnauthorizedError' });
    await expect(tokens.verify(await issuedBy('openreview-elsewhere'))).rejects.toMatchObject({ name: 'UnauthorizedError' });
  });

  it('carries of the profile what clients read, the preferred address first, and stays small however many addresses and names a profile has', async () => {
    const now = Date.UTC(2026, 10, 28, 12);
    const tokens = new SessionTokens(SECRET, ISSUER, () => now);
    const many = (n: number, at: string) => Array.from({ length: n }, (_, i) => `someone.with.a.long.address.${i}@${at}.example.org`);
    const profile = (id: string, preferredEmail: string) => ({
      id,
      first: 'Ada',
      last: 'Lovelace',
      fullname: 'Ada Lovelace',
      emails: [...many(200, id.slice(1)), preferredEmail],
      preferredEmail,
      usernames: Array.from({ length: 50 }, (_, i) => `~Ada_Lovelace${i + 1}`),
      preferredId: id,
      state: 'Active' as const,
      tokenVersion: 3,
    });
    const impersonator = { id: 'admin@example.org', isSuperUser: true, profile: profile('~Admin_One1', 'admin@example.org'), impersonator: { id: 'root@example.org', profile: profile('~Root_One1', 'root@example.org') } };
    const token = await tokens.sign({ ...claims, user: tokenUser('ada@example.org', claims.sub, profile(claims.sub, 'ada@example.org'), impersonator) }, 600);
    expect(token.length).toBeLessThan(1500);
    expect(decodeJwt(token).user).toEqual({
      id: 'ada@example.org',
      profile: {
        id: claims.sub,
        fullname: 'Ada Lovelace',
        first: 'Ada',
        last: 'Lovelace',
        preferredId: claims.sub,
        preferredEmail: 'ada@example.org',
        emails: ['ada@example.org'],
        usernames: Array.from({ length: TOKEN_USERNAMES }, (_, i) => `~Ada_Lovelace${i + 1}`),
      },
      impersonator: { id: 'admin@example.org', profile: { id: '~Admin_One1', fullname: 'Ada Lovelace' } },
    });
  });

  it('carries the usernames the web client tells the person’s own pages by, the preferred id and the profile id first', () => {
    const usernames = Array.from({ length: 30 }, (_, i) => `~Ada_Lovelace${i + 1}`);
    const profile = { id: '~Ada_Lovelace25', fullname: 'Ada Lovelace', emails: [], usernames, preferredId: '~Ada_Lovelace30', state: 'Active' as const, tokenVersion: 0 };
    const user = tokenUser('ada@example.org', profile.id, profile);
    expect(user.profile.usernames).toEqual(['~Ada_Lovelace30', '~Ada_Lovelace25', ...usernames.slice(0, TOKEN_USERNAMES - 2)]);
    // `app/profile/page.js`: whether the page shown is the person's own.
    expect(user.profile.usernames?.includes('~Ada_Lovelace30')).toBe(true);
    expect(tokenUser('ada@example.org', '~Ada_Lovelace1', { ...profile, id: '~Ada_Lovelace1', preferredId: '~Ada_Lovelace1', usernames: ['~Ada_Lovelace1'] }).profile.usernames).toEqual(['~Ada_Lovelace1']);
  });

  it('carries long usernames only as far as their bytes allow, so the token stays well under what a browser keeps of a cookie', async () => {
    const tokens = new SessionTokens(SECRET, ISSUER);
    // 100 letters of three bytes each: 300 bytes a username, as a name in some scripts runs.
    const long = (i: number) => `~${'張'.repeat(100)}${i}`;
    const usernames = Array.from({ length: 10 }, (_, i) => long(i + 1));
    const profile = { id: long(1), fullname: '張', emails: [], usernames, preferredId: long(1), state: 'Active' as const, tokenVersion: 0 };
    const user = tokenUser('zhang@example.org', profile.id, profile);
    expect(user.profile.usernames).toEqual([long(1)]);
    expect(Buffer.byteLength((user.profile.usernames ?? []).join(''))).toBeLessThanOrEqual(TOKEN_USERNAME_BYTES);
    expect((await tokens.sign({ ...claims, user }, 600)).length).toBeLessThan(2000);
  });
});
