/**
 * CSRF protection of the pages' forms: a per-browser secret in an HttpOnly, SameSite=Strict
 * cookie bound to the pages' path, and every form carrying it back in a hidden field
 * (the double-submit pattern, compared in constant time). A page from another site can neither
 * read the cookie nor make the browser send it (SameSite=Strict), and a POST that a browser
 * marks as cross-site is refused before the comparison. Over https the cookie is `__Host-`
 * prefixed, so that no other host of the domain can plant one.
 */
import { randomBytes } from 'node:crypto';
import type { Request, Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import { PAGES_PREFIX, type Config } from '../config.ts';
import { safeEqual } from '../secrets.ts';

export function csrfCookieName(config: Config): string {
  return config.baseUrl.startsWith('https:') ? '__Host-service.csrf' : 'service.csrf';
}

/** The browser's CSRF secret: the one its cookie holds, or a new one set now. */
export function csrfTokenFor(req: Request, res: Response, config: Config): string {
  const name = csrfCookieName(config);
  const existing: unknown = req.cookies?.[name];
  if (typeof existing === 'string' && /^[\w-]{32}$/.test(existing)) return existing;
  const secret = randomBytes(24).toString('base64url');
  const https = config.baseUrl.startsWith('https:');
  // `__Host-` cookies must have path `/`; over http the cookie is limited to the pages.
  res.cookie(name, secret, { httpOnly: true, sameSite: 'strict', secure: https, path: https ? '/' : PAGES_PREFIX });
  return secret;
}

/** checkCsrf: the form's token must equal the browser's cookie, and the POST must not be cross-site. */
export function checkCsrf(req: Request, config: Config): void {
  const cookie: unknown = req.cookies?.[csrfCookieName(config)];
  const sent: unknown = (req.body as Record<string, unknown> | undefined)?.csrf;
  if (req.get('sec-fetch-site') === 'cross-site' || typeof cookie !== 'string' || typeof sent !== 'string' || !safeEqual(cookie, sent)) {
    throw new AppError('ForbiddenError', 'This form has expired or did not come from this site. Please go back, reload the page and try again.');
  }
}
