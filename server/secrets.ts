import { createCipheriv, createDecipheriv, createHash, createSecretKey, hash, hkdfSync, randomBytes, randomFillSync, timingSafeEqual, type KeyObject } from 'node:crypto';

/**
 * How secrets this service makes (refresh tokens, one-time tokens, sign-in codes and access
 * tokens) are stored: their SHA-256, hex. They are random, so no salt or stretching is needed.
 */
export function hashSecret(secret: string | Uint8Array): string {
  // The one-shot `hash` (Node ≥ 21.7): a third of `createHash`'s time for a token's few bytes.
  return hash('sha256', secret, 'hex');
}

/** A fresh random secret (256 bits), base64url. */
export function randomToken(): string {
  return freshBytes(32).toString('base64url');
}

/**
 * `n` random bytes from the operating system's generator, as `randomBytes` gives them, drawn from
 * a pool refilled 4 KiB at a time (as Node's `randomUUID` does): each call to OpenSSL's
 * generator takes its lock, which the thread pool's RSA signatures also take, so a token drawn
 * on its own cost 4 µs alone and about 25 µs during sign-ins (a CPU profile of bench row 4).
 * Each byte is given out once, in memory of its own, and wiped from the pool as it is. The pool
 * holds the next tokens before they are issued; whoever can read the process's memory reads the
 * session secret and the signing keys there too, from which any token's worth can be minted.
 */
export const freshBytes = randomPool(randomFillSync);

/**
 * Draws from a pool of `size` bytes that `fill` refills whole (`freshBytes`: the generator's; a
 * test's records what it filled). A draw that does not fit in what is left of the pool is taken
 * from the start of the next refill; one larger than a sixteenth of the pool comes from
 * `randomBytes` directly.
 */
export function randomPool(fill: (pool: Buffer) => void, size = 4096): (n: number) => Buffer {
  const pool = Buffer.alloc(size);
  let taken = size;
  return (n) => {
    if (!Number.isSafeInteger(n) || n < 0) throw new RangeError(`${n} is not a count of random bytes`);
    if (n > size / 16) return randomBytes(n);
    if (taken + n > size) {
      fill(pool);
      taken = 0;
    }
    const bytes = Buffer.allocUnsafeSlow(n);
    pool.copy(bytes, 0, taken, taken + n);
    pool.fill(0, taken, taken + n);
    taken += n;
    return bytes;
  };
}

/**
 * A key for `node:crypto`'s HMACs and ciphers, made once. Given as text or bytes instead, every
 * `createHmac`, `createCipheriv` and `createDecipheriv` call first tests whether it is a
 * `KeyObject` or a `CryptoKey`, which on Node 24 costs about 10 µs a call (with a `KeyObject`,
 * 2 µs in all). Text is its UTF-8 bytes, as those functions take it, so every MAC stays the same.
 */
export function secretKey(key: string | Uint8Array): KeyObject {
  return createSecretKey(typeof key === 'string' ? Buffer.from(key, 'utf8') : key);
}

/**
 * Whether two secrets (or their hashes, or keys) are equal, in time that does not depend on
 * where they differ. Values of different lengths are unequal (their lengths are not secret).
 */
export function safeEqual(a: string | Uint8Array, b: string | Uint8Array): boolean {
  const x = typeof a === 'string' ? Buffer.from(a) : a;
  const y = typeof b === 'string' ? Buffer.from(b) : b;
  return x.length === y.length && timingSafeEqual(x, y);
}

/** The token of an `Authorization: Bearer <token>` header (the scheme in any letter case); undefined otherwise. */
export function bearerToken(header: string | undefined): string | undefined {
  return /^Bearer[ \t]+([^\s]+)[ \t]*$/i.exec(header ?? '')?.[1];
}

/** What a `SecretBox`'s derived key is for: HKDF's salt and info, so each use has its own key. */
export interface SealPurpose {
  salt: string;
  info: string;
}

/** TOTP secrets (`accounts/mfa/`): the purpose every stored TOTP secret was sealed for. */
export const TOTP_SECRETS: SealPurpose = { salt: 'mfa-at-rest', info: 'totp secrets, AES-256-GCM' };

/**
 * Secrets at rest (TOTP secrets, the text of mail waiting in the outbox): AES-256-GCM under a key
 * from the configuration (`MFA_ENCRYPTION_KEY`, hashed to 256 bits, TOTP only) or one derived
 * (HKDF-SHA-256) from the session secret for the `purpose`. The stored form is
 * `v1.<iv>.<tag>.<ciphertext>`, base64url, bound to its owner by the associated data, so a row
 * copied to another owner does not decrypt.
 */
export class SecretBox {
  readonly #key: KeyObject;

  constructor(opts: { configuredKey?: string | undefined; sessionSecret: string; purpose?: SealPurpose }) {
    const purpose = opts.purpose ?? TOTP_SECRETS;
    this.#key = secretKey(opts.configuredKey
      ? createHash('sha256').update(opts.configuredKey).digest()
      : Buffer.from(hkdfSync('sha256', opts.sessionSecret, purpose.salt, purpose.info, 32)));
  }

  seal(plain: string, owner: string): string {
    const iv = freshBytes(12);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(owner));
    const body = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final()]);
    return ['v1', iv.toString('base64url'), cipher.getAuthTag().toString('base64url'), body.toString('base64url')].join('.');
  }

  /** The plain text, or null when it does not decrypt (another key, another owner, a damaged row). */
  open(sealed: string, owner: string): string | null {
    const [version, iv, tag, body] = sealed.split('.');
    if (version !== 'v1' || !iv || !tag || body === undefined) return null;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, Buffer.from(iv, 'base64url'));
      decipher.setAAD(Buffer.from(owner));
      decipher.setAuthTag(Buffer.from(tag, 'base64url'));
      return Buffer.concat([decipher.update(Buffer.from(body, 'base64url')), decipher.final()]).toString('utf8');
    } catch {
      return null;
    }
  }
}
