import { createHmac, type KeyObject } from 'node:crypto';
import { AppError, type OidcClient, type OidcScope } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import { safeEqual } from '../secrets.ts';
import { AccessDenied, InvalidRequest, OAuthError, UnmetAuthenticationRequirements } from './errors.ts';
import { authTime, consentPageUrl, issueCode, loginPageUrl, mustSignIn, next, secondFactorAsked, usable } from './flow.ts';
import { errorOutcome, signInProof, type BackToClient, type Outcome, type Provider } from './provider.ts';
import type { Interaction } from './repository.ts';

// The pages of a stored authorization request (an "interaction"): the login page, the consent
// page, and the JSON endpoints a separate frontend uses instead of them.

/** What each scope means, in plain words. */
const SCOPE_WORDS: Record<OidcScope, string> = {
  openid: 'Know who you are (your profile id)',
  profile: 'See your name',
  email: 'See your email address and whether it is confirmed',
  offline_access: 'Keep this access while you are away, until you revoke it under Applications (signing out of the app does not end it)',
};

/** A scope in plain words (the scope itself when it has none). */
export function scopeWords(scope: string): string {
  return (SCOPE_WORDS as Record<string, string | undefined>)[scope] ?? scope;
}

/** A live interaction and its client; an `invalid_request` page when it expired, was answered, or never was. */
export async function findInteraction(provider: Provider, id: string | undefined): Promise<{ interaction: Interaction; client: OidcClient }> {
  const interaction = id ? await provider.repo.findInteraction(id, provider.now()) : null;
  const client = interaction ? await provider.clients.find(interaction.params.clientId) : null;
  if (!interaction || !client) {
    throw new InvalidRequest('This sign-in request has expired or was already answered. Please start again from the application.', { allowRedirect: false });
  }
  return { interaction, client };
}

/**
 * checkOwner: an interaction someone signed in to on its login page is theirs: nobody else may
 * answer it (a code for another person must not come out of a request a browser started for this one).
 */
function checkOwner(interaction: Interaction, viewer: Viewer | null): void {
  if (viewer && interaction.profileId !== null && interaction.profileId !== viewer.profileId) {
    throw new AppError('ForbiddenError', 'This sign-in request belongs to another person');
  }
}

/** After the login page signed the person in: on to consent, or back to the client. */
export async function afterLogin(provider: Provider, interactionId: string, viewer: Viewer): Promise<Outcome> {
  const { interaction } = await findInteraction(provider, interactionId);
  // The sign-in time is the session's own (it was opened by this page a moment ago), so the ID
  // token's `auth_time` and how that sign-in was proved (`amr`) name the same sign-in.
  const signedInAt = viewer.authTime;
  // `acr_values=2` alone: a sign-in without a second factor (the person has none) does not do.
  // The request ends, and goes back to the client, which hears why (a page here would leave the
  // person nowhere to go but the address bar, and the client waiting).
  if (secondFactorAsked(interaction) === 'required' && (await signInProof(provider, viewer.profileId, signedInAt))?.acr !== '2') {
    await provider.repo.completeInteraction(interaction.id, provider.now());
    provider.metrics.signIn('oidc', 'failure');
    return errorOutcome(provider, new UnmetAuthenticationRequirements('The application asks for a sign-in with a second factor, and this account has none turned on'), interaction.params);
  }
  await provider.repo.markAuthenticated(interaction.id, viewer.profileId, signedInAt);
  // The person's activity log says this sign-in was made on the application's sign-in page.
  const client = await provider.clients.find(interaction.params.clientId);
  if (client) await provider.accounts.signedInThrough(viewer.profileId, viewer.sessionId, client.name);
  return resume(provider, { ...interaction, profileId: viewer.profileId, authenticatedAt: signedInAt }, viewer);
}

/** Goes on with a stored interaction; a protocol error ends it, and goes back to the client. */
async function resume(provider: Provider, interaction: Interaction, viewer: Viewer | null): Promise<Outcome> {
  try {
    return await next(provider, interaction, usable(viewer));
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    await provider.repo.completeInteraction(interaction.id, provider.now());
    return errorOutcome(provider, error, interaction.params);
  }
}

/**
 * `POST /oidc/authorize/confirm`, a web application's page for an interaction: where to send the
 * browser (a sign-in again on this service's page; back to the client when consent was given
 * before), or what to ask (the client's name and the scopes). Only `fromBrowser` (the browser
 * session, both its cookies) completes a sign-in here; a caller with an access token alone (the
 * platform's web client asks from its server with the token it read from the cookie) is shown
 * what is asked, and the sign-in then takes the browser's own `POST /oidc/authorize/consent`. A
 * stolen token alone signs no one in to an application.
 */
export async function confirm(
  provider: Provider,
  interactionId: string,
  viewer: Viewer,
  fromBrowser: boolean,
): Promise<{ redirectUri: string } | { client: { clientName: string }; scopes: Array<{ scope: string; description: string }> }> {
  const { interaction, client } = await findInteraction(provider, interactionId);
  const person = usable(viewer);
  checkOwner(interaction, person);
  // Each scope as the web client's form lists it (`AuthorizeForm.js` reads `scope`), in our words too.
  const asked = { client: { clientName: client.name }, scopes: interaction.params.scopes.map((scope) => ({ scope, description: scopeWords(scope) })) };
  // A fresh sign-in (prompt=login, max_age) or a second factor is needed first: this service's login page.
  if (await mustSignIn(provider, interaction, person)) {
    return { redirectUri: loginPageUrl(provider, interaction, true) };
  }
  if (!fromBrowser) return asked;
  const outcome = await resume(provider, interaction, viewer);
  if ('redirect' in outcome && outcome.redirect !== consentPageUrl(provider, interaction.id)) return { redirectUri: outcome.redirect };
  return asked;
}

/** The consent page's answer: "Allow" saves the consent and returns to the client with a code. */
export async function consent(provider: Provider, interactionId: string, viewer: Viewer | null, approved: boolean): Promise<BackToClient> {
  const { interaction } = await findInteraction(provider, interactionId);
  checkOwner(interaction, usable(viewer));
  const { params } = interaction;
  if (!approved) {
    await provider.repo.completeInteraction(interaction.id, provider.now());
    provider.metrics.signIn('oidc', 'failure');
    return redirected(errorOutcome(provider, new AccessDenied('The user denied the request'), params));
  }
  const person = usable(viewer);
  if (!person || (await mustSignIn(provider, interaction, person))) {
    throw new AppError('UnauthorizedError', 'Please sign in (again) before consenting.');
  }
  // The scopes given before are widened (two consents given at once, in two tabs, both stay).
  const { grantedAt, widened } = await provider.repo.widenConsent(person.profileId, params.clientId, params.scopes, provider.now());
  // A consent given, or widened, is in the person's activity log.
  const client = widened ? await provider.clients.find(params.clientId) : null;
  if (widened && client) await provider.accounts.recordApplication(person.profileId, 'app:granted', { clientId: client.id, name: client.name, scopes: widened });
  try {
    return await issueCode(provider, interaction, person, { authTime: authTime(interaction, person), consentedAt: grantedAt });
  } catch (error) {
    return redirected(errorOutcome(provider, error, params));
  }
}

/** The consent page only ever answers with a redirect: its errors (access_denied, a double submit) all allow one. */
function redirected(outcome: Outcome): BackToClient {
  if (!('redirect' in outcome)) throw new Error(`a consent answer must redirect, not show: ${outcome.page}`);
  return outcome;
}

/** A CSRF token for a page's form, bound to the browser (its cookie) and to the interaction. */
export function interactionCsrfToken(csrfKey: KeyObject, browserSecret: string, interactionId: string): string {
  return createHmac('sha256', csrfKey).update(`${browserSecret}:${interactionId}`).digest('base64url');
}

/** checkInteractionCsrf: the form's token is the one made for this browser and this interaction. */
export function checkInteractionCsrf(csrfKey: KeyObject, browserSecret: string | undefined, interactionId: string, token: string | undefined): void {
  if (!browserSecret || !safeEqual(interactionCsrfToken(csrfKey, browserSecret, interactionId), token ?? '')) {
    throw new AppError('ForbiddenError', 'The form has expired. Please go back and try again.');
  }
}
