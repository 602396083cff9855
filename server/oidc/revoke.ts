import { hashSecret } from '../secrets.ts';
import { authenticateClient, type ClientProof } from './client-auth.ts';
import { InvalidClient, InvalidRequest } from './errors.ts';
import type { Provider } from './provider.ts';

/**
 * `/oidc/revoke` (RFC 7009; the interface: "returns 200 in every case"). An access token is
 * revoked alone; a refresh token takes its whole family with it, and the access tokens issued
 * with it. A token that is unknown (or was never issued), none at all from a request naming no
 * client, and another client's token (left as it is) change nothing and are answered 200, as the
 * interface has it (node-oidc-provider refuses the last two, `invalid_request`, as RFC 7009 §2.1
 * lets it). Who may revoke a token:
 *
 * - the client it was issued to, proving itself as at the token endpoint (a failed proof is
 *   `invalid_client`, 401, with a Basic challenge when it tried Basic; a client that proves
 *   itself and sends no token is `invalid_request`);
 * - anyone presenting it without naming a client, when its client is public: such a client has
 *   no credentials, its `client_id` proves nothing the token does not, and the interface has a
 *   revocation request carry `token` alone. A confidential client's token presented so is
 *   `invalid_client`: its client must prove itself (§2.1), and is told the token still lives,
 *   where a 200 would tell it the token was gone.
 */
export async function revoke(provider: Provider, form: Record<string, unknown>, proof: Omit<ClientProof, 'form'>): Promise<void> {
  const named = (await authenticateClient(provider, { form, ...proof }))?.client;
  const token = typeof form.token === 'string' ? form.token : '';
  if (!token) {
    if (named) throw new InvalidRequest('token is required');
    return;
  }
  const hash = hashSecret(token);
  const access = await provider.repo.findToken(hash);
  const refresh = access ? undefined : await provider.refreshTokens.find(hash);
  const owner = access?.clientId ?? refresh?.clientId;
  if (owner === undefined) return;
  if (named) {
    if (named.id !== owner) return;
  } else {
    const client = await provider.clients.find(owner);
    if (!client) return;
    if (client.authMethod !== 'none') throw new InvalidClient('This token\'s client must authenticate to revoke it');
  }
  const now = provider.now();
  if (access) await provider.repo.revokeToken(access.tokenHash, now);
  else if (refresh) await provider.refreshTokens.revokeFamily(refresh.familyId, now);
}
