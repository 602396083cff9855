import { randomUUID } from 'node:crypto';
import type { Impersonator, ProfileState, SessionResult } from '../../shared/index.ts';
import { AppError } from '../../shared/errors.ts';
import { hashSecret, randomToken, safeEqual } from '../secrets.ts';
import { MODERATORS_GROUP, SUPER_USERS_GROUP } from './roles.ts';
import { AccountsBase, type AccountsDeps } from './service-base.ts';
import type { ProfileService } from './profiles.ts';
import type { AccountsRepository, EmailsAndUsernames, ProfileRecord, SessionRecord } from './repository.ts';
import { canHoldSession, sessionEnded } from './session-rule.ts';
import { tokenUser } from './session-tokens.ts';
import type { IssuedSession, RefreshOutcome, RequestOrigin, Viewer } from './viewer.ts';

/** The groups whose direct members hold a role a request's caller is given (`Viewer`). */
const ROLES = [SUPER_USERS_GROUP, MODERATORS_GROUP] as const;

/** A session kept by `endOtherSessions`: its profile and row, and its new refresh token when it was rotated. */
export interface KeptSession {
  profile: ProfileRecord;
  session: SessionRecord;
  newRefresh: string | null;
}

/** What of a session its access token names. */
type SignedSession = Pick<SessionRecord, 'id' | 'loginEmail' | 'accessSeconds'> & { impersonator?: Impersonator | null };

/**
 * How long after a rotation the refresh token just rotated out is still taken as the same
 * browser's second simultaneous refresh, or its retry (`SessionService.refresh`); after that,
 * presenting it is reuse and ends the session.
 */
export const REFRESH_REUSE_GRACE_MS = 10_000;

/**
 * How long a refresh token rotated out is remembered (`session_refresh_history`): presenting it
 * within this time ends its session as reuse; after it, it is merely unknown. The sweeper lets go
 * of older ones.
 */
export const ROTATED_REFRESH_KEPT_MS = 90 * 24 * 60 * 60 * 1000;

/**
 * Sessions: the session a sign-in opens (`sign-in.ts` checks the person first), the access token resolved to its caller, refresh (with reuse detection),
 * logout, and the sessions that activation and impersonation open. Every check of a live
 * session goes through `canHoldSession`, or, for a refresh, its SQL twin in the rotation's
 * statement (`SessionsRepository.rotateLive`).
 */
export class SessionService extends AccountsBase {
  readonly #profiles: ProfileService;

  constructor(deps: AccountsDeps, profiles: ProfileService) {
    super(deps);
    this.#profiles = profiles;
  }

  /** Lets go of rotated-out refresh tokens older than `ROTATED_REFRESH_KEPT_MS` (the sweeper's). */
  async sweep(): Promise<void> {
    await this.deps.repo.sessions.forgetRotatedBefore(this.now() - ROTATED_REFRESH_KEPT_MS);
  }

  /**
   * The second half of a sign-in: the session opens (after the password, and the second factor
   * when one is on), with the browser it was opened from, and the sign-in goes to the audit log
   * with how it was made (`method`). One session per browser: when the browser's refresh cookie
   * (`refreshToken`) names a live session of the same person (not an impersonation), that session
   * is signed in to again (`signedInAgain`: a new sign-in time, a rotated refresh token, the same
   * id, so the applications signed in through it keep their `sid`), instead of a second one
   * opening beside it, as an application's forced re-login (`prompt=login`, `max_age`) did.
   */
  async startSession(
    profile: ProfileRecord,
    loginEmail: string,
    accessSeconds: number,
    origin: RequestOrigin,
    opts: { method?: string | null; refreshToken?: string | undefined } = {},
  ): Promise<IssuedSession & { signedInAgain: boolean }> {
    const repo = this.deps.repo;
    await repo.profiles.touchLastLogin(profile.id, this.now());
    const again = await this.#signInAgain(profile, loginEmail, accessSeconds, origin, opts.refreshToken);
    const issued = again ?? (await this.issueSession(profile, { loginEmail, accessSeconds, origin }));
    const sessionId = (await this.deps.tokens.verify(issued.accessToken)).sid;
    // The person's activity log (the security pages) reads the audit log.
    const details = { ...deviceDetails(origin), sessionId, ...(opts.method ? { method: opts.method } : {}) };
    await repo.settings.audit({ actor: profile.id, action: 'sign-in', target: profile.id, details }, this.now());
    // This browser has now signed in to the account: its own allowance from here on.
    return { ...issued, deviceEntry: this.deps.devices.issue(profile.id), signedInAgain: again !== null };
  }

  /** The browser's live session of this person, signed in to again; null when it holds none. */
  async #signInAgain(profile: ProfileRecord, loginEmail: string, accessSeconds: number, origin: RequestOrigin, refreshToken: string | undefined): Promise<IssuedSession | null> {
    if (refreshToken === undefined) return null;
    const repo = this.deps.repo;
    const now = this.now();
    const oldHash = hashSecret(refreshToken);
    const found = await repo.sessions.findWithProfile({ refreshHash: oldHash });
    const session = found?.session;
    if (!session || session.profileId !== profile.id || session.impersonator !== null || session.parentSessionId !== null) return null;
    if (session.revokedAt !== null || session.expiresAt <= now || session.tokenVersion !== profile.tokenVersion) return null;
    const newRefresh = randomToken();
    const refreshSeconds = this.#refreshSeconds(accessSeconds);
    if (!(await repo.sessions.rotateRefresh(session.id, hashSecret(newRefresh), now + refreshSeconds * 1000, oldHash, now))) return null;
    await repo.sessions.signInAgain(session.id, { loginEmail, accessSeconds, now, device: origin });
    return this.#issue(profile, { id: session.id, loginEmail, accessSeconds }, newRefresh, refreshSeconds);
  }

  /** Opens a new session for a profile: a session row, a refresh token, an access token. */
  async issueSession(
    profile: ProfileRecord,
    opts: {
      loginEmail: string;
      accessSeconds: number;
      impersonator?: Impersonator;
      parentSessionId?: string;
      readOnly?: boolean;
      /** The access token expires no later than this (seconds since the epoch). */
      accessNotAfter?: number;
      /** Where the browser signs in from, kept with the session for the security page. */
      origin?: RequestOrigin;
    },
    repo = this.deps.repo,
  ): Promise<IssuedSession> {
    const now = this.now();
    const refreshToken = randomToken();
    const refreshSeconds = this.#refreshSeconds(opts.accessSeconds);
    const session = {
      id: randomUUID(),
      profileId: profile.id,
      loginEmail: opts.loginEmail,
      tokenVersion: profile.tokenVersion,
      accessSeconds: opts.accessSeconds,
      expiresAt: now + refreshSeconds * 1000,
    };
    await repo.sessions.insert({
      ...session,
      refreshHash: hashSecret(refreshToken),
      now,
      ...(opts.impersonator ? { impersonator: opts.impersonator } : {}),
      ...(opts.parentSessionId ? { parentSessionId: opts.parentSessionId } : {}),
      ...(opts.readOnly ? { readOnly: opts.readOnly } : {}),
      ...(opts.origin ? { device: opts.origin } : {}),
    });
    return this.#issue(profile, { ...session, impersonator: opts.impersonator ?? null }, refreshToken, refreshSeconds, { repo, accessNotAfter: opts.accessNotAfter });
  }

  /** How long a session's refresh token lives: the configured lifetime, never shorter than its access token's. */
  #refreshSeconds(accessSeconds: number): number {
    return Math.max(this.deps.config.refreshTokenSeconds, accessSeconds);
  }

  async #issue(
    profile: ProfileRecord,
    session: SignedSession,
    refreshToken: string,
    refreshSeconds: number,
    opts: { repo?: AccountsRepository; accessNotAfter?: number | undefined; knownEmails?: EmailsAndUsernames | undefined } = {},
  ): Promise<IssuedSession> {
    const access = await this.#access(profile, session, { repo: opts.repo, knownEmails: opts.knownEmails, notAfter: opts.accessNotAfter });
    return { ...access, accessSeconds: session.accessSeconds, refreshToken, refreshSeconds };
  }

  /**
   * An access token for a session, never past `notAfter` (seconds since the epoch), and the
   * answer's body. The token carries the profile's view (a read, unless its emails are known).
   */
  async #access(
    profile: ProfileRecord,
    session: SignedSession,
    opts: { repo?: AccountsRepository | undefined; knownEmails?: EmailsAndUsernames | undefined; notAfter?: number | undefined } = {},
  ): Promise<Pick<IssuedSession, 'result' | 'accessToken' | 'user'>> {
    const simplified = await this.#profiles.simplify(profile, opts.repo, opts.knownEmails);
    const user = tokenUser(session.loginEmail, profile.id, simplified, session.impersonator ?? null);
    const accessToken = await this.deps.tokens.sign({ sub: profile.id, sid: session.id, ver: profile.tokenVersion, user }, session.accessSeconds, opts.notAfter);
    return { result: { token: accessToken, user: { id: session.loginEmail, profile: simplified } }, accessToken, user };
  }

  /** Ends every session of a profile: its `tokenVersion` moves on and every session row is closed. */
  async endAllSessions(repo: AccountsRepository, profileId: string, now: number): Promise<void> {
    await repo.profiles.incrementTokenVersion(profileId, now);
    await repo.sessions.revokeOthers(profileId, null, now);
  }

  /**
   * Resolves an access token to its caller: the signature and expiry, then the session row
   * (not logged out), then the profile (still active, same `tokenVersion`).
   */
  authenticate(accessToken: string): Promise<Viewer> {
    return this.#authenticate(accessToken, null);
  }

  /**
   * The browser's session, or null: the access cookie resolved as `authenticate` does, and the
   * refresh cookie the same session's current one, read in the same query. What signs a person in to an
   * application, or keeps their session through a reset, must be their browser: an access token
   * alone (perhaps a stolen one, sent as a cookie as easily as a header) is not.
   */
  async browserViewer(accessToken: string | undefined, refreshToken: string | undefined): Promise<Viewer | null> {
    if (accessToken === undefined || refreshToken === undefined) return null;
    try {
      return await this.#authenticate(accessToken, hashSecret(refreshToken));
    } catch (error) {
      // Cookies that make no live session are no browser; a database that fails still fails.
      if (error instanceof AppError) return null;
      throw error;
    }
  }

  async #authenticate(accessToken: string, refreshHash: string | null): Promise<Viewer> {
    const claims = await this.deps.tokens.verify(accessToken);
    const repo = this.deps.repo;
    // Every signed-in request comes through here: the session, its profile and the roles take
    // one query, not three.
    const found = await repo.sessions.findWithProfile({ id: claims.sid }, { rolesAmong: ROLES });
    const session = found?.session;
    if (!session || session.revokedAt !== null || session.profileId !== claims.sub) throw sessionEnded();
    if (refreshHash !== null && !safeEqual(refreshHash, found.currentRefreshHash)) throw sessionEnded();
    const profile = found.profile;
    if (!canHoldSession(profile, claims.ver)) throw sessionEnded();
    if (!(await this.#parentLive(session))) throw sessionEnded();
    // A read-only impersonation never lends the target's privileges to the impersonator.
    const privileged = !session.readOnly;
    const roles = privileged ? found.roles : new Set<string>();
    return {
      profileId: profile.id,
      sessionId: session.id,
      loginEmail: session.loginEmail,
      tokenVersion: profile.tokenVersion,
      isSuperUser: roles.has(SUPER_USERS_GROUP),
      isModerator: roles.has(MODERATORS_GROUP),
      mayAuthor: profile.state !== 'Limited',
      impersonator: session.impersonator,
      parentSessionId: session.parentSessionId,
      readOnly: session.readOnly,
      authTime: session.createdAt,
      accessExpiresAt: claims.exp,
    };
  }

  /**
   * `POST /refreshToken`. With the refresh cookie, the session's refresh token is rotated and a
   * new access token issued even if the old one expired. A rotated-out refresh token presented
   * again is reuse (RFC 9700 §4.14.2): the session ends, the newest token with it, except for
   * the token rotated out just before the current one within `REFRESH_REUSE_GRACE_MS` (a
   * browser's two tabs refreshing at once, or a retry after a lost answer), which gets the
   * rotation's answer again while its successor was never used, an access token only otherwise
   * (`#replayed`; a session rotated through `resumeSession`, as an impersonation's is, has a
   * random successor, so only the latter).
   *
   * With only a valid access token (no refresh cookie) the answer is a new access token for the
   * same session that expires no later than the one presented: a stolen access token never
   * becomes a refresh token or a longer session, and no session row changes.
   */
  async refresh(credentials: { refreshToken?: string | undefined; viewer?: Viewer | undefined }): Promise<RefreshOutcome> {
    const repo = this.deps.repo;
    if (credentials.refreshToken) {
      const oldHash = hashSecret(credentials.refreshToken);
      try {
        const rotated = (await this.#rotateAtOnce(credentials.refreshToken, oldHash)) ?? (await this.#rotateAfterReading(oldHash));
        if (rotated) return { rotated };
      } catch (error) {
        // Refused, yet the token is now rotated out: a simultaneous refresh of it won the race,
        // or this one rotated and its answer failed. `#replayed` answers it as any rotated-out token.
        if (!(await repo.sessions.findRotatedRefresh(oldHash))) throw error;
      }
      return this.#replayed(credentials.refreshToken, oldHash);
    }
    const viewer = credentials.viewer;
    if (!viewer) throw sessionEnded();
    const found = await repo.sessions.findWithProfile({ id: viewer.sessionId });
    const profile = await this.#liveSession(found?.session ?? null, found?.profile ?? null);
    return { accessOnly: (await this.#issueAccess(profile, found!.session, viewer.accessExpiresAt)).result };
  }

  /**
   * The common refresh in one statement (`SessionsRepository.rotateLive`): the token is a live
   * session's current one, the session no impersonation, and its profile may hold it. Then the
   * answer is made from the row the rotation returns, as `resumeSession` makes it from the row it
   * read first. Null when nothing was rotated, and nothing was written.
   */
  async #rotateAtOnce(oldToken: string, oldHash: string): Promise<IssuedSession | null> {
    // Its successor is the one `#replayed` can give again (`refreshSuccessor`).
    const refreshToken = this.deps.tokens.refreshSuccessor(oldToken);
    const done = await this.deps.repo.sessions.rotateLive(oldHash, hashSecret(refreshToken), this.deps.config.refreshTokenSeconds, this.now());
    if (!done) return null;
    return this.#issue(done.profile, done.session, refreshToken, this.#refreshSeconds(done.session.accessSeconds), { knownEmails: done.emails });
  }

  /**
   * Every refresh the one statement does not rotate: the session's row says why (an
   * impersonation's parents to check, a rule broken, a race lost). Null when the token is no
   * session's current one. The answer shows the profile's emails: they come with the session, in
   * the same statement.
   */
  async #rotateAfterReading(oldHash: string): Promise<IssuedSession | null> {
    const found = await this.deps.repo.sessions.findWithProfile({ refreshHash: oldHash }, { withEmails: true });
    return found ? this.resumeSession(found.session, oldHash, found.profile, found.emails) : null;
  }

  /**
   * A refresh token that is not any session's current one: the grace case, or reuse. In the grace
   * case, when the token's successor (`refreshSuccessor`) is still the session's current one,
   * never used, the answer is the rotation's again, that refresh token with a new access token: a
   * browser whose answer was lost (a dropped connection, a server stopped after the rotation was
   * written) carries on, and two tabs set the same cookie. Otherwise an access token only.
   */
  async #replayed(oldToken: string, oldHash: string): Promise<RefreshOutcome> {
    const repo = this.deps.repo;
    const now = this.now();
    const rotated = await repo.sessions.findRotatedRefresh(oldHash);
    if (!rotated) throw sessionEnded();
    const found = await repo.sessions.findWithProfile({ id: rotated.sessionId });
    const session = found?.session ?? null;
    const justBefore = found !== null && session !== null && session.revokedAt === null && safeEqual(rotated.nextHash, found.currentRefreshHash);
    if (justBefore && now - rotated.rotatedAt <= REFRESH_REUSE_GRACE_MS) {
      const profile = await this.#liveSession(session, found!.profile);
      const successor = this.deps.tokens.refreshSuccessor(oldToken);
      if (safeEqual(hashSecret(successor), found!.currentRefreshHash)) {
        return { rotated: await this.#issue(profile, session, successor, this.#refreshSeconds(session.accessSeconds)) };
      }
      return { accessOnly: (await this.#issueAccess(profile, session)).result };
    }
    if (session && session.revokedAt === null) {
      await repo.sessions.revoke(session.id, now);
      this.deps.logger.warn({ sessionId: session.id, profileId: session.profileId }, 'a rotated-out refresh token was used again: the session is ended');
    }
    throw sessionEnded();
  }

  /** The session's profile when the session may still be used (see `canHoldSession`); otherwise `sessionEnded()`. */
  async #liveSession(session: SessionRecord | null, known: ProfileRecord | null | undefined): Promise<ProfileRecord> {
    const now = this.now();
    if (!session || session.revokedAt !== null || session.expiresAt <= now) throw sessionEnded();
    const profile = known === undefined ? await this.deps.repo.profiles.find(session.profileId) : known;
    if (!canHoldSession(profile, session.tokenVersion)) throw sessionEnded();
    if (!(await this.#parentLive(session))) throw sessionEnded();
    return profile;
  }

  /** A new access token for a session, no new refresh token; never past `notAfter` (seconds since the epoch). */
  async #issueAccess(profile: ProfileRecord, session: SessionRecord, notAfter?: number): Promise<{ result: SessionResult }> {
    return { result: (await this.#access(profile, session, { notAfter })).result };
  }

  /**
   * Issues a new access token for an existing session, rotating its refresh token (only if it
   * is still `oldHash`, when given; the token rotated out is kept to recognise its reuse). The
   * session must be live and its profile's `tokenVersion` unchanged since it was opened.
   * `known` is the session's profile, and `knownEmails` its emails and usernames, when the caller has read them.
   */
  async resumeSession(session: SessionRecord | null, oldHash: string | null, known?: ProfileRecord | null, knownEmails?: EmailsAndUsernames): Promise<IssuedSession> {
    const repo = this.deps.repo;
    const now = this.now();
    const profile = await this.#liveSession(session, known);
    const live = session as SessionRecord;
    const refreshToken = randomToken();
    const refreshSeconds = this.#refreshSeconds(live.accessSeconds);
    // The answer (the access token's signature, the profile's view) is made while the rotation
    // runs, and given out only once it held: a rotation refused drops it unseen. Both are waited
    // for, so that whoever handles a failure finds the rotation done or not, never under way.
    const [rotation, answer] = await Promise.allSettled([
      repo.sessions.rotateRefresh(live.id, hashSecret(refreshToken), now + refreshSeconds * 1000, oldHash, now),
      this.#issue(profile, live, refreshToken, refreshSeconds, { knownEmails }),
    ]);
    if (rotation.status === 'rejected') throw rotation.reason;
    if (!rotation.value) throw sessionEnded();
    if (answer.status === 'rejected') throw answer.reason;
    return answer.value;
  }

  /**
   * Whether the caller holds the session's current refresh cookie, not only an access token.
   * Only such a caller may be handed a refresh token, or have the session rotated: an access
   * token alone (perhaps a stolen one) must never grow into a longer session.
   */
  async holdsRefreshCookie(sessionId: string, refreshToken: string | undefined): Promise<boolean> {
    if (refreshToken === undefined) return false;
    const found = await this.deps.repo.sessions.findWithProfile({ id: sessionId });
    return found !== null && safeEqual(hashSecret(refreshToken), found.currentRefreshHash);
  }

  /**
   * An impersonation session lives only as long as the impersonator's own session (and its
   * parent's, when nested): the impersonator's logout, logout-all, reset or block ends it.
   */
  async #parentLive(session: SessionRecord): Promise<boolean> {
    const repo = this.deps.repo;
    let current = session;
    while (current.parentSessionId) {
      const parent = await repo.sessions.find(current.parentSessionId);
      if (!parent || parent.revokedAt !== null || parent.expiresAt <= this.now()) return false;
      if (!canHoldSession(await repo.profiles.find(parent.profileId), parent.tokenVersion)) return false;
      current = parent;
    }
    return true;
  }

  /**
   * `POST /logout`: ends this session only: the one the access token names, and the one the
   * refresh cookie names (so a logout with an expired access token still ends the session).
   */
  async logout(credentials: { viewer: Viewer | null; refreshToken?: string | undefined }): Promise<void> {
    const repo = this.deps.repo;
    const now = this.now();
    if (credentials.viewer) await repo.sessions.revoke(credentials.viewer.sessionId, now);
    if (credentials.refreshToken) {
      const hash = hashSecret(credentials.refreshToken);
      // A rotated-out token names its session too: logging out with it ends that session.
      const sessionId = (await repo.sessions.findByRefreshHash(hash))?.id ?? (await repo.sessions.findRotatedRefresh(hash))?.sessionId;
      if (sessionId) await repo.sessions.revoke(sessionId, now);
    }
  }

  /**
   * `POST /logout-all-devices`: raises the profile's `tokenVersion`, so every token issued
   * before is refused, ends every other session, and keeps this one with a fresh token (and,
   * for the holder of its refresh cookie, a fresh refresh cookie).
   */
  async logoutOtherDevices(viewer: Viewer, refreshToken?: string): Promise<RefreshOutcome> {
    const kept = await this.deps.repo.transaction((repo) => this.endOtherSessions(repo, viewer, refreshToken, this.now()));
    return this.keptSessionTokens(kept, viewer);
  }

  /**
   * In the caller's transaction (`repo`): every session of the viewer's profile but the viewer's
   * own ends, with the impersonations made from them, and the profile's `tokenVersion` moves on;
   * the viewer's session takes the new version. Its refresh token is rotated only for the holder
   * of its current refresh cookie: a caller with nothing but an access token (perhaps a stolen
   * one) gets a new access token from `keptSessionTokens` and no refresh token.
   */
  async endOtherSessions(repo: AccountsRepository, viewer: Viewer, refreshToken: string | undefined, now: number): Promise<KeptSession> {
    const version = await repo.profiles.incrementTokenVersion(viewer.profileId, now);
    await repo.sessions.revokeOthers(viewer.profileId, viewer.sessionId, now);
    await repo.sessions.revokeImpersonationsFrom(viewer.profileId, now);
    await repo.sessions.setVersion(viewer.sessionId, version);
    const found = await repo.sessions.findWithProfile({ id: viewer.sessionId });
    if (!found?.profile || found.session.revokedAt !== null) throw sessionEnded();
    const holdsCookie = refreshToken !== undefined && safeEqual(hashSecret(refreshToken), found.currentRefreshHash);
    if (!holdsCookie) return { profile: found.profile, session: found.session, newRefresh: null };
    const newRefresh = randomToken();
    const refreshSeconds = this.#refreshSeconds(found.session.accessSeconds);
    await repo.sessions.rotateRefresh(found.session.id, hashSecret(newRefresh), now + refreshSeconds * 1000, null, now);
    return { profile: found.profile, session: found.session, newRefresh };
  }

  /** The tokens of a session `endOtherSessions` kept, once its transaction is committed. */
  async keptSessionTokens(kept: KeptSession, viewer: Viewer): Promise<RefreshOutcome> {
    if (kept.newRefresh === null) return { accessOnly: (await this.#issueAccess(kept.profile, kept.session, viewer.accessExpiresAt)).result };
    const refreshSeconds = this.#refreshSeconds(kept.session.accessSeconds);
    return { rotated: await this.#issue(kept.profile, kept.session, kept.newRefresh, refreshSeconds) };
  }
}

/**
 * The key an account's rate limits count under: the profile's id when the typed id names one
 * (so its emails and usernames share one counter), the canonical typed id otherwise.
 */
export function accountLimitKey(canonicalId: string, profile: ProfileRecord | null): string {
  return profile ? `profile:${profile.id}` : `id:${canonicalId}`;
}

/** What the audit log keeps of where a request came from. */
export function deviceDetails(origin: RequestOrigin): Record<string, string> {
  return { address: origin.address, ...(origin.userAgent ? { userAgent: origin.userAgent.slice(0, 512) } : {}) };
}

export function inactiveMessage(state: ProfileState): string {
  switch (state) {
    case 'Inactive':
      return 'Your account is not active yet. Please activate it from the link in your sign-up email.';
    case 'Needs Moderation':
      return 'Your profile is waiting for moderation. You will be notified by email.';
    case 'Rejected':
      return 'Your profile was not accepted. Please check your email for the reason.';
    case 'Blocked':
      return 'Your account is blocked. Please contact support.';
    case 'Merged':
      return 'This profile was merged into another one. Please log in with that profile.';
    case 'Active':
    case 'Active Institutional':
    case 'Active Automatic':
    case 'Limited':
      return 'Your account cannot log in.';
  }
}
