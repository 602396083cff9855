import { createHmac } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { bearerToken, freshBytes, hashSecret, randomToken, safeEqual, secretKey } from '../server/secrets.ts';

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

describe('random bytes from the pool', () => {
  // How draws are cut from the generator's output: `secrets-pool.test.ts`.
  it('are in memory of their own, not a view of the pool or of a shared slab', () => {
    const bytes = freshBytes(16);
    expect(bytes.byteOffset).toBe(0);
    expect(bytes.buffer.byteLength).toBe(16);
  });

  it('refuse a count that is not a whole number of bytes', () => {
    for (const n of [-1, 1.5, Number.NaN, Number.POSITIVE_INFINITY]) expect(() => freshBytes(n)).toThrow(RangeError);
    expect(freshBytes(0).length).toBe(0);
  });

  it('are copies: what a caller does with them leaves the next draw alone', () => {
    const first = freshBytes(32);
    const copy = Buffer.from(first);
    first.fill(0);
    const second = freshBytes(32);
    expect(second.equals(Buffer.alloc(32))).toBe(false);
    expect(second.equals(copy)).toBe(false);
  });

  it('larger draws come from the generator directly', () => {
    expect(freshBytes(1000).length).toBe(1000);
  });
});

describe('keys made once', () => {
  it('give the MACs their text or bytes gave, so stored MACs and derived subjects stay the same', () => {
    for (const key of ['install secret:codes', 'ké ✓', Buffer.from([0, 1, 2, 255])]) {
      expect(createHmac('sha256', secretKey(key)).update('message').digest('hex')).toBe(createHmac('sha256', key).update('message').digest('hex'));
    }
  });
});
