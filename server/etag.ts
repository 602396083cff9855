import { createHash } from 'node:crypto';

/**
 * The strong ETag of content served again and again unchanged (the JWKS, discovery, the pages'
 * assets, the API document), made once with the content: the first 27 characters of its SHA-256
 * in base64url (160 bits). Express's own ETag is off (`http/app.ts`): it hashed every answer's
 * body, the personal `no-store` answers of the API included, where no cache would ever ask for it.
 */
export function contentEtag(body: string): string {
  return `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`;
}
