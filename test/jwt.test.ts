import { decodeProtectedHeader, exportJWK, generateKeyPair, importJWK, jwtVerify, SignJWT, type CryptoKey } from 'jose';
import { describe, expect, it } from 'vitest';
import { signJwt } from '../server/jwt.ts';

const secret = new TextEncoder().encode('a secret of thirty-two bytes or more!');
const hmacKey = (): Promise<CryptoKey> => crypto.subtle.importKey('raw', secret, { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);

describe('signJwt', () => {
  it("makes the token jose's SignJWT makes of the same claims and header (HS256: the same bytes)", async () => {
    const key = await hmacKey();
    const claims = { sid: 's1', ver: 3, user: { id: '~Ada_Lovelace1', names: ['Ada'] } };
    const ours = await signJwt({ ...claims, sub: '~Ada_Lovelace1', iss: 'openreview', aud: 'session', iat: 1_700_000_000, jti: 'j1', exp: 1_700_000_600 }, { alg: 'HS256', typ: 'JWT' }, key);
    const theirs = await new SignJWT(claims)
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject('~Ada_Lovelace1')
      .setIssuer('openreview')
      .setAudience('session')
      .setIssuedAt(1_700_000_000)
      .setJti('j1')
      .setExpirationTime(1_700_000_600)
      .sign(key);
    expect(ours).toBe(theirs);
  });

  it('signs RS256 with the key id in the header, and the token verifies', async () => {
    const { privateKey, publicKey } = await generateKeyPair('RS256', { extractable: true });
    const token = await signJwt({ iss: 'https://issuer.example', aud: 'client-1', sub: 'abc', iat: 1_700_000_000, exp: 4_000_000_000, nonce: 'n-0' }, { alg: 'RS256', kid: 'k1', typ: 'JWT' }, privateKey);
    expect(decodeProtectedHeader(token)).toEqual({ alg: 'RS256', kid: 'k1', typ: 'JWT' });
    const verified = await jwtVerify(token, await importJWK(await exportJWK(publicKey), 'RS256'), { issuer: 'https://issuer.example', audience: 'client-1' });
    expect(verified.payload).toEqual({ iss: 'https://issuer.example', aud: 'client-1', sub: 'abc', iat: 1_700_000_000, exp: 4_000_000_000, nonce: 'n-0' });
  });

  it.each([
    ['a fraction of a second', { iat: 1_700_000_000.5, exp: 1_700_000_600 }],
    ['not a number', { iat: 1_700_000_000, exp: Number.NaN }],
    ['no end', { iat: 1_700_000_000, exp: Number.POSITIVE_INFINITY }],
  ])('refuses times that are %s, signing nothing', async (_what, times) => {
    const key = await hmacKey();
    expect(() => signJwt({ iss: 'openreview', aud: 'session', ...times }, { alg: 'HS256', typ: 'JWT' }, key)).toThrow(/whole seconds/);
  });
});
