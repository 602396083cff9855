import { hashSecret } from '../secrets.ts';
import { authenticateClient, type ClientProof } from './client-auth.ts';
import { InvalidClient, InvalidRequest } from './errors.ts';
import type { Provider } from './provider.ts';

/**
 * `/oidc/revoke` (RFC 7009). An access token is revoked alone; a refresh token takes its whole
 * family with it, and the access tokens issued with it. A token that is unknown (or was never
 * issued) changes nothing and is answered 200 (§2.2). Who may revoke a token:
 *
 * - the client it was issued to, proving itself as at the token endpoint (a failed proof is
 *   `invalid_client`, 401, with a Basic challenge when it tried Basic);
 * - anyone presenting it without naming a client, when its client is public: such a client has
 *   no credentials, its `client_id` proves nothing the token does not, and the interface has a
 *   revocation request carry `token` alone. A confidential client's token presented so is
 *   `invalid_client`: its client must prove itself (§2.1), and is told the token still lives;
 * - never another client: its request is refused, `invalid_request`, and the token left as it
 *   is (§2.1: "the request is refused and the client is informed of the error"), as
 *   node-oidc-provider answers.
 */
export async function revoke(provider: Provider, form: Record<string, unknown>, proof: Omit<ClientProof, 'form'>): Promise<void> {
  const named = (await authenticateClient(provider, { form, ...proof }))?.client;
  const token = typeof form.token === 'string' ? form.token : '';
  if (!token) throw new InvalidRequest('token is required');
  const hash = hashSecret(token);
  const access = await provider.repo.findToken(hash);
  const refresh = access ? undefined : await provider.refreshTokens.find(hash);
  const owner = access?.clientId ?? refresh?.clientId;
  if (owner === undefined) return;
  if (named) {
    if (named.id !== owner) throw new InvalidRequest('This token was not issued to this client');
  } else {
    const client = await provider.clients.find(owner);
    if (!client) return;
    if (client.authMethod !== 'none') throw new InvalidClient('This token\'s client must authenticate to revoke it');
  }
  const now = provider.now();
  if (access) await provider.repo.revokeToken(access.tokenHash, now);
  else if (refresh) await provider.refreshTokens.revokeFamily(refresh.familyId, now);
}
