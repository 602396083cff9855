import { describe, expect, it } from 'vitest';
import { bearerToken, hashSecret, randomToken, safeEqual } from '../server/secrets.ts';

describe('comparing secrets', () => {
  it('equal values are equal, as text or bytes', () => {
    expect(safeEqual('s3cret', 's3cret')).toBe(true);
    expect(safeEqual(Buffer.from('s3cret'), 's3cret')).toBe(true);
  });

  it('values that differ anywhere, or in length, are unequal (without throwing)', () => {
    expect(safeEqual('s3cret', 's3creT')).toBe(false);
    expect(safeEqual('s3cret', 's3cret!')).toBe(false);
    expect(safeEqual('', 'x')).toBe(false);
  });
});

describe('the bearer token of an Authorization header', () => {
  it.each([
    ['Bearer abc.def', 'abc.def'],
    ['bearer abc', 'abc'],
    ['BEARER \tabc \t', 'abc'],
  ])('%j gives %j', (header, token) => {
    expect(bearerToken(header)).toBe(token);
  });

  it.each([undefined, '', 'Bearer', 'Bearer ', 'Basic abc', 'Bearer a b', 'Bearerabc', ' Bearer abc'])('%j gives none', (header) => {
    expect(bearerToken(header)).toBeUndefined();
  });
});

describe('stored secrets', () => {
  it('are kept as their SHA-256, hex', () => {
    expect(hashSecret('abc')).toBe('ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad');
  });

  it('are made with 256 random bits, base64url', () => {
    const token = randomToken();
    expect(token).toMatch(/^[\w-]{43}$/);
    expect(randomToken()).not.toBe(token);
  });
});
