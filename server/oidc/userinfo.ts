import { hashSecret } from '../secrets.ts';
import { InsufficientScope, InvalidToken } from './errors.ts';
import { consentCovers, stillHolds, subjectOf, type Provider } from './provider.ts';

/**
 * The tables a UserInfo answer is read from: the token, its client, the consent, the profile
 * and its addresses. A write to any of them by this process (a revocation, a withdrawn consent,
 * a rejected client, a logout of every device, a password reset, a block, a deletion, a merge, a
 * changed name or address) drops every kept answer at once (`KeptReadings`). A new token (an
 * insert into `oidc_tokens`: every sign-in) changes no answer about the others, and drops none.
 */
export const USERINFO_TABLES = ['oidc_tokens', 'oidc_clients', 'oidc_consents', 'profiles', 'profile_emails'] as const;

/**
 * `/oidc/userinfo`: the claims of a live access token; an expired, revoked or orphaned one is
 * `invalid_token` (401), a live one without `openid` (a refresh narrowed it away) `insufficient_scope` (403). Live means also: its client is still approved, its person still
 * consents to the client for its scopes, and may still hold it (`stillHolds`: `canHoldSession`
 * with the `tokenVersion` it was issued under: a password reset, a logout of every device, a
 * block, a deletion or a merge moves it on, and so ends every application's tokens). The answer
 * is kept for up to a second, never past the token's expiry (`KeptReadings`); refusals are not.
 */
export async function userinfo(provider: Provider, accessToken: string): Promise<Record<string, unknown>> {
  const tokenHash = hashSecret(accessToken);
  return provider.userinfoAnswers.get(tokenHash, async () => {
    const found = await provider.repo.findTokenWithClientStatus(tokenHash);
    const invalid = () => new InvalidToken('The access token is invalid, expired or revoked');
    const record = found?.token;
    if (!record || record.revokedAt !== null || record.expiresAt <= provider.now()) throw invalid();
    const client = found.clientStatus === 'approved' ? await provider.clients.find(record.clientId) : null;
    if (!client) throw invalid();
    if (!consentCovers(found.consentedScopes, record.scopes)) throw invalid();
    // The person's standing and their claims from one reading of the profile.
    const person = await provider.accounts.profileWithClaims(record.profileId, record.scopes);
    if (!person || !stillHolds(person.profile, record.tokenVersion)) throw invalid();
    if (!record.scopes.includes('openid')) throw new InsufficientScope('The access token was not granted the openid scope');
    return { value: { sub: subjectOf(provider, client, person.profile.id), ...person.claims }, until: record.expiresAt };
  });
}
