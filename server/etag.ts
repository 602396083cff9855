import { createHash } from 'node:crypto';

/**
 * A text served again and again unchanged (the JWKS, discovery, the pages' assets, the API
 * document), kept with its length and its ETag, both made once with it. Express's own ETag is off
 * (`http/app.ts`): it hashed every answer's body, the personal `no-store` answers of the API
 * included, where no cache would ever ask for it.
 */
export interface KeptText {
  body: string;
  /** Strong: the first 27 characters of the body's SHA-256 in base64url (160 bits), quoted. */
  etag: string;
  /** The body's length in bytes. */
  length: number;
}

export function keptText(body: string): KeptText {
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, length: Buffer.byteLength(body) };
}
