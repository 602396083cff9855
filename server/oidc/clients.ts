import { AppError, DEVICE_CODE_GRANT, type DeviceClientInput, type OidcClient, type OidcClientInput, type ResourceServerInput } from '../../shared/index.ts';
import { hashSecret, randomToken } from '../secrets.ts';
import type { Provider } from './provider.ts';
import { listedClient, type ClientRecord } from './repository.ts';

// The client registry, kept by operators (`npm run admin -- oidc-client`) and super users, and by
// applications that register themselves (`registration.ts`). A new client is `pending`: it signs
// nobody in until approved (an initial access token made with `--approved` approves at once).

/** What a client registered by an operator has, beyond its id, name, redirect URIs and scopes: a public client. */
export function publicClientRecord(input: OidcClientInput, now: number): ClientRecord {
  return {
    ...input,
    status: 'pending',
    authMethod: 'none',
    grantTypes: ['authorization_code'],
    postLogoutRedirectUris: [],
    backchannelLogoutUri: null,
    backchannelLogoutSessionRequired: false,
    subjectType: 'public',
    createdAt: now,
    updatedAt: now,
    jwks: null,
    jwksUri: null,
    sectorIdentifierUri: null,
    refreshAbsoluteSeconds: null,
    refreshIdleSeconds: null,
    registrationTokenHash: null,
    approvedByToken: false,
    metadata: null,
    introspectsFor: null,
  };
}

export async function addClient(provider: Provider, input: OidcClientInput): Promise<OidcClient> {
  if (await provider.repo.findClient(input.id)) throw new AppError('ValidationError', `The client ${input.id} already exists`, { path: 'id' });
  const client = publicClientRecord(input, provider.now());
  await provider.repo.insertClient(client);
  provider.clients.forget(client.id);
  return listedClient(client);
}

/** A command line or device client (`DeviceClientInput`): public, the device grant, no redirect URI; pending. */
export async function addDeviceClient(provider: Provider, input: DeviceClientInput): Promise<OidcClient> {
  if (await provider.repo.findClient(input.id)) throw new AppError('ValidationError', `The client ${input.id} already exists`, { path: 'id' });
  const scopes = [...new Set([...input.scopes, ...(input.offline ? (['offline_access'] as const) : [])])];
  const client: ClientRecord = {
    ...publicClientRecord({ id: input.id, name: input.name, redirectUris: [], scopes }, provider.now()),
    grantTypes: [DEVICE_CODE_GRANT, ...(input.offline ? (['refresh_token'] as const) : [])],
  };
  await provider.repo.insertClient(client);
  provider.clients.forget(client.id);
  return listedClient(client);
}

/**
 * A resource server (`ResourceServerInput`): approved at once, with a secret answered once and
 * stored as a hash, sent as `client_secret_basic` at the introspection endpoint. With no grants and no redirect URIs, the token and authorization endpoints refuse
 * it; introspection answers it about the access tokens of the clients it names.
 */
export async function addResourceServer(provider: Provider, input: ResourceServerInput): Promise<{ client: OidcClient; secret: string }> {
  if (await provider.repo.findClient(input.id)) throw new AppError('ValidationError', `The client ${input.id} already exists`, { path: 'id' });
  for (const id of input.forClients) {
    const served = await provider.repo.findClient(id);
    if (!served || served.introspectsFor !== null) throw new AppError('ValidationError', `No application ${id} to serve: name registered clients that sign people in`, { path: 'forClients' });
  }
  const now = provider.now();
  const client: ClientRecord = {
    ...publicClientRecord({ id: input.id, name: input.name, redirectUris: [], scopes: [] }, now),
    status: 'approved',
    authMethod: 'client_secret_basic',
    grantTypes: [],
    introspectsFor: [...new Set(input.forClients)],
  };
  const secret = randomToken();
  await provider.repo.transaction(async (repo) => {
    await repo.insertClient(client);
    await repo.registry.addSecret(client.id, hashSecret(secret), now);
  });
  provider.clients.forget(client.id);
  return { client: listedClient(client), secret };
}

export async function setClientStatus(provider: Provider, id: string, status: OidcClient['status']): Promise<OidcClient> {
  const changed = await provider.repo.setClientStatus(id, status, provider.now());
  provider.clients.forget(id);
  if (!changed) throw new AppError('NotFoundError', `Client Not Found: ${id}`);
  return listedClient((await provider.repo.findClient(id)) as ClientRecord);
}

export function listClients(provider: Provider): Promise<OidcClient[]> {
  return provider.repo.listClients();
}

export async function removeClient(provider: Provider, id: string): Promise<void> {
  const removed = await provider.repo.deleteClient(id);
  provider.clients.forget(id);
  if (!removed) throw new AppError('NotFoundError', `Client Not Found: ${id}`);
}

/**
 * A new secret for a confidential client, answered once and stored as a hash. Its other secrets
 * stay good for `overlapSeconds` more, so the application can move to the new one without a
 * moment where neither works.
 */
export async function rotateSecret(provider: Provider, id: string, overlapSeconds: number): Promise<string> {
  const client = await provider.repo.findClient(id);
  if (!client) throw new AppError('NotFoundError', `Client Not Found: ${id}`);
  if (client.authMethod !== 'client_secret_basic' && client.authMethod !== 'client_secret_post') {
    throw new AppError('ValidationError', `The client ${id} authenticates with ${client.authMethod}, not a secret`, { path: 'id' });
  }
  const secret = randomToken();
  const now = provider.now();
  await provider.registry.rotateSecret(id, hashSecret(secret), now, now + overlapSeconds * 1000);
  return secret;
}

/** An initial access token for the registration endpoint (RFC 7591 §3): one use, answered once, stored as a hash. */
export async function issueRegistrationToken(provider: Provider, opts: { approved: boolean; expiresInSeconds: number }): Promise<{ token: string; expiresAt: number }> {
  const token = randomToken();
  const now = provider.now();
  const expiresAt = now + opts.expiresInSeconds * 1000;
  await provider.registry.addRegistrationToken(hashSecret(token), opts.approved, now, expiresAt);
  return { token, expiresAt };
}
