import { OIDC_CODE_SECONDS } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import { ConsentRequired, InvalidRequest, LoginRequired } from './errors.ts';
import { backToClient, consentCovers, findConsent, sidOf, signInProof, subjectOf, type BackToClient, type Outcome, type Provider } from './provider.ts';
import type { Interaction } from './repository.ts';

// Where an authorization request goes once its parameters are checked (authorize.ts) and after
// each page (interactions.ts): the login page, the consent page, or back to the client with a code.

/** An impersonation session never signs anyone in to another application. */
export function usable(viewer: Viewer | null): Viewer | null {
  return viewer && !viewer.impersonator ? viewer : null;
}

/** Whether the person signed in on this request's login page (rather than arriving with a session). */
function signedInHere(interaction: Interaction, viewer: Viewer): boolean {
  return interaction.profileId === viewer.profileId && interaction.authenticatedAt !== null;
}

/**
 * Whether the person must sign in (again) before this request can go on: no session;
 * `prompt=login` (or `select_account`) without a sign-in during this request; or a session
 * older than `max_age` (a sign-in during this request always satisfies `max_age`, even 0).
 */
function needsLogin(provider: Pick<Provider, 'now'>, interaction: Interaction, viewer: Viewer | null): viewer is null {
  if (!viewer) return true;
  if (signedInHere(interaction, viewer)) return false;
  const { params } = interaction;
  // `select_account`: the login page is where a person chooses the account to go on with.
  if (params.prompt.includes('login') || params.prompt.includes('select_account')) return true;
  return params.maxAge !== undefined && provider.now() - viewer.authTime > params.maxAge * 1000;
}

/**
 * The key under which a process remembers having recorded a session's client
 * (`Provider.sessionClients`): the session, the client, the person's token version and when
 * the consent was given. A record ended (the app revoked, by whichever process) is followed by a
 * consent given again, a new key: every process records the next sign-in, whatever it remembers.
 */
export function sessionClientKey(sessionId: string, clientId: string, tokenVersion: number, consentedAt: number): string {
  return `${sessionId} ${clientId} ${tokenVersion} ${consentedAt}`;
}

/**
 * What `acr_values` asks of the sign-in. Its values are voluntary, in order of preference, and
 * a list one factor can meet never ends in an error (OpenID Connect Core §3.1.2.1, §15.1); `1`
 * (one factor) and `2` (a second factor) are known, any other is ignored.
 * - `required`: `2` and not `1`: no value the client accepts can be met without a second factor.
 * - `preferred`: `2` before `1`: a person who has a second factor is asked for it when they sign
 *   in on this request, even in a browser remembered for it, since the client would rather have
 *   it; one who has none signs in with the password, and the answer is `acr: "1"`, acceptable too.
 *   A session that meets `1` already is not sent to sign in again for the preference alone (nor
 *   is `prompt=none` refused): a preference does not cost the person a sign-in.
 * - `none`: no `2`, or `1` first (as the conformance suite sends `1 2`, discovery's order).
 */
export function secondFactorAsked(interaction: Interaction): 'required' | 'preferred' | 'none' {
  const known = (interaction.params.acrValues ?? []).filter((value) => value === '1' || value === '2');
  if (known[0] !== '2') return 'none';
  return known.includes('1') ? 'preferred' : 'required';
}

/**
 * Whether signing in on this request's login page asks for the second step even in a browser
 * remembered for it: `acr_values` asking for a second factor (`secondFactorAsked`), or a
 * re-authentication bounded in time (`prompt=login` with `max_age`). `prompt=login` alone keeps
 * the remembered browser's shortcut.
 */
export function wantsFreshSecondStep(interaction: Interaction): boolean {
  const { params } = interaction;
  return secondFactorAsked(interaction) !== 'none' || (params.prompt.includes('login') && params.maxAge !== undefined);
}

/**
 * Whether the session's sign-in falls short of a required second factor (`acr_values=2`): the
 * person must sign in again (their second step is then asked even in a remembered browser),
 * unless they did during this request; whether that sign-in used a second factor is
 * `afterLogin`'s to check.
 */
async function needsSecondFactor(provider: Provider, interaction: Interaction, viewer: Viewer): Promise<boolean> {
  if (secondFactorAsked(interaction) !== 'required' || signedInHere(interaction, viewer)) return false;
  return (await signInProof(provider, viewer.profileId, viewer.authTime))?.acr !== '2';
}

/**
 * Whether this request must go (back) to the login page before it can go on: `needsLogin`; an
 * `id_token_hint` naming someone other than the person of a session opened before this request
 * (`hintsAtSomeoneElse`); or a session short of `acr_values=2`. Every path that goes on asks
 * this one question: the authorization, the consent page, and the JSON confirm and consent.
 */
export async function mustSignIn(provider: Provider, interaction: Interaction, viewer: Viewer | null): Promise<boolean> {
  if (needsLogin(provider, interaction, viewer)) return true;
  // Most requests carry no hint: no await for them, on the sign-in's hot path.
  if (interaction.params.hintSubject !== undefined && !signedInHere(interaction, viewer) && (await hintsAtSomeoneElse(provider, interaction, viewer))) return true;
  return needsSecondFactor(provider, interaction, viewer);
}

/**
 * Whether the request's `id_token_hint` names someone other than `viewer` (the subject as this
 * client knows it: pairwise clients get their own). Before a sign-in on this request, the
 * session is not the one the client expects: the login page. After one, the person who signed
 * in is not the one hinted at: `login_required` (`next`; OpenID Connect Core §3.1.2.1 answers
 * positively only for the hinted person).
 */
async function hintsAtSomeoneElse(provider: Provider, interaction: Interaction, viewer: Viewer): Promise<boolean> {
  const { hintSubject, clientId } = interaction.params;
  if (hintSubject === undefined) return false;
  const client = await provider.clients.find(clientId);
  return client === null || subjectOf(provider, client, viewer.profileId) !== hintSubject;
}

/** The sign-in time the ID token reports: this request's sign-in, or the session's. */
export function authTime(interaction: Interaction, viewer: Viewer): number {
  return signedInHere(interaction, viewer) ? (interaction.authenticatedAt as number) : viewer.authTime;
}

/**
 * Where a browser signs in for an interaction: this service's login page, unless a web
 * application is set as `WEB_URL` (`provider.webUrl` is then not the issuer). That one serves a
 * single page for both steps, as the platform's web client does (`app/oidc/authorize/page.js`:
 * its own login first, then `POST /oidc/authorize/confirm` and `/consent`), and it is sent there
 * when nobody is signed in (`signedIn` false) and the request asks for no more than a sign-in.
 * A request that asks for a fresh one or a second factor (`prompt=login`, `max_age`,
 * `acr_values` with `2` first), and someone signed in who must sign in again, always come
 * here: only this page asks for that.
 */
export function loginPageUrl(provider: Pick<Provider, 'webUrl' | 'issuer'>, interaction: Interaction, signedIn: boolean): string {
  if (!signedIn && !asksMoreThanASignIn(interaction) && provider.webUrl !== provider.issuer) return frontendPageUrl(provider, interaction.id);
  return `${provider.issuer}/oidc/login?interaction=${interaction.id}`;
}

/** Where a browser consents for an interaction: the web application's page (`loginPageUrl`), or this service's. */
export function consentPageUrl(provider: Pick<Provider, 'webUrl' | 'issuer'>, interactionId: string): string {
  return provider.webUrl !== provider.issuer ? frontendPageUrl(provider, interactionId) : `${provider.issuer}/oidc/consent?interaction=${interactionId}`;
}

/** Whether the request asks for a fresh sign-in (`prompt=login`, `max_age`) or a second factor (`acr_values` with `2` first). */
function asksMoreThanASignIn(interaction: Interaction): boolean {
  const { params } = interaction;
  return params.prompt.includes('login') || params.maxAge !== undefined || secondFactorAsked(interaction) !== 'none';
}

function frontendPageUrl(provider: Pick<Provider, 'webUrl'>, interactionId: string): string {
  return `${provider.webUrl}/oidc/authorize?interaction=${interactionId}`;
}

/**
 * Where an interaction goes next: the login page, the consent page, or back to the client.
 * `store` is given for a request not stored yet: it is stored before a page is shown, and a
 * code issued at once has no interaction to complete.
 */
export async function next(provider: Provider, interaction: Interaction, viewer: Viewer | null, store?: () => Promise<void>): Promise<Outcome> {
  const { params } = interaction;
  if (params.hintSubject !== undefined && viewer && signedInHere(interaction, viewer) && (await hintsAtSomeoneElse(provider, interaction, viewer))) {
    provider.metrics.signIn('oidc', 'failure');
    throw new LoginRequired('The person who signed in is not the one id_token_hint names');
  }
  if (!viewer || (await mustSignIn(provider, interaction, viewer))) {
    if (params.prompt.includes('none')) {
      provider.metrics.signIn('oidc', 'failure');
      throw new LoginRequired('The user is not signed in');
    }
    await store?.();
    return { redirect: loginPageUrl(provider, interaction, viewer !== null) };
  }
  const consent = await findConsent(provider, viewer.profileId, params.clientId);
  if (!consent || !consentCovers(consent.scopes, params.scopes) || params.prompt.includes('consent')) {
    if (params.prompt.includes('none')) {
      provider.metrics.signIn('oidc', 'failure');
      throw new ConsentRequired('The user has not consented');
    }
    await store?.();
    return { redirect: consentPageUrl(provider, interaction.id) };
  }
  return issueCode(provider, interaction, viewer, { authTime: authTime(interaction, viewer), consentedAt: consent.grantedAt }, store === undefined);
}

/**
 * Issues the single-use code (sealed, not stored: `codes.ts`; bound to client, redirect URI and
 * challenge, to the consent it was issued under, `consentedAt`, as read when deciding to issue
 * it, and to the person's `tokenVersion`: a reset or logout-all before it is redeemed voids it).
 * A stored interaction is completed first, so a second answer to it (a double submit) fails.
 */
export async function issueCode(
  provider: Provider,
  interaction: Interaction,
  person: Pick<Viewer, 'profileId' | 'tokenVersion' | 'sessionId'>,
  signIn: { authTime: number; consentedAt: number },
  stored = true,
): Promise<BackToClient> {
  const now = provider.now();
  if (stored && !(await provider.repo.completeInteraction(interaction.id, now))) {
    throw new InvalidRequest('This sign-in request was already answered');
  }
  const { params } = interaction;
  const sid = sidOf(provider, person.sessionId, params.clientId);
  // The client is told by back-channel logout when this browser session ends (`back-channel.ts`).
  const recorded = sessionClientKey(person.sessionId, params.clientId, person.tokenVersion, signIn.consentedAt);
  if (provider.sessionClients.due(recorded, now)) {
    const entry = { sessionId: person.sessionId, clientId: params.clientId, profileId: person.profileId, sid, tokenVersion: person.tokenVersion };
    await provider.logouts.recordSessionClient(entry, now).catch((error: unknown) => {
      provider.sessionClients.forget(recorded);
      throw error;
    });
  }
  const code = provider.codes.seal({
    clientId: params.clientId,
    profileId: person.profileId,
    redirectUri: params.redirectUri,
    codeChallenge: params.codeChallenge,
    scopes: params.scopes,
    nonce: params.nonce ?? null,
    authTime: signIn.authTime,
    consentedAt: signIn.consentedAt,
    tokenVersion: person.tokenVersion,
    sid,
    issuedAt: now,
    expiresAt: now + OIDC_CODE_SECONDS * 1000,
  });
  // The person is signed in to the application: the sign-in the metrics count as `oidc`.
  provider.metrics.signIn('oidc', 'success');
  return backToClient(provider, params, { code, state: params.state });
}
