import { CompactSign, type CompactJWSHeaderParameters, type CryptoKey } from 'jose';

/** The registered claims (RFC 7519 §4.1) every JWT this service signs carries, besides its own. */
export interface RegisteredClaims {
  iss: string;
  aud: string;
  sub?: string;
  /** Seconds since the epoch. */
  iat: number;
  /** Seconds since the epoch. */
  exp: number;
  jti?: string;
}

/** The protected header of a JWT signed here (RFC 7515 §4.1). */
export interface JwtHeader extends CompactJWSHeaderParameters {
  alg: 'HS256' | 'RS256';
  typ: 'JWT' | 'logout+jwt';
  kid?: string;
}

const encoder = new TextEncoder();

/**
 * A JWT (RFC 7519) signed by jose's `CompactSign`: the claims serialised as JSON, in the JWS
 * compact serialisation. The token jose's `SignJWT` makes of the same claims and header: that
 * builder serialises its claims the same way, after a `structuredClone` of them, which took about
 * 40 % of an HS256 session token's main-thread CPU here (`docs/performance.md`, row 3a). Times
 * must be whole seconds: JSON would write a NaN as null, and a verifier reads a fraction as a
 * different time than the one meant.
 */
export function signJwt(claims: RegisteredClaims & Record<string, unknown>, header: JwtHeader, key: CryptoKey): Promise<string> {
  if (!Number.isSafeInteger(claims.iat) || !Number.isSafeInteger(claims.exp)) {
    throw new TypeError(`a JWT's iat and exp are whole seconds (iat ${claims.iat}, exp ${claims.exp})`);
  }
  return new CompactSign(encoder.encode(JSON.stringify(claims))).setProtectedHeader(header).sign(key);
}
