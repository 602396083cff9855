import type { NextFunction, Request, Response } from 'express';
import { ACCESS_TOKEN_COOKIE, REFRESH_TOKEN_COOKIE } from '../../shared/index.ts';
import { AppError } from '../../shared/errors.ts';
import { bearerOf } from './context.ts';
import { sendError, sendsBody } from './send-error.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * refuseMethodOverride: `X-HTTP-Method-Override` and its kin are refused outright, on every
 * request, so a form POST can never become a PUT or a DELETE.
 */
/**
 * Whether the browser says the request comes from another site (`Sec-Fetch-Site: cross-site`,
 * Fetch Metadata): whatever it carries, a write of ours it is not. No header (an older browser,
 * a script) says nothing.
 */
export function saysCrossSite(req: Request): boolean {
  return req.get('sec-fetch-site') === 'cross-site';
}

export function refuseMethodOverride(req: Request, res: Response, next: NextFunction): void {
  if (req.get('x-http-method-override') || req.get('x-http-method') || req.get('x-method-override')) {
    sendError(res, new AppError('BadRequestError', 'Method override headers are not accepted'));
    return;
  }
  next();
}

/**
 * refuseCrossSiteWrites: a write that a browser authenticates with our cookies must come from
 * our own pages. Refused: `Sec-Fetch-Site: cross-site`, an `Origin` other than the service's
 * or the web application's, and a body that is neither JSON nor multipart (the only kinds our
 * clients send, and ones a plain HTML form on another site cannot). Requests with a bearer
 * token carry no ambient credential and are not affected.
 *
 * Every route has it but those whose entry says `sameOrigin: false`: the sign-in provider's
 * form endpoints, which other sites post to by design, and whose pages carry CSRF tokens bound
 * to the browser.
 */
export function refuseCrossSiteWrites(
  allowedOrigins: readonly string[],
  body: { types: readonly string[]; words: string } = { types: ['application/json', 'multipart/form-data'], words: 'JSON (or multipart for uploads)' },
) {
  const allowed = new Set(allowedOrigins.map((o) => new URL(o).origin));
  return (req: Request, res: Response, next: NextFunction): void => {
    if (SAFE_METHODS.has(req.method)) return next();
    const cookies = req.cookies as Record<string, unknown> | undefined;
    const byCookie = Boolean(cookies?.[ACCESS_TOKEN_COOKIE] || cookies?.[REFRESH_TOKEN_COOKIE]) && !bearerOf(req);
    if (!byCookie) return next();
    const origin = req.get('origin');
    if (saysCrossSite(req) || (origin !== undefined && !allowed.has(origin))) {
      sendError(res, new AppError('ForbiddenError', 'Cross-site requests cannot use your session'));
      return;
    }
    if (sendsBody(req) !== false && !req.is([...body.types])) {
      sendError(res, new AppError('BadRequestError', `The body must be ${body.words}`));
      return;
    }
    next();
  };
}
