import { AppError, OidcScope, type OidcClient } from '../../shared/index.ts';
import { addressKey } from '../accounts/ids.ts';
import type { Viewer } from '../accounts/viewer.ts';
import { hashSecret, randomToken } from '../secrets.ts';
import { InvalidClient, InvalidRequest, InvalidRequestObject, InvalidRequestUri, InvalidScope, RequestNotSupported, RequestUriNotSupported, TemporarilyUnavailable, UnauthorizedClient, UnsupportedResponseType } from './errors.ts';
import { next, usable } from './flow.ts';
import { checkIdTokenHint } from './id-token-hint.ts';
import { checkOnce, errorOutcome, sent, STATE_MAX, type Outcome, type Provider, type ResponseMode } from './provider.ts';
import type { AuthorizationParams, ClientRecord, Interaction } from './repository.ts';

/** How long a pending authorization request (the login and consent pages) stays valid. */
const INTERACTION_SECONDS = 10 * 60;

/** The authorization request's parameters besides `client_id` and `redirect_uri` (others are ignored, as RFC 6749 §3.1 asks). */
export const AUTHORIZATION_PARAMETERS = [
  'response_type',
  'response_mode',
  'scope',
  'state',
  'nonce',
  'code_challenge',
  'code_challenge_method',
  'prompt',
  'max_age',
  'acr_values',
  'id_token_hint',
  'login_hint',
  'request',
  'request_uri',
] as const;

/** The longest `nonce`, `acr_values` and `login_hint`: the nonce is sealed into the code, the others kept with a pending request. */
const VALUE_MAX = 500;

/** `prompt`'s values (OpenID Connect Core §3.1.2.1). `select_account` shows the login page, where a person chooses the account. */
const PROMPTS = new Set(['none', 'login', 'consent', 'select_account']);

/** A pushed request's `request_uri` (RFC 9126 §2.2): this prefix, then a random id. */
export const REQUEST_URI_PREFIX = 'urn:ietf:params:oauth:request_uri:';

/** Where errors of an authorization request go, once its client and redirect URI are verified. */
type Back = Pick<AuthorizationParams, 'redirectUri' | 'state' | 'responseMode'>;

/**
 * `/oidc/authorize`: the checks run in the order below. The first four verify the client and
 * its redirect URI, and their errors are pages (an unknown client or redirect URI is never
 * redirected to); the errors of the others go back to the client. Then the person signs in and
 * consents, unless a session and a consent exist already.
 *
 * A request pushed beforehand (RFC 9126, `pushed.ts`) is named by `request_uri` and `client_id`
 * alone: its parameters are used up and checked again here, as if sent, and any other sent
 * beside them is ignored. A client registered with `require_pushed_authorization_requests` is
 * refused any other way.
 */
export async function authorize(provider: Provider, query: Record<string, unknown>, viewer: Viewer | null, address: string): Promise<Outcome> {
  let back: Back | undefined;
  try {
    // RFC 6749 §3.1: no parameter may be sent twice. Which client or redirect URI was meant is
    // then unknown, so those two get a page; the others go back to the client.
    checkOnce(query, ['client_id', 'redirect_uri', 'request_uri'], { allowRedirect: false });
    const client = await checkClient(provider, sent(query, 'client_id'));
    const onBack = (to: Back) => (back = to);
    const requestUri = sent(query, 'request_uri');
    const pushed = requestUri !== undefined;
    const given = pushed ? await takePushed(provider, client, query, requestUri, onBack) : query;
    const params = await checkRequest(provider, client, given, { pushed, onBack });
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
    // straight back with a code, and their request needs no row. Each row lives ten minutes, so
    // an address stores a thousand in fifteen minutes (past it, `temporarily_unavailable` to the client).
    const store = async () => {
      await provider.limits.consume('authorizationRequestAddress', addressKey(address)).catch((error: unknown) => {
        throw error instanceof AppError && error.name === 'TooManyError' ? new TemporarilyUnavailable('Too many sign-in requests from this address; try again in a few minutes') : error;
      });
      await provider.repo.insertInteraction(interaction.id, params, now, interaction.expiresAt);
    };
    return await next(provider, interaction, usable(viewer), store);
  } catch (error) {
    return errorOutcome(provider, error, back);
  }
}

/**
 * The parameters of the pushed request `request_uri` names, used up: this client's, within its
 * minute, once (RFC 9126 §4 asks for one use; a reload of the authorization request after it
 * finds it gone, where node-oidc-provider allows reloads until the answer). Errors are pages,
 * unless the query carries a redirect URI of the client to send them to, as node-oidc-provider
 * does; once found, they go to the pushed request's.
 */
async function takePushed(provider: Provider, client: ClientRecord, query: Record<string, unknown>, requestUri: string, onBack: (back: Back) => void): Promise<Record<string, unknown>> {
  const fromQuery = verifiedBack(client, query);
  if (fromQuery) onBack(fromQuery);
  if (!requestUri.startsWith(REQUEST_URI_PREFIX)) throw new RequestUriNotSupported('Only request_uri values from the pushed authorization request endpoint are supported');
  const pushed = await provider.repo.pushed.take(hashSecret(requestUri), client.id, provider.now());
  if (!pushed) throw new InvalidRequestUri('request_uri is invalid, expired, or was already used');
  // From here, errors go where the pushed request asked, once it is checked to be the client's.
  const fromPushed = verifiedBack(client, pushed);
  if (fromPushed) onBack(fromPushed);
  const responseType = sent(query, 'response_type');
  if (responseType !== undefined && responseType !== sent(pushed, 'response_type')) throw new InvalidRequestObject('response_type must equal the pushed request’s');
  return { ...pushed, client_id: client.id };
}

/** Where a request's errors may go: its `redirect_uri`, when it is one of an approved client's, with its `state`. */
function verifiedBack(client: ClientRecord, values: Record<string, unknown>): Back | undefined {
  const redirectUri = sent(values, 'redirect_uri');
  if (client.status !== 'approved' || redirectUri === undefined || !registeredRedirectUri(client, redirectUri)) return undefined;
  return { redirectUri, state: sent(values, 'state') };
}

/**
 * The authorization request's checks, after its client is found, up to its parameters as kept:
 * here and at the pushed authorization request endpoint (`pushed`: the request came through it),
 * where every error is JSON. `onBack` learns where errors may go as soon as that is known.
 */
export async function checkRequest(
  provider: Provider,
  client: ClientRecord,
  query: Record<string, unknown>,
  opts: { pushed: boolean; onBack?: (back: Back) => void },
): Promise<AuthorizationParams> {
  const param = (name: string): string | undefined => sent(query, name);
  const onBack = opts.onBack ?? (() => undefined);
  checkApproved(client);
  const redirectUri = checkRedirectUri(client, param('redirect_uri'));
  // An empty `state` is no state: it is not sent back (as node-oidc-provider does).
  const state = param('state');
  onBack({ redirectUri, state });
  // RFC 9126 §6: a client registered so takes no request that was not pushed.
  if (!opts.pushed && client.metadata?.require_pushed_authorization_requests === true) throw new InvalidRequest('Pushed Authorization Request must be used');

  // From here on, errors go back the way the client asked for (until then, in the query; a
  // response_mode sent twice is read as none, and refused next).
  const responseMode = checkResponseMode(param('response_mode'));
  onBack({ redirectUri, state, ...(responseMode ? { responseMode } : {}) });
  checkOnce(query, AUTHORIZATION_PARAMETERS);
  checkRequestObjects(param('request'), param('request_uri'));
  checkResponseType(param('response_type'));
  checkCodeGrant(client);
  const prompt = checkPrompt(param('prompt'));
  const scopes = checkScope(client, param('scope'), prompt);
  const codeChallenge = checkPkce(client, param('code_challenge'), param('code_challenge_method'));
  const maxAge = checkMaxAge(param('max_age'));
  checkLengths([
    ['state', state, STATE_MAX],
    ['nonce', param('nonce'), VALUE_MAX],
    ['acr_values', param('acr_values'), VALUE_MAX],
    ['login_hint', param('login_hint'), VALUE_MAX],
  ]);
  const acrValues = param('acr_values')?.split(' ').filter(Boolean);
  // Most requests send no hint: no await for them, on the sign-in's hot path.
  const hintSubject = param('id_token_hint') ? await checkHintFor(provider, client, param('id_token_hint')) : undefined;
  return {
    clientId: client.id,
    redirectUri,
    scopes,
    state,
    nonce: param('nonce'),
    codeChallenge,
    prompt,
    maxAge,
    ...(acrValues?.length ? { acrValues } : {}),
    ...(hintSubject ? { hintSubject } : {}),
    ...(param('login_hint') ? { loginHint: param('login_hint') } : {}),
    ...(responseMode ? { responseMode } : {}),
  };
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

/**
 * checkRedirectUri: `redirect_uri` is one of the client's registered URIs (`registeredRedirectUri`).
 * The answer goes to the URI sent, its port included; the token endpoint then asks for that same
 * URI exactly.
 */
function checkRedirectUri(client: ClientRecord, redirectUri: string | undefined): string {
  if (!redirectUri || !registeredRedirectUri(client, redirectUri)) throw new InvalidRequest('Invalid redirect_uri', { allowRedirect: false });
  return redirectUri;
}

/** `http://127.0.0.1` or `http://[::1]`, its port if any, and what follows (a path, a query, or nothing). */
const LOOPBACK_IP_URI = /^http:\/\/(127\.0\.0\.1|\[::1\])(?::(\d{1,5}))?(?=[/?]|$)/;

/**
 * Whether `redirectUri` is one of the client's registered URIs: equal as strings (the interface:
 * "must equal a registered redirect URI exactly"; OpenID Connect Core §3.1.2.1), or, for a client
 * registered with `application_type: native` and a URI registered as plain http on a loopback IP
 * literal (`127.0.0.1`, `[::1]`), equal once the port is left out of both (RFC 8252 §7.3: a
 * native application listens on whatever port the system gives it at the time of the request).
 * `localhost` is not one: RFC 8252 §8.3 advises against it (the name may resolve elsewhere), and
 * it is matched exactly, as is everything else.
 *
 * Only native applications, as node-oidc-provider: a web client (the default of RFC 7591, a
 * person's application but a public one at loopback addresses or its own scheme, and every client
 * an operator adds, which records no application type) registers the addresses it answers at,
 * port included. A command line signs in through dynamic registration
 * as a native application, or with the device grant (`npm run admin -- oidc-client device`).
 */
function registeredRedirectUri(client: Pick<ClientRecord, 'redirectUris' | 'metadata'>, redirectUri: string): boolean {
  if (client.redirectUris.includes(redirectUri)) return true;
  if (client.metadata?.application_type !== 'native') return false;
  const asked = LOOPBACK_IP_URI.exec(redirectUri);
  if (!asked || Number(asked[2] ?? 0) > 65535) return false;
  const portless = redirectUri.replace(LOOPBACK_IP_URI, 'http://$1');
  return client.redirectUris.some((registered) => LOOPBACK_IP_URI.test(registered) && registered.replace(LOOPBACK_IP_URI, 'http://$1') === portless);
}

/**
 * checkResponseMode: `query` (the default for `code`: OAuth 2.0 Multiple Response Type Encoding
 * Practices §2.1), `fragment`, or `form_post` (OAuth 2.0 Form Post Response Mode: a page posts
 * the answer to the redirect URI, as ASP.NET Core's handler asks by default); any other is
 * refused rather than ignored. Undefined: the query.
 */
function checkResponseMode(mode: string | undefined): ResponseMode | undefined {
  if (mode === undefined || mode === '' || mode === 'query') return undefined;
  if (mode === 'fragment' || mode === 'form_post') return mode;
  throw new InvalidRequest('response_mode must be query, fragment or form_post');
}

/**
 * checkRequestObjects: request objects (OpenID Connect Core §6) are not supported, and a request
 * that sends one is refused rather than answered without the parameters it holds (§6.1, §6.2).
 */
function checkRequestObjects(request: string | undefined, requestUri: string | undefined): void {
  if (request !== undefined) throw new RequestNotSupported('Request objects (the request parameter) are not supported');
  if (requestUri !== undefined) throw new RequestUriNotSupported('The request_uri parameter is not supported');
}

/** checkResponseType: given (`invalid_request`, RFC 6749 §4.1.2.1), and only `code`. */
function checkResponseType(responseType: string | undefined): void {
  if (!responseType) throw new InvalidRequest('response_type is required');
  if (responseType !== 'code') throw new UnsupportedResponseType('response_type must be code');
}

/** checkPrompt: known values; `none` only alone. */
function checkPrompt(prompt: string | undefined): string[] {
  const values = (prompt ?? '').split(' ').filter(Boolean);
  const unknown = values.find((value) => !PROMPTS.has(value));
  if (unknown !== undefined) throw new InvalidRequest(`Unsupported prompt value: ${unknown}`);
  if (values.includes('none') && values.length > 1) throw new InvalidRequest('prompt=none cannot be combined with other values');
  return values;
}

/**
 * checkScope: `openid` is required; every scope must have been granted to the client.
 * `offline_access` is dropped, not refused, unless the client is registered for the
 * `refresh_token` grant and the request asks for the consent page (`prompt=consent`), where the
 * person sees it (OpenID Connect Core §11).
 */
export function checkScope(client: ClientRecord, scope: string | undefined, prompt: string[]): OidcScope[] {
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

/** checkCodeGrant: the client is registered for the authorization_code grant (a device-only one is not: `unauthorized_client`). */
function checkCodeGrant(client: ClientRecord): void {
  if (!client.grantTypes.includes('authorization_code')) throw new UnauthorizedClient('This client is not registered for the authorization_code grant');
}

/** checkMaxAge: a whole number of seconds, when given. */
function checkMaxAge(maxAge: string | undefined): number | undefined {
  if (maxAge === undefined || maxAge === '') return undefined;
  if (!/^\d{1,10}$/.test(maxAge)) throw new InvalidRequest('max_age must be a whole number of seconds');
  return Number(maxAge);
}

/** checkLengths: `state` and `nonce` are kept until the code is redeemed, so they are bounded. */
function checkLengths(values: Array<[name: string, value: string | undefined, most: number]>): void {
  for (const [name, value, most] of values) {
    if (value !== undefined && value.length > most) throw new InvalidRequest(`${name} must be at most ${most} characters`);
  }
}

/**
 * checkHintFor: an `id_token_hint` is one of this provider's ID tokens, issued to this client;
 * the subject it names. Someone else signed in must then sign in again (`flow.ts`), or, with
 * `prompt=none`, the answer is `login_required` (OpenID Connect Core §3.1.2.1).
 */
async function checkHintFor(provider: Provider, client: ClientRecord, hint: string | undefined): Promise<string | undefined> {
  const named = await checkIdTokenHint(provider, hint, { allowRedirect: true });
  if (named && named.aud !== client.id) throw new InvalidRequest('id_token_hint was issued to another client');
  return named?.sub;
}

