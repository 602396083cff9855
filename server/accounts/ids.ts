import { isIPv6 } from 'node:net';

/**
 * How an id a person types (an email or a tilde username) is made canonical, once, before it is
 * used as a rate-limit key or looked up: the same account typed with a space, a tab, a
 * no-break space, a byte-order mark or a zero-width space around it, in another Unicode
 * composition, or (for an email) in other letter case, is the same id. Otherwise each variant
 * got its own login counter and the lockout could be walked around.
 */

/** White space, control and invisible format characters (U+00A0, U+FEFF, U+200B…) at either end. */
const EDGES = /^[\s\p{Z}\p{Cc}\p{Cf}]+|[\s\p{Z}\p{Cc}\p{Cf}]+$/gu;

/** An email or a tilde id as typed, trimmed and NFC-composed; emails lower-cased (tilde ids keep their case). */
export function normaliseId(id: string): string {
  const trimmed = id.normalize('NFC').replace(EDGES, '');
  return trimmed.startsWith('~') ? trimmed : trimmed.toLowerCase();
}

/** Emails are compared and stored trimmed, NFC-composed and lower-cased. */
export function normaliseEmail(email: string): string {
  return email.normalize('NFC').replace(EDGES, '').toLowerCase();
}

/**
 * The key a client address counts under in rate limits and the hashing queue's shares: an
 * IPv4 address as it is (an IPv4-mapped IPv6 one as IPv4), an IPv6 address by its /64, which
 * is what one subscriber usually holds; otherwise each of its 2^64 addresses would get limits
 * of its own.
 */
export function addressKey(address: string): string {
  const mapped = /^::ffff:(\d{1,3}(?:\.\d{1,3}){3})$/i.exec(address);
  if (mapped?.[1]) return mapped[1];
  if (!isIPv6(address)) return address;
  const bare = address.replace(/%.*$/, '');
  const [head = '', tail] = bare.split('::');
  const first = head === '' ? [] : head.split(':');
  const last = tail === undefined || tail === '' ? [] : tail.split(':');
  const groups = tail === undefined ? first : [...first, ...Array<string>(Math.max(0, 8 - first.length - last.length)).fill('0'), ...last];
  return `${groups
    .slice(0, 4)
    .map((g) => (Number.parseInt(g, 16) || 0).toString(16))
    .join(':')}::/64`;
}

/** An address as a page may show it to the holder of an old link: `r•••@example.org`. */
export function maskEmail(email: string): string {
  const at = email.lastIndexOf('@');
  return `${email.slice(0, Math.min(1, at))}•••${email.slice(at)}`;
}
