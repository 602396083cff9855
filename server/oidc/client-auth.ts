import { createLocalJWKSet, createRemoteJWKSet, decodeJwt, jwtVerify, type JWTVerifyGetKey } from 'jose';
import { AssertionAlgorithm, type OidcAuthMethod } from '../../shared/index.ts';
import { hashSecret, safeEqual } from '../secrets.ts';
import { InvalidClient, InvalidRequest } from './errors.ts';
import { sent, type Provider } from './provider.ts';
import type { ClientRecord } from './repository.ts';

/** `client_assertion_type` of a signed assertion (RFC 7523 §2.2). */
export const JWT_BEARER = 'urn:ietf:params:oauth:client-assertion-type:jwt-bearer';
/** The form parameters a client may prove itself with, besides the Authorization header. */
export const CLIENT_PARAMETERS = ['client_id', 'client_secret', 'client_assertion', 'client_assertion_type'] as const;
/** How far ahead an assertion's `exp` may be: assertions are meant for one request, made just before it. */
const ASSERTION_MAX_SECONDS = 10 * 60;
/** The algorithms an assertion may be signed with (asymmetric only: a client's keys are public ones). */
export const ASSERTION_ALGORITHMS = AssertionAlgorithm.options;

/** What a request to the token, introspection or revocation endpoint carries to prove its client. */
export interface ClientProof {
  form: Record<string, unknown>;
  /** The Authorization header, for `client_secret_basic`. */
  authorization: string | undefined;
  /** The endpoint's own URL: an assertion's `aud` may name it, the issuer or the token endpoint. */
  endpoint: string;
}

/**
 * The two ways of sending a client's secret. Either is accepted from a client registered with
 * the other: RFC 6749 §2.3.1 has a server support Basic for every client with a password, and
 * the secret proves the same either way (node-oidc-provider accepts both alike).
 */
const SECRET_METHODS: ReadonlySet<OidcAuthMethod> = new Set(['client_secret_basic', 'client_secret_post']);

/** Remote key sets by client id and address, each fetched and cached by jose as its keys rotate. */
const remoteKeySets = new Map<string, JWTVerifyGetKey>();

/** The method a request uses, and the client id and secret or assertion it carries. */
function presented(proof: ClientProof): { method: OidcAuthMethod; clientId: string | undefined; secret?: string; assertion?: string } {
  const field = (name: string) => sent(proof.form, name);
  const basic = /^Basic\s+(.+)$/i.exec(proof.authorization ?? '');
  const methods = [basic, field('client_secret'), field('client_assertion')].filter((m) => m !== undefined && m !== null);
  // RFC 6749 §2.3: a client uses one method per request.
  if (methods.length > 1) throw new InvalidRequest('Use one way of client authentication per request');
  if (basic?.[1]) {
    const decoded = Buffer.from(basic[1], 'base64').toString('utf8');
    const colon = decoded.indexOf(':');
    if (colon < 0) throw new InvalidClient('Invalid client authentication', { basic: true });
    // RFC 6749 §2.3.1: both parts are form-encoded before they are joined.
    const [clientId, secret] = [decoded.slice(0, colon), decoded.slice(colon + 1)].map(formDecoded);
    if (clientId === undefined || secret === undefined) throw new InvalidClient('Invalid client authentication', { basic: true });
    if (field('client_id') !== undefined && field('client_id') !== clientId) throw new InvalidRequest('client_id differs from the authenticated client');
    return { method: 'client_secret_basic', clientId, secret };
  }
  const assertion = field('client_assertion');
  if (assertion !== undefined) {
    if (field('client_assertion_type') !== JWT_BEARER) throw new InvalidRequest(`client_assertion_type must be ${JWT_BEARER}`);
    let subject: unknown;
    try {
      subject = decodeJwt(assertion).sub;
    } catch {
      throw new InvalidClient('Invalid client assertion');
    }
    if (typeof subject !== 'string') throw new InvalidClient('Invalid client assertion');
    if (field('client_id') !== undefined && field('client_id') !== subject) throw new InvalidClient('client_id differs from the assertion’s subject');
    return { method: 'private_key_jwt', clientId: subject, assertion };
  }
  const secret = field('client_secret');
  if (secret !== undefined) return { method: 'client_secret_post', clientId: field('client_id'), secret };
  return { method: 'none', clientId: field('client_id') };
}

function formDecoded(part: string): string | undefined {
  try {
    return decodeURIComponent(part.replaceAll('+', ' '));
  } catch {
    return undefined;
  }
}

/**
 * authenticateClient: the client the request names, proved the way it registered
 * (`token_endpoint_auth_method`): nothing more for a public client (`none`), a live secret
 * (`client_secret_basic` or `client_secret_post`, either way for either; compared by hash, a
 * rotated one within its overlap), or an assertion signed by one of its keys (`private_key_jwt`: `iss` and `sub` the
 * client, `aud` the issuer or the endpoint, `exp` within ten minutes, `jti` never seen before).
 * Any failure is `invalid_client` (401), with a `Basic` challenge when the header was used.
 * Returns null when the request names no client at all.
 */
export async function authenticateClient(provider: Provider, proof: ClientProof): Promise<{ client: ClientRecord; method: OidcAuthMethod } | null> {
  const used = presented(proof);
  const basic = used.method === 'client_secret_basic';
  if (used.clientId === undefined || used.clientId === '') {
    if (used.method === 'none') return null;
    throw new InvalidClient('Invalid client authentication', { basic });
  }
  const client = await provider.clients.find(used.clientId);
  if (!client) throw new InvalidClient('Invalid client_id', { basic });
  if (client.authMethod !== used.method && !(SECRET_METHODS.has(client.authMethod) && SECRET_METHODS.has(used.method))) {
    throw new InvalidClient(client.authMethod === 'none' ? 'This client is public: send client_id only' : `This client authenticates with ${client.authMethod}`, { basic });
  }
  if (used.secret !== undefined) await checkSecret(provider, client, used.secret, basic);
  if (used.assertion !== undefined) await checkAssertion(provider, client, used.assertion, proof.endpoint);
  return { client, method: used.method };
}

/** checkSecret: the secret's hash is one of the client's live ones (each compared in constant time). */
async function checkSecret(provider: Provider, client: ClientRecord, secret: string, basic: boolean): Promise<void> {
  const hash = hashSecret(secret);
  const live = await provider.registry.liveSecretHashes(client.id, provider.now());
  if (!live.some((known) => safeEqual(known, hash))) throw new InvalidClient('Invalid client authentication', { basic });
}

/** checkAssertion: RFC 7523 §3, with a short `exp` and a single-use `jti`. */
async function checkAssertion(provider: Provider, client: ClientRecord, assertion: string, endpoint: string): Promise<void> {
  const nowSeconds = Math.floor(provider.now() / 1000);
  let payload;
  try {
    // A key set that cannot be read (a registered set jose refuses, an address that does not
    // answer) fails the assertion like a wrong signature: `invalid_client`, never a 500.
    const keys = keySetOf(client);
    if (!keys) throw new Error('no keys');
    ({ payload } = await jwtVerify(assertion, keys, {
      issuer: client.id,
      subject: client.id,
      audience: [...new Set([provider.issuer, `${provider.issuer}/oidc/token`, endpoint])],
      // The one a client registered (`token_endpoint_auth_signing_alg`) is the one it signs with:
      // Dynamic Client Registration §2, any other refused.
      // (A value stored before it was checked, that no assertion could be signed with, is no rule.)
      algorithms: registeredAlgorithm(client) ?? ASSERTION_ALGORITHMS,
      requiredClaims: ['exp', 'jti'],
      currentDate: new Date(nowSeconds * 1000),
      clockTolerance: 5,
    }));
  } catch {
    throw new InvalidClient('Invalid client assertion');
  }
  const exp = payload.exp as number;
  if (exp - nowSeconds > ASSERTION_MAX_SECONDS) throw new InvalidClient('The client assertion lives too long (at most 10 minutes)');
  const jti = payload.jti as string;
  if (jti.length === 0 || jti.length > 200) throw new InvalidClient('Invalid client assertion');
  if (!(await provider.registry.recordAssertion(client.id, jti, exp * 1000))) throw new InvalidClient('The client assertion was used before');
}

/** The algorithm the client registered for its assertions, when it is one this provider verifies. */
function registeredAlgorithm(client: ClientRecord): string[] | undefined {
  const parsed = AssertionAlgorithm.safeParse(client.metadata?.token_endpoint_auth_signing_alg);
  return parsed.success ? [parsed.data] : undefined;
}

function keySetOf(client: ClientRecord): JWTVerifyGetKey | null {
  if (client.jwks) return createLocalJWKSet(client.jwks as Parameters<typeof createLocalJWKSet>[0]);
  if (!client.jwksUri) return null;
  const key = `${client.id} ${client.jwksUri}`;
  let set = remoteKeySets.get(key);
  if (!set) {
    set = createRemoteJWKSet(new URL(client.jwksUri), { timeoutDuration: 5000 });
    if (remoteKeySets.size > 1000) remoteKeySets.clear();
    remoteKeySets.set(key, set);
  }
  return set;
}

/**
 * approvedClient: the client proves itself (`authenticateClient`: a public one by `client_id`
 * alone), and its registration is approved (`invalid_client`, 401). The token endpoint's and
 * the device authorization endpoint's first check.
 */
export async function approvedClient(provider: Provider, proof: ClientProof): Promise<ClientRecord> {
  const authenticated = await authenticateClient(provider, proof);
  if (!authenticated) throw new InvalidClient('Invalid client_id');
  if (authenticated.client.status !== 'approved') throw new InvalidClient('Client is not approved');
  return authenticated.client;
}
