import { createHash, randomBytes } from 'node:crypto';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import { MfaVerifyInput, parseOrThrow } from '../../shared/index.ts';
import { jsonFieldValue, passkeyFormInput } from '../web/passkey-forms.ts';
import type { IssuedSession, Viewer } from '../accounts/viewer.ts';
import type { Config } from '../config.ts';
import { consentPage, errorPage, loginPage, secondStepPage, STYLESHEET } from '../oidc/pages.ts';
import { InvalidRequest, OAuthError } from '../oidc/errors.ts';
import { humanVerificationAsked, requestIdOf, TURNSTILE_ORIGIN } from '../web/render.ts';
import type { Outcome } from '../oidc/service.ts';
import type { Services } from '../services.ts';
import { createHttpContext, httpCookies } from './context.ts';
import { requestError, withLengthCheck } from './body.ts';
import { sendError } from './send-error.ts';
import { bearerToken, hashSecret } from '../secrets.ts';
import { ACCESS_TOKEN_COOKIE } from '../../shared/index.ts';

/**
 * The cookie that binds a page's CSRF token to the browser that loaded the page. Over https it
 * is `__Host-` prefixed, as the account pages' is (`web/csrf.ts`), so that no other host of the
 * domain can plant one; such a cookie must have path `/`, so over http only it is kept to `/oidc`.
 */
function csrfCookie(config: Config): { name: string; path: string; secure: boolean } {
  const https = config.baseUrl.startsWith('https:');
  return https ? { name: '__Host-service.oidc-csrf', path: '/', secure: true } : { name: 'service.oidc-csrf', path: '/oidc', secure: false };
}

/** The largest form the provider reads: its biggest, a token request, is a few hundred bytes. */
const FORM_BYTES = 64 * 1024;
const parseForm = withLengthCheck('application/x-www-form-urlencoded', FORM_BYTES, express.urlencoded({ extended: false, limit: FORM_BYTES, parameterLimit: 50 }));

/** Why a form could not be read (too many parameters, too large, not decodable), never the parser's own words. */
function formError(error: unknown): AppError {
  return requestError(error) ?? new AppError('BadRequestError', 'The form could not be read');
}

/** A JSON document serialised once, its length and its ETag. */
export interface JsonText {
  body: string;
  etag: string;
  length?: number;
}

function jsonText(body: string): JsonText {
  return { body, etag: `"${createHash('sha256').update(body).digest('base64url').slice(0, 27)}"`, length: Buffer.byteLength(body) };
}

/**
 * Sends a JSON document serialised once, with the headers and the 304 Express's `res.send`
 * would give it, without its per-request work (parsing and formatting the content type,
 * measuring the body): the JWKS and discovery are the protocol's most frequent requests.
 */
function sendJsonText(req: Request, res: Response, text: JsonText): void {
  res.setHeader('ETag', text.etag);
  if (req.fresh) {
    res.statusCode = 304;
    res.end();
    return;
  }
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('Content-Length', String(text.length ?? Buffer.byteLength(text.body)));
  res.end(text.body);
}

function sendOAuthError(res: Response, error: unknown): void {
  if (error instanceof OAuthError) {
    res.status(error.status).json({ error: error.error, error_description: error.description });
    return;
  }
  sendError(res, error);
}

/** The form of a protocol endpoint (token, userinfo, revocation): one it cannot read is OAuth's `invalid_request`. */
export function oauthForm(req: Request, res: Response, next: NextFunction): void {
  parseForm(req, res, (error?: unknown) => {
    if (error) sendOAuthError(res, new InvalidRequest(formError(error).message));
    else next();
  });
}

/**
 * A page: its own CSP, so a form may send the person on to the client's redirect URI; `widget`:
 * it shows the human-verification widget, whose script and frame come from Turnstile.
 */
function page(res: Response, status: number, html: string, formTargets: string[] = [], widget = false): void {
  const origins = formTargets.map((uri) => new URL(uri).origin);
  const turnstile = widget ? `; script-src 'self' ${TURNSTILE_ORIGIN}; frame-src ${TURNSTILE_ORIGIN}` : '';
  res
    .status(status)
    .setHeader(
      'Content-Security-Policy',
      `default-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self' ${origins.join(' ')}; frame-ancestors 'none'; base-uri 'none'${turnstile}`,
    )
    .setHeader('Cache-Control', 'no-store')
    .type('html')
    .send(html);
}

/** The form of a page (authorize by POST, login, consent): one it cannot read is an error page. */
export function pageForm(req: Request, res: Response, next: NextFunction): void {
  parseForm(req, res, (error?: unknown) => {
    if (!error) return next();
    const refused = formError(error);
    page(res, refused.status, errorPage(refused.message, requestIdOf(req)));
  });
}

/**
 * The handlers of the OpenID Connect endpoints (`oauth` routes), the login and consent pages
 * and their stylesheet (`page` routes). The protocol rules live in `OidcService`; this file only
 * moves them on and off the wire. The route table (`routes.ts`) names them.
 */
export function oidcHandlers(services: Services, config: Config) {
  const oidc = services.oidc;
  // The browser's session only: signing someone in to an application takes their browser, not
  // an access token alone.
  const viewerOf = (req: Request, res: Response): Promise<Viewer | null> => createHttpContext(req, res, services, config, 'cookie').viewerIfValid();
  /**
   * The same, for the authorization endpoint, where a person with a session and a consent is
   * sent straight back with a code: the check of that session is kept for up to a second
   * (`OidcService.sessions`), so signing in to applications one after the other does not check
   * it against the database each time. A session that fails the check is checked again.
   */
  const keptViewerOf = (req: Request, res: Response): Promise<Viewer | null> => {
    const token: unknown = req.cookies?.[ACCESS_TOKEN_COOKIE];
    if (typeof token !== 'string' || token === '') return viewerOf(req, res);
    return oidc.sessions.get(hashSecret(token), async () => {
      const viewer = await viewerOf(req, res);
      return { value: viewer, until: viewer ? viewer.accessExpiresAt * 1000 : 0 };
    });
  };

  const answer = (req: Request, res: Response, outcome: Outcome) => {
    if ('redirect' in outcome) res.redirect(303, outcome.redirect);
    else page(res, outcome.status, errorPage(outcome.page, requestIdOf(req)));
  };
  const csrf = csrfCookie(config);
  /** A fresh browser secret in a cookie, and the form token bound to it and the interaction. */
  const csrfFor = (res: Response, interactionId: string) => {
    const secret = randomBytes(24).toString('base64url');
    res.cookie(csrf.name, secret, { httpOnly: true, sameSite: 'strict', secure: csrf.secure, path: csrf.path });
    return oidc.csrfToken(secret, interactionId);
  };
  const field = (req: Request, name: string): string | undefined => {
    const value: unknown = (req.body as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'string' ? value : undefined;
  };
  /** A protocol error is an error page; on the login and consent pages (`onPage`), so is any refusal. */
  const safely = (handler: (req: Request, res: Response) => Promise<void>, onPage = false) => (req: Request, res: Response) => {
    handler(req, res).catch((error: unknown) => {
      if (error instanceof OAuthError) page(res, 400, errorPage(error.message, requestIdOf(req)));
      else if (error instanceof AppError && onPage) page(res, error.status, errorPage(error.message, requestIdOf(req)));
      else sendError(res, error);
    });
  };

  const stylesheet: RequestHandler = (_req, res) => {
    res.type('css').setHeader('Cache-Control', 'public, max-age=3600').send(STYLESHEET);
  };

  // Discovery never changes while the process runs, and the key set at most once per rotation:
  // both are sent as text serialised once, with their own ETag, by `sendJsonText` (neither
  // re-serialised nor hashed per request; a matching If-None-Match is answered with 304).
  const discoveryText = jsonText(JSON.stringify(oidc.discovery()));
  const discovery: RequestHandler = (req, res) => {
    sendJsonText(req, res, discoveryText);
  };
  // Cached no longer than a rotated key waits before it signs.
  const jwksCacheControl = `public, max-age=${Math.min(300, config.oidcKeyActivationSeconds)}`;
  const jwks: RequestHandler = (req, res) => {
    res.setHeader('Cache-Control', jwksCacheControl);
    // The key set as read within the last second, without waiting; otherwise it is read first.
    const ready = oidc.keys.jwksBodyNow();
    if (ready) return sendJsonText(req, res, ready);
    return oidc.keys.jwksBody().then((read) => sendJsonText(req, res, read));
  };

  const authorize = safely(async (req, res) => {
    const params = req.method === 'POST' ? (req.body as Record<string, unknown>) : (req.query as Record<string, unknown>);
    answer(req, res, await oidc.authorize(params ?? {}, await keptViewerOf(req, res)));
  });

  // ---- the login page ----------------------------------------------------------------------------
  const loginForm = safely(async (req, res) => {
    const id = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
    const { interaction, client } = await oidc.interaction(id);
    const csrf = csrfFor(res, interaction.id);
    // Signing in may send the browser straight on to the client (consent given before).
    page(res, 200, loginPage({ interactionId: interaction.id, csrf, clientName: client.name, resetUrl: `${config.webUrl}/reset`, requestId: requestIdOf(req) }), [
      interaction.params.redirectUri,
    ]);
  }, true);
  const login = safely(async (req, res) => {
    const id = field(req, 'interaction') ?? '';
    const { interaction, client } = await oidc.interaction(id);
    oidc.checkCsrf(req.cookies?.[csrf.name] as string | undefined, interaction.id, field(req, 'csrf'));
    const context = createHttpContext(req, res, services, config);
    const cookies = httpCookies(res, config);
    const targets = [interaction.params.redirectUri];
    /** Signed in (after the password, and the second step when one is on): on to consent or the client. */
    const signedIn = async (session: IssuedSession) => {
      cookies.set(session);
      const viewer = await services.sessions.authenticate(session.accessToken);
      const outcome = await oidc.afterLogin(interaction.id, viewer);
      if ('redirect' in outcome) res.redirect(303, outcome.redirect);
      else page(res, outcome.status, errorPage(outcome.page, requestIdOf(req)));
    };
    const loginAgain = (error: AppError, email = '') => {
      // The account's attempts ran out for this browser: the form asks for human verification too.
      const verify = humanVerificationAsked(error);
      const verification = verify ? { verification: config.humanVerification ? ('remote' as const) : ('development' as const), siteKey: config.humanVerificationSiteKey } : {};
      const html = loginPage({ interactionId: interaction.id, csrf: csrfFor(res, interaction.id), clientName: client.name, resetUrl: `${config.webUrl}/reset`, requestId: requestIdOf(req), error: error.message, email, ...verification });
      page(res, error.status, html, targets, verify && config.humanVerification !== undefined && config.humanVerificationSiteKey !== undefined);
    };
    const secondStep = (pending: { token: string; methods: string[]; method: string }, status = 200, message: { error?: string; notice?: string } = {}) => {
      const html = secondStepPage({ interactionId: interaction.id, csrf: csrfFor(res, interaction.id), clientName: client.name, mfaPendingToken: pending.token, methods: pending.methods, method: pending.method, requestId: requestIdOf(req), ...message });
      page(res, status, html, targets);
    };

    // The second step: a code (or "send a code by email") for the sign-in whose password was right.
    const mfaPendingToken = field(req, 'mfaPendingToken');
    if (mfaPendingToken !== undefined) {
      const method = field(req, 'method') ?? 'totp';
      // No methods: the sign-in expired or was completed.
      const pending = { token: mfaPendingToken, methods: await services.signIn.pendingMethods(mfaPendingToken), method };
      try {
        if (field(req, 'step') === 'send-email') {
          await services.signIn.challenge({ mfaPendingToken, method: 'emailOtp' }, context.origin, context.credentials.device);
          secondStep({ ...pending, method: 'emailOtp' }, 200, { notice: 'A code was sent to your email. It is valid for 10 minutes.' });
          return;
        }
        // A passkey's assertion comes as JSON text in `code` (`/webauthn/passkey.js`).
        const code = method === 'passkey' ? jsonFieldValue(field(req, 'code')) : (field(req, 'code') ?? '');
        const input = parseOrThrow(MfaVerifyInput, { mfaPendingToken, method, code, rememberDevice: field(req, 'rememberDevice') === 'on' });
        const outcome = await services.signIn.verify(input, context.origin, context.credentials.device);
        if (outcome.trustedDevice) cookies.trustDevice?.(outcome.trustedDevice);
        await signedIn(outcome.session);
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        // A sign-in that expired or was completed starts again from the password.
        if (pending.methods.length === 0) loginAgain(error);
        else secondStep(pending, error.status, { error: error.message });
      }
      return;
    }

    const email = field(req, 'email') ?? '';
    try {
      const outcome = await services.signIn.login({ id: email, password: field(req, 'password') ?? '', token: field(req, 'token') || undefined }, context.origin, context.credentials);
      if ('pending' in outcome) {
        const { mfaPendingToken: token, mfaMethods, preferredMethod } = outcome.pending;
        secondStep({ token, methods: mfaMethods, method: preferredMethod === 'passkey' ? (mfaMethods.find((m) => m !== 'passkey') ?? 'recovery') : preferredMethod });
        return;
      }
      await signedIn(outcome.session);
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      loginAgain(error, email);
    }
  }, true);

  // ---- the login page's passkey sign-in (no password; `/webauthn/passkey.js` posts this form) ------
  const loginPasskey = safely(async (req, res) => {
    const id = field(req, 'interaction') ?? '';
    const { interaction, client } = await oidc.interaction(id);
    oidc.checkCsrf(req.cookies?.[csrf.name] as string | undefined, interaction.id, field(req, 'csrf'));
    try {
      const input = passkeyFormInput(field(req, 'challengeId'), field(req, 'response'));
      const { session } = await services.passkeySignIn.signIn(input, createHttpContext(req, res, services, config).origin);
      httpCookies(res, config).set(session);
      const viewer = await services.sessions.authenticate(session.accessToken);
      const outcome = await oidc.afterLogin(interaction.id, viewer);
      if ('redirect' in outcome) res.redirect(303, outcome.redirect);
      else page(res, outcome.status, errorPage(outcome.page, requestIdOf(req)));
    } catch (error) {
      if (!(error instanceof AppError)) throw error;
      const csrf = csrfFor(res, interaction.id);
      const html = loginPage({ interactionId: interaction.id, csrf, clientName: client.name, resetUrl: `${config.webUrl}/reset`, requestId: requestIdOf(req), error: error.message });
      page(res, error.status, html, [interaction.params.redirectUri]);
    }
  }, true);

  // ---- the consent page --------------------------------------------------------------------------
  const consentForm = safely(async (req, res) => {
    const id = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
    const { interaction, client } = await oidc.interaction(id);
    const viewer = await viewerOf(req, res);
    // No session, or one that does not satisfy prompt=login or max_age: sign in first.
    if (!viewer || viewer.impersonator || oidc.needsLogin(interaction, viewer)) {
      res.redirect(303, oidc.loginPageUrl(interaction.id));
      return;
    }
    const profile = await services.profiles.simplifiedById(viewer.profileId);
    const csrf = csrfFor(res, interaction.id);
    page(res, 200, consentPage({ interactionId: interaction.id, csrf, clientName: client.name, scopes: interaction.params.scopes, userName: profile.fullname }), [
      interaction.params.redirectUri,
    ]);
  }, true);
  const consent = safely(async (req, res) => {
    const id = field(req, 'interaction') ?? '';
    const { interaction } = await oidc.interaction(id);
    oidc.checkCsrf(req.cookies?.[csrf.name] as string | undefined, interaction.id, field(req, 'csrf'));
    const outcome = await oidc.consent(interaction.id, await viewerOf(req, res), field(req, 'decision') === 'allow');
    res.redirect(303, outcome.redirect);
  }, true);

  // ---- token, userinfo, revocation ---------------------------------------------------------------
  const token: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    try {
      if (!req.is('application/x-www-form-urlencoded')) throw new InvalidRequest('The body must be application/x-www-form-urlencoded');
      res.json(await oidc.token(req.body as Record<string, unknown>));
    } catch (error) {
      sendOAuthError(res, error);
    }
  };

  const userinfo = async (req: Request, res: Response) => {
    const header = bearerToken(req.get('authorization'));
    const fromBody = req.method === 'POST' && req.is('application/x-www-form-urlencoded') ? field(req, 'access_token') : undefined;
    const realm = `Bearer realm="${oidc.issuer}"`;
    if (header && fromBody) {
      sendOAuthError(res, new InvalidRequest('Send the access token in one place only'));
      return;
    }
    const token = header ?? fromBody;
    if (!token) {
      // RFC 6750: no credentials, no error code.
      res.setHeader('WWW-Authenticate', realm);
      res.status(401).end();
      return;
    }
    try {
      res.setHeader('Cache-Control', 'no-store');
      res.json(await oidc.userinfo(token));
    } catch (error) {
      if (error instanceof OAuthError) res.setHeader('WWW-Authenticate', `${realm}, error="${error.error}", error_description="${error.description}"`);
      sendOAuthError(res, error);
    }
  };
  const revoke: RequestHandler = async (req, res) => {
    try {
      await oidc.revoke((req.body as Record<string, unknown> | undefined) ?? {});
    } catch (error) {
      req.log.error({ err: error }, 'revocation failed');
    }
    // RFC 7009: the answer is 200 whether or not the token existed.
    res.status(200).end();
  };

  return { stylesheet, discovery, jwks, authorize, loginForm, login, loginPasskey, consentForm, consent, token, userinfo, revoke } satisfies Record<string, RequestHandler>;
}

export type OidcHandlers = ReturnType<typeof oidcHandlers>;
