import { hashSecret } from '../secrets.ts';
import { authenticateClient, CLIENT_PARAMETERS, type ClientProof } from './client-auth.ts';
import { InvalidClient, InvalidRequest } from './errors.ts';
import { checkOnce, consentCovers, personWithClaims, stillHolds, subjectOf, type Provider } from './provider.ts';
import type { ClientRecord } from './repository.ts';

const INTROSPECTION_PARAMETERS = ['token', 'token_type_hint', ...CLIENT_PARAMETERS];

/** What introspection answers for anything not active, or not the caller's: this, and nothing else (RFC 7662 §2.2). */
const INACTIVE = { active: false } as const;

/**
 * `POST /oidc/introspect` (RFC 7662): for a client that authenticates (a secret or an assertion;
 * a public client cannot, and gets `invalid_client`), whether a token issued to it is active, and
 * what it grants; for a resource server, also the access tokens of the clients it serves. Active means what the UserInfo endpoint and the refresh grant check: not
 * expired, revoked or rotated, its client approved, its person's consent and standing unchanged.
 */
export async function introspect(provider: Provider, form: Record<string, unknown>, proof: Omit<ClientProof, 'form'>): Promise<Record<string, unknown>> {
  checkOnce(form, INTROSPECTION_PARAMETERS);
  const authenticated = await authenticateClient(provider, { form, ...proof });
  if (!authenticated || authenticated.method === 'none') throw new InvalidClient('Introspection needs client authentication (a secret or a signed assertion)');
  const { client } = authenticated;
  if (client.status !== 'approved') throw new InvalidClient('Client is not approved');
  const token = typeof form.token === 'string' ? form.token : '';
  if (token === '') throw new InvalidRequest('token is required');
  const hash = hashSecret(token);
  const lookups = form.token_type_hint === 'refresh_token' ? [refreshToken, accessToken] : [accessToken, refreshToken];
  for (const lookup of lookups) {
    const answer = await lookup(provider, client, hash);
    if (answer) return answer;
  }
  return INACTIVE;
}

/**
 * An access token: the caller's own, or, for a resource server, one issued to a client it
 * serves (answered as that client sees it: its `client_id`, its `sub`, its `aud`).
 */
async function accessToken(provider: Provider, caller: ClientRecord, hash: string): Promise<Record<string, unknown> | null> {
  const found = await provider.repo.findTokenWithClientStatus(hash);
  if (!found) return null;
  const { token } = found;
  const mine = token.clientId === caller.id || (caller.introspectsFor?.includes(token.clientId) ?? false);
  if (!mine || token.revokedAt !== null || token.expiresAt <= provider.now()) return INACTIVE;
  if (!consentCovers(found.consentedScopes, token.scopes)) return INACTIVE;
  const client = token.clientId === caller.id ? caller : await provider.clients.find(token.clientId);
  if (!client || client.status !== 'approved') return INACTIVE;
  const person = await personWithClaims(provider, token.profileId, token.scopes);
  if (!person || !stillHolds(person.profile, token.tokenVersion)) return INACTIVE;
  return { active: true, token_type: 'Bearer', scope: token.scopes.join(' '), client_id: client.id, sub: subjectOf(provider, client, token.profileId), aud: client.id, iss: provider.issuer, iat: Math.floor(token.createdAt / 1000), exp: Math.floor(token.expiresAt / 1000) };
}

/** A refresh token: only ever its own client's (a resource server sees access tokens alone). */
async function refreshToken(provider: Provider, client: ClientRecord, hash: string): Promise<Record<string, unknown> | null> {
  const record = await provider.refreshTokens.find(hash);
  if (!record) return null;
  const now = provider.now();
  // A token of a revoked family is refused at its use (`checkRefreshToken`), so it is inactive here too.
  if (record.clientId !== client.id || record.revokedAt !== null || record.usedAt !== null || record.familyRevoked || record.expiresAt <= now || record.familyExpiresAt <= now) return INACTIVE;
  const person = await personWithClaims(provider, record.profileId, record.scopes);
  const consented = await provider.repo.findConsent(record.profileId, record.clientId);
  if (!person || !stillHolds(person.profile, record.tokenVersion) || !consentCovers(consented?.scopes ?? null, record.scopes)) return INACTIVE;
  // No `token_type`: RFC 7662 §2.2 means the access token's type (RFC 6749 §5.1), which a refresh token has not.
  return { active: true, scope: record.scopes.join(' '), client_id: client.id, sub: subjectOf(provider, client, record.profileId), iss: provider.issuer, exp: Math.floor(record.expiresAt / 1000), iat: Math.floor(record.createdAt / 1000) };
}
