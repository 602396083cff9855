import { AppError, type OidcClient, type OidcClientInput } from '../../shared/index.ts';
import type { Provider } from './provider.ts';

// The client registry, kept by operators (`npm run admin -- oidc-client`) and super users. A new
// client is `pending`: it signs nobody in until approved.

export async function addClient(p: Provider, input: OidcClientInput): Promise<OidcClient> {
  const now = p.now();
  if (await p.repo.findClient(input.id)) throw new AppError('ValidationError', `The client ${input.id} already exists`, { path: 'id' });
  const client: OidcClient = { ...input, status: 'pending', createdAt: now, updatedAt: now };
  await p.repo.insertClient(client);
  p.clients.forget(client.id);
  return client;
}

export async function setClientStatus(p: Provider, id: string, status: OidcClient['status']): Promise<OidcClient> {
  const changed = await p.repo.setClientStatus(id, status, p.now());
  p.clients.forget(id);
  if (!changed) throw new AppError('NotFoundError', `Client Not Found: ${id}`);
  return (await p.repo.findClient(id)) as OidcClient;
}

export function listClients(p: Provider): Promise<OidcClient[]> {
  return p.repo.listClients();
}

export async function removeClient(p: Provider, id: string): Promise<void> {
  const removed = await p.repo.deleteClient(id);
  p.clients.forget(id);
  if (!removed) throw new AppError('NotFoundError', `Client Not Found: ${id}`);
}
