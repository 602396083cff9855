import { createHmac, type KeyObject } from 'node:crypto';
import type { OidcScope } from '../../shared/index.ts';
import { canHoldSession } from '../accounts/session-rule.ts';
import type { Metrics } from '../metrics/events.ts';
import type { RateLimits } from '../rate-limits.ts';
import type { AccountsForSignIn, PersonClaims, SignInProfile } from './accounts-for-sign-in.ts';
import { InvalidRequest, OAuthError } from './errors.ts';
import type { CodeSealer } from './codes.ts';
import type { IssuedHere } from './issued-here.ts';
import type { KeyStore } from './keys.ts';
import type { LogoutRepository } from './logout-repository.ts';
import type { OnceInAWhile } from './once-in-a-while.ts';
import type { RefreshRepository } from './refresh-repository.ts';
import type { RegistryRepository } from './registry-repository.ts';
import type { AuthorizationParams, ClientRecord, ConsentRecord, OidcRepository, TokenOfCode } from './repository.ts';
import type { TurnBatch } from '../../db/turn-batch.ts';
import { Memo } from '../memo.ts';
import type { KeptClients } from './kept-clients.ts';
import type { KeptReadings } from './kept-readings.ts';

/** What every endpoint of the provider works with; `OidcService` builds it once. */
export interface Provider {
  repo: OidcRepository;
  /** Client secrets, initial access tokens, assertions' `jti`s. */
  registry: RegistryRepository;
  refreshTokens: RefreshRepository;
  /** The refresh tokens this process issued and has not seen presented yet (`IssuedHere`). */
  issuedHere: IssuedHere;
  /** Codes redeemed in one turn of the event loop, their access tokens issued in one statement (`tokensOfCodes`). */
  tokensOfCodes: TurnBatch<TokenOfCode, boolean>;
  logouts: LogoutRepository;
  /** Last-use times (to the minute) and sessions' clients (once), written only when due (`OnceInAWhile`). */
  lastUses: OnceInAWhile;
  sessionClients: OnceInAWhile;
  accounts: AccountsForSignIn;
  keys: KeyStore;
  /** Seals authorization codes and opens them (`codes.ts`). */
  codes: CodeSealer;
  /** The client records, each read at most once a second (`KeptClients`). */
  clients: KeptClients;
  /** UserInfo's answers by token hash, each kept for up to a second (`KeptReadings`). */
  userinfoAnswers: KeptReadings<Record<string, unknown>>;
  /** A person's consent to a client (null: none), by `profileId clientId`, kept for up to a second. */
  consents: KeptReadings<ConsentRecord | null>;
  /** A person's standing and claims (`AccountsForSignIn.profileWithClaims`), by `profileId scopes`, kept for up to a second. */
  people: KeptReadings<{ profile: SignInProfile; claims: PersonClaims } | null>;
  /** How a sign-in was proved (`AccountsForSignIn.signInProof`, for `amr`/`acr`), by `profileId authTime`, kept for up to a second. */
  proofs: KeptReadings<{ amr: string[]; acr: string } | null>;
  /** A refresh-token family's lifetimes when its client sets none: at most, and unused. */
  refreshAbsoluteSeconds: number;
  refreshIdleSeconds: number;
  /** The key a pairwise `sub` and a `sid` are derived with (`subjectOf`, `sidOf`): the install's, never shown. */
  pairwiseKey: KeyObject;
  /** `sidOf`'s latest answers: every authorization request of a session derives its `sid` again. */
  sids: Memo<string, string>;
  /** The rate limits of the device grant's requests and typed codes (`device.ts`). */
  limits: Pick<RateLimits, 'consume' | 'refund'>;
  /** What the provider counts (`metrics/events.ts`): sign-ins to applications, tokens issued. */
  metrics: Pick<Metrics, 'signIn' | 'oidcTokens'>;
  /** The provider's issuer: the service's base URL. */
  issuer: string;
  /** Where the login and consent pages are: the issuer (this service's own), or a web application set as `WEB_URL` (`flow.ts` `loginPageUrl`). */
  webUrl: string;
  now: () => number;
}

/**
 * An answer going back to the client: `redirect`, its redirect URI with the answer's values in
 * the query (or, for `response_mode=fragment`, the fragment); with `response_mode=form_post`,
 * `post` too, the form a page posts to the redirect URI (OAuth 2.0 Form Post Response Mode),
 * which the pages send. A JSON endpoint (a web application's consent) can only hand a browser
 * a URL: it gives `redirect`, the values in the query, which such clients read as well.
 */
export type BackToClient = { redirect: string; post?: { action: string; fields: Array<[string, string]> } };

/** What `/oidc/authorize` and the pages answer: a page with a message, or a way back to the client. */
export type Outcome = { page: string; status: number } | BackToClient;

/**
 * The longest `state`: a client's own, often a sealed blob of its own (ASP.NET Core's runs to
 * several hundred characters and more), kept with a request that shows a page, so bounded.
 */
export const STATE_MAX = 2048;

/** How an answer goes back to the client, when not in the query (`response_mode`, `AuthorizationParams`). */
export type ResponseMode = NonNullable<AuthorizationParams['responseMode']>;

/** Whether each redirect URI asked about is plain (`plainUri`), the last thousand or so. */
const plainUris = new Memo<string, boolean>(1000);

/**
 * Whether a redirect URI is written by `URL` exactly as it is, with no query or fragment: an
 * answer's query then follows it as it stands, without the URI taken apart and written again
 * for every answer (most are; a sign-in's redirect is built on each authorization request).
 */
function plainUri(uri: string): boolean {
  return plainUris.get(uri, () => !uri.includes('?') && !uri.includes('#') && URL.parse(uri)?.href === uri);
}

/** The way back to the client: its redirect URI with `values`, and always `iss` (RFC 9207), in the response mode asked for. */
export function backToClient(provider: Pick<Provider, 'issuer'>, to: Pick<AuthorizationParams, 'redirectUri' | 'responseMode'>, values: Record<string, string | undefined>): BackToClient {
  const fields = Object.entries({ ...values, iss: provider.issuer }).filter((entry): entry is [string, string] => entry[1] !== undefined);
  let redirect: string;
  if (to.responseMode === 'fragment') {
    const url = new URL(to.redirectUri);
    url.hash = new URLSearchParams(fields).toString();
    return { redirect: url.toString() };
  } else if (plainUri(to.redirectUri)) {
    redirect = `${to.redirectUri}?${new URLSearchParams(fields).toString()}`;
  } else {
    // Each `set` of `url.searchParams` would write the whole query again: one writing for all.
    const url = new URL(to.redirectUri);
    const query = new URLSearchParams(url.search);
    for (const [key, value] of fields) query.set(key, value);
    url.search = query.toString();
    redirect = url.toString();
  }
  return to.responseMode === 'form_post' ? { redirect, post: { action: to.redirectUri, fields } } : { redirect };
}

/**
 * The answer to a protocol error of an authorization request: back to the client's redirect URI
 * when the error allows it and the request's redirect URI has been verified (`back`), with
 * `error`, `error_description`, `state` and `iss`; otherwise a 400 page with the message.
 * Any other error is not the provider's to answer, and is thrown on.
 */
export function errorOutcome(provider: Pick<Provider, 'issuer'>, error: unknown, back?: Pick<AuthorizationParams, 'redirectUri' | 'state' | 'responseMode'>): Outcome {
  if (!(error instanceof OAuthError)) throw error;
  if (!error.allowRedirect || !back) return { page: error.message, status: 400 };
  return backToClient(provider, back, { error: error.error, error_description: error.description, state: back.state });
}

// ---- checks more than one endpoint makes -------------------------------------------------------------

/**
 * A parameter's value as the endpoints read it: a string, and none when sent empty (RFC 6749
 * §3.1, §3.2: "Parameters sent without a value MUST be treated as if they were omitted").
 */
export function sent(values: Record<string, unknown>, name: string): string | undefined {
  const value = values[name];
  return typeof value === 'string' && value !== '' ? value : undefined;
}

/** checkOnce: none of `names` was sent more than once (a parser gives an array, or an object for `a[b]=`). */
export function checkOnce(values: Record<string, unknown>, names: readonly string[], opts: { allowRedirect?: boolean } = {}): void {
  for (const name of names) {
    const value = values[name];
    if (value !== undefined && typeof value !== 'string') throw new InvalidRequest(`${name} must be sent once, as a plain value`, opts);
  }
}

/** A person's consent to a client (null: none), read at most once a second (`Provider.consents`). */
export function findConsent(provider: Pick<Provider, 'repo' | 'consents'>, profileId: string, clientId: string): Promise<ConsentRecord | null> {
  return provider.consents.get(`${profileId} ${clientId}`, async () => ({ value: await provider.repo.findConsent(profileId, clientId) }));
}

/**
 * A person's standing (state, deletion, `tokenVersion`) and the claims `scopes` release, read
 * at most once a second (`Provider.people`): another process's logout of every device, reset
 * or block is seen within that second, this process's at once.
 */
export function personWithClaims(provider: Pick<Provider, 'accounts' | 'people'>, profileId: string, scopes: readonly OidcScope[]) {
  return provider.people.get(`${profileId} ${scopes.join(' ')}`, async () => ({ value: await provider.accounts.profileWithClaims(profileId, scopes) }));
}

/** How the sign-in of `authTime` was proved, as read at most a second ago (written once, when the session opened). */
export function signInProof(provider: Pick<Provider, 'accounts' | 'proofs'>, profileId: string, authTime: number) {
  return provider.proofs.get(`${profileId} ${authTime}`, async () => ({ value: await provider.accounts.signInProof(profileId, authTime) }));
}

/** Whether a person's consent to a client (null: none) covers every one of `scopes`. */
export function consentCovers(consented: readonly OidcScope[] | null, scopes: readonly OidcScope[]): consented is readonly OidcScope[] {
  return consented !== null && scopes.every((scope) => consented.includes(scope));
}

/**
 * Whether a code or access token is still honoured for its person: `canHoldSession` with the
 * `tokenVersion` it was issued under. One issued before versions were kept (null) is void.
 */
export function stillHolds(profile: SignInProfile | null, tokenVersion: number | null): profile is SignInProfile {
  return tokenVersion !== null && canHoldSession(profile, tokenVersion);
}

/**
 * The `sub` a client knows a person by: the profile id (public, the default), or for a pairwise
 * client one derived from the profile id and the client's sector (the host of its
 * `sector_identifier_uri`, or of its redirect URIs), so that apps of different sectors cannot
 * match people across them (OpenID Connect Core §8.1). Stable for a person and sector.
 */
export function subjectOf(provider: Pick<Provider, 'pairwiseKey'>, client: Pick<ClientRecord, 'subjectType' | 'sectorIdentifierUri' | 'redirectUris'>, profileId: string): string {
  if (client.subjectType !== 'pairwise') return profileId;
  const sector = new URL(client.sectorIdentifierUri ?? client.redirectUris[0] ?? 'https://invalid').host;
  return createHmac('sha256', provider.pairwiseKey).update(`${sector}\n${profileId}`).digest('base64url');
}

/**
 * The `sid` of a browser session at a client (OpenID Connect Back-Channel Logout §2.1): derived
 * from the session's id and the client's, so one session is the same `sid` in every ID token and
 * logout token a client gets, a different one at each client (two apps, pairwise ones included,
 * cannot match a person by it), and never shows the session's id.
 */
export function sidOf(provider: Pick<Provider, 'pairwiseKey' | 'sids'>, sessionId: string, clientId: string): string {
  const input = `sid\n${sessionId}\n${clientId}`;
  return provider.sids.get(input, () => createHmac('sha256', provider.pairwiseKey).update(input).digest('base64url').slice(0, 32));
}

/**
 * Whether the client's last use of a person's tokens is due to be written now (at most once a
 * minute per pair and process, `Provider.lastUses`); `undo` when the write did not happen.
 */
export function lastUseDue(provider: Pick<Provider, 'lastUses'>, profileId: string, clientId: string, now: number): { due: boolean; undo: () => void } {
  const key = `${profileId} ${clientId}`;
  const due = provider.lastUses.due(key, now);
  return { due, undo: () => (due ? provider.lastUses.forget(key) : undefined) };
}
