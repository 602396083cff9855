import { createHash } from 'node:crypto';
import { SignJWT } from 'jose';
import { OIDC_TOKEN_SECONDS, type OidcClient, type OidcScope } from '../../shared/index.ts';
import { hashSecret, randomToken, safeEqual } from '../secrets.ts';
import type { PersonClaims, SignInProfile } from './accounts-for-sign-in.ts';
import { InvalidClient, InvalidGrant, InvalidRequest, UnsupportedGrantType } from './errors.ts';
import { checkOnce, consentCovers, personWithClaims, signInProof, stillHolds, type Provider } from './provider.ts';
import type { CodeRecord } from './repository.ts';

export interface TokenAnswer {
  access_token: string;
  id_token: string;
  token_type: 'Bearer';
  expires_in: number;
}

/** The token request's parameters; each may be sent once. */
const TOKEN_PARAMETERS = ['grant_type', 'code', 'redirect_uri', 'client_id', 'code_verifier'];

/** Every refusal of a code says the same, so a client learns nothing about why. */
const invalidCode = () => new InvalidGrant('Invalid or expired authorization code');

/**
 * `POST /oidc/token`: the named checks below, in this order, then the code is consumed and an
 * access token and an ID token are issued. The first failing check answers.
 */
export async function token(p: Provider, form: Record<string, unknown>): Promise<TokenAnswer> {
  const field = (name: string) => (typeof form[name] === 'string' ? (form[name] as string) : undefined);
  checkOnce(form, TOKEN_PARAMETERS);
  const client = await checkClient(p, field('client_id'));
  checkGrantType(field('grant_type'));
  const now = p.now();
  const { code, consentedScopes } = await checkCode(p, client, field('code'), now);
  checkVerifier(field('code_verifier'), code.codeChallenge);
  checkRedirectUri(field('redirect_uri'), code);
  const { profile, claims } = await checkStillHonoured(p, code, consentedScopes);
  const accessToken = await consumeCode(p, code, now);
  return {
    access_token: accessToken,
    id_token: await idToken(p, client, code, { sub: profile.id, ...claims }, accessToken, now),
    token_type: 'Bearer',
    expires_in: OIDC_TOKEN_SECONDS,
  };
}

/** checkClient: `client_id` names a registered client whose registration is approved (`invalid_client`, 401). */
async function checkClient(p: Provider, clientId: string | undefined): Promise<OidcClient> {
  const client = clientId ? await p.clients.find(clientId) : null;
  if (!client) throw new InvalidClient('Invalid client_id');
  if (client.status !== 'approved') throw new InvalidClient('Client is not approved');
  return client;
}

/** checkGrantType: `grant_type` is given (`invalid_request`), and is `authorization_code` (`unsupported_grant_type`). */
function checkGrantType(grantType: string | undefined): void {
  if (!grantType) throw new InvalidRequest('grant_type is required');
  if (grantType !== 'authorization_code') throw new UnsupportedGrantType('Only the authorization_code grant is supported');
}

/**
 * checkCode: the code is known (by its hash), was issued to this client, and has not expired.
 * Read with the scopes its person consents to now, for `checkStillHonoured`.
 */
async function checkCode(p: Provider, client: OidcClient, code: string | undefined, now: number): Promise<{ code: CodeRecord; consentedScopes: OidcScope[] | null }> {
  const found = code ? await p.repo.findCodeWithConsent(hashSecret(code)) : null;
  if (!found || found.code.clientId !== client.id || found.code.expiresAt <= now) throw invalidCode();
  return found;
}

/** A code verifier as RFC 7636 §4.1 defines it: 43 to 128 unreserved characters. */
const CODE_VERIFIER = /^[A-Za-z0-9._~-]{43,128}$/;

/**
 * checkVerifier: a `code_verifier` is required and well formed (RFC 7636 §4.1; otherwise
 * `invalid_request`), and BASE64URL(SHA-256(code_verifier)) equals the challenge, compared in
 * constant time (otherwise `invalid_grant`, §4.6).
 */
function checkVerifier(verifier: string | undefined, challenge: string): void {
  if (!verifier) throw new InvalidRequest('code_verifier is required');
  if (!CODE_VERIFIER.test(verifier)) {
    throw new InvalidRequest('code_verifier must be 43 to 128 characters of A-Z, a-z, 0-9, -, ., _ and ~');
  }
  const computed = createHash('sha256').update(verifier).digest('base64url');
  if (!safeEqual(computed, challenge)) throw new InvalidGrant('Invalid code_verifier');
}

/** checkRedirectUri: `redirect_uri` is exactly the one the code was issued for (RFC 6749 §4.1.3). */
function checkRedirectUri(redirectUri: string | undefined, code: CodeRecord): void {
  if (redirectUri !== code.redirectUri) throw invalidCode();
}

/**
 * checkStillHonoured: since the code was issued, its person may have been blocked, deleted or
 * merged, reset their password or signed out everywhere (`stillHolds`: `canHoldSession` with the
 * code's `tokenVersion`; the person as read at most a second ago, `personWithClaims`), or
 * withdrawn their consent to some of its scopes.
 */
async function checkStillHonoured(p: Provider, code: CodeRecord, consentedScopes: OidcScope[] | null): Promise<{ profile: SignInProfile; claims: PersonClaims }> {
  // The person's standing and the claims the ID token releases, from one reading of the profile.
  const person = await personWithClaims(p, code.profileId, code.scopes);
  if (!person || !stillHolds(person.profile, code.tokenVersion)) throw invalidCode();
  if (!consentCovers(consentedScopes, code.scopes)) throw invalidCode();
  return person;
}

/**
 * consumeCode: issues the access token of the code in one statement, which a second
 * redemption of the same code conflicts with (one token per code), and which a code used up
 * (its consent withdrawn) does not pass. A code presented twice gets `invalid_grant`, is marked
 * used, and every token issued from it is revoked. Returns the new access token.
 */
async function consumeCode(p: Provider, code: CodeRecord, now: number): Promise<string> {
  const accessToken = randomToken();
  if (!(await p.repo.issueTokenOfCode(code.codeHash, hashSecret(accessToken), now, now + OIDC_TOKEN_SECONDS * 1000))) {
    await p.repo.consumeCode(code.codeHash, now);
    await p.repo.revokeTokensOfCode(code.codeHash, now);
    throw invalidCode();
  }
  return accessToken;
}

/** The RS256 ID token: the claims the code's scopes release, `auth_time`, `nonce` when one was sent, `at_hash`. */
async function idToken(p: Provider, client: OidcClient, code: CodeRecord, claims: { sub: string } & PersonClaims, accessToken: string, now: number): Promise<string> {
  const { kid, key } = await p.keys.signer();
  // How the sign-in was proved (RFC 8176 `amr`, and `acr`), when accounts know it.
  const proof = await signInProof(p, code.profileId, code.authTime);
  return new SignJWT({
    ...claims,
    auth_time: Math.floor(code.authTime / 1000),
    ...(proof ?? {}),
    ...(code.nonce !== null ? { nonce: code.nonce } : {}),
    at_hash: atHash(accessToken),
  })
    .setProtectedHeader({ alg: 'RS256', kid, typ: 'JWT' })
    .setIssuer(p.issuer)
    .setAudience(client.id)
    .setIssuedAt(Math.floor(now / 1000))
    .setExpirationTime(Math.floor(now / 1000) + OIDC_TOKEN_SECONDS)
    .sign(key);
}

/** `at_hash` (OpenID Connect Core §3.1.3.6): the left half of the access token's SHA-256, base64url. */
function atHash(accessToken: string): string {
  return createHash('sha256').update(accessToken).digest().subarray(0, 16).toString('base64url');
}
