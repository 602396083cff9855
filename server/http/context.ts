import type { Request, Response } from 'express';
import { ACCESS_TOKEN_COOKIE, DEVICE_COOKIE, REFRESH_TOKEN_COOKIE, TRUSTED_DEVICE_COOKIE, USER_COOKIE } from '../../shared/index.ts';
import { DEVICE_COOKIE_SECONDS, withDeviceEntry } from '../accounts/device-cookies.ts';
import type { Config } from '../config.ts';
import { createContextInner, type Context, type SessionCookies } from '../context.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { Services } from '../services.ts';
import { bearerToken } from '../secrets.ts';

/** The token of the request's `Authorization: Bearer` header, if it has one. */
export function bearerOf(req: Request): string | undefined {
  return bearerToken(req.get('authorization'));
}

/** The access token and where it came from: a bearer token wins over the cookie. */
function accessTokenOf(req: Request, sessionFrom: 'any' | 'cookie'): { token?: string; viaBearer: boolean } {
  const bearer = sessionFrom === 'any' ? bearerOf(req) : undefined;
  if (bearer) return { token: bearer, viaBearer: true };
  const cookie: unknown = req.cookies?.[ACCESS_TOKEN_COOKIE];
  return { ...(typeof cookie === 'string' && cookie !== '' ? { token: cookie } : {}), viaBearer: false };
}

/**
 * The device cookie's name: `__Host-` prefixed over https, so that no other host of the domain
 * can plant one that hides the browser's own (as the pages' CSRF cookies are).
 */
export function deviceCookieName(config: Pick<Config, 'baseUrl'>): string {
  return config.baseUrl.startsWith('https:') ? `__Host-${DEVICE_COOKIE}` : DEVICE_COOKIE;
}

/** A cookie of the request, when it is a non-empty string. */
export function cookieOf(req: Request, name: string): string | undefined {
  const value: unknown = req.cookies?.[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** The longest `service.user` value set, encoded. */
export const USER_COOKIE_BYTES = 3500;

/**
 * Session cookies: HttpOnly, SameSite=Lax, Secure when the service is served over https, for
 * `COOKIE_DOMAIN` when it is set (so that a web application's own server under it reads them),
 * else for this host alone. Beside them `service.user`, readable by scripts, says who is signed
 * in (the access token's `user`: no credential) for as long as the access token lives. A sign-in
 * also adds its entry to the browser's device cookie (kept across logouts, as it remembers the
 * browser, not a session; this host's alone). A session set is also the request's own from then
 * on (`req.cookies`), so a context made after it in the same request (a page that signs in, then
 * goes on) sees the new session, and never offers the rotated refresh token again.
 */
export function httpCookies(res: Response, config: Config): SessionCookies {
  const base = { httpOnly: true, sameSite: 'lax', secure: config.baseUrl.startsWith('https:'), path: '/' } as const;
  const shared = config.cookieDomain ? { ...base, domain: config.cookieDomain } : base;
  const readable = { ...shared, httpOnly: false };
  // This host's own session cookies, from before `COOKIE_DOMAIN` was set, go whenever the
  // domain's are set or cleared: a browser would send both, the older first, and the rotated-out
  // refresh token it holds would end the session as a replayed one.
  const clearHostOnly = () => {
    res.clearCookie(ACCESS_TOKEN_COOKIE, base);
    res.clearCookie(REFRESH_TOKEN_COOKIE, base);
    res.clearCookie(USER_COOKIE, { ...base, httpOnly: false });
  };
  return {
    set(session) {
      if (config.cookieDomain) clearHostOnly();
      res.cookie(ACCESS_TOKEN_COOKIE, session.accessToken, { ...shared, maxAge: session.accessSeconds * 1000 });
      res.cookie(REFRESH_TOKEN_COOKIE, session.refreshToken, { ...shared, maxAge: session.refreshSeconds * 1000 });
      // Past what a browser keeps of a cookie (4 kB with its attributes; names in some scripts
      // take 9 bytes a letter encoded) it is not set: the web client then asks who is signed in.
      const user = encodeURIComponent(JSON.stringify(session.user));
      if (user.length <= USER_COOKIE_BYTES) res.cookie(USER_COOKIE, user, { ...readable, encode: String, maxAge: session.accessSeconds * 1000 });
      else res.clearCookie(USER_COOKIE, readable);
      if (res.req) res.req.cookies = { ...res.req.cookies, [ACCESS_TOKEN_COOKIE]: session.accessToken, [REFRESH_TOKEN_COOKIE]: session.refreshToken };
      if (session.deviceEntry) {
        const name = deviceCookieName(config);
        const current = res.req ? cookieOf(res.req, name) : undefined;
        res.cookie(name, withDeviceEntry(current, session.deviceEntry), { ...base, maxAge: DEVICE_COOKIE_SECONDS * 1000 });
      }
    },
    clear() {
      clearHostOnly();
      if (config.cookieDomain) {
        res.clearCookie(ACCESS_TOKEN_COOKIE, shared);
        res.clearCookie(REFRESH_TOKEN_COOKIE, shared);
        res.clearCookie(USER_COOKIE, readable);
      }
    },
    // Kept across logouts: it remembers the browser, not a session.
    trustDevice(cookie) {
      res.cookie(TRUSTED_DEVICE_COOKIE, cookie.token, { ...base, maxAge: cookie.seconds * 1000 });
    },
  };
}

/**
 * The context of a request arriving over HTTP, for tRPC and REST alike. `sessionFrom: 'cookie'`
 * reads the browser's session only, never a bearer header: the sign-in provider's pages sign a
 * person in to other applications, which an access token alone (perhaps a stolen one) must not.
 */
export function createHttpContext(req: Request, res: Response, services: Services, config: Config, sessionFrom: 'any' | 'cookie' = 'any'): Context {
  const access = accessTokenOf(req, sessionFrom);
  return createContextInner({
    services,
    log: () => req.log,
    requestId: String(req.id),
    credentials: {
      accessToken: access.token,
      viaBearer: access.viaBearer,
      refreshToken: cookieOf(req, REFRESH_TOKEN_COOKIE),
      trustedDevice: cookieOf(req, TRUSTED_DEVICE_COOKIE),
      device: cookieOf(req, deviceCookieName(config)),
    },
    cookies: httpCookies(res, config),
    origin: { address: clientAddress(req), userAgent: req.get('user-agent') },
  });
}

/**
 * Who is signed in by the browser's session only (both its cookies: `SessionService.browserViewer`), or
 * null: signing someone in to an application (and signing them out of it) takes their browser,
 * not an access token alone, perhaps a stolen one, in a header or a cookie.
 */
export function browserViewer(req: Request, services: Services): Promise<Viewer | null> {
  return services.sessions.browserViewer(cookieOf(req, ACCESS_TOKEN_COOKIE), cookieOf(req, REFRESH_TOKEN_COOKIE));
}

/** A string field of a form body (undefined when absent or not a string). */
export function formValue(req: Request, name: string): string | undefined {
  const value: unknown = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : undefined;
}

/** The client's address: the one `TRUST_PROXY`'s proxies name, or the connection's. */
export function clientAddress(req: Request): string {
  return req.ip ?? req.socket.remoteAddress ?? 'unknown';
}
