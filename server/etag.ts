import { createHash } from 'node:crypto';
import { statSync } from 'node:fs';
import type { Request, Response } from 'express';

/**
 * A text served again and again unchanged (the JWKS, discovery, the pages' assets, the API
 * document), kept with its headers' values, all made once with it. Express's own ETag is off
 * (`http/app.ts`): it hashed every answer's body, the personal `no-store` answers of the API
 * included, where no cache would ever ask for it.
 */
export interface KeptText {
  body: string;
  /** With its charset, as sent. */
  contentType: string;
  /** Strong: the first 27 characters of the body's SHA-256 in base64url (162 bits), quoted. */
  etag: string;
  /** The body's length in bytes. */
  length: number;
}

/** The types of the kept texts (`charset=utf-8`, as Express's `res.type` gives them); `jwks`: a JWK Set (RFC 7517 §8.5). */
const CONTENT_TYPES = { json: 'application/json', jwks: 'application/jwk-set+json', html: 'text/html', js: 'text/javascript', css: 'text/css' } as const;

export function keptText(body: string, type: keyof typeof CONTENT_TYPES): KeptText {
  return {
    body,
    contentType: `${CONTENT_TYPES[type]}; charset=utf-8`,
    etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`,
    length: Buffer.byteLength(body),
  };
}

/**
 * Sends a kept text with the headers and the 304 Express's `res.send` would give it (the ETag,
 * then a matching `If-None-Match` or `If-Modified-Since` answered with 304), without its
 * per-request work: parsing and formatting the content type, measuring and hashing the body. The
 * JWKS and discovery are the protocol's most frequent requests. `HEAD` gets the headers alone
 * (Node sends no body to it).
 */
export function sendKeptText(req: Request, res: Response, text: KeptText): void {
  res.setHeader('ETag', text.etag);
  if (req.fresh) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', text.contentType);
  res.setHeader('Content-Length', String(text.length));
  res.end(text.body);
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
