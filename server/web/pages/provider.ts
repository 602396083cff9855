/**
 * The pages a person sees while signing in to another application through our OpenID Connect
 * provider: the login page (with "Sign in with a passkey"), its second step, the consent page,
 * and the sign-out question an application's logout request may ask. Signing in goes through
 * the same procedures as `POST /login`, `POST /mfa/verify` and `POST /login/passkey` (a tRPC caller on the request's own context, which sets the session's
 * cookies); the interaction itself (which request, its client, where it goes after the sign-in
 * or the consent) is the protocol's, and so `OidcService`'s, as the protocol endpoints in
 * `server/http/oidc.ts` are: these handlers only move forms on and off the wire. Their HTML is
 * `server/oidc/pages.ts` (templates in `../templates/oidc/`).
 */
import type { Request, RequestHandler, Response } from 'express';
import { AppError } from '../../../shared/errors.ts';
import type { Config } from '../../config.ts';
import { browserViewer, createHttpContext, formValue } from '../../http/context.ts';
import { sendError } from '../../http/send-error.ts';
import { OAuthError } from '../../oidc/errors.ts';
import type { EndSession } from '../../oidc/end-session.ts';
import type { Outcome } from '../../oidc/service.ts';
import { consentPage, errorPage, loginPage, secondStepPage, signedOutPage, signOutPage } from '../../oidc/pages.ts';
import { createCaller } from '../../router.ts';
import type { Services } from '../../services.ts';
import { csrfCookie, newCsrfSecret, setCsrfCookie } from '../csrf.ts';
import { passkeyFormInput } from '../passkey-forms.ts';
import { resetRequestLink } from '../../mail/messages.ts';
import { LoginInput } from '../../../shared/index.ts';
import { FIELDS, formRefusal } from '../form-errors.ts';
import { humanVerificationAsked, pagePolicy, requestIdOf, sendHtml, verificationMode } from '../render.ts';
import { serviceRefusal } from './kit.ts';
import { waitsForActivation } from './sign-in.ts';
import { pendingMethods, secondStepErrors, submitSecondStep } from './second-step.ts';

/**
 * A provider page, with the pages' policy (`pagePolicy`): its passkey script may run, and a form
 * may send the person on to the client's redirect URI (`formTargets`); `widget`: it shows the
 * human-verification widget.
 */
export function sendProviderPage(res: Response, status: number, html: string, formTargets: string[] = [], widget = false): void {
  const origins = formTargets.map((uri) => new URL(uri).origin);
  sendHtml(res, status, html, pagePolicy({ formAction: ["'self'", ...origins], scripts: true, widget }));
}

/** Where an authorization request goes next: a redirect, or a page with its message. */
export function sendOutcome(req: Request, res: Response, outcome: Outcome): void {
  if ('redirect' in outcome) res.redirect(303, outcome.redirect);
  else sendProviderPage(res, outcome.status, errorPage(outcome.page, requestIdOf(req)));
}

/** A provider page's handler: a protocol error is an error page; on the login and consent pages (`onPage`), so is any refusal. */
export const providerPage = (handler: (req: Request, res: Response) => Promise<void>, onPage = false) => (req: Request, res: Response) => {
  handler(req, res).catch((error: unknown) => {
    if (error instanceof OAuthError) sendProviderPage(res, 400, errorPage(error.message, requestIdOf(req)));
    else if (error instanceof AppError && onPage) sendProviderPage(res, error.status, errorPage(error.message, requestIdOf(req)));
    else sendError(res, error);
  });
};

/** The provider's login form's inputs, in its order (`templates/oidc/login.eta`), worded as the account pages' (`form-errors.ts`). */
const LOGIN_FIELDS = [FIELDS.accountId, FIELDS.password, FIELDS.token];

/** What the sign-out question's CSRF token is bound to, besides the browser (there is no interaction). */
const END_SESSION = 'end-session';

export function providerPages(services: Services, config: Config) {
  const oidc = services.oidc;
  const viewerOf = (req: Request, res: Response) => browserViewer(req, res, services, config);
  // The cookie that binds a page's CSRF token to the browser that loaded the page (`web/csrf.ts`).
  const csrf = csrfCookie(config, 'service.oidc-csrf', '/oidc');
  /** A fresh browser secret in a cookie, and the form token bound to it and the interaction. */
  const csrfFor = (res: Response, interactionId: string) => {
    const secret = newCsrfSecret();
    setCsrfCookie(res, csrf, secret);
    return oidc.csrfToken(secret, interactionId);
  };
  const field = formValue;
  const safely = providerPage;
  const page = sendProviderPage;
  const resetUrl = resetRequestLink(config.webUrl);

  /**
   * Signed in on this request (the procedure set the session's cookies, and so the request's
   * own): on to consent, or back to the client.
   */
  const signedIn = async (req: Request, res: Response, interactionId: string): Promise<void> => {
    const viewer = await createHttpContext(req, res, services, config, 'cookie').viewer();
    sendOutcome(req, res, await oidc.afterLogin(interactionId, viewer));
  };

  // ---- the login page ----------------------------------------------------------------------------
  const loginForm = safely(async (req, res) => {
    const id = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
    const { interaction, client } = await oidc.interaction(id);
    const csrf = csrfFor(res, interaction.id);
    // Signing in may send the browser straight on to the client (consent given before).
    page(res, 200, loginPage({ interactionId: interaction.id, csrf, clientName: client.name, resetUrl, requestId: requestIdOf(req) }), [
      interaction.params.redirectUri,
    ]);
  }, true);
  const login = safely(async (req, res) => {
    const id = field(req, 'interaction') ?? '';
    const { interaction, client } = await oidc.interaction(id);
    oidc.checkCsrf(req.cookies?.[csrf.name] as string | undefined, interaction.id, field(req, 'csrf'));
    // The sign-in's procedures, as `POST /login` and `POST /mfa/verify` call them: they set the
    // session's cookies. A request that wants the second step now ignores the remembered browser.
    const context = createHttpContext(req, res, services, config);
    if (oidc.wantsFreshSecondStep(interaction)) context.credentials.trustedDevice = undefined;
    const caller = createCaller(context);
    const targets = [interaction.params.redirectUri];
    /** The login page again with the refusal in the account pages' words and order (`form-errors.ts`); `input`: what was sent to `accounts.login`. */
    const loginAgain = (error: AppError, email = '', input?: unknown) => {
      // The account's attempts ran out for this browser: the form asks for human verification too.
      const verify = humanVerificationAsked(error);
      const verification = verify ? { verification: verificationMode(config), siteKey: config.humanVerificationSiteKey } : {};
      const inactive = waitsForActivation(error);
      const refusal = formRefusal(req, error, { fields: LOGIN_FIELDS, schema: LoginInput, input });
      const html = loginPage({ interactionId: interaction.id, csrf: csrfFor(res, interaction.id), clientName: client.name, resetUrl, requestId: requestIdOf(req), errors: refusal.errors, status: refusal.status, inactive, email, ...verification });
      page(res, error.status, html, targets, verify && config.humanVerification !== undefined && config.humanVerificationSiteKey !== undefined);
    };
    const secondStep = (pending: { token: string; methods: string[]; method: string }, status = 200, message: { error?: string; sent?: boolean } = {}) => {
      // The request id is for something going wrong on our side, not for a mistyped code (as on every page).
      const html = secondStepPage({ interactionId: interaction.id, csrf: csrfFor(res, interaction.id), clientName: client.name, mfaPendingToken: pending.token, methods: pending.methods, method: pending.method, requestId: status >= 500 ? requestIdOf(req) : '', ...message });
      page(res, status, html, targets);
    };

    // The second step: a code (or "send a code by email") for the sign-in whose password was right.
    const mfaPendingToken = field(req, 'mfaPendingToken');
    if (mfaPendingToken !== undefined) {
      const method = field(req, 'method') ?? 'totp';
      // No methods: the sign-in expired or was completed (or the token is not one of ours).
      const pending = { token: mfaPendingToken, methods: await pendingMethods(caller, mfaPendingToken), method };
      try {
        const form = { token: mfaPendingToken, method, code: field(req, 'code') ?? '', step: field(req, 'step') ?? '', rememberDevice: field(req, 'rememberDevice') === 'on' };
        if ((await submitSecondStep(caller, form)) === 'sent') {
          secondStep({ ...pending, method: 'emailOtp' }, 200, { sent: true });
          return;
        }
      } catch (error) {
        const refused = serviceRefusal(error);
        if (!refused) throw error;
        // A sign-in that expired or was completed starts again from the password.
        if (pending.methods.length === 0) loginAgain(refused);
        else secondStep(pending, refused.status, { error: secondStepErrors(req, refused, '').errors.map((e) => e.message).join(' ') });
        return;
      }
      await signedIn(req, res, interaction.id);
      return;
    }

    const email = field(req, 'email') ?? '';
    const input = { id: email, password: field(req, 'password') ?? '', token: field(req, 'token') || undefined };
    try {
      const outcome = await caller.accounts.login(input);
      if ('mfaPending' in outcome) {
        const { mfaPendingToken: token, mfaMethods, preferredMethod } = outcome;
        // The preferred method checked (or, for a passkey, whose button comes first, the first code method: `secondStepData`).
        secondStep({ token, methods: mfaMethods, method: preferredMethod });
        return;
      }
    } catch (error) {
      const refused = serviceRefusal(error);
      if (!refused) throw error;
      loginAgain(refused, email, input);
      return;
    }
    await signedIn(req, res, interaction.id);
  }, true);

  // ---- the login page's passkey sign-in (no password; `/webauthn/passkey.js` posts this form) ------
  const loginPasskey = safely(async (req, res) => {
    const id = field(req, 'interaction') ?? '';
    const { interaction, client } = await oidc.interaction(id);
    oidc.checkCsrf(req.cookies?.[csrf.name] as string | undefined, interaction.id, field(req, 'csrf'));
    try {
      const input = passkeyFormInput(field(req, 'challengeId'), field(req, 'response'));
      // The procedure sets the session's cookies, as `POST /login/passkey` does.
      await createCaller(createHttpContext(req, res, services, config)).accounts.passkeyLogin(input);
    } catch (error) {
      const refused = serviceRefusal(error);
      if (!refused) throw error;
      const csrf = csrfFor(res, interaction.id);
      const html = loginPage({ interactionId: interaction.id, csrf, clientName: client.name, resetUrl, requestId: requestIdOf(req), errors: [{ field: '', message: refused.message }], status: refused.status });
      page(res, refused.status, html, [interaction.params.redirectUri]);
      return;
    }
    await signedIn(req, res, interaction.id);
  }, true);

  // ---- the consent page --------------------------------------------------------------------------
  const consentForm = safely(async (req, res) => {
    const id = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
    const { interaction, client } = await oidc.interaction(id);
    const context = createHttpContext(req, res, services, config, 'cookie');
    // No session (an impersonation's does not count), or one that does not satisfy prompt=login
    // or max_age: sign in first.
    if (oidc.needsLogin(interaction, await context.viewerIfValid())) {
      res.redirect(303, oidc.loginPageUrl(interaction.id));
      return;
    }
    const profile = await createCaller(context).accounts.me();
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

  // ---- signing out (RP-initiated logout) ---------------------------------------------------------
  /**
   * Ends the browser's session through `POST /logout`'s procedure; each process finds the ended
   * session within a second and tells the applications it signed in to (`back-channel.ts`).
   */
  const signOut = async (req: Request, res: Response) => {
    await createCaller(createHttpContext(req, res, services, config, 'cookie')).accounts.logout();
  };
  const afterSignOut = (res: Response, outcome: EndSession) => {
    if (outcome.redirect) res.redirect(303, outcome.redirect);
    else page(res, 200, signedOutPage({ clientName: outcome.client?.name ?? '' }));
  };
  const endSession = safely(async (req, res) => {
    const params = (req.method === 'POST' ? req.body : req.query) as Record<string, unknown>;
    const viewer = await viewerOf(req, res);
    const outcome = await oidc.endSession(params ?? {}, viewer);
    if (!outcome.confirm) {
      if (viewer) await signOut(req, res);
      afterSignOut(res, outcome);
      return;
    }
    const me = await createCaller(createHttpContext(req, res, services, config, 'cookie')).accounts.me();
    const html = signOutPage({
      csrf: csrfFor(res, END_SESSION),
      userName: me.fullname,
      clientName: outcome.client?.name ?? '',
      clientId: outcome.client?.id ?? '',
      postLogoutRedirectUri: typeof params.post_logout_redirect_uri === 'string' && outcome.redirect ? params.post_logout_redirect_uri : '',
      state: typeof params.state === 'string' ? params.state : '',
    });
    page(res, 200, html, outcome.redirect ? [outcome.redirect] : []);
  }, true);
  const confirmEndSession = safely(async (req, res) => {
    oidc.checkCsrf(req.cookies?.[csrf.name] as string | undefined, END_SESSION, field(req, 'csrf'));
    // The question's answers, checked again: a registered address only.
    const params = { client_id: field(req, 'client_id'), post_logout_redirect_uri: field(req, 'post_logout_redirect_uri'), state: field(req, 'state') };
    const outcome = await oidc.endSession(params, null);
    if (await viewerOf(req, res)) await signOut(req, res);
    afterSignOut(res, outcome);
  }, true);

  return { loginForm, login, loginPasskey, consentForm, consent, endSession, confirmEndSession } satisfies Record<string, RequestHandler>;
}

export type ProviderPageHandlers = ReturnType<typeof providerPages>;
