import { hashSecret } from '../secrets.ts';
import { authenticateClient, type ClientProof } from './client-auth.ts';
import { OAuthError } from './errors.ts';
import type { Provider } from './provider.ts';

/**
 * `/oidc/revoke` (RFC 7009): always succeeds, and revokes only what the client proves is its
 * own. A request naming no client, or one whose client fails to prove itself, changes nothing
 * (the answer is still 200, as the spec asks). An access token is revoked alone; a refresh
 * token takes its whole family with it, and the access tokens issued with it.
 */
export async function revoke(provider: Provider, form: Record<string, unknown>, proof: Omit<ClientProof, 'form'>): Promise<void> {
  const token = typeof form.token === 'string' ? form.token : '';
  if (!token) return;
  let client;
  try {
    client = (await authenticateClient(provider, { form, ...proof }))?.client;
  } catch (error) {
    if (error instanceof OAuthError) return;
    throw error;
  }
  if (!client) return;
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
