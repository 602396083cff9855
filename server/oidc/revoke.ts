import { hashSecret } from '../secrets.ts';
import type { Provider } from './provider.ts';

/**
 * `/oidc/revoke` (RFC 7009): always succeeds. A `client_id` that is not the token's own
 * revokes nothing.
 */
export async function revoke(p: Provider, form: Record<string, unknown>): Promise<void> {
  const token = typeof form.token === 'string' ? form.token : '';
  if (!token) return;
  const record = await p.repo.findToken(hashSecret(token));
  if (!record) return;
  if (typeof form.client_id === 'string' && form.client_id !== record.clientId) return;
  await p.repo.revokeToken(record.tokenHash, p.now());
}
