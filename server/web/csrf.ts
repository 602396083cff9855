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
import { saysCrossSite } from '../http/same-origin.ts';
import { safeEqual } from '../secrets.ts';

/**
 * Where a CSRF cookie lives: `__Host-` prefixed at path `/` over https (so no other host of the
 * domain can plant one); over http, limited to `httpPath`. The account pages' and the sign-in
 * provider's pages each have one.
 */
export function csrfCookie(config: Pick<Config, 'baseUrl'>, name: string, httpPath: string): { name: string; path: string; secure: boolean } {
  return config.baseUrl.startsWith('https:') ? { name: `__Host-${name}`, path: '/', secure: true } : { name, path: httpPath, secure: false };
}

/** A new per-browser CSRF secret. */
function newCsrfSecret(): string {
  return randomBytes(24).toString('base64url');
}

/** Sets `secret` as the browser's CSRF cookie `cookie` (HttpOnly, SameSite=Strict). */
function setCsrfCookie(res: Response, cookie: ReturnType<typeof csrfCookie>, secret: string): void {
  res.cookie(cookie.name, secret, { httpOnly: true, sameSite: 'strict', secure: cookie.secure, path: cookie.path });
}

const pagesCookie = (config: Config) => csrfCookie(config, 'service.csrf', PAGES_PREFIX);

export function csrfCookieName(config: Config): string {
  return pagesCookie(config).name;
}

/** The browser's CSRF secret for the account pages: the one its cookie holds, or a new one set now. */
export function csrfTokenFor(req: Request, res: Response, config: Config): string {
  return csrfSecretOf(req, res, pagesCookie(config));
}

/** The browser's secret in CSRF cookie `cookie`: the one it holds, or a new one set now. */
export function csrfSecretOf(req: Request, res: Response, cookie: ReturnType<typeof csrfCookie>): string {
  const existing: unknown = req.cookies?.[cookie.name];
  if (typeof existing === 'string' && /^[\w-]{32}$/.test(existing)) return existing;
  const secret = newCsrfSecret();
  setCsrfCookie(res, cookie, secret);
  return secret;
}

/** checkCsrf: the form's token must equal the browser's cookie, and the POST must not be cross-site. */
export function checkCsrf(req: Request, config: Config): void {
  const cookie: unknown = req.cookies?.[csrfCookieName(config)];
  const sent: unknown = (req.body as Record<string, unknown> | undefined)?.csrf;
  if (saysCrossSite(req) || typeof cookie !== 'string' || typeof sent !== 'string' || !safeEqual(cookie, sent)) {
    throw new AppError('ForbiddenError', 'This form has expired or did not come from this site. Please go back, reload the page and try again.');
  }
}
