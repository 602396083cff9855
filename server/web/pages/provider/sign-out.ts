/**
 * Signing out from an application (RP-initiated logout, `end_session_endpoint`): straight
 * through when the request names whose session it ends (`id_token_hint`), otherwise the "Sign
 * out?" question; then back to a registered `post_logout_redirect_uri`, or a "You are signed
 * out" page.
 */
import type { Request, Response } from 'express';
import { createHttpContext } from '../../../http/context.ts';
import type { EndSession } from '../../../oidc/end-session.ts';
import { createCaller } from '../../../router.ts';
import { providerPage, sendProviderPage, type ProviderKit } from './kit.ts';
import { signedOutPage, signOutPage } from './views.ts';

/** What the sign-out question's CSRF token is bound to, besides the browser (there is no interaction). */
const END_SESSION = 'end-session';

export function providerSignOutPages(kit: ProviderKit) {
  const { services, config, oidc, csrfFor, checkFormToken, field, viewerOf } = kit;

  /**
   * Ends the browser's session through `POST /logout`'s procedure; each process finds the ended
   * session within a second and tells the applications it signed in to (`back-channel.ts`).
   */
  const signOut = async (req: Request, res: Response) => {
    await createCaller(createHttpContext(req, res, services, config, 'cookie')).accounts.logout();
  };
  const afterSignOut = (res: Response, outcome: EndSession) => {
    if (outcome.redirect) res.redirect(303, outcome.redirect);
    else sendProviderPage(res, 200, signedOutPage({ clientName: outcome.client?.name ?? '' }));
  };
  const endSession = providerPage(async (req, res) => {
    // A POST without a form body (none, or another type) has no parameters: it is asked as a GET without any.
    const given: unknown = req.method === 'POST' ? req.body : req.query;
    const params = (typeof given === 'object' && given !== null ? given : {}) as Record<string, unknown>;
    const viewer = await viewerOf(req);
    const outcome = await oidc.endSession(params, viewer);
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
    sendProviderPage(res, 200, html, outcome.redirect ? [outcome.redirect] : []);
  }, true);
  const confirmEndSession = providerPage(async (req, res) => {
    checkFormToken(req, END_SESSION);
    // The question's answers, checked again: a registered address only.
    const params = { client_id: field(req, 'client_id'), post_logout_redirect_uri: field(req, 'post_logout_redirect_uri'), state: field(req, 'state') };
    const outcome = await oidc.endSession(params, null);
    if (await viewerOf(req)) await signOut(req, res);
    afterSignOut(res, outcome);
  }, true);

  return { endSession, confirmEndSession };
}
