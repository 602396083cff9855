import { hashSecret } from '../secrets.ts';
import { authenticateClient, type ClientProof } from './client-auth.ts';
import { InvalidRequest } from './errors.ts';
import type { Provider } from './provider.ts';

/**
 * `/oidc/revoke` (RFC 7009): revokes only what the client proves is its own. A client that fails
 * to prove itself is `invalid_client` (401, with a Basic challenge when it tried Basic), as at
 * the token endpoint; a request naming no client at all changes nothing and is answered 200, as
 * is a token that is unknown, or another client's (left as it is). An access token is revoked
 * alone; a refresh token takes its whole family with it, and the access tokens issued with it.
 */
export async function revoke(provider: Provider, form: Record<string, unknown>, proof: Omit<ClientProof, 'form'>): Promise<void> {
  const client = (await authenticateClient(provider, { form, ...proof }))?.client;
  if (!client) return;
  const token = typeof form.token === 'string' ? form.token : '';
  if (!token) throw new InvalidRequest('token is required');
  const hash = hashSecret(token);
  const now = provider.now();
  const access = await provider.repo.findToken(hash);
  if (access) {
    if (access.clientId === client.id) await provider.repo.revokeToken(access.tokenHash, now);
    return;
  }
  const refresh = await provider.refreshTokens.find(hash);
  if (refresh && refresh.clientId === client.id) await provider.refreshTokens.revokeFamily(refresh.familyId, now);
}
