import { randomBytes, randomUUID } from 'node:crypto';
import { link, readFile, rm, writeFile } from 'node:fs/promises';
import path from 'node:path';
import { errors, jwtVerify, SignJWT, type CryptoKey } from 'jose';
import { AppError } from '../../shared/errors.ts';

/** What a session's access token carries. */
export interface SessionClaims {
  /** The profile id. */
  sub: string;
  /** The session row. */
  sid: string;
  /** The profile's `tokenVersion` when the token was issued; a stale one is refused. */
  ver: number;
}

const AUDIENCE = 'session';

/** The longest a session token may live (`MAX_SESSION_SECONDS`, one week): a longer one was not issued here. */
const MAX_TOKEN_SECONDS = 7 * 24 * 60 * 60;
/** How far ahead of this clock another process's clock may be. */
const CLOCK_SKEW_SECONDS = 60;

/** A verified token's claims, with when it was issued and when it expires (seconds since the epoch). */
export interface VerifiedClaims extends SessionClaims {
  iat: number;
  exp: number;
}

/**
 * Signs and checks access tokens: JWTs, HS256, with the issuer set to the service's address.
 * A valid signature is not enough to be let in: the session row and the profile's
 * `tokenVersion` are checked by the accounts service.
 */
export class SessionTokens {
  readonly #issuer: string;
  readonly #now: () => number;

  /** The key imported once: given the raw bytes, jose imports them again for every token. */
  readonly #cryptoKey: Promise<CryptoKey>;

  constructor(secret: string, issuer: string, now: () => number = Date.now) {
    this.#issuer = issuer;
    this.#now = now;
    this.#cryptoKey = crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
  }

  /**
   * A token for `seconds`, or until `notAfter` (seconds since the epoch) when that comes first.
   * `loginEmail` goes into it as `user: {id, profile: {id}}` (the answer's `user`, without
   * anything secret): the real platform's clients, given only a token, read the profile id there.
   */
  async sign(claims: SessionClaims & { loginEmail: string }, seconds: number, notAfter?: number): Promise<string> {
    const now = Math.floor(this.#now() / 1000);
    const exp = Math.min(now + seconds, notAfter ?? Number.POSITIVE_INFINITY);
    return new SignJWT({ sid: claims.sid, ver: claims.ver, user: { id: claims.loginEmail, profile: { id: claims.sub } } })
      .setProtectedHeader({ alg: 'HS256', typ: 'JWT' })
      .setSubject(claims.sub)
      .setIssuer(this.#issuer)
      .setAudience(AUDIENCE)
      .setIssuedAt(now)
      // Two tokens issued in the same second still differ.
      .setJti(randomUUID())
      .setExpirationTime(exp)
      .sign(await this.#cryptoKey);
  }

  /**
   * A token is accepted only with `exp` and `iat` (a token without an expiry would be good
   * forever), issued not in the future and for no longer than a session may last.
   */
  async verify(token: string): Promise<VerifiedClaims> {
    try {
      const { payload } = await jwtVerify(token, await this.#cryptoKey, {
        algorithms: ['HS256'],
        issuer: this.#issuer,
        audience: AUDIENCE,
        requiredClaims: ['exp', 'iat', 'sub'],
        currentDate: new Date(this.#now()),
      });
      const { sub, sid, ver, iat, exp } = payload;
      if (typeof sub !== 'string' || typeof sid !== 'string' || typeof ver !== 'number') throw new errors.JWTInvalid('claims');
      if (typeof iat !== 'number' || typeof exp !== 'number') throw new errors.JWTInvalid('claims');
      const now = Math.floor(this.#now() / 1000);
      if (iat > now + CLOCK_SKEW_SECONDS || exp <= iat || exp - iat > MAX_TOKEN_SECONDS) throw new errors.JWTInvalid('claims');
      return { sub, sid, ver, iat, exp };
    } catch (error) {
      if (error instanceof errors.JWTExpired) {
        throw new AppError('TokenExpiredError', 'Token has expired. Please log in again.');
      }
      throw new AppError('UnauthorizedError', 'Invalid session token. Please log in again.');
    }
  }
}

/**
 * The signing secret: `SESSION_SECRET` when set, otherwise one generated into
 * `$DATA_DIR/session-secret` (mode 0600) on first start and read back after that.
 */
export async function loadSessionSecret(configured: string | undefined, dataDir: string): Promise<string> {
  if (configured) return configured;
  const file = path.join(dataDir, 'session-secret');
  for (let attempt = 0; attempt < 3; attempt += 1) {
    const existing = await readSecret(file);
    if (existing) return existing;
    const secret = randomBytes(48).toString('base64url');
    // Written whole to a file of its own, then linked into place: a crash never leaves a
    // half-written secret under the real name, and of two processes starting together the
    // first link wins and the other reads it.
    const temporary = `${file}.${process.pid}.${randomBytes(6).toString('hex')}`;
    await writeFile(temporary, `${secret}\n`, { mode: 0o600, flag: 'wx' });
    try {
      await link(temporary, file);
      return secret;
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
    } finally {
      await rm(temporary, { force: true });
    }
  }
  throw new Error(`Could not read or create the session secret at ${file}`);
}

/** The stored secret; null when there is none, or only an empty or cut one (left by a crash). */
async function readSecret(file: string): Promise<string | null> {
  try {
    const text = (await readFile(file, 'utf8')).trim();
    if (text.length >= 32) return text;
    await rm(file, { force: true });
    return null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
