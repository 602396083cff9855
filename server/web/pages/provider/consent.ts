/**
 * The provider's consent page: what the application asks for, in plain words, with "Allow" and
 * "Deny". A browser without a session that satisfies the request (`prompt=login`, `max_age`)
 * is sent to the login page first; the decision itself is the protocol's (`OidcService.consent`).
 */
import { createHttpContext } from '../../../http/context.ts';
import { createCaller } from '../../../router.ts';
import { providerPage, sendOutcome, sendProviderPage, type ProviderKit } from './kit.ts';
import { consentPage } from './views.ts';

export function providerConsentPages(kit: ProviderKit) {
  const { services, config, oidc, csrfFor, checkFormToken, field, viewerOf } = kit;

  const consentForm = providerPage(async (req, res) => {
    const id = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
    const { interaction, client } = await oidc.interaction(id);
    // No browser session (an impersonation's does not count), or one that does not satisfy
    // prompt=login, max_age or acr_values=2: sign in first.
    const viewer = await viewerOf(req);
    if (await oidc.mustSignIn(interaction, viewer)) {
      res.redirect(303, oidc.loginPageUrl(interaction, viewer !== null));
      return;
    }
    const profile = await createCaller(createHttpContext(req, res, services, config, 'cookie')).accounts.me();
    const csrf = csrfFor(res, interaction.id);
    sendProviderPage(res, 200, consentPage({ interactionId: interaction.id, csrf, clientName: client.name, scopes: interaction.params.scopes, userName: profile.fullname }), [
      interaction.params.redirectUri,
    ]);
  }, true);
  const consent = providerPage(async (req, res) => {
    const id = field(req, 'interaction') ?? '';
    const { interaction } = await oidc.interaction(id);
    checkFormToken(req, interaction.id);
    sendOutcome(req, res, await oidc.consent(interaction.id, await viewerOf(req), field(req, 'decision') === 'allow'));
  }, true);

  return { consentForm, consent };
}
