import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';

/**
 * How secrets this service makes (refresh tokens, one-time tokens, sign-in codes and access
 * tokens) are stored: their SHA-256, hex. They are random, so no salt or stretching is needed.
 */
export function hashSecret(secret: string): string {
  return createHash('sha256').update(secret).digest('hex');
}

/** A fresh random secret (256 bits), base64url. */
export function randomToken(): string {
  return randomBytes(32).toString('base64url');
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
