/**
 * The sign-in provider's adapter: its protocol endpoints (discovery, keys, authorization, token,
 * device authorization, userinfo, introspection, revocation, registration), the form and JSON readers the route table
 * puts before them, and the stylesheet of its pages. The pages a person fills in (login, second
 * step, consent, sign-out) are `server/web/pages/provider/`.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import type { Viewer } from '../accounts/viewer.ts';
import { PAGES_PREFIX, type Config } from '../config.ts';
import { errorPage } from '../web/pages/provider/views.ts';
import { ASSETS, serveUnhashed } from '../web/assets.ts';
import { InsufficientScope, InvalidClient, InvalidClientMetadata, InvalidRequest, InvalidToken, OAuthError, TooManyDeviceRequests } from '../oidc/errors.ts';
import type { RegistrationAnswer } from '../oidc/registration.ts';
import { requestIdOf } from '../web/render.ts';
import { providerPage, sendOutcome, sendProviderPage } from '../web/pages/provider/kit.ts';
import type { Services } from '../services.ts';
import { bearerOf, browserViewer, clientAddress, cookieOf, formValue } from './context.ts';
import { formError, withLengthCheck } from './body.ts';
import { sendError } from './send-error.ts';
import { bearerToken, hashSecret } from '../secrets.ts';
import { keptText, sendKeptText } from '../etag.ts';
import { ACCESS_TOKEN_COOKIE, REFRESH_TOKEN_COOKIE } from '../../shared/index.ts';

/** The largest form the provider reads: its biggest, a token request, is a few hundred bytes. */
const FORM_BYTES = 64 * 1024;
const parseForm = withLengthCheck('application/x-www-form-urlencoded', FORM_BYTES, express.urlencoded({ extended: false, limit: FORM_BYTES, parameterLimit: 50 }));

/**
 * A challenge (RFC 6750 §3, RFC 6749 §5.2), which a script on another origin may read: it says
 * why a token was refused, which the status alone does not.
 */
function challenge(res: Response, value: string): void {
  res.setHeader('WWW-Authenticate', value);
  const exposed = res.getHeader('Access-Control-Expose-Headers');
  res.setHeader('Access-Control-Expose-Headers', exposed === undefined ? 'WWW-Authenticate' : `${String(exposed)}, WWW-Authenticate`);
}

function sendOAuthError(res: Response, error: unknown): void {
  if (error instanceof OAuthError) {
    // RFC 6749 §5.2: a client that tried the Authorization header is answered with its scheme's challenge.
    if (error instanceof InvalidClient && error.basic) challenge(res, 'Basic realm="oidc"');
    if (error instanceof InvalidToken && !res.hasHeader('WWW-Authenticate')) challenge(res, `Bearer error="invalid_token", error_description="${error.description}"`);
    if (error instanceof TooManyDeviceRequests) res.setHeader('Retry-After', String(error.retryAfter));
    res.status(error.status).json({ error: error.error, error_description: error.description });
    return;
  }
  sendError(res, error);
}

/** An answer of the registration endpoints (RFC 7591, 7592): JSON, or 204 (never cached: `registering`). */
function sendRegistration(res: Response, answer: RegistrationAnswer): void {
  if (answer.body === undefined) res.status(answer.status).end();
  else res.status(answer.status).json(answer.body);
}

/** The form of a protocol endpoint (token, userinfo, revocation): one it cannot read is OAuth's `invalid_request`. */
export function oauthForm(req: Request, res: Response, next: NextFunction): void {
  parseForm(req, res, (error?: unknown) => {
    if (error) sendOAuthError(res, new InvalidRequest(formError(error).message));
    else next();
  });
}

/** The JSON body of a registration endpoint (RFC 7591): one it cannot read is `invalid_client_metadata`. */
export function oauthJson(parse: RequestHandler): RequestHandler {
  return (req, res, next) => {
    parse(req, res, (error?: unknown) => {
      if (error) sendOAuthError(res, new InvalidClientMetadata(`The body must be a JSON object of client metadata: ${formError(error).message}`));
      else next();
    });
  };
}

/** The form of a page (authorize by POST, login, consent): one it cannot read is an error page. */
export function pageForm(req: Request, res: Response, next: NextFunction): void {
  parseForm(req, res, (error?: unknown) => {
    if (!error) return next();
    const refused = formError(error);
    sendProviderPage(res, refused.status, errorPage(refused.message, requestIdOf(req)));
  });
}

/**
 * The handlers of the OpenID Connect endpoints (`oauth` routes), the authorization endpoint and
 * the pages' stylesheet (`page` routes). The protocol rules live in `OidcService`; this file only
 * moves them on and off the wire. The route table (`routes.ts`) names them.
 */
export function oidcHandlers(services: Services, config: Config) {
  const oidc = services.oidc;
  const viewerOf = (req: Request) => browserViewer(req, services);
  /**
   * The same, for the authorization endpoint, where a person with a session and a consent is
   * sent straight back with a code: the check of that session is kept for up to a second
   * (`OidcService.sessions`), so signing in to applications one after the other does not check
   * it against the database each time. A session that fails the check is checked again.
   */
  const keptViewerOf = (req: Request): Promise<Viewer | null> => {
    const token = cookieOf(req, ACCESS_TOKEN_COOKIE);
    if (token === undefined) return viewerOf(req);
    // Kept under both cookies: the access cookie alone never finds what its browser found.
    return oidc.sessions.get(hashSecret(`${token} ${cookieOf(req, REFRESH_TOKEN_COOKIE) ?? ''}`), async () => {
      const viewer = await viewerOf(req);
      return { value: viewer, until: viewer ? viewer.accessExpiresAt * 1000 : 0 };
    });
  };

  const stylesheet = serveUnhashed(ASSETS.providerCss);

  // Discovery never changes while the process runs, and the key set at most once per rotation:
  // both are sent as text serialised once, with their own ETag, by `sendKeptText` (neither
  // re-serialised nor hashed per request; a matching If-None-Match is answered with 304).
  const discoveryText = keptText(JSON.stringify(oidc.discovery()), 'json');
  const discovery: RequestHandler = (req, res) => {
    sendKeptText(req, res, discoveryText);
  };
  // Cached no longer than a rotated key waits before it signs.
  const jwksCacheControl = `public, max-age=${Math.min(300, config.oidcKeyActivationSeconds)}`;
  const jwks: RequestHandler = (req, res) => {
    res.setHeader('Cache-Control', jwksCacheControl);
    // The key set as read within the last second, without waiting; otherwise it is read first.
    const ready = oidc.keys.jwksBodyNow();
    if (ready) return sendKeptText(req, res, ready);
    return oidc.keys.jwksBody().then((read) => sendKeptText(req, res, read));
  };

  const authorize = providerPage(async (req, res) => {
    const params = req.method === 'POST' ? (req.body as Record<string, unknown>) : (req.query as Record<string, unknown>);
    sendOutcome(req, res, await oidc.authorize(params ?? {}, await keptViewerOf(req), clientAddress(req)));
  });

  // ---- token, userinfo, revocation ---------------------------------------------------------------
  const token: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    try {
      if (!req.is('application/x-www-form-urlencoded')) throw new InvalidRequest('The body must be application/x-www-form-urlencoded');
      res.json(await oidc.token(req.body as Record<string, unknown>, req.get('authorization')));
    } catch (error) {
      sendOAuthError(res, error);
    }
  };

  /**
   * The access token of a UserInfo request: the Bearer header's, or the form's on POST (RFC 6750
   * §2.1, §2.2). A malformed request (the token in two places, a Bearer header without one) is
   * `invalid_request` (§3.1).
   */
  const userinfoToken = (req: Request): string | undefined => {
    const authorization = req.get('authorization');
    const header = bearerToken(authorization);
    const fromBody = req.method === 'POST' && req.is('application/x-www-form-urlencoded') ? formValue(req, 'access_token') : undefined;
    if (header && fromBody) throw new InvalidRequest('Send the access token in one place only');
    if (!header && /^Bearer(\s|$)/i.test(authorization ?? '')) throw new InvalidRequest('The Bearer header carries no token');
    return header ?? fromBody;
  };
  const userinfo = async (req: Request, res: Response) => {
    const realm = `Bearer realm="${oidc.issuer}"`;
    res.setHeader('Cache-Control', 'no-store');
    try {
      const token = userinfoToken(req);
      if (!token) {
        // RFC 6750: no credentials, no error code.
        challenge(res, realm);
        res.status(401).end();
        return;
      }
      res.json(await oidc.userinfo(token));
    } catch (error) {
      if (error instanceof OAuthError) challenge(res, `${realm}, error="${error.error}", error_description="${error.description}"${error instanceof InsufficientScope ? `, scope="${error.scope}"` : ''}`);
      sendOAuthError(res, error);
    }
  };
  /** RFC 7662: for a client that authenticates; anything not active, or not its own, is `{active: false}`. */
  const introspect: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      if (!req.is('application/x-www-form-urlencoded')) throw new InvalidRequest('The body must be application/x-www-form-urlencoded');
      res.json(await oidc.introspect(req.body as Record<string, unknown>, req.get('authorization')));
    } catch (error) {
      sendOAuthError(res, error);
    }
  };
  const revoke: RequestHandler = async (req, res) => {
    try {
      await oidc.revoke((req.body as Record<string, unknown> | undefined) ?? {}, req.get('authorization'));
    } catch (error) {
      sendOAuthError(res, error);
      return;
    }
    // RFC 7009: the answer is 200 whether or not the token existed.
    res.status(200).end();
  };

  /** RFC 9126: 201 with the `request_uri`; refusals as the token endpoint's, never cached. */
  const pushedAuthorization: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      if (!req.is('application/x-www-form-urlencoded')) throw new InvalidRequest('The body must be application/x-www-form-urlencoded');
      res.status(201).json(await oidc.pushAuthorizationRequest(req.body as Record<string, unknown>, req.get('authorization')));
    } catch (error) {
      sendOAuthError(res, error);
    }
  };

  // ---- devices (RFC 8628) ----------------------------------------------------------------------------
  /** Where a person answers a device's request: the device page of the account pages. */
  const verificationUri = `${config.baseUrl}${PAGES_PREFIX}/device`;
  const deviceAuthorization: RequestHandler = async (req, res) => {
    res.setHeader('Cache-Control', 'no-store');
    try {
      if (!req.is('application/x-www-form-urlencoded')) throw new InvalidRequest('The body must be application/x-www-form-urlencoded');
      const from = { address: clientAddress(req), verificationUri };
      res.json(await oidc.deviceAuthorization(req.body as Record<string, unknown>, req.get('authorization'), from));
    } catch (error) {
      sendOAuthError(res, error);
    }
  };

  // ---- registration (RFC 7591) and its management (RFC 7592) --------------------------------------
  const registering = (work: (req: Request, bearer: string | undefined) => Promise<RegistrationAnswer>): RequestHandler => async (req, res) => {
    const bearer = bearerOf(req);
    // Answers and refusals alike are never cached (RFC 7591 §3.2.1).
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('Pragma', 'no-cache');
    try {
      sendRegistration(res, await work(req, bearer));
    } catch (error) {
      // A request that sent no token at all is challenged without an error code (RFC 6750 §3.1).
      if (error instanceof InvalidToken && bearer === undefined) challenge(res, `Bearer realm="${oidc.issuer}"`);
      sendOAuthError(res, error);
    }
  };
  const register = registering((req, bearer) => oidc.register(bearer, req.body));
  const clientIdOf = (req: Request) => String(req.params.clientId);
  const readRegistration = registering((req, bearer) => oidc.readRegistration(clientIdOf(req), bearer));
  const updateRegistration = registering((req, bearer) => oidc.updateRegistration(clientIdOf(req), bearer, req.body));
  const deleteRegistration = registering((req, bearer) => oidc.deleteRegistration(clientIdOf(req), bearer));

  return { stylesheet, discovery, jwks, authorize, token, pushedAuthorization, deviceAuthorization, userinfo, introspect, revoke, register, readRegistration, updateRegistration, deleteRegistration } satisfies Record<string, RequestHandler>;
}

export type OidcHandlers = ReturnType<typeof oidcHandlers>;
