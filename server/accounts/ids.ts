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
