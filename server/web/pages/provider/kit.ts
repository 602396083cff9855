/**
 * What the provider's pages share (`login.ts`, `consent.ts`, `sign-out.ts`): how a page is
 * sent (the pages' policy, with the client's redirect URI as a form target), how an
 * interaction's outcome is sent, the CSRF cookie and its tokens, and what happens once a person
 * is signed in on a request.
 */
import type { Request, Response } from 'express';
import { AppError } from '../../../../shared/errors.ts';
import type { Config } from '../../../config.ts';
import { browserViewer, createHttpContext, formValue } from '../../../http/context.ts';
import { saysCrossSite } from '../../../http/same-origin.ts';
import { sendError } from '../../../http/send-error.ts';
import { OAuthError } from '../../../oidc/errors.ts';
import type { Outcome } from '../../../oidc/service.ts';
import type { Services } from '../../../services.ts';
import { resetRequestLink } from '../../../mail/messages.ts';
import { csrfCookie, csrfSecretOf } from '../../csrf.ts';
import { pagePolicy, requestIdOf, sendHtml } from '../../render.ts';
import { errorPage, formPostPage } from './views.ts';

/**
 * A provider page, with the pages' policy (`pagePolicy`): its passkey script may run, and a form
 * may send the person on to the client's redirect URI (`formTargets`); `widget`: it shows the
 * human-verification widget.
 */
export function sendProviderPage(res: Response, status: number, html: string, formTargets: string[] = [], widget = false): void {
  // A native app's private-use scheme (`com.example.app:/cb`) has no origin: its scheme is the source.
  const origins = formTargets.map((uri) => {
    const url = new URL(uri);
    return url.origin === 'null' ? url.protocol : url.origin;
  });
  sendHtml(res, status, html, pagePolicy({ formAction: ["'self'", ...origins], scripts: true, widget }));
}

/**
 * Where an authorization request goes next: a redirect, or a page with its message. A redirect
 * may carry a code, so no cache keeps it (as the pages are not kept: `sendHtml`).
 */
export function sendOutcome(req: Request, res: Response, outcome: Outcome): void {
  if ('post' in outcome && outcome.post) {
    sendProviderPage(res, 200, formPostPage(outcome.post), [outcome.post.action]);
  } else if ('redirect' in outcome) {
    res.setHeader('Cache-Control', 'no-store');
    res.redirect(303, outcome.redirect);
  } else sendProviderPage(res, outcome.status, errorPage(outcome.page, requestIdOf(req)));
}

/** A provider page's handler: a protocol error is an error page; on the login and consent pages (`onPage`), so is any refusal. */
export const providerPage = (handler: (req: Request, res: Response) => Promise<void>, onPage = false) => (req: Request, res: Response) => {
  handler(req, res).catch((error: unknown) => {
    if (error instanceof OAuthError) sendProviderPage(res, 400, errorPage(error.message, requestIdOf(req)));
    else if (error instanceof AppError && onPage) sendProviderPage(res, error.status, errorPage(error.message, requestIdOf(req)));
    else sendError(res, error);
  });
};

/** What every provider page's handlers work with (`providerKit`). */
export type ProviderKit = ReturnType<typeof providerKit>;

export function providerKit(services: Services, config: Config) {
  const oidc = services.oidc;
  const viewerOf = (req: Request) => browserViewer(req, services);
  // The cookie that binds a page's CSRF token to the browser that loaded the page (`web/csrf.ts`).
  const csrf = csrfCookie(config, 'service.oidc-csrf', '/oidc');
  /**
   * The form token bound to the browser's secret (its cookie's, or a new one set now) and to the
   * interaction. The secret is kept while the browser has one: a new one for each page would
   * void the form of every other provider page open in the browser (two sign-ins in two tabs,
   * the first one's login then refused as expired); the interaction in the token tells them apart.
   */
  const csrfFor = (res: Response, interactionId: string) => oidc.interactionCsrfToken(csrfSecretOf(res.req as Request, res, csrf), interactionId);
  const field = formValue;
  const resetUrl = resetRequestLink(config.webUrl);

  /**
   * Signed in on this request (the procedure set the session's cookies, and so the request's
   * own): on to consent, or back to the client.
   */
  const signedIn = async (req: Request, res: Response, interactionId: string): Promise<void> => {
    const viewer = await createHttpContext(req, res, services, config, 'cookie').viewer();
    sendOutcome(req, res, await oidc.afterLogin(interactionId, viewer));
  };

  /**
   * Checks a form's CSRF token against the browser's cookie and what it is bound to (an
   * interaction); and, as on the account pages (`checkCsrf`), a browser saying the form came
   * from another site is refused whatever it carries.
   */
  const checkFormToken = (req: Request, boundTo: string) => {
    if (saysCrossSite(req)) throw new AppError('ForbiddenError', 'This form did not come from this site. Please go back and try again.');
    oidc.checkInteractionCsrf(req.cookies?.[csrf.name] as string | undefined, boundTo, formValue(req, 'csrf'));
  };
  return { services, config, oidc, viewerOf, csrfFor, checkFormToken, field, resetUrl, signedIn };
}
