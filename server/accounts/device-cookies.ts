import { createHash, createHmac, type KeyObject } from 'node:crypto';
import { freshBytes, safeEqual, secretKey } from '../secrets.ts';

/**
 * Device cookies, as OWASP's authentication guidance advises against account lockout used as a
 * denial of service ("Slow Brute Force Protection with Device Cookies"): a browser that signed in
 * to an account carries a signed token for that account (`service.device`: HttpOnly, set by
 * the transport after every completed sign-in). Its sign-in attempts to that account are counted
 * against the token's own allowance (`loginDevice`, `mfaDevice`), untouched by strangers'
 * failures; everyone else shares the account's allowance, past which a person proves they are
 * one (human verification) instead of being refused. A stolen device cookie gives a thief no more
 * than its own allowance, and nothing without the password.
 *
 * An entry is `<account tag>.<nonce>.<mac>`: the tag (a hash of the profile id, so the cookie does
 * not name the account) finds the entry, the nonce names this browser's allowance, and the MAC
 * (HMAC-SHA-256 over the profile id and the nonce, keyed by the install's secret) proves the
 * service made it for that account. One cookie holds the entries of the last few accounts the
 * browser signed in to; nothing is stored on the server.
 */
export const DEVICE_COOKIE_SECONDS = 365 * 24 * 60 * 60;
/** How many accounts' entries one browser keeps (the newest first). */
const ENTRIES = 5;
const ENTRY = /^[\w-]{16}\.[\w-]{22}\.[\w-]{43}$/;

export class DeviceCookies {
  readonly #key: KeyObject;

  constructor(secret: string) {
    this.#key = secretKey(`${secret}:device-cookies`);
  }

  /** A new entry for a browser that has just signed in to `profileId`. */
  issue(profileId: string): string {
    const nonce = freshBytes(16).toString('base64url');
    return `${tagOf(profileId)}.${nonce}.${this.#mac(profileId, nonce)}`;
  }

  /** The nonce of the cookie's entry for `profileId` when the service made it; null otherwise. */
  nonceFor(cookie: string | undefined, profileId: string): string | null {
    const tag = tagOf(profileId);
    for (const entry of entriesOf(cookie)) {
      const [entryTag, nonce = '', mac = ''] = entry.split('.');
      if (entryTag === tag && safeEqual(mac, this.#mac(profileId, nonce))) return nonce;
    }
    return null;
  }

  #mac(profileId: string, nonce: string): string {
    return createHmac('sha256', this.#key).update(`${profileId}\n${nonce}`).digest('base64url');
  }
}

/** The cookie's value with `entry` first: an older entry for the same account goes, and only the newest few stay. */
export function withDeviceEntry(cookie: string | undefined, entry: string): string {
  const tag = entry.slice(0, entry.indexOf('.'));
  const others = entriesOf(cookie).filter((old) => !old.startsWith(`${tag}.`));
  return [entry, ...others].slice(0, ENTRIES).join('~');
}

function entriesOf(cookie: string | undefined): string[] {
  if (typeof cookie !== 'string' || cookie.length > 1024) return [];
  return cookie.split('~').filter((entry) => ENTRY.test(entry)).slice(0, ENTRIES);
}

function tagOf(profileId: string): string {
  return createHash('sha256').update(profileId).digest('base64url').slice(0, 16);
}
