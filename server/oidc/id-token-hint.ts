import { compactVerify, createLocalJWKSet } from 'jose';
import { InvalidRequest } from './errors.ts';
import type { Provider } from './provider.ts';

/**
 * checkIdTokenHint: an `id_token_hint` (at the authorization and end-session endpoints) is an
 * ID token this provider signed, expired ones too (the session it names may have outlived it,
 * as OpenID Connect Core §3.1.2.1 allows); its `aud` names the client it was issued to. Anything
 * else is `invalid_request`, redirected to the client where `allowRedirect` says so.
 */
export async function checkIdTokenHint(
  provider: Pick<Provider, 'issuer' | 'keys'>,
  hint: string | undefined,
  opts: { allowRedirect: boolean },
): Promise<{ sub: string; aud: string } | null> {
  if (hint === undefined) return null;
  const invalid = () => new InvalidRequest('id_token_hint is not an ID token of this provider', opts);
  try {
    const { payload } = await compactVerify(hint, createLocalJWKSet((await provider.keys.jwks()) as Parameters<typeof createLocalJWKSet>[0]), { algorithms: ['RS256'] });
    const claims = JSON.parse(new TextDecoder().decode(payload)) as { iss?: unknown; sub?: unknown; aud?: unknown };
    const aud = Array.isArray(claims.aud) ? claims.aud[0] : claims.aud;
    if (claims.iss !== provider.issuer || typeof claims.sub !== 'string' || typeof aud !== 'string') throw invalid();
    return { sub: claims.sub, aud };
  } catch {
    throw invalid();
  }
}
