import { AppError, type OidcConsent, type OidcScope } from '../../shared/index.ts';
import type { Provider } from './provider.ts';

/**
 * The applications a person has let sign them in: with which scopes, what kind of application
 * each is (a server-side one holding a secret or keys, or a browser or native app), whether it
 * holds a refresh token now (it may act while the person is away), and when it last got tokens.
 */
export async function consents(provider: Provider, profileId: string): Promise<OidcConsent[]> {
  const [given, offline] = await Promise.all([provider.repo.consentsOf(profileId), provider.refreshTokens.liveFamilies(profileId, provider.now())]);
  const holding = new Set(offline.map((family) => family.clientId));
  return given.map(({ authMethod, ...consent }) => ({
    ...consent,
    kind: authMethod === 'none' ? 'public' : 'confidential',
    offline: holding.has(consent.clientId),
    tcdate: consent.createdAt,
    sharedData: consent.scopes.map((scope) => (SHARED_DATA as Record<string, string | undefined>)[scope] ?? scope),
  }));
}

/**
 * What each scope shares, as the real platform's web client lists it under "Third-party apps &
 * services" (`app/profile/password-security/ConnectedAppsList.js`, which joins them with commas).
 */
const SHARED_DATA: Record<OidcScope, string> = {
  openid: 'OpenReview ID',
  profile: 'Name',
  email: 'Email',
  offline_access: 'Access while you are away',
};

/**
 * Withdrawing a consent ends what it allowed: the person's tokens and unused codes at that
 * client. The client is told by back-channel logout for each browser session it signed the
 * person in through (`back-channel.ts` finds them); when none is left (they expired) but it held
 * a refresh token, so could act while the person was away, `offlineNotice` (a logout token with
 * `sub` alone) is queued in the same transaction.
 */
export async function withdrawConsent(provider: Provider, profileId: string, clientId: string, offlineNotice: { uri: string; logoutToken: string } | null = null): Promise<void> {
  const now = provider.now();
  await provider.repo.transaction(async (repo) => {
    if (!(await repo.deleteConsent(profileId, clientId))) throw new AppError('NotFoundError', `Consent Not Found: ${clientId}`);
    const offline = offlineNotice !== null && (await repo.refreshTokens.liveFamilies(profileId, now)).some((family) => family.clientId === clientId);
    await repo.revokeGrants(profileId, clientId, now);
    if (offline && !(await repo.logouts.signedInThrough(profileId, clientId))) await repo.logouts.queue(clientId, offlineNotice, now);
  });
}
