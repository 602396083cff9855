import type { NextFunction, Request, Response } from 'express';
import { ACCESS_TOKEN_COOKIE, REFRESH_TOKEN_COOKIE } from '../../shared/index.ts';
import { AppError } from '../../shared/errors.ts';
import { bearerOf } from './context.ts';
import { sendError } from './send-error.ts';

const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);

/**
 * refuseCrossSiteWrites: a write that a browser authenticates with our cookies must come from
 * our own pages. Refused: `Sec-Fetch-Site: cross-site`, an `Origin` other than the service's
 * or the web application's, and a body that is neither JSON nor multipart (the only kinds our
 * clients send, and ones a plain HTML form on another site cannot). Requests with a bearer
 * token carry no ambient credential and are not affected.
 *
 * The sign-in provider's form endpoints (`formPaths`) are exempt: other sites post to them by
 * design, and the login and consent pages carry CSRF tokens of their own.
 *
 * refuseMethodOverride: `X-HTTP-Method-Override` and its kin are refused outright, so a form
 * POST can never become a PUT or a DELETE.
 */
export function sameOriginWrites(allowedOrigins: readonly string[], formPaths: readonly string[] = []) {
  const allowed = new Set(allowedOrigins.map((o) => new URL(o).origin));
  return (req: Request, res: Response, next: NextFunction): void => {
    if (req.get('x-http-method-override') || req.get('x-http-method') || req.get('x-method-override')) {
      sendError(res, new AppError('BadRequestError', 'Method override headers are not accepted'));
      return;
    }
    // The sign-in provider's form endpoints are posted to by other sites by design, and its
    // pages carry CSRF tokens bound to the browser.
    if (SAFE_METHODS.has(req.method) || formPaths.includes(req.path)) return next();
    const cookies = req.cookies as Record<string, unknown> | undefined;
    const byCookie = Boolean(cookies?.[ACCESS_TOKEN_COOKIE] || cookies?.[REFRESH_TOKEN_COOKIE]) && !bearerOf(req);
    if (!byCookie) return next();
    const origin = req.get('origin');
    if (req.get('sec-fetch-site') === 'cross-site' || (origin !== undefined && !allowed.has(origin))) {
      sendError(res, new AppError('ForbiddenError', 'Cross-site requests cannot use your session'));
      return;
    }
    const hasBody = Number(req.get('content-length') ?? 0) > 0 || req.get('transfer-encoding') !== undefined;
    if (hasBody && !req.is(['application/json', 'multipart/form-data'])) {
      sendError(res, new AppError('BadRequestError', 'The body must be JSON (or multipart for uploads)'));
      return;
    }
    next();
  };
}
