import { hashSecret } from '../secrets.ts';
import { InvalidToken } from './errors.ts';
import { consentCovers, stillHolds, type Provider } from './provider.ts';

/**
 * `/oidc/userinfo`: the claims of a live access token; an expired, revoked or orphaned one is
 * `invalid_token` (401). Live means also: its client is still approved, its person still
 * consents to the client for its scopes, and may still hold it (`stillHolds`: `canHoldSession`
 * with the `tokenVersion` it was issued under: a password reset, a logout of every device, a
 * block, a deletion or a merge moves it on, and so ends every application's tokens).
 */
export async function userinfo(p: Provider, accessToken: string): Promise<Record<string, unknown>> {
  const found = await p.repo.findTokenWithClientStatus(hashSecret(accessToken));
  const invalid = () => new InvalidToken('The access token is invalid, expired or revoked');
  const record = found?.token;
  if (!record || record.revokedAt !== null || record.expiresAt <= p.now()) throw invalid();
  if (found.clientStatus !== 'approved') throw invalid();
  if (!consentCovers(found.consentedScopes, record.scopes)) throw invalid();
  // The person's standing and their claims from one reading of the profile.
  const person = await p.accounts.profileWithClaims(record.profileId, record.scopes);
  if (!person || !stillHolds(person.profile, record.tokenVersion)) throw invalid();
  return { sub: person.profile.id, ...person.claims };
}
