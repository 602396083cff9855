import { hash } from 'node:crypto';
import { OIDC_TOKEN_SECONDS } from '../../shared/index.ts';
import { signJwt } from '../jwt.ts';
import type { PersonClaims } from './accounts-for-sign-in.ts';
import { signInProof, type Provider } from './provider.ts';
import type { ClientRecord } from './repository.ts';

/** The token endpoint's answer (RFC 6749 §5.1, OpenID Connect Core §3.1.3.3). */
export interface TokenAnswer {
  access_token: string;
  id_token?: string;
  refresh_token?: string;
  token_type: 'Bearer';
  expires_in: number;
  scope?: string;
}

/** What an ID token tells of its sign-in: the code's (or the refresh family's) person, time, nonce and browser session. */
export interface SignInOfToken {
  profileId: string;
  authTime: number;
  nonce: string | null;
  sid: string | null;
}

/**
 * The RS256 ID token: the claims the scopes release, `auth_time`, how the sign-in was proved
 * (`amr`, `acr`), `nonce` when one was sent (never on a refresh: OpenID Connect Core §12.2),
 * `sid` of the browser session, and `at_hash`.
 */
export async function idToken(provider: Provider, client: ClientRecord, signIn: SignInOfToken, claims: { sub: string } & PersonClaims, accessToken: string, now: number): Promise<string> {
  const { kid, key } = await provider.keys.signer();
  // How the sign-in was proved (RFC 8176 `amr`, and `acr`), when accounts know it.
  const proof = await signInProof(provider, signIn.profileId, signIn.authTime);
  const iat = Math.floor(now / 1000);
  return signJwt(
    {
      ...claims,
      auth_time: Math.floor(signIn.authTime / 1000),
      ...(proof ?? {}),
      ...(signIn.nonce !== null ? { nonce: signIn.nonce } : {}),
      ...(signIn.sid !== null ? { sid: signIn.sid } : {}),
      at_hash: atHash(accessToken),
      iss: provider.issuer,
      aud: client.id,
      iat,
      exp: iat + OIDC_TOKEN_SECONDS,
    },
    { alg: 'RS256', kid, typ: 'JWT' },
    key,
  );
}

/**
 * The ID token, signed while the grant's statements run: the signature and the statements both
 * wait on libuv's thread pool (four threads unless `UV_THREADPOOL_SIZE` says otherwise), side by
 * side while a thread is free, so a token request waits for the longer of the two instead of
 * both. The caller gives it out only once the grant is stored; a grant refused meanwhile leaves
 * it unread, and its failure, if any, is handled here (unhandled, it would end the process).
 */
export function idTokenMeanwhile(...args: Parameters<typeof idToken>): Promise<string> {
  const signing = idToken(...args);
  signing.catch(() => undefined);
  return signing;
}

/** `at_hash` (OpenID Connect Core §3.1.3.6): the left half of the access token's SHA-256, base64url. */
function atHash(accessToken: string): string {
  return hash('sha256', accessToken, 'buffer').subarray(0, 16).toString('base64url');
}
