import type { Logger } from 'pino';
import { AppError } from '../shared/errors.ts';
import type { BrowserCookies, IssuedSession, RequestOrigin, Viewer } from './accounts/viewer.ts';
import type { Services } from './services.ts';

/** How a procedure sets or clears the session cookies, whatever transport it runs under. */
export interface SessionCookies {
  set(session: IssuedSession): void;
  clear(): void;
  /** Remembers this browser for multi-factor sign-in (`service.mfaTrustedDevice`); a transport without cookies ignores it. */
  trustDevice?(cookie: { token: string; seconds: number }): void;
}

export interface Credentials extends BrowserCookies {
  /** From the cookie `service.accessToken` or an `Authorization: Bearer` header. */
  accessToken?: string | undefined;
  /** From the cookie `service.refreshToken`. */
  refreshToken?: string | undefined;
  /** Whether the access token came from an `Authorization: Bearer` header rather than the cookie. */
  viaBearer?: boolean;
}

export interface Context {
  services: Services;
  /**
   * The request's logger, made when first asked for: only failures log from a procedure, and
   * making a request's logger (a pino child) for every request was a measurable part of a small
   * request's cost (`npm run bench`).
   */
  log(): Logger;
  /** The request's id (also in its log line and `X-Request-Id`), for the Error body's `details.reqId`. */
  requestId?: string | undefined;
  credentials: Credentials;
  cookies: SessionCookies;
  /** Where the request comes from (the client address), for rate limits. */
  origin: RequestOrigin;
  /** The signed-in caller; rejects with 401 when there is no valid session. Resolved once. */
  viewer(): Promise<Viewer>;
  /**
   * The signed-in caller, or null when the request carries no session. A session token that
   * is presented but expired or ended is a 401, not a guest: the answer depends on who asks,
   * and the client should refresh rather than be shown less.
   */
  optionalViewer(): Promise<Viewer | null>;
  /** The caller when the request carries a valid session, null otherwise (logout, sign-in pages). */
  viewerIfValid(): Promise<Viewer | null>;
}

/** Builds a context from its parts; used by the HTTP adapters and directly by tests. */
export function createContextInner(opts: {
  services: Services;
  log: () => Logger;
  credentials?: Credentials;
  cookies?: SessionCookies;
  origin?: RequestOrigin;
  requestId?: string;
}): Context {
  const credentials = opts.credentials ?? {};
  let resolved: Promise<Viewer> | undefined;
  const viewer = (): Promise<Viewer> => {
    resolved ??= credentials.accessToken
      ? opts.services.sessions.authenticate(credentials.accessToken)
      : Promise.reject(new AppError('UnauthorizedError', 'You must be logged in to do this.'));
    return resolved;
  };
  return {
    services: opts.services,
    log: opts.log,
    requestId: opts.requestId,
    credentials,
    cookies: opts.cookies ?? { set() {}, clear() {} },
    origin: opts.origin ?? { address: 'local' },
    viewer,
    optionalViewer: () => (credentials.accessToken ? viewer() : Promise.resolve(null)),
    viewerIfValid: () => viewer().catch(() => null),
  };
}
