import { createCipheriv, createDecipheriv, createHmac, createSecretKey, hash, hkdfSync, type KeyObject } from 'node:crypto';
import type { OidcScope } from '../../shared/index.ts';
import { Memo } from '../memo.ts';
import { freshBytes, hashSecret, secretKey } from '../secrets.ts';

// Authorization codes, sealed: a code is its grant, encrypted and authenticated, so the
// authorization request writes nothing and the token request reads nothing to learn what a code
// grants (two of a sign-in's three statements; `docs/oidc.md`, Codes and access tokens).
//
// The form is `c2.<id>.<sealed>`, base64url: `id` is 16 bytes, the hour the code was sealed in
// (4 bytes, hours since 1970) and 12 random bytes, the nonce; the grant is AES-256-GCM under that
// hour's key, HMAC-SHA-256 of the hour under the install's code key (derived with HKDF from the
// session secret, as every process of an install shares it), with the issuer and the client's id
// as associated data, so a code shown to another client, or to another install that shares the
// secret (a staging copy of the database), does not open. Whoever holds the secret could seal
// codes, as whoever holds the database's signing keys could sign ID tokens: both are in the
// database unless configured (`docs/operations.md`, Backups). A key per hour keeps random nonces
// safe (NIST SP 800-38D: 2^32 messages under one key with random 96-bit nonces) for 2^32 codes an
// hour, and costs a sign-in no key of its own: each process derives an hour's key once.
// `c1.<id>.<sealed>` codes (a key per code: HMAC-SHA-256 of a random 16-byte id, a fixed nonce),
// which processes before this form sealed, still open until they expire, so a sign-in under way
// while the processes of an install are upgraded one by one still redeems.
//
// What storing codes gave, sealing keeps. Single use: a redemption inserts its access token under
// the code's id (`oidc_tokens.code_hash`, unique), so a second one conflicts, and the tokens of a
// code presented twice are revoked; a token's row outlives its code (an hour against ten
// minutes). A withdrawn consent voids the codes issued under it: the token is inserted only if
// the person's consent row is the one the code was issued under (its `created_at`, sealed as
// `consentedAt`), which withdrawing deletes; a consent given again is a new row, and widening one
// keeps its time.

/** What a code grants: its person, client, scopes, sign-in and lifetime. */
export interface CodeRecord {
  /** The code's identity for its single use: the SHA-256 (hex) of its id. */
  codeHash: string;
  clientId: string;
  profileId: string;
  /** SHA-256 (base64url) of the redirect URI it was issued for: the token request must send the same. */
  redirectUriHash: string;
  /** Null: a confidential client that sent no PKCE challenge. */
  codeChallenge: string | null;
  scopes: OidcScope[];
  nonce: string | null;
  authTime: number;
  /** The profile's `tokenVersion` when the code was issued. */
  tokenVersion: number;
  /** The browser session it was issued in (the ID token's `sid`; null: none known). */
  sid: string | null;
  /** When the consent it was issued under was first given (`oidc_consents.created_at`): the consent that must still be in place. */
  consentedAt: number;
  issuedAt: number;
  expiresAt: number;
}

/** What a code is issued with; its id and hash are made when it is sealed. */
export type CodeGrant = Omit<CodeRecord, 'codeHash' | 'redirectUriHash'> & { redirectUri: string };

const VERSION = 'c2';
/**
 * The form sealed before hourly keys: opened, never sealed (`#keyOfCode`). A `c1` code lives ten
 * minutes, so it matters only during an upgrade from a version that sealed them; meanwhile each
 * made-up `c1` code costs an HMAC and a key, as every code did then. Remove it (and `#keyOfCode`,
 * `NONCE_1`) in the release after the one that brought `c2`.
 */
const VERSION_1 = 'c1';
const ID_BYTES = 16;
const TAG_BYTES = 16;
const HOUR = 3_600_000;
/** `c1`: one key per code, so a fixed nonce is never used twice under a key. */
const NONCE_1 = Buffer.alloc(12);
/** Hours whose keys a process keeps: codes open only in their hour, the one before or after (`open`). */
const HOURS_KEPT = 4;

/** SHA-256 of a redirect URI, base64url: what a code holds of it. */
export function redirectUriHash(redirectUri: string): string {
  return hash('sha256', redirectUri, 'base64url');
}

/** The grant's fields in the sealed JSON, in a fixed order (short: a code travels in a URL). */
type Wire = [string, string, string, string | null, OidcScope[], string | null, number, number, string | null, number, number, number];

export class CodeSealer {
  readonly #key: KeyObject;
  readonly #issuer: string;
  readonly #hourKeys = new Memo<number, KeyObject>(HOURS_KEPT);

  /** `secret`: the install's session secret (never the key itself: the key is derived for codes alone); `issuer`: the provider's. */
  constructor(secret: string, issuer: string) {
    this.#key = secretKey(Buffer.from(hkdfSync('sha256', secret, 'oidc-codes', 'authorization codes, AES-256-GCM', 32)));
    this.#issuer = issuer;
  }

  seal(grant: CodeGrant): string {
    const hour = Math.floor(grant.issuedAt / HOUR);
    const id = freshBytes(ID_BYTES);
    id.writeUInt32BE(hour, 0);
    const wire: Wire = [grant.clientId, grant.profileId, redirectUriHash(grant.redirectUri), grant.codeChallenge, grant.scopes, grant.nonce, grant.authTime, grant.tokenVersion, grant.sid, grant.consentedAt, grant.issuedAt, grant.expiresAt];
    const cipher = createCipheriv('aes-256-gcm', this.#keyOfHour(hour), id.subarray(4));
    cipher.setAAD(this.#boundTo(grant.clientId));
    const body = Buffer.concat([cipher.update(JSON.stringify(wire), 'utf8'), cipher.final(), cipher.getAuthTag()]);
    return `${VERSION}.${id.toString('base64url')}.${body.toString('base64url')}`;
  }

  /**
   * The grant of a code `clientId` presents at `now`, or null: not a sealed code, sealed under
   * another key, for another client, altered, or sealed in an hour other than this one, the last
   * or the next (a code lives minutes; the next hour allows for processes' clocks apart). Its
   * expiry is the caller's to check. The hour is read first, so a code of any other hour costs
   * no key: made-up codes cannot push the hours in use out of those kept.
   */
  open(code: string, clientId: string, now: number): CodeRecord | null {
    const [version, idText, bodyText, extra] = code.split('.');
    if ((version !== VERSION && version !== VERSION_1) || !idText || !bodyText || extra !== undefined) return null;
    const id = Buffer.from(idText, 'base64url');
    const body = Buffer.from(bodyText, 'base64url');
    if (id.length !== ID_BYTES || body.length <= TAG_BYTES) return null;
    const hour = id.readUInt32BE(0);
    if (version === VERSION && Math.abs(hour - Math.floor(now / HOUR)) > 1) return null;
    let wire: Wire;
    try {
      const decipher = version === VERSION ? createDecipheriv('aes-256-gcm', this.#keyOfHour(hour), id.subarray(4)) : createDecipheriv('aes-256-gcm', this.#keyOfCode(id), NONCE_1);
      decipher.setAAD(this.#boundTo(clientId));
      decipher.setAuthTag(body.subarray(body.length - TAG_BYTES));
      wire = JSON.parse(Buffer.concat([decipher.update(body.subarray(0, body.length - TAG_BYTES)), decipher.final()]).toString('utf8')) as Wire;
    } catch {
      return null;
    }
    const [sealedFor, profileId, uriHash, codeChallenge, scopes, nonce, authTime, tokenVersion, sid, consentedAt, issuedAt, expiresAt] = wire;
    // Every text that opens was sealed here, by `seal`; the id decoded, not the text, names the
    // code, as base64url text has more than one spelling of the same bytes.
    return { codeHash: hashSecret(id), clientId: sealedFor, profileId, redirectUriHash: uriHash, codeChallenge, scopes, nonce, authTime, tokenVersion, sid, consentedAt, issuedAt, expiresAt };
  }

  /** The associated data: the issuer and the client, each ended by a newline (neither holds one). */
  #boundTo(clientId: string): Buffer {
    return Buffer.from(`${this.#issuer}\n${clientId}\n`);
  }

  /** The key of the codes sealed in `hour`; a few hours' are kept. */
  #keyOfHour(hour: number): KeyObject {
    return this.#hourKeys.get(hour, () => secretKey(createHmac('sha256', this.#key).update(`c2 ${hour}`).digest()));
  }

  /** A `c1` code's own key. */
  #keyOfCode(id: Buffer): KeyObject {
    return createSecretKey(createHmac('sha256', this.#key).update(id).digest());
  }
}
