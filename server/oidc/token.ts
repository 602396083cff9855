import { hash } from 'node:crypto';
import { DEVICE_CODE_GRANT, OIDC_TOKEN_SECONDS, OidcGrantType } from '../../shared/index.ts';
import { hashSecret, randomToken, safeEqual } from '../secrets.ts';
import type { PersonClaims, SignInProfile } from './accounts-for-sign-in.ts';
import { approvedClient, CLIENT_PARAMETERS, type ClientProof } from './client-auth.ts';
import { InvalidGrant, InvalidRequest, UnauthorizedGrant, UnsupportedGrantType } from './errors.ts';
import { deviceGrant } from './device.ts';
import { idTokenMeanwhile, type TokenAnswer } from './id-token.ts';
import { familyRecord, refreshGrant } from './refresh.ts';
import { checkOnce, personWithClaims, sent, stillHolds, lastUseDue, subjectOf, type Provider } from './provider.ts';
import { redirectUriHash, type CodeRecord } from './codes.ts';
import type { ClientRecord, OidcRepository, TokenOfCode } from './repository.ts';
import { TurnBatch } from '../../db/turn-batch.ts';
import { refusedForARow } from '../../db/knex.ts';

export type { TokenAnswer } from './id-token.ts';

/** The token request's parameters; each may be sent once. */
const TOKEN_PARAMETERS = ['grant_type', 'code', 'redirect_uri', 'code_verifier', 'refresh_token', 'scope', 'device_code', ...CLIENT_PARAMETERS];

/** Redeemed codes per statement (`tokensOfCodes`): 11 parameters each. */
const CODES_PER_STATEMENT = 32;

/**
 * The provider's batch of redeemed codes (`Provider.tokensOfCodes`): the codes redeemed in one
 * turn of the event loop without a refresh token or a last use to note get their access tokens
 * in one statement, each on its own conditions (`OidcRepository.issueTokensOfCodes`).
 */
export function tokensOfCodes(repo: OidcRepository): TurnBatch<TokenOfCode, boolean> {
  return new TurnBatch(async (issues) => {
    const issued = await repo.issueTokensOfCodes(issues);
    return issues.map((issue) => issued.has(issue.tokenHash));
  }, { most: CODES_PER_STATEMENT, runAlone: refusedForARow });
}

/** Every refusal of a code says the same, so a client learns nothing about why. */
const invalidCode = () => new InvalidGrant('Invalid or expired authorization code');

/**
 * `POST /oidc/token`: the client proves itself, then the grant's named checks run in the order
 * below (`authorization_code` here, `refresh_token` in `refresh.ts`, the device code in
 * `device.ts`, which answers an allowed request as the code it stands for). The first failing check answers.
 */
export async function token(provider: Provider, form: Record<string, unknown>, proof: Omit<ClientProof, 'form'>): Promise<TokenAnswer> {
  const field = (name: string) => sent(form, name);
  checkOnce(form, TOKEN_PARAMETERS);
  const client = await approvedClient(provider, { form, ...proof });
  const grantType = checkGrantType(client, field('grant_type'));
  if (grantType === 'refresh_token') {
    const refreshed = await refreshGrant(provider, client, field('refresh_token'), field('scope'));
    provider.metrics.oidcTokens(grantType, client.id);
    return refreshed;
  }
  const now = provider.now();
  const code = grantType === DEVICE_CODE_GRANT ? await deviceGrant(provider, client, field('device_code'), now) : codeGrant(provider, client, field, now);
  const { profile, claims } = await checkStillHonoured(provider, code);
  const offline = code.scopes.includes('offline_access') && client.grantTypes.includes('refresh_token');
  const accessToken = randomToken();
  const signing = idTokenMeanwhile(provider, client, code, { sub: subjectOf(provider, client, profile.id), ...claims }, accessToken, now);
  const { refreshToken } = await consumeCode(provider, client, code, accessToken, now, offline);
  provider.metrics.oidcTokens(grantType, client.id);
  return {
    access_token: accessToken,
    id_token: await signing,
    token_type: 'Bearer',
    expires_in: OIDC_TOKEN_SECONDS,
    ...(refreshToken ? { refresh_token: refreshToken } : {}),
    scope: code.scopes.join(' '),
  };
}

/**
 * checkGrantType: `grant_type` is given (`invalid_request`), is one the provider knows
 * (`unsupported_grant_type`), and is one the client registered (`unauthorized_client`).
 */
function checkGrantType(client: ClientRecord, grantType: string | undefined): OidcGrantType {
  if (!grantType) throw new InvalidRequest('grant_type is required');
  const known = OidcGrantType.safeParse(grantType);
  if (!known.success) throw new UnsupportedGrantType(`Only the authorization_code, refresh_token and ${DEVICE_CODE_GRANT} grants are supported`);
  if (!client.grantTypes.includes(known.data)) throw new UnauthorizedGrant(`This client is not registered for the ${known.data} grant`);
  return known.data;
}

/** The `authorization_code` grant's checks, in order: the code, its PKCE verifier, its redirect URI. */
function codeGrant(provider: Provider, client: ClientRecord, field: (name: string) => string | undefined, now: number): CodeRecord {
  const code = checkCode(provider, client, field('code'), now);
  checkVerifier(field('code_verifier'), code.codeChallenge);
  checkRedirectUri(field('redirect_uri'), code);
  return code;
}

/**
 * checkCode: a code is given (`invalid_request`), opens (`codes.ts`: sealed here, for this
 * client, unaltered) and has not expired. Whether it was redeemed before is known when its token
 * is stored (`consumeCode`).
 */
function checkCode(provider: Provider, client: ClientRecord, code: string | undefined, now: number): CodeRecord {
  // A request without a code is malformed (RFC 6749 §5.2), not a wrong code.
  if (!code) throw new InvalidRequest('code is required');
  const found = provider.codes.open(code, client.id, now);
  if (!found || !(found.expiresAt > now)) throw invalidCode();
  return found;
}

/** A code verifier as RFC 7636 §4.1 defines it: 43 to 128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * checkVerifier: a `code_verifier` is required and well formed (RFC 7636 §4.1; otherwise
 * `invalid_request`), and BASE64URL(SHA-256(code_verifier)) equals the challenge, compared in
 * constant time (otherwise `invalid_grant`, §4.6).
 */
function checkVerifier(verifier: string | undefined, challenge: string | null): void {
  // A confidential client may leave PKCE out; then no verifier can match anything.
  if (challenge === null) {
    if (verifier !== undefined) throw new InvalidGrant('Invalid code_verifier: the authorization request had no code_challenge');
    return;
  }
  if (!verifier) throw new InvalidRequest('code_verifier is required');
  if (!CODE_VERIFIER.test(verifier)) {
    throw new InvalidRequest('code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, -, ., _ and ~');
  }
  const computed = hash('sha256', verifier, 'base64url');
  if (!safeEqual(computed, challenge)) throw new InvalidGrant('Invalid code_verifier');
}

/**
 * checkRedirectUri: `redirect_uri` is given (every authorization request here sends one, so RFC
 * 6749 §4.1.3 requires it; missing: `invalid_request`, as a missing `code` or `code_verifier`) and
 * is exactly the one the code was issued for (`invalid_grant`).
 */
function checkRedirectUri(redirectUri: string | undefined, code: CodeRecord): void {
  if (redirectUri === undefined) throw new InvalidRequest('redirect_uri is required');
  if (redirectUriHash(redirectUri) !== code.redirectUriHash) throw invalidCode();
}

/**
 * checkStillHonoured: since the code was issued, its person may have been blocked, deleted or
 * merged, reset their password or signed out everywhere (`stillHolds`: `canHoldSession` with the
 * code's `tokenVersion`; the person as read at most a second ago, `personWithClaims`). A consent
 * withdrawn since is found when the token is stored (`consumeCode`), in the same statement.
 */
async function checkStillHonoured(provider: Provider, code: CodeRecord): Promise<{ profile: SignInProfile; claims: PersonClaims }> {
  // The person's standing and the claims the ID token releases, from one reading of the profile.
  const person = await personWithClaims(provider, code.profileId, code.scopes);
  if (!person || !stillHolds(person.profile, code.tokenVersion)) throw invalidCode();
  return person;
}

/**
 * consumeCode: issues `accessToken` for the code in one statement, which a second
 * redemption of the same code conflicts with (one token per code), and which a code whose
 * consent was withdrawn since does not pass. With `offline`, the refresh-token family starts in
 * the same transaction, and so does the client's last use when it is due: a crash leaves the code
 * either redeemed with all of them, or not at all. A code presented twice gets `invalid_grant`,
 * and every token issued from it is revoked.
 */
async function consumeCode(provider: Provider, client: ClientRecord, code: CodeRecord, accessToken: string, now: number, offline: boolean): Promise<{ refreshToken?: string }> {
  const token = offline ? randomToken() : null;
  const refresh = token ? familyRecord(provider, client, code, randomToken(), hashSecret(token), now) : null;
  const use = lastUseDue(provider, code.profileId, client.id, now);
  const issue: TokenOfCode = { code, tokenHash: hashSecret(accessToken), now, expiresAt: now + OIDC_TOKEN_SECONDS * 1000, familyId: refresh?.familyId ?? null };
  const issueWithTheRest = async (repo: OidcRepository): Promise<boolean> => {
    if (!(await repo.issueTokenOfCode(issue))) return false;
    if (refresh) await repo.refreshTokens.insert(refresh);
    if (use.due) await repo.noteUse(code.profileId, client.id, now);
    return true;
  };
  let issued: boolean;
  try {
    // One statement alone needs no transaction (the common sign-in: no refresh token, last use
    // noted lately), and shares its statement with the other codes redeemed in the same turn.
    issued = refresh || use.due ? await provider.repo.transaction(issueWithTheRest) : await provider.tokensOfCodes.add(issue);
  } catch (error) {
    use.undo();
    throw error;
  }
  if (!issued) {
    use.undo();
    // Both its writes or neither: a process stopped between them would leave the code's access tokens live.
    await provider.repo.transaction((repo) => repo.revokeTokensOfCode(code.codeHash, now));
    throw invalidCode();
  }
  if (!refresh || !token) return {};
  provider.issuedHere.remember(refresh);
  return { refreshToken: token };
}

