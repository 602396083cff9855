/**
 * CORS. The route table's `cors` middleware: `protocol`, public clients call the sign-in
 * provider's endpoints from any origin (none of them reads cookies); `read-only`, any origin may
 * read the answer (the API document). And `frontendCors`, app-wide: the web application set as
 * `WEB_URL` on another origin calls every path from the browser with the person's cookies.
 */
import type { NextFunction, Request, RequestHandler, Response } from 'express';

/** How long a browser may keep a preflight's answer (Chromium keeps it two hours at most). */
const PREFLIGHT_SECONDS = '600';

/** Any origin may read the answer, unless the web application's credentialed CORS already answers its own origin. */
export function allowAnyOrigin(res: Response): void {
  if (!res.hasHeader('Access-Control-Allow-Origin')) res.setHeader('Access-Control-Allow-Origin', '*');
}

/**
 * The provider's endpoints: any origin, without credentials. What a request may send is read from
 * a preflight's answer only (Fetch, "CORS-preflight fetch"); on the request's own answer these
 * headers would mean nothing. A preflight is allowed the headers it asks for, as
 * node-oidc-provider allows them: with no cookie and no origin singled out, a header grants a
 * script nothing a client outside a browser could not send, and an application's own (a `DPoP`
 * proof, a tracing header) is not refused by a list of ours.
 */
export function protocolCors(req: Request, res: Response, next: NextFunction): void {
  allowAnyOrigin(res);
  if (req.method === 'OPTIONS') {
    const asked = req.headers['access-control-request-headers'];
    if (asked) res.setHeader('Access-Control-Allow-Headers', asked);
    res.vary('Access-Control-Request-Headers');
    res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
    res.setHeader('Access-Control-Max-Age', PREFLIGHT_SECONDS);
  }
  next();
}

export function readOnlyCors(_req: Request, res: Response, next: NextFunction): void {
  allowAnyOrigin(res);
  next();
}

/** A `preflight` route's answer: its CORS headers are set, and there is no body. */
export function answerPreflight(_req: Request, res: Response): void {
  res.status(204).end();
}

/**
 * The request headers the web application's pages may send: those of the platform's web client
 * (`lib/api-client.js`, `lib/clientAuth.js`: `X-Url`, `X-Source`, `X-Guest-Token`, the human
 * verification's `cf-turnstile-token`) and tus's, for an upload from its pages.
 */
const FRONTEND_HEADERS = [
  'Authorization',
  'Content-Type',
  'X-Url',
  'X-Source',
  'X-Guest-Token',
  'X-Requested-With',
  'cf-turnstile-token',
  'Tus-Resumable',
  'Upload-Length',
  'Upload-Defer-Length',
  'Upload-Metadata',
  'Upload-Offset',
  'Upload-Concat',
  'Upload-Checksum',
].join(', ');
const FRONTEND_METHODS = 'GET, HEAD, POST, PUT, PATCH, DELETE';

/**
 * Credentialed CORS for one origin, the web application's (`config.frontendOrigin`), on every
 * path: its requests are answered with `Access-Control-Allow-Origin` naming it and
 * `Access-Control-Allow-Credentials: true`, and its preflights (an `OPTIONS` with
 * `Access-Control-Request-Method`) with 204 and what it may send. Any other origin gets nothing
 * more than before (the provider's and tus's public `*`, or no CORS at all), and no answer ever
 * names an origin it was not configured with. Every answer varies by `Origin`, so that a cache
 * never hands the web application's answer to another origin, or the reverse.
 *
 * This lets the web application's pages read what the person's cookies give: it must be as
 * trusted as this service's own pages. Writes still pass the same-origin rule (`same-origin.ts`),
 * which accepts this origin and refuses a cross-site one: the web application belongs on the
 * same site (`example.org` for `api.example.org`), where SameSite=Lax cookies go with its calls.
 */
export function frontendCors(origin: string): RequestHandler {
  return (req, res, next) => {
    res.vary('Origin');
    if (req.headers.origin !== origin) return next();
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Access-Control-Allow-Credentials', 'true');
    if (req.method === 'OPTIONS' && req.headers['access-control-request-method'] !== undefined) {
      res.setHeader('Access-Control-Allow-Methods', FRONTEND_METHODS);
      res.setHeader('Access-Control-Allow-Headers', FRONTEND_HEADERS);
      res.setHeader('Access-Control-Max-Age', PREFLIGHT_SECONDS);
      res.status(204).end();
      return;
    }
    res.setHeader('Access-Control-Expose-Headers', 'Retry-After, X-Request-Id');
    next();
  };
}
