import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';

/**
 * A text served again and again unchanged (the JWKS, discovery, the pages' assets, the API
 * document), kept with its length and its ETag, both made once with it. Express's own ETag is off
 * (`http/app.ts`): it hashed every answer's body, the personal `no-store` answers of the API
 * included, where no cache would ever ask for it.
 */
export interface KeptText {
  body: string;
  /** Strong: the first 27 characters of the body's SHA-256 in base64url (162 bits), quoted. */
  etag: string;
  /** The body's length in bytes. */
  length: number;
}

export function keptText(body: string): KeptText {
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, length: Buffer.byteLength(body) };
}

/**
 * For a file of an installed package sent with `res.sendFile`, whose own ETag follows Express's
 * setting (off): the weak ETag `send` made of it, its size and modification time in hex, read
 * once, as the installed file does not change while the process runs. Without it, only its
 * `Last-Modified` would be checked, which an older image's file, after a rollback, passes.
 */
export function installedFileEtag(file: string): () => string {
  let etag: string | undefined;
  return () => {
    if (etag === undefined) {
      const stat = statSync(file);
      etag = `W/"${stat.size.toString(16)}-${stat.mtime.getTime().toString(16)}"`;
    }
    return etag;
  };
}
