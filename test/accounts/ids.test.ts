import { describe, expect, it } from 'vitest';
import { addressKey, maskEmail, normaliseEmail, normaliseId } from '../../server/accounts/ids.ts';

describe('normaliseId', () => {
  it('trims white space and invisible characters of any kind, and lower-cases emails', () => {
    for (const typed of [' a@b.org', 'a@b.org\t', '\u00a0a@b.org', '\ufeffA@B.org', 'a@b.org\u200b', '\u2060\u200d a@b.org \r\n', '\u3000a@b.org\u2028']) {
      expect(normaliseId(typed), JSON.stringify(typed)).toBe('a@b.org');
    }
  });

  it('keeps the letter case of a tilde id, trims it, and composes it (NFC)', () => {
    expect(normaliseId('\u00a0~Ada_Lovelace1\ufeff')).toBe('~Ada_Lovelace1');
    expect(normaliseId('~Jose\u0301_Marti1')).toBe('~Jos\u00e9_Marti1');
  });

  it('composes emails too, and keeps inner characters', () => {
    expect(normaliseEmail('Jose\u0301@Example.org ')).toBe('jos\u00e9@example.org');
    expect(normaliseEmail('a\u200bb@c.org')).toBe('a\u200bb@c.org');
  });
});

describe('addressKey', () => {
  it('keeps IPv4, unwraps IPv4-mapped IPv6, and groups IPv6 by /64', () => {
    expect(addressKey('203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('::ffff:203.0.113.9')).toBe('203.0.113.9');
    expect(addressKey('2001:db8:1:2:aaaa:bbbb:cccc:dddd')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8:1:2::1')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:0db8:0001:0002:ffff::')).toBe('2001:db8:1:2::/64');
    expect(addressKey('2001:db8::1')).toBe('2001:db8:0:0::/64');
    expect(addressKey('::1')).toBe('0:0:0:0::/64');
    expect(addressKey('fe80::1%eth0')).toBe('fe80:0:0:0::/64');
    expect(addressKey('local')).toBe('local');
  });
});

describe('maskEmail', () => {
  it('keeps the first character and the domain only', () => {
    expect(maskEmail('dorothy@example.org')).toBe('d•••@example.org');
    expect(maskEmail('d@example.org')).toBe('d•••@example.org');
    expect(maskEmail('first.last+tag@sub.example.org')).toBe('f•••@sub.example.org');
  });
});
