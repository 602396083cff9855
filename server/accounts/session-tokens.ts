import { createHmac, randomBytes, randomUUID, type KeyObject } from 'node:crypto';
import { readFile, rm } from 'node:fs/promises';
import path from 'node:path';
import { errors, jwtVerify, type CryptoKey } from 'jose';
import { AppError } from '../../shared/errors.ts';
import type { Impersonator, SimplifiedProfile } from '../../shared/index.ts';
import type { Db } from '../../db/knex.ts';
import { signJwt } from '../jwt.ts';
import { hashSecret, secretKey } from '../secrets.ts';

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

/**
 * The issuer of session tokens. The platform's web client decodes the access token (without
 * checking its signature) and treats a person as signed out unless `iss` starts with `openreview`
 * (`app/auth.js` `getTokenPayload`, used by its server-rendered pages and by `middleware.js` after
 * a refresh; older releases ask for exactly `openreview`), so the token names the issuer as the
 * platform's own API does. The signature under the install's secret is what makes a token ours.
 */
export const SESSION_TOKEN_ISSUER = 'openreview';

/** The longest a session token may live (`MAX_SESSION_SECONDS`, one week): a longer one was not issued here. */
const MAX_TOKEN_SECONDS = 7 * 24 * 60 * 60;
/** How far ahead of this clock another process's clock may be. */
const CLOCK_SKEW_SECONDS = 60;

/**
 * How many verified tokens a process remembers (by their SHA-256), so that a browser's next
 * request with the same token is not checked by WebCrypto again: an HMAC through WebCrypto is a
 * job on libuv's thread pool (140–190 µs of the main thread's CPU to sign a token in a loop here,
 * and a check is the same job) against a few for the lookup (docs/performance.md).
 */
const VERIFIED_KEPT = 1000;

/** A verified token's claims, with when it was issued and when it expires (seconds since the epoch). */
export interface VerifiedClaims extends SessionClaims {
  iat: number;
  exp: number;
}

/**
 * Signs and checks access tokens: JWTs, HS256, issued by `SESSION_TOKEN_ISSUER`. A valid
 * signature is not enough to be let in: the session row and the profile's `tokenVersion` are
 * checked by the accounts service.
 */
export class SessionTokens {
  /** Issuers a token may name: ours, and the service's address, which tokens issued before named. */
  readonly #issuers: string[];
  readonly #now: () => number;

  /** The key imported once: given the raw bytes, jose imports them again for every token. */
  readonly #cryptoKey: Promise<CryptoKey>;

  /** Tokens this process verified, by hash, with their claims; the oldest goes first past `VERIFIED_KEPT`. */
  readonly #verified = new Map<string, VerifiedClaims>();

  /** The key of refresh tokens' successors (`refreshSuccessor`), derived from the secret for that use alone. */
  readonly #successorKey: KeyObject;

  /**
   * `formerIssuer`: the service's address, which tokens signed before `SESSION_TOKEN_ISSUER` name
   * (a session's access token lives a week at most).
   */
  constructor(secret: string, formerIssuer: string, now: () => number = Date.now) {
    this.#issuers = [SESSION_TOKEN_ISSUER, formerIssuer];
    this.#now = now;
    this.#cryptoKey = crypto.subtle.importKey('raw', new TextEncoder().encode(secret), { name: 'HMAC', hash: 'SHA-256' }, false, ['sign', 'verify']);
    this.#successorKey = secretKey(createHmac('sha256', secret).update('session refresh token successors').digest('base64url'));
  }

  /**
   * The refresh token that replaces `token` when a session's refresh rotates it: an HMAC of it
   * under a key of the install's secret, as long and as unguessable as a random one (32 bytes).
   * Made again for the same token, it is the same: a browser presenting the token rotated out a
   * moment ago (its answer lost, or a second tab) is given the token it replaced it with, if that
   * was never used (`SessionService.refresh`); without the secret, no one can work it out.
   */
  refreshSuccessor(token: string): string {
    return createHmac('sha256', this.#successorKey).update(token).digest('base64url');
  }

  /**
   * A token for `seconds`, or until `notAfter` (seconds since the epoch) when that comes first,
   * carrying `user`: who the session is, as far as clients read it from the token alone (`tokenUser`).
   */
  async sign(claims: SessionClaims & { user: TokenUser }, seconds: number, notAfter?: number): Promise<string> {
    const now = Math.floor(this.#now() / 1000);
    const exp = Math.min(now + seconds, notAfter ?? Number.POSITIVE_INFINITY);
    return signJwt(
      // Two tokens issued in the same second still differ by `jti`.
      { sid: claims.sid, ver: claims.ver, user: claims.user, sub: claims.sub, iss: SESSION_TOKEN_ISSUER, aud: AUDIENCE, iat: now, jti: randomUUID(), exp },
      { alg: 'HS256', typ: 'JWT' },
      await this.#cryptoKey,
    );
  }

  /**
   * A token is accepted only with `exp` and `iat` (a token without an expiry would be good
   * forever), issued not in the future and for no longer than a session may last.
   */
  async verify(token: string): Promise<VerifiedClaims> {
    // The same text verified before has the same signature and claims; only the time checks can
    // change their answer, and they are made again. Past its expiry it goes to jose, which says so.
    const key = hashSecret(token);
    const known = this.#verified.get(key);
    if (known) {
      const now = Math.floor(this.#now() / 1000);
      if (known.exp > now && known.iat <= now + CLOCK_SKEW_SECONDS) return { ...known };
      this.#verified.delete(key);
    }
    const claims = await this.#verifyOnce(token);
    if (this.#verified.size >= VERIFIED_KEPT) this.#verified.delete(this.#verified.keys().next().value!);
    this.#verified.set(key, claims);
    return { ...claims };
  }

  async #verifyOnce(token: string): Promise<VerifiedClaims> {
    try {
      const { payload } = await jwtVerify(token, await this.#cryptoKey, {
        algorithms: ['HS256'],
        issuer: this.#issuers,
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
 * How many of a profile's usernames a session token carries, and in how many bytes (UTF-8) at
 * most: enough for every profile but a rare one, few enough that the token and the
 * `service.user` cookie stay small (a username may run to 300 letters of any script).
 */
export const TOKEN_USERNAMES = 10;
export const TOKEN_USERNAME_BYTES = 512;

/**
 * The `user` a session token carries: the login email, and of the profile what the platform's
 * clients read from a token alone (openreview-py the id; the web client's menu the name and
 * `emails[0]`, the address its message count asks about, and whether someone impersonates:
 * `app/(Home)/NavLg.js`, `NavNotificationCount.js`; its profile page, group members and activity
 * list `usernames`, to tell the person's own ids: `app/profile/page.js`,
 * `components/group/GroupMembers.js`, `components/BaseActivityList.js`). One name, the preferred
 * address only, and at most the first `TOKEN_USERNAMES` usernames in `TOKEN_USERNAME_BYTES` (the
 * preferred id and the profile id first), not every email and username, so that the token stays well under the 4 kB a
 * browser keeps of a cookie however many a profile holds, an impersonation's too. Nothing secret.
 * The same view is the browser's readable `service.user` cookie (`http/context.ts`). Without a
 * profile's view (tests), the profile's id alone.
 */
export function tokenUser(loginEmail: string, profileId: string, profile?: SimplifiedProfile, impersonator: Impersonator | null = null): TokenUser {
  const preferred = profile?.preferredEmail ?? profile?.emails[0];
  const named = profile
    ? {
        fullname: profile.fullname,
        ...(profile.first ? { first: profile.first } : {}),
        ...(profile.middle ? { middle: profile.middle } : {}),
        ...(profile.last ? { last: profile.last } : {}),
        preferredId: profile.preferredId,
        ...(preferred ? { preferredEmail: preferred, emails: [preferred] } : { emails: [] }),
        usernames: tokenUsernames(profile),
      }
    : {};
  const by = impersonator?.profile ? { profile: { id: impersonator.profile.id, fullname: impersonator.profile.fullname } } : {};
  return { id: loginEmail, profile: { id: profileId, ...named }, ...(impersonator ? { impersonator: { id: impersonator.id, ...by } } : {}) };
}

/**
 * The usernames a token carries: the preferred id and the profile id first (the ones pages link
 * to), then the rest, as long as they fit in `TOKEN_USERNAMES` and `TOKEN_USERNAME_BYTES`.
 */
function tokenUsernames(profile: SimplifiedProfile): string[] {
  const first = [profile.preferredId, profile.id].filter((id) => profile.usernames.includes(id));
  const carried: string[] = [];
  let bytes = 0;
  for (const username of new Set([...first, ...profile.usernames])) {
    bytes += Buffer.byteLength(username);
    if (carried.length === TOKEN_USERNAMES || bytes > TOKEN_USERNAME_BYTES) break;
    carried.push(username);
  }
  return carried;
}

export interface TokenUser {
  /** The login email. */
  id: string;
  /** `usernames`: at most `TOKEN_USERNAMES` of them, in `TOKEN_USERNAME_BYTES` (`tokenUser`). */
  profile: Partial<Pick<SimplifiedProfile, 'fullname' | 'first' | 'middle' | 'last' | 'preferredId' | 'preferredEmail' | 'emails' | 'usernames'>> & { id: string };
  impersonator?: { id: string; profile?: { id: string; fullname: string } };
}

/** The row of `install_secrets` that holds the generated session secret. */
const SESSION_SECRET_ROW = 'session';
/** Shorter than this, a stored secret was not written by this service (`SESSION_SECRET` asks as much). */
const MIN_SECRET_LENGTH = 32;

/**
 * The signing secret: `SESSION_SECRET` when set. Otherwise one kept in the database (the
 * `session` row of `install_secrets`), so that every process of the install, on one machine or
 * on many sharing a PostgreSQL database, signs and checks tokens with the same secret. The first
 * process to start writes it, with one statement that inserts only when no row is there: of
 * processes starting together one wins and every other reads the winner's secret; a crash leaves
 * either no row or a whole one, never an empty or a cut secret.
 *
 * An install from before this kept its generated secret in `$DATA_DIR/session-secret`. The first
 * start after the upgrade adopts that file's secret into the database (when the database has none
 * yet and the file holds a whole one), so that sessions already issued stay valid, and then
 * removes the file: the database is the one place the secret is kept. A file that is empty or
 * cut (a crash of the older code) is not adopted; a new secret is generated instead.
 * The secret is never logged.
 */
export async function loadSessionSecret(configured: string | undefined, db: Db, dataDir: string): Promise<string> {
  if (configured) return configured;
  const file = path.join(dataDir, 'session-secret');
  const candidate = (await readSecretFile(file)) ?? randomBytes(48).toString('base64url');
  await db('install_secrets').insert({ name: SESSION_SECRET_ROW, value: candidate, created_at: Date.now() }).onConflict('name').ignore();
  const row: { value: unknown } | undefined = await db('install_secrets').where({ name: SESSION_SECRET_ROW }).first('value');
  if (typeof row?.value !== 'string' || row.value.length < MIN_SECRET_LENGTH) {
    // Only a hand-edited row gets here: refusing to start beats signing with a guessable key.
    throw new Error('The session secret in the database (install_secrets, row "session") is missing or shorter than 32 characters');
  }
  await rm(file, { force: true });
  return row.value;
}

/** The secret in an older install's file; null when there is none, or only an empty or cut one. */
async function readSecretFile(file: string): Promise<string | null> {
  try {
    const text = (await readFile(file, 'utf8')).trim();
    return text.length >= MIN_SECRET_LENGTH ? text : null;
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return null;
    throw error;
  }
}
