import { OidcScope, type OidcClient } from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import { randomToken } from '../secrets.ts';
import { InvalidClient, InvalidRequest, InvalidScope, UnauthorizedClient, UnsupportedResponseType } from './errors.ts';
import { next, usable } from './flow.ts';
import { checkOnce, errorOutcome, type Outcome, type Provider } from './provider.ts';
import type { AuthorizationParams, ClientRecord, Interaction } from './repository.ts';

/** How long a pending authorization request (the login and consent pages) stays valid. */
const INTERACTION_SECONDS = 10 * 60;

/** The authorization request's parameters (others are ignored, as RFC 6749 §3.1 asks). */
const AUTHORIZATION_PARAMETERS = ['response_type', 'scope', 'state', 'nonce', 'code_challenge', 'code_challenge_method', 'prompt', 'max_age', 'acr_values'];

/**
 * `/oidc/authorize`: the checks run in the order below. The first four verify the client and
 * its redirect URI, and their errors are pages (an unknown client or redirect URI is never
 * redirected to); the errors of the others go back to the client. Then the person signs in and
 * consents, unless a session and a consent exist already.
 */
export async function authorize(provider: Provider, query: Record<string, unknown>, viewer: Viewer | null): Promise<Outcome> {
  const param = (name: string): string | undefined => (typeof query[name] === 'string' ? (query[name] as string) : undefined);
  let back: { redirectUri: string; state: string | undefined } | undefined;
  try {
    // RFC 6749 §3.1: no parameter may be sent twice. Which client or redirect URI was meant is
    // then unknown, so those two get a page; the others go back to the client.
    checkOnce(query, ['client_id', 'redirect_uri'], { allowRedirect: false });
    const client = await checkClient(provider, param('client_id'));
    checkApproved(client);
    const redirectUri = checkRedirectUri(client, param('redirect_uri'));
    const state = param('state');
    back = { redirectUri, state };

    checkOnce(query, AUTHORIZATION_PARAMETERS);
    checkResponseType(param('response_type'));
    const prompt = checkPrompt(param('prompt'));
    const scopes = checkScope(client, param('scope'), prompt);
    const codeChallenge = checkPkce(client, param('code_challenge'), param('code_challenge_method'));
    const maxAge = checkMaxAge(param('max_age'));
    checkLengths({ state, nonce: param('nonce'), acr_values: param('acr_values') });
    const acrValues = param('acr_values')?.split(' ').filter(Boolean);
    const params: AuthorizationParams = { clientId: client.id, redirectUri, scopes, state, nonce: param('nonce'), codeChallenge, prompt, maxAge, ...(acrValues?.length ? { acrValues } : {}) };
    const now = provider.now();
    const interaction: Interaction = {
      id: randomToken(),
      params,
      profileId: null,
      authenticatedAt: null,
      expiresAt: now + INTERACTION_SECONDS * 1000,
      completedAt: null,
    };
    // Stored only when a page has to continue it: a person with a session and a consent goes
    // straight back with a code, and their request needs no row.
    const store = () => provider.repo.insertInteraction(interaction.id, params, now, interaction.expiresAt);
    return await next(provider, interaction, usable(viewer), store);
  } catch (error) {
    return errorOutcome(provider, error, back);
  }
}

// ---- the named checks, in the order they run ------------------------------------------------------

/** checkClient: `client_id` names a registered client. */
async function checkClient(provider: Provider, clientId: string | undefined): Promise<ClientRecord> {
  const client = clientId ? await provider.clients.find(clientId) : null;
  if (!client) throw new InvalidClient('Invalid client_id');
  return client;
}

/** checkApproved: the client's registration was approved by an operator. */
function checkApproved(client: OidcClient): void {
  if (client.status !== 'approved') throw new UnauthorizedClient('Client is not approved');
}

/** checkRedirectUri: `redirect_uri` equals one of the client's registered URIs exactly. */
function checkRedirectUri(client: OidcClient, redirectUri: string | undefined): string {
  if (!redirectUri || !client.redirectUris.includes(redirectUri)) throw new InvalidRequest('Invalid redirect_uri', { allowRedirect: false });
  return redirectUri;
}

/** checkResponseType: only `code`. */
function checkResponseType(responseType: string | undefined): void {
  if (responseType !== 'code') throw new UnsupportedResponseType('response_type must be code');
}

/** checkPrompt: known values; `none` only alone. */
function checkPrompt(prompt: string | undefined): string[] {
  const values = (prompt ?? '').split(' ').filter(Boolean);
  if (values.includes('none') && values.length > 1) throw new InvalidRequest('prompt=none cannot be combined with other values');
  return values;
}

/**
 * checkScope: `openid` is required; every scope must have been granted to the client.
 * `offline_access` is dropped, not refused, unless the client is registered for the
 * `refresh_token` grant and the request asks for the consent page (`prompt=consent`), where the
 * person sees it (OpenID Connect Core §11).
 */
function checkScope(client: ClientRecord, scope: string | undefined, prompt: string[]): OidcScope[] {
  const offline = client.grantTypes.includes('refresh_token') && prompt.includes('consent');
  const scopes = [...new Set((scope ?? '').split(' ').filter(Boolean))].filter((s) => s !== 'offline_access' || offline);
  if (!scopes.includes('openid')) throw new InvalidScope('Scope must include openid');
  for (const s of scopes) {
    const known = OidcScope.safeParse(s);
    if (!known.success || !client.scopes.includes(known.data)) throw new InvalidScope(`Unsupported scope: ${s}`);
  }
  return scopes as OidcScope[];
}

/**
 * checkPkce: a `code_challenge` with method `S256` (`plain` is refused). An S256 challenge is
 * BASE64URL(SHA-256(verifier)) without padding: exactly 43 characters of the base64url alphabet.
 */
function checkPkce(client: ClientRecord, challenge: string | undefined, method: string | undefined): string | null {
  // A confidential client proves itself at the token endpoint: PKCE is accepted from it, not required.
  if (!challenge && client.authMethod !== 'none' && method === undefined) return null;
  if (!challenge) throw new InvalidRequest('code_challenge is required for public clients');
  if (method !== 'S256') throw new InvalidRequest('code_challenge_method must be S256');
  if (!/^[A-Za-z0-9_-]{43}$/.test(challenge)) {
    throw new InvalidRequest('code_challenge must be the 43-character base64url SHA-256 of the code verifier');
  }
  return challenge;
}

/** checkMaxAge: a whole number of seconds, when given. */
function checkMaxAge(maxAge: string | undefined): number | undefined {
  if (maxAge === undefined || maxAge === '') return undefined;
  if (!/^\d{1,10}$/.test(maxAge)) throw new InvalidRequest('max_age must be a whole number of seconds');
  return Number(maxAge);
}

/** checkLengths: `state` and `nonce` are kept until the code is redeemed, so they are bounded. */
function checkLengths(values: Record<string, string | undefined>): void {
  for (const [name, value] of Object.entries(values)) {
    if (value !== undefined && value.length > 500) throw new InvalidRequest(`${name} must be at most 500 characters`);
  }
}
