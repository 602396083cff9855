import { randomBytes } from 'node:crypto';
import express, { Router, type NextFunction, type Request, type Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import type { Viewer } from '../accounts/service.ts';
import type { Config } from '../config.ts';
import { consentPage, errorPage, loginPage, STYLESHEET } from '../oidc/pages.ts';
import { InvalidRequest, OAuthError } from '../oidc/errors.ts';
import type { Outcome } from '../oidc/service.ts';
import type { Services } from '../services.ts';
import { createHttpContext, httpCookies } from './context.ts';
import { requestError, withLengthCheck } from './body.ts';
import { sendError } from './send-error.ts';
import { bearerToken } from '../secrets.ts';

/** The provider's form-posted endpoints and pages: they carry their own protection (PKCE, CSRF tokens). */
export const OIDC_FORM_PATHS = ['/oidc/authorize', '/oidc/token', '/oidc/userinfo', '/oidc/revoke', '/oidc/login', '/oidc/consent'];

/** Whether a request goes to one of those, as Express matches it (any letter case, a trailing slash). */
export function isOidcFormPath(path: string): boolean {
  return OIDC_FORM_PATHS.includes(path.toLowerCase().replace(/(.)\/$/, '$1'));
}

/** The cookie that binds a page's CSRF token to the browser that loaded the page. */
const CSRF_COOKIE = 'service.oidc-csrf';

/** The largest form the provider reads: its biggest, a token request, is a few hundred bytes. */
const FORM_BYTES = 64 * 1024;
const parseForm = withLengthCheck('application/x-www-form-urlencoded', FORM_BYTES, express.urlencoded({ extended: false, limit: FORM_BYTES, parameterLimit: 50 }));

/** Why a form could not be read (too many parameters, too large, not decodable), never the parser's own words. */
function formError(error: unknown): AppError {
  return requestError(error) ?? new AppError('BadRequestError', 'The form could not be read');
}

/** Public clients call these from any origin; none of them reads cookies. */
function openToAnyOrigin(req: Request, res: Response, next: NextFunction): void {
  res.setHeader('Access-Control-Allow-Origin', '*');
  res.setHeader('Access-Control-Allow-Headers', 'Authorization, Content-Type');
  res.setHeader('Access-Control-Allow-Methods', 'GET, POST, OPTIONS');
  if (req.method === 'OPTIONS') {
    res.status(204).end();
    return;
  }
  next();
}

function sendOAuthError(res: Response, error: unknown): void {
  if (error instanceof OAuthError) {
    res.status(error.status).json({ error: error.error, error_description: error.description });
    return;
  }
  sendError(res, error);
}

/** The form of a protocol endpoint (token, userinfo, revocation): one it cannot read is OAuth's `invalid_request`. */
function oauthForm(req: Request, res: Response, next: NextFunction): void {
  parseForm(req, res, (error?: unknown) => {
    if (error) sendOAuthError(res, new InvalidRequest(formError(error).message));
    else next();
  });
}

/**
 * The OpenID Connect endpoints, the login and consent pages, and their stylesheet. The protocol
 * rules live in `OidcService`; this file only moves them on and off the wire.
 */
export function oidcRoutes(services: Services, config: Config): Router {
  const router = Router();
  const oidc = services.oidc;
  const viewerOf = (req: Request, res: Response): Promise<Viewer | null> => createHttpContext(req, res, services, config).viewerIfValid();

  /** A page: its own CSP, so a form may send the person on to the client's redirect URI. */
  const page = (res: Response, status: number, html: string, formTargets: string[] = []) => {
    const origins = formTargets.map((uri) => new URL(uri).origin);
    res
      .status(status)
      .setHeader(
        'Content-Security-Policy',
        `default-src 'self'; style-src 'self'; img-src 'self' data:; form-action 'self' ${origins.join(' ')}; frame-ancestors 'none'; base-uri 'none'`,
      )
      .setHeader('Cache-Control', 'no-store')
      .type('html')
      .send(html);
  };
  const answer = (res: Response, outcome: Outcome) => {
    if ('redirect' in outcome) res.redirect(303, outcome.redirect);
    else page(res, outcome.status, errorPage(outcome.page));
  };
  /** A fresh browser secret in a cookie, and the form token bound to it and the interaction. */
  const csrfFor = (res: Response, interactionId: string) => {
    const secret = randomBytes(24).toString('base64url');
    res.cookie(CSRF_COOKIE, secret, { httpOnly: true, sameSite: 'strict', secure: config.baseUrl.startsWith('https:'), path: '/oidc' });
    return oidc.csrfToken(secret, interactionId);
  };
  const field = (req: Request, name: string): string | undefined => {
    const value: unknown = (req.body as Record<string, unknown> | undefined)?.[name];
    return typeof value === 'string' ? value : undefined;
  };
  /** The form of a page (authorize by POST, login, consent): one it cannot read is an error page. */
  const pageForm = (req: Request, res: Response, next: NextFunction) => {
    parseForm(req, res, (error?: unknown) => {
      if (!error) return next();
      const refused = formError(error);
      page(res, refused.status, errorPage(refused.message));
    });
  };
  const safely = (handler: (req: Request, res: Response) => Promise<void>) => (req: Request, res: Response) => {
    handler(req, res).catch((error: unknown) => {
      if (error instanceof OAuthError) page(res, 400, errorPage(error.message));
      else if (error instanceof AppError && (req.path === '/oidc/login' || req.path === '/oidc/consent')) page(res, error.status, errorPage(error.message));
      else sendError(res, error);
    });
  };

  router.get('/oidc/pages.css', (_req, res) => {
    res.type('css').setHeader('Cache-Control', 'public, max-age=3600').send(STYLESHEET);
  });

  router.get('/.well-known/openid-configuration', openToAnyOrigin, (_req, res) => {
    res.json(oidc.discovery());
  });
  router.get('/oidc/jwks', openToAnyOrigin, async (_req, res) => {
    // Cached no longer than a rotated key waits before it signs.
    res.setHeader('Cache-Control', `public, max-age=${Math.min(300, config.oidcKeyActivationSeconds)}`);
    res.json(await oidc.keys.jwks());
  });

  const authorize = safely(async (req, res) => {
    const params = req.method === 'POST' ? (req.body as Record<string, unknown>) : (req.query as Record<string, unknown>);
    answer(res, await oidc.authorize(params ?? {}, await viewerOf(req, res)));
  });
  router.get('/oidc/authorize', authorize);
  router.post('/oidc/authorize', pageForm, authorize);

  // ---- the login page ----------------------------------------------------------------------------
  router.get(
    '/oidc/login',
    safely(async (req, res) => {
      const id = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
      const { interaction, client } = await oidc.interaction(id);
      const csrf = csrfFor(res, interaction.id);
      // Signing in may send the browser straight on to the client (consent given before).
      page(res, 200, loginPage({ interactionId: interaction.id, csrf, clientName: client.name, resetUrl: `${config.webUrl}/reset` }), [
        interaction.params.redirectUri,
      ]);
    }),
  );
  router.post(
    '/oidc/login',
    pageForm,
    safely(async (req, res) => {
      const id = field(req, 'interaction') ?? '';
      const { interaction, client } = await oidc.interaction(id);
      oidc.checkCsrf(req.cookies?.[CSRF_COOKIE] as string | undefined, interaction.id, field(req, 'csrf'));
      const email = field(req, 'email') ?? '';
      try {
        const session = await services.accounts.login({ id: email, password: field(req, 'password') ?? '' }, createHttpContext(req, res, services, config).origin);
        httpCookies(res, config).set(session);
        const viewer = await services.accounts.authenticate(session.accessToken);
        const outcome = await oidc.afterLogin(interaction.id, viewer);
        if ('redirect' in outcome) res.redirect(303, outcome.redirect);
        else page(res, outcome.status, errorPage(outcome.page));
      } catch (error) {
        if (!(error instanceof AppError)) throw error;
        const csrf = csrfFor(res, interaction.id);
        const html = loginPage({ interactionId: interaction.id, csrf, clientName: client.name, resetUrl: `${config.webUrl}/reset`, error: error.message, email });
        page(res, error.status, html, [interaction.params.redirectUri]);
      }
    }),
  );

  // ---- the consent page --------------------------------------------------------------------------
  router.get(
    '/oidc/consent',
    safely(async (req, res) => {
      const id = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
      const { interaction, client } = await oidc.interaction(id);
      const viewer = await viewerOf(req, res);
      // No session, or one that does not satisfy prompt=login or max_age: sign in first.
      if (!viewer || viewer.impersonator || oidc.needsLogin(interaction, viewer)) {
        res.redirect(303, oidc.loginPageUrl(interaction.id));
        return;
      }
      const profile = await services.accounts.simplifiedById(viewer.profileId);
      const csrf = csrfFor(res, interaction.id);
      page(res, 200, consentPage({ interactionId: interaction.id, csrf, clientName: client.name, scopes: interaction.params.scopes, userName: profile.fullname }), [
        interaction.params.redirectUri,
      ]);
    }),
  );
  router.post(
    '/oidc/consent',
    pageForm,
    safely(async (req, res) => {
      const id = field(req, 'interaction') ?? '';
      const { interaction } = await oidc.interaction(id);
      oidc.checkCsrf(req.cookies?.[CSRF_COOKIE] as string | undefined, interaction.id, field(req, 'csrf'));
      const outcome = await oidc.consent(interaction.id, await viewerOf(req, res), field(req, 'decision') === 'allow');
      res.redirect(303, outcome.redirect);
    }),
  );

  // ---- token, userinfo, revocation ---------------------------------------------------------------
  router.options(['/oidc/token', '/oidc/userinfo', '/oidc/revoke'], openToAnyOrigin);
  router.post('/oidc/token', openToAnyOrigin, oauthForm, async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    try {
      if (!req.is('application/x-www-form-urlencoded')) throw new InvalidRequest('The body must be application/x-www-form-urlencoded');
      res.json(await oidc.token(req.body as Record<string, unknown>));
    } catch (error) {
      sendOAuthError(res, error);
    }
  });

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
  router.get('/oidc/userinfo', openToAnyOrigin, userinfo);
  router.post('/oidc/userinfo', openToAnyOrigin, oauthForm, userinfo);

  router.post('/oidc/revoke', openToAnyOrigin, oauthForm, async (req, res) => {
    try {
      await oidc.revoke((req.body as Record<string, unknown> | undefined) ?? {});
    } catch (error) {
      req.log.error({ err: error }, 'revocation failed');
    }
    // RFC 7009: the answer is 200 whether or not the token existed.
    res.status(200).end();
  });

  return router;
}
