import { addressKey } from '../accounts/ids.ts';
import { AppError, ClientMetadata, DEVICE_CODE_GRANT, redirectUriProblem, OIDC_SCOPES, type OidcClient, type OidcScope, type RegisterApplicationInput, type RegisteredApplication } from '../../shared/index.ts';
import { hashSecret, randomToken, safeEqual } from '../secrets.ts';
import { InvalidClientMetadata, InvalidRedirectUri, InvalidRequest, InvalidToken, OAuthError } from './errors.ts';
import type { Provider } from './provider.ts';
import type { ClientRecord } from './repository.ts';

/**
 * A new client's id: 24 characters of base64url (144 random bits) that never begin with `-` or
 * `_`, so that it reads as a value, not an option, on a command line (`npm run admin --
 * oidc-client rotate-secret <id>`) and in a shell.
 */
export function newClientId(): string {
  for (;;) {
    const id = randomToken().slice(0, 24);
    if (/^[A-Za-z0-9]/.test(id)) return id;
  }
}

// Dynamic client registration (RFC 7591) at `/oidc/register`, guarded by an operator's one-use
// initial access token (`npm run admin -- oidc-client registration-token`), and its management
// (RFC 7592) at `/oidc/register/{client_id}`, guarded by the registration access token each
// registration answers. A client registered with a token made without `--approved` waits in the
// approval queue, as one an operator adds does.

/** What the registration endpoints answer: a status and a JSON body (none for 204). */
export interface RegistrationAnswer {
  status: 200 | 201 | 204;
  body?: Record<string, unknown>;
}

/** Fields a client never sends back in an update (RFC 7592 §2.2): they are the server's. */
const SERVER_FIELDS = ['registration_access_token', 'registration_client_uri', 'client_secret_expires_at', 'client_id_issued_at'];

const METHODS_WITH_SECRETS = new Set(['client_secret_basic', 'client_secret_post']);

/** `POST /oidc/register`: `bearer` is the initial access token. */
export async function register(provider: Provider, bearer: string | undefined, body: unknown): Promise<RegistrationAnswer> {
  // The token must be live before anything else is looked at (a caller without one learns
  // nothing of the metadata rules, and the sector document, an address the caller names, is
  // never fetched for them); the metadata is checked before the token is used up, so a typing
  // mistake does not cost one.
  const refused = () => new InvalidToken('The initial access token is missing, unknown, used or expired');
  if (!bearer || !(await provider.registry.registrationTokenLive(hashSecret(bearer), provider.now()))) throw refused();
  const metadata = await checkMetadata(body);
  const now = provider.now();
  const id = newClientId();
  const registrationToken = randomToken();
  const secret = METHODS_WITH_SECRETS.has(metadata.token_endpoint_auth_method) ? randomToken() : undefined;
  // The token is used up, the client stored and its secret kept in one transaction: a crash
  // between leaves neither a used token without its client nor a client without its secret.
  const client = await provider.repo.transaction(async (repo) => {
    const grant = await repo.registry.useRegistrationToken(hashSecret(bearer), now);
    if (!grant) throw refused();
    const record = recordOf(id, metadata, { status: grant.approved ? 'approved' : 'pending', approvedByToken: grant.approved, createdAt: now, updatedAt: now, registrationTokenHash: hashSecret(registrationToken) });
    await repo.insertClient(record);
    if (secret) await repo.registry.addSecret(id, hashSecret(secret), now);
    return record;
  });
  provider.clients.forget(id);
  return { status: 201, body: answerOf(provider, client, { secret, registrationToken }) };
}

/**
 * A signed-in person registers an application from the account pages: the same metadata rules
 * as `register`, into the approval queue, without a registration access token (an operator or
 * super user manages it from then on). The secret is answered once. Ten a day per person, 100 per
 * address (`RATE_LIMITS`).
 */
export async function registerForPerson(provider: Provider, input: RegisterApplicationInput, by: { profileId: string; address: string }): Promise<RegisteredApplication> {
  const redirectUris = input.kind === 'device' ? [] : input.redirectUris;
  // A public app coming back to a loopback address or a scheme of its own is a native app (RFC
  // 8252), answered at whatever port its system gives it, as one registered so by itself is.
  const native = input.kind === 'public' && redirectUris.length > 0 && redirectUris.every((uri) => !uri.startsWith('https:') && redirectUriProblem(uri, 'native') === null);
  const applicationType = native ? 'native' : 'web';
  // In a person's words: the address as they typed it, not its place in RFC 7591's metadata.
  for (const uri of redirectUris) {
    const problem = redirectUriProblem(uri, applicationType);
    if (problem) throw new AppError('ValidationError', `The address ${problem}`, { path: 'redirectUris' });
  }
  let metadata: ClientMetadata;
  try {
    metadata = await checkMetadata({
      client_name: input.name,
      redirect_uris: redirectUris,
      application_type: applicationType,
      token_endpoint_auth_method: input.kind === 'confidential' ? 'client_secret_basic' : 'none',
      grant_types: [input.kind === 'device' ? DEVICE_CODE_GRANT : 'authorization_code', ...(input.offline ? (['refresh_token'] as const) : [])],
    });
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    throw new AppError('ValidationError', error.message, { path: error instanceof InvalidRedirectUri ? 'redirectUris' : 'name' });
  }
  // Each waits in the operators' queue: a person (and an address) registers a few a day; a
  // refused form counts for nothing.
  await provider.limits.consume('registerApplicationAccount', by.profileId);
  await provider.limits.consume('registerApplicationAddress', addressKey(by.address));
  const now = provider.now();
  const id = newClientId();
  const client = recordOf(id, metadata, { status: 'pending', approvedByToken: false, createdAt: now, updatedAt: now, registrationTokenHash: null });
  const secret = METHODS_WITH_SECRETS.has(client.authMethod) ? randomToken() : undefined;
  await provider.repo.transaction(async (repo) => {
    await repo.insertClient(client);
    if (secret) await repo.registry.addSecret(id, hashSecret(secret), now);
  });
  provider.clients.forget(id);
  return { clientId: id, ...(secret ? { clientSecret: secret } : {}), status: client.status };
}

/**
 * `GET /oidc/register/{client_id}` (RFC 7592 §2.1): the metadata as stored; the secret is never
 * shown again. RFC 7592 §3 requires `registration_access_token` in the answer, and only its hash
 * is kept: the answer carries the one presented, which the read has just proved live. A read
 * does not rotate it (an update does), so a client that reads and loses the answer keeps its token.
 */
export async function readRegistration(provider: Provider, clientId: string, bearer: string | undefined): Promise<RegistrationAnswer> {
  const client = await registered(provider, clientId, bearer);
  return { status: 200, body: answerOf(provider, client, { registrationToken: bearer }) };
}

/**
 * `PUT /oidc/register/{client_id}` (RFC 7592 §2.2): the body replaces the whole record and
 * carries `client_id`; a `client_secret` sent must be the client's. The registration access token
 * is rotated (the answer carries the new one); a client that moves to a secret gets one, shown once.
 *
 * A client an operator approved goes back to `pending` when the update changes what they were
 * shown (`changesWhatWasReviewed`): otherwise an approval, once given, would cover any redirect
 * URI or scope the application later names. Its keys (`jwks`, `jwks_uri`), contacts and its
 * pages' addresses (`client_uri`, `logo_uri`, `policy_uri`, `tos_uri`, which nothing shows) may
 * change freely. A client its `--approved` token approved keeps its
 * approval: the operator trusted that token's holder with any metadata. RFC 7592 answers no
 * status; the registry's listing shows it.
 */
export async function updateRegistration(provider: Provider, clientId: string, bearer: string | undefined, body: unknown): Promise<RegistrationAnswer> {
  const current = await registered(provider, clientId, bearer);
  const fields = (typeof body === 'object' && body !== null ? body : {}) as Record<string, unknown>;
  if (fields.client_id !== clientId) throw new InvalidRequest('The body must carry the client_id of the client it updates');
  const sent = SERVER_FIELDS.find((name) => name in fields);
  if (sent) throw new InvalidRequest(`The request must not include ${sent}`);
  const now = provider.now();
  if (typeof fields.client_secret === 'string') {
    const live = await provider.registry.liveSecretHashes(clientId, now);
    if (!live.some((hash) => safeEqual(hash, hashSecret(fields.client_secret as string)))) throw new InvalidRequest('client_secret is not the client’s');
  }
  const { client_id: _id, client_secret: _secret, ...rest } = fields;
  const metadata = await checkMetadata(rest);
  const registrationToken = randomToken();
  const client = recordOf(clientId, metadata, { status: current.status, approvedByToken: current.approvedByToken, createdAt: current.createdAt, updatedAt: now, registrationTokenHash: hashSecret(registrationToken) });
  const secret = METHODS_WITH_SECRETS.has(client.authMethod) && !METHODS_WITH_SECRETS.has(current.authMethod) ? randomToken() : undefined;
  await provider.repo.transaction(async (repo) => {
    const replaced = await repo.replaceClient(client, { tokenHash: current.registrationTokenHash ?? '', unapprove: changesWhatWasReviewed(current, client) });
    if (!replaced) throw new InvalidToken('The registration access token is missing or not this client’s');
    if (!METHODS_WITH_SECRETS.has(client.authMethod)) await repo.registry.removeSecrets(clientId);
    if (secret) await repo.registry.addSecret(clientId, hashSecret(secret), now);
  });
  provider.clients.forget(clientId);
  return { status: 200, body: answerOf(provider, client, { secret, registrationToken }) };
}

/**
 * `DELETE /oidc/register/{client_id}` (RFC 7592 §2.3): the client, its consents, codes and tokens
 * go; its credentials stop working. The token is checked by the DELETE itself, as an update
 * checks it by its UPDATE: an update that rotated the token meanwhile leaves nothing to delete,
 * and the answer is the 401 of a wrong token.
 */
export async function deleteRegistration(provider: Provider, clientId: string, bearer: string | undefined): Promise<RegistrationAnswer> {
  const client = await registered(provider, clientId, bearer);
  const deleted = await provider.repo.deleteClient(clientId, { tokenHash: client.registrationTokenHash ?? '' });
  provider.clients.forget(clientId);
  if (!deleted) throw new InvalidToken('The registration access token is missing or not this client’s');
  return { status: 204 };
}

/**
 * What an operator deciding on a client is shown (the registry's view, `OidcClient`, apart from
 * its status and times); its sector, which decides the subjects a pairwise client receives; and
 * how long its refresh tokens live. Typed by that view: a field added to it does not compile
 * until it is named here.
 */
const REVIEWED: Record<Exclude<keyof OidcClient, 'id' | 'status' | 'createdAt' | 'updatedAt'>, true> & Record<'sectorIdentifierUri' | 'refreshAbsoluteSeconds' | 'refreshIdleSeconds', true> = {
  name: true,
  redirectUris: true,
  scopes: true,
  authMethod: true,
  grantTypes: true,
  postLogoutRedirectUris: true,
  backchannelLogoutUri: true,
  backchannelLogoutSessionRequired: true,
  subjectType: true,
  sectorIdentifierUri: true,
  refreshAbsoluteSeconds: true,
  refreshIdleSeconds: true,
};

/** Lists are compared as sets: the order of redirect URIs or scopes decides nothing. */
const comparable = (value: unknown): string => JSON.stringify(Array.isArray(value) ? [...value].sort() : value);

/** Whether an update changes anything an operator approving `before` was shown. */
export function changesWhatWasReviewed(before: ClientRecord, after: ClientRecord): boolean {
  return (Object.keys(REVIEWED) as Array<keyof typeof REVIEWED>).some((field) => comparable(before[field]) !== comparable(after[field]));
}

/** The client a registration access token manages: any failure is the same 401 (RFC 7592 §2). */
async function registered(provider: Provider, clientId: string, bearer: string | undefined): Promise<ClientRecord> {
  const client = await provider.repo.findClient(clientId);
  if (!client?.registrationTokenHash || !bearer || !safeEqual(client.registrationTokenHash, hashSecret(bearer))) {
    throw new InvalidToken('The registration access token is missing or not this client’s');
  }
  return client;
}

/**
 * checkMetadata: the schema's checks (`ClientMetadata`), a redirect address's
 * refusal being `invalid_redirect_uri` and any other `invalid_client_metadata`; then a pairwise
 * client's sector identifier document must list every redirect URI (OpenID Connect Dynamic
 * Client Registration §5). Callers check the caller's credentials first: the sector document
 * is an address the caller names.
 */
async function checkMetadata(body: unknown): Promise<ClientMetadata> {
  // A field sent as null is a field not sent: some registration libraries serialise what they leave out so.
  const fields = typeof body === 'object' && body !== null && !Array.isArray(body) ? Object.fromEntries(Object.entries(body).filter(([, value]) => value !== null)) : body;
  const parsed = ClientMetadata.safeParse(fields);
  if (!parsed.success) {
    const [issue] = parsed.error.issues;
    const field = String(issue?.path[0] ?? '');
    const message = issue?.code === 'custom' ? issue.message : `${issue?.path.join('.') || 'body'}: ${issue?.message ?? 'invalid'}`;
    // RFC 7591 §3.2.2: `invalid_redirect_uri` is about redirection URIs; a sign-out address is other metadata (as node-oidc-provider answers).
    if (field === 'redirect_uris') throw new InvalidRedirectUri(message);
    throw new InvalidClientMetadata(message);
  }
  const metadata = parsed.data;
  if (metadata.subject_type === 'pairwise' && metadata.sector_identifier_uri) await checkSectorDocument(metadata.sector_identifier_uri, metadata.redirect_uris);
  return metadata;
}

/** The most a sector identifier document may hold: a list of redirect URIs, never a download. */
const SECTOR_DOCUMENT_BYTES = 64 * 1024;

/** A body read as text, refused (and the download stopped) past `limit` bytes. */
async function textUpTo(body: ReadableStream<Uint8Array>, limit: number): Promise<string> {
  const chunks: Uint8Array[] = [];
  let size = 0;
  for await (const chunk of body) {
    size += chunk.byteLength;
    if (size > limit) throw new Error('too large');
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

async function checkSectorDocument(uri: string, redirectUris: string[]): Promise<void> {
  let listed: unknown;
  try {
    const res = await fetch(uri, { redirect: 'error', signal: AbortSignal.timeout(5000) });
    if (!res.ok || !res.body) throw new Error(String(res.status));
    listed = JSON.parse(await textUpTo(res.body, SECTOR_DOCUMENT_BYTES));
  } catch {
    throw new InvalidClientMetadata('The sector_identifier_uri could not be read as a JSON array of redirect URIs');
  }
  if (!Array.isArray(listed) || !redirectUris.every((r) => listed.includes(r))) {
    throw new InvalidClientMetadata('The sector_identifier_uri document must list every one of the redirect_uris');
  }
}

/** The scopes a registration asks for: its `scope`, or every scope its grants can use; `openid` always. */
function scopesOf(metadata: ClientMetadata): OidcScope[] {
  const asked = (metadata.scope ?? '').split(' ').filter(Boolean) as OidcScope[];
  const wanted = asked.length > 0 ? asked : (Object.keys(OIDC_SCOPES) as OidcScope[]).filter((s) => s !== 'offline_access' || metadata.grant_types.includes('refresh_token'));
  return [...new Set<OidcScope>(['openid', ...wanted])];
}

function recordOf(id: string, metadata: ClientMetadata, kept: Pick<ClientRecord, 'status' | 'approvedByToken' | 'createdAt' | 'updatedAt' | 'registrationTokenHash'>): ClientRecord {
  const scopes = scopesOf(metadata);
  return {
    id,
    name: metadata.client_name ?? id,
    redirectUris: metadata.redirect_uris,
    scopes,
    authMethod: metadata.token_endpoint_auth_method,
    grantTypes: metadata.grant_types,
    postLogoutRedirectUris: metadata.post_logout_redirect_uris,
    backchannelLogoutUri: metadata.backchannel_logout_uri ?? null,
    backchannelLogoutSessionRequired: metadata.backchannel_logout_session_required,
    subjectType: metadata.subject_type,
    jwks: metadata.jwks ?? null,
    jwksUri: metadata.jwks_uri ?? null,
    sectorIdentifierUri: metadata.sector_identifier_uri ?? null,
    refreshAbsoluteSeconds: metadata.refresh_token_absolute_seconds ?? null,
    refreshIdleSeconds: metadata.refresh_token_idle_seconds ?? null,
    metadata: { ...metadata, scope: scopes.join(' '), response_types: metadata.response_types ?? (metadata.grant_types.includes('authorization_code') ? ['code'] : []) },
    introspectsFor: null,
    ...kept,
  };
}

/** A registration's answer; `registrationToken`: the one just issued, or, for a read, the one presented (RFC 7592 §3 asks for it in every answer). */
function answerOf(provider: Provider, client: ClientRecord, issued: { secret?: string | undefined; registrationToken?: string | undefined }): Record<string, unknown> {
  return {
    client_id: client.id,
    client_id_issued_at: Math.floor(client.createdAt / 1000),
    ...(client.metadata ?? {}),
    ...(issued.secret ? { client_secret: issued.secret } : {}),
    ...(METHODS_WITH_SECRETS.has(client.authMethod) ? { client_secret_expires_at: 0 } : {}),
    ...(issued.registrationToken ? { registration_access_token: issued.registrationToken } : {}),
    registration_client_uri: `${provider.issuer}/oidc/register/${encodeURIComponent(client.id)}`,
  };
}
