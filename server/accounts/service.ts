import { randomUUID } from 'node:crypto';
import type { Logger } from 'pino';
import {
  AppError,
  DEFAULT_SESSION_SECONDS,
  type Impersonator,
  type LoginInput,
  type NameParts,
  type PastState,
  type Profile,
  type ProfileContent,
  type ProfileState,
  type ProfileSearchInput,
  type ProfileSearchQuery,
  type ProfilesQuery,
  type RegisterInput,
  type RegisterResult,
  type SessionResult,
  type SimplifiedProfile,
} from '../../shared/index.ts';
import type { Config } from '../config.ts';
import type { Mailer } from '../mail.ts';
import type { RateLimits } from '../rate-limits.ts';
import type { HumanVerifier } from './human-verification.ts';
import type { OneTimeTokens } from './one-time-tokens.ts';
import type { PasswordHasher } from './passwords.ts';
import { addressKey } from './ids.ts';
import { type AccountsRepository, normaliseEmail, normaliseId, type ProfileRecord, type SessionRecord } from './repository.ts';
import { hashSecret, randomToken, safeEqual } from '../secrets.ts';
import type { SessionTokens } from './session-tokens.ts';
import { ACTIVE_STATES, canHoldSession, sessionEnded } from './session-rule.ts';
import type { IssuedSession, RefreshOutcome, RequestOrigin, Viewer } from './viewer.ts';

// Until server/oidc and server/http name ./session-rule.ts and ./viewer.ts themselves.
export { ACTIVE_STATES };
export type { Viewer };
import { smallestFreeNumber, tildeBase, type NameInput } from './tilde.ts';

/** Members of this group may do anything; the operator CLI adds them (`--role superuser`). */
export const SUPER_USERS_GROUP = 'Service/Superusers';
/** Members of this group decide on profiles; the operator CLI adds them (`--role moderator`). */
export const MODERATORS_GROUP = 'Service/Moderators';
/** The invitation every profile is written through. */
export const PROFILE_INVITATION = '~/-/Profile';


const WRONG_CREDENTIALS = 'Invalid username or password';

/**
 * How long after a rotation the refresh token just rotated out is still taken as the same
 * browser's second simultaneous refresh (it gets a new access token, no new refresh token);
 * after that, presenting it is reuse and ends the session.
 */
export const REFRESH_REUSE_GRACE_MS = 10_000;

export interface AccountsDeps {
  repo: AccountsRepository;
  hasher: PasswordHasher;
  tokens: SessionTokens;
  oneTime: OneTimeTokens;
  verifier: HumanVerifier;
  limits: RateLimits;
  mailer: Mailer;
  config: Config;
  logger: Logger;
  now?: () => number;
}

export interface NewUser {
  email: string;
  password: string;
  fullname?: string | undefined;
  name?: NameParts | undefined;
  state: ProfileState;
  role?: 'superuser' | 'moderator' | undefined;
}

/** Sign-up, sign-in and sessions: the business rules, free of any transport. */
export class AccountsService {
  readonly #d: AccountsDeps;
  readonly #now: () => number;

  constructor(deps: AccountsDeps) {
    this.#d = deps;
    this.#now = deps.now ?? Date.now;
  }

  // ---- tilde usernames ------------------------------------------------------------------------

  /** The next free `~First_Last<N>` for a name. */
  async nextUsername(name: NameInput, repo = this.#d.repo): Promise<string> {
    const base = tildeBase(name);
    return `${base}${smallestFreeNumber(await repo.usedNumbers(base))}`;
  }

  // ---- sign-up --------------------------------------------------------------------------------

  /**
   * Creates a profile with its tilde id, its email, its two groups (`~Id` with the email as
   * member, and the email with `~Id` as member) and, for the operator CLI, a role. One transaction.
   */
  async createUser(user: NewUser): Promise<string> {
    const passwordHash = await this.#d.hasher.hash(user.password);
    return this.#d.repo.transaction(async (repo) => {
      if (await repo.emailExists(user.email)) {
        throw new AppError('ValidationError', `The email ${user.email} is already in use`, { path: 'email' });
      }
      return this.#insertUser(repo, user, passwordHash);
    });
  }

  async #insertUser(repo: AccountsRepository, user: NewUser, passwordHash: string): Promise<string> {
    const now = this.#now();
    const name = user.name ?? { fullname: user.fullname };
    const base = tildeBase(name, user.name ? 'name/' : '');
    const number = smallestFreeNumber(await repo.usedNumbers(base));
    const id = `${base}${number}`;
    const parts = user.name ?? splitFullname(user.fullname ?? '');
    const fullname = user.fullname ?? [parts.first, parts.middle, parts.last].filter(Boolean).join(' ');
    const content: ProfileContent = {
      names: [{ first: parts.first, middle: parts.middle ?? '', last: parts.last, fullname, username: id, preferred: true }],
    };
    const pastStates: PastState[] = [{ state: user.state, date: now, setBy: id }];
    await repo.insertProfile({ id, state: user.state, passwordHash, content, pastStates, now });
    await repo.addUsername(id, base, number);
    await repo.addEmail(id, user.email, user.state !== 'Inactive', now);
    await repo.upsertGroup(id, { readers: [id], writers: [id], signatures: [id], signatories: [id] }, [], now);
    await repo.linkEmailGroups(id, user.email, now);
    if (user.role) {
      const group = user.role === 'superuser' ? SUPER_USERS_GROUP : MODERATORS_GROUP;
      await repo.upsertGroup(group, { readers: [SUPER_USERS_GROUP], writers: [SUPER_USERS_GROUP] }, [], now);
      await repo.addMember(group, id);
    }
    return id;
  }

  /**
   * `POST /register`. An email that is already taken gets the same answer as a new one, so the
   * form cannot be used to find out who has an account; the owner of the address is told by
   * mail. Both do the same work in the request: one password hash, and one transaction that
   * takes the name's next tilde number (a sign-up with a taken address reserves it), so neither
   * the answer's timing nor the next `GET /tildeusername` tells them apart; mail goes out after
   * the answer.
   */
  async register(input: RegisterInput, origin: RequestOrigin): Promise<RegisterResult> {
    if (input.token != null || !this.#d.config.signupWithoutHumanVerification) await this.#d.verifier.verify(input.token, origin.address);
    const email = normaliseEmail(input.email);
    await this.#d.limits.consume('registerAccount', email);
    await this.#d.limits.consume('registerAddress', addressKey(origin.address));
    const name = input.name ?? { fullname: input.fullname };
    const passwordHash = await this.#d.hasher.hash(input.password, addressKey(origin.address));
    const outcome = await this.#d.repo.transaction(async (repo) => {
      if (await repo.emailExists(email)) {
        const base = tildeBase(name, input.name ? 'name/' : '');
        const number = smallestFreeNumber(await repo.usedNumbers(base));
        await repo.reserveUsername(base, number, this.#now());
        return { id: `${base}${number}`, taken: true };
      }
      return { id: await this.#insertUser(repo, { ...input, email, state: 'Inactive' }, passwordHash), taken: false };
    });
    if (outcome.taken) {
      this.#d.mailer.post({
        to: email,
        subject: 'Sign-up attempt with your email address',
        text:
          `Someone tried to create a new account with ${email}, which already belongs to an account.\n\n` +
          `If it was you, sign in, or reset your password at ${this.#d.config.webUrl}/reset.\n` +
          'If it was not you, you can ignore this message.\n',
      });
    } else {
      this.#d.mailer.later(() => this.sendActivation(outcome.id, email));
    }
    return { id: outcome.id, status: 'ok' };
  }

  /** Mails a new activation link and code (voiding the previous ones). */
  async sendActivation(profileId: string, email: string): Promise<void> {
    const { token, code } = await this.#d.oneTime.issue(this.#d.repo, {
      kind: 'activation',
      profileId,
      email: normaliseEmail(email),
      seconds: this.#d.config.activationTokenSeconds,
      now: this.#now(),
    });
    const link = `${this.#d.config.webUrl}/profile/activate?token=${encodeURIComponent(token)}`;
    await this.#d.mailer.send({
      to: email,
      subject: 'Signup confirmation',
      text:
        `Thank you for signing up, ${profileId}.\n\n` +
        `To activate your account, open this link:\n${link}\n\n` +
        `or enter this code: ${code}\n\n` +
        `The link and the code expire in ${Math.round(this.#d.config.activationTokenSeconds / 86400)} days.\n`,
    });
  }

  // ---- sessions -------------------------------------------------------------------------------

  /**
   * `POST /login` with an email or a tilde id. An unknown id, a wrong password and a deleted
   * profile all get the same 400, which is not a 401 so that clients do not try to refresh.
   */
  async login(input: LoginInput, origin: RequestOrigin): Promise<IssuedSession> {
    const repo = this.#d.repo;
    const limits = this.#d.limits;
    // The id is made canonical once (white space and invisible characters around it, letter
    // case of an email), and the account's counter is the profile's own, whichever of its
    // emails or usernames is typed: no spelling of an account gets a counter of its own.
    const id = normaliseId(input.id);
    const isTilde = id.startsWith('~');
    const found = await repo.findProfileByIdOrEmail(id);
    const profile = found?.mergedInto ? await repo.findProfile(found.mergedInto) : found;
    const accountKey = accountLimitKey(id, profile);
    // Every attempt is counted before the password is checked (so parallel guesses cannot all
    // slip under the limit), and given back when the password was right.
    await limits.consume('loginAccount', accountKey);
    await limits.consume('loginAddress', addressKey(origin.address));
    const passwordOk = await this.#d.hasher.verify(input.password, profile?.passwordHash ?? null, addressKey(origin.address));
    if (!profile || !passwordOk || profile.ddate !== null) {
      throw new AppError('BadRequestError', WRONG_CREDENTIALS);
    }
    await limits.refund('loginAccount', accountKey);
    await limits.refund('loginAddress', addressKey(origin.address));
    if (!ACTIVE_STATES.has(profile.state)) {
      throw new AppError('ForbiddenError', inactiveMessage(profile.state));
    }
    const emails = await repo.emailsOf(profile.id);
    const loginEmail = isTilde ? (preferredEmail(profile, emails) ?? profile.id) : id;
    await repo.touchLastLogin(profile.id, this.#now());
    return this.issueSession(profile, { loginEmail, accessSeconds: input.expiresIn ?? DEFAULT_SESSION_SECONDS });
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
    },
    repo = this.#d.repo,
  ): Promise<IssuedSession> {
    const now = this.#now();
    const refreshToken = randomToken();
    const refreshSeconds = Math.max(this.#d.config.refreshTokenSeconds, opts.accessSeconds);
    const session = {
      id: randomUUID(),
      profileId: profile.id,
      loginEmail: opts.loginEmail,
      tokenVersion: profile.tokenVersion,
      accessSeconds: opts.accessSeconds,
      expiresAt: now + refreshSeconds * 1000,
    };
    await repo.insertSession({
      ...session,
      refreshHash: hashSecret(refreshToken),
      now,
      ...(opts.impersonator ? { impersonator: opts.impersonator } : {}),
      ...(opts.parentSessionId ? { parentSessionId: opts.parentSessionId } : {}),
      ...(opts.readOnly ? { readOnly: opts.readOnly } : {}),
    });
    return this.#issue(profile, session, refreshToken, refreshSeconds, repo, opts.accessNotAfter);
  }

  async #issue(
    profile: ProfileRecord,
    session: Pick<SessionRecord, 'id' | 'loginEmail' | 'accessSeconds'>,
    refreshToken: string,
    refreshSeconds: number,
    repo = this.#d.repo,
    accessNotAfter?: number,
  ): Promise<IssuedSession> {
    const accessToken = await this.#d.tokens.sign({ sub: profile.id, sid: session.id, ver: profile.tokenVersion, loginEmail: session.loginEmail }, session.accessSeconds, accessNotAfter);
    return {
      result: { token: accessToken, user: { id: session.loginEmail, profile: await this.simplify(profile, repo) } },
      accessToken,
      accessSeconds: session.accessSeconds,
      refreshToken,
      refreshSeconds,
    };
  }

  /** Ends every session of a profile: its `tokenVersion` moves on and every session row is closed. */
  async endAllSessions(repo: AccountsRepository, profileId: string, now: number): Promise<void> {
    await repo.incrementTokenVersion(profileId, now);
    await repo.revokeOtherSessions(profileId, null, now);
  }

  /**
   * Resolves an access token to its caller: the signature and expiry, then the session row
   * (not logged out), then the profile (still active, same `tokenVersion`).
   */
  async authenticate(accessToken: string): Promise<Viewer> {
    const claims = await this.#d.tokens.verify(accessToken);
    const repo = this.#d.repo;
    // Every signed-in request comes through here: the session, its profile and the roles take
    // two queries, not four.
    const found = await repo.findSessionWithProfile({ id: claims.sid });
    const session = found?.session;
    if (!session || session.revokedAt !== null || session.profileId !== claims.sub) throw sessionEnded();
    const profile = found.profile;
    if (!canHoldSession(profile, claims.ver)) throw sessionEnded();
    if (!(await this.#parentLive(session))) throw sessionEnded();
    // A read-only impersonation never lends the target's privileges to the impersonator.
    const privileged = !session.readOnly;
    const roles = privileged ? await repo.groupsWithMember(profile.id, [SUPER_USERS_GROUP, MODERATORS_GROUP]) : new Set<string>();
    return {
      profileId: profile.id,
      sessionId: session.id,
      loginEmail: session.loginEmail,
      tokenVersion: profile.tokenVersion,
      isSuperUser: roles.has(SUPER_USERS_GROUP),
      isModerator: roles.has(MODERATORS_GROUP),
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
   * browser's two tabs refreshing at once), which gets an access token and nothing else.
   *
   * With only a valid access token (no refresh cookie) the answer is a new access token for the
   * same session that expires no later than the one presented: a stolen access token never
   * becomes a refresh token or a longer session, and no session row changes.
   */
  async refresh(credentials: { refreshToken?: string | undefined; viewer?: Viewer | undefined }): Promise<RefreshOutcome> {
    const repo = this.#d.repo;
    if (credentials.refreshToken) {
      const oldHash = hashSecret(credentials.refreshToken);
      const found = await repo.findSessionWithProfile({ refreshHash: oldHash });
      if (found) {
        try {
          return { rotated: await this.resumeSession(found.session, oldHash, found.profile) };
        } catch (error) {
          // Lost a race with a simultaneous refresh of the same token: that one rotated it.
          if (!(await repo.findRotatedRefresh(oldHash))) throw error;
        }
      }
      return { accessOnly: await this.#replayed(oldHash) };
    }
    const viewer = credentials.viewer;
    if (!viewer) throw sessionEnded();
    const found = await repo.findSessionWithProfile({ id: viewer.sessionId });
    const profile = await this.#liveSession(found?.session ?? null, found?.profile ?? null);
    return { accessOnly: (await this.#issueAccess(profile, found!.session, viewer.accessExpiresAt)).result };
  }

  /** A refresh token that is not any session's current one: the grace case, or reuse. */
  async #replayed(oldHash: string): Promise<SessionResult> {
    const repo = this.#d.repo;
    const now = this.#now();
    const rotated = await repo.findRotatedRefresh(oldHash);
    if (!rotated) throw sessionEnded();
    const found = await repo.findSessionWithProfile({ id: rotated.sessionId });
    const session = found?.session ?? null;
    const justBefore = found !== null && session !== null && session.revokedAt === null && safeEqual(rotated.nextHash, found.currentRefreshHash);
    if (justBefore && now - rotated.rotatedAt <= REFRESH_REUSE_GRACE_MS) {
      const profile = await this.#liveSession(session, found!.profile);
      return (await this.#issueAccess(profile, session)).result;
    }
    if (session && session.revokedAt === null) {
      await repo.revokeSession(session.id, now);
      this.#d.logger.warn({ sessionId: session.id, profileId: session.profileId }, 'a rotated-out refresh token was used again: the session is ended');
    }
    throw sessionEnded();
  }

  /** The session's profile when the session may still be used (see `canHoldSession`); otherwise `sessionEnded()`. */
  async #liveSession(session: SessionRecord | null, known: ProfileRecord | null | undefined): Promise<ProfileRecord> {
    const now = this.#now();
    if (!session || session.revokedAt !== null || session.expiresAt <= now) throw sessionEnded();
    const profile = known === undefined ? await this.#d.repo.findProfile(session.profileId) : known;
    if (!canHoldSession(profile, session.tokenVersion)) throw sessionEnded();
    if (!(await this.#parentLive(session))) throw sessionEnded();
    return profile;
  }

  /** A new access token for a session, no new refresh token; never past `notAfter` (seconds since the epoch). */
  async #issueAccess(profile: ProfileRecord, session: SessionRecord, notAfter?: number): Promise<{ result: SessionResult }> {
    const accessToken = await this.#d.tokens.sign({ sub: profile.id, sid: session.id, ver: profile.tokenVersion, loginEmail: session.loginEmail }, session.accessSeconds, notAfter);
    return { result: { token: accessToken, user: { id: session.loginEmail, profile: await this.simplify(profile) } } };
  }

  /**
   * Issues a new access token for an existing session, rotating its refresh token (only if it
   * is still `oldHash`, when given; the token rotated out is kept to recognise its reuse). The
   * session must be live and its profile's `tokenVersion` unchanged since it was opened.
   * `known` is the session's profile, when the caller has read it.
   */
  async resumeSession(session: SessionRecord | null, oldHash: string | null, known?: ProfileRecord | null): Promise<IssuedSession> {
    const repo = this.#d.repo;
    const now = this.#now();
    const profile = await this.#liveSession(session, known);
    const live = session as SessionRecord;
    const refreshToken = randomToken();
    const refreshSeconds = Math.max(this.#d.config.refreshTokenSeconds, live.accessSeconds);
    const rotated = await repo.rotateRefresh(live.id, hashSecret(refreshToken), now + refreshSeconds * 1000, oldHash, now);
    if (!rotated) throw sessionEnded();
    return this.#issue(profile, live, refreshToken, refreshSeconds);
  }

  /**
   * Whether the caller holds the session's current refresh cookie, not only an access token.
   * Only such a caller may be handed a refresh token, or have the session rotated: an access
   * token alone (perhaps a stolen one) must never grow into a longer session.
   */
  async holdsRefreshCookie(sessionId: string, refreshToken: string | undefined): Promise<boolean> {
    if (refreshToken === undefined) return false;
    const found = await this.#d.repo.findSessionWithProfile({ id: sessionId });
    return found !== null && safeEqual(hashSecret(refreshToken), found.currentRefreshHash);
  }

  /**
   * An impersonation session lives only as long as the impersonator's own session (and its
   * parent's, when nested): the impersonator's logout, logout-all, reset or block ends it.
   */
  async #parentLive(session: SessionRecord): Promise<boolean> {
    const repo = this.#d.repo;
    let current = session;
    while (current.parentSessionId) {
      const parent = await repo.findSession(current.parentSessionId);
      if (!parent || parent.revokedAt !== null || parent.expiresAt <= this.#now()) return false;
      if (!canHoldSession(await repo.findProfile(parent.profileId), parent.tokenVersion)) return false;
      current = parent;
    }
    return true;
  }

  /**
   * `POST /logout`: ends this session only: the one the access token names, and the one the
   * refresh cookie names (so a logout with an expired access token still ends the session).
   */
  async logout(credentials: { viewer: Viewer | null; refreshToken?: string | undefined }): Promise<void> {
    const repo = this.#d.repo;
    const now = this.#now();
    if (credentials.viewer) await repo.revokeSession(credentials.viewer.sessionId, now);
    if (credentials.refreshToken) {
      const hash = hashSecret(credentials.refreshToken);
      // A rotated-out token names its session too: logging out with it ends that session.
      const sessionId = (await repo.findSessionByRefreshHash(hash))?.id ?? (await repo.findRotatedRefresh(hash))?.sessionId;
      if (sessionId) await repo.revokeSession(sessionId, now);
    }
  }

  /**
   * `POST /logout-all-devices`: raises the profile's `tokenVersion`, so every token issued
   * before is refused, ends every other session, and keeps this one with a fresh token (and,
   * for the holder of its refresh cookie, a fresh refresh cookie).
   */
  async logoutOtherDevices(viewer: Viewer, refreshToken?: string): Promise<RefreshOutcome> {
    const now = this.#now();
    const newRefresh = randomToken();
    const { profile, session, rotated } = await this.#d.repo.transaction(async (repo) => {
      const version = await repo.incrementTokenVersion(viewer.profileId, now);
      await repo.revokeOtherSessions(viewer.profileId, viewer.sessionId, now);
      await repo.revokeImpersonationsFrom(viewer.profileId, now);
      await repo.setSessionVersion(viewer.sessionId, version);
      const found = await repo.findSessionWithProfile({ id: viewer.sessionId });
      if (!found?.profile) throw sessionEnded();
      // Only the holder of this session's refresh cookie gets a new one: a caller with nothing
      // but an access token (perhaps a stolen one) gets a new access token and no refresh token.
      const holdsCookie = refreshToken !== undefined && safeEqual(hashSecret(refreshToken), found.currentRefreshHash);
      if (holdsCookie) {
        const refreshSeconds = Math.max(this.#d.config.refreshTokenSeconds, found.session.accessSeconds);
        await repo.rotateRefresh(found.session.id, hashSecret(newRefresh), now + refreshSeconds * 1000, null, now);
      }
      return { profile: found.profile, session: found.session, rotated: holdsCookie };
    });
    if (!rotated) return { accessOnly: (await this.#issueAccess(profile, session, viewer.accessExpiresAt)).result };
    const refreshSeconds = Math.max(this.#d.config.refreshTokenSeconds, session.accessSeconds);
    return { rotated: await this.#issue(profile, session, newRefresh, refreshSeconds) };
  }

  // ---- profiles -------------------------------------------------------------------------------

  /**
   * `GET /profiles`: the caller's own profile, or the one named by `id` (any of its usernames;
   * a merged id leads to the surviving profile) or `email`, or a search by name. An unknown id is
   * a 404; an email no profile holds is an empty list, as on the real platform.
   */
  async profiles(query: ProfilesQuery, viewer: Viewer): Promise<{ profiles: Profile[] }> {
    if (query.first ?? query.middle ?? query.last) return this.searchProfiles({ ...query }, viewer);
    const repo = this.#d.repo;
    let profile: ProfileRecord | null;
    if (query.id) profile = await repo.findProfileByUsername(query.id);
    else if (query.email) profile = await repo.findProfileByEmail(query.email);
    else profile = await repo.findProfile(viewer.profileId);
    if (profile?.mergedInto) profile = await repo.findProfile(profile.mergedInto);
    const visible = profile && (profile.ddate === null || viewer.isSuperUser || viewer.isModerator);
    if (!profile || !visible) {
      if (query.email) return { profiles: [] };
      throw new AppError('NotFoundError', `Profile Not Found: ${query.id ?? viewer.profileId}`);
    }
    return { profiles: [await this.#presentTo(profile, viewer)] };
  }

  /** `GET /profiles/search`: profiles (not deleted, merged or blocked) by a term, a full name, or name parts. */
  async searchProfiles(query: ProfileSearchQuery, viewer: Viewer): Promise<{ profiles: Profile[] }> {
    const repo = this.#d.repo;
    const limit = (query.offset ?? 0) + (query.limit ?? 100);
    let ids: string[];
    if (query.term !== undefined) {
      const term = query.term.trim();
      if (term.includes('@')) ids = (await repo.holdersOfEmails([term], true)).map((h) => h.profileId);
      else if (term.startsWith('~')) ids = await repo.profileIdsByUsernameBase(term.replace(/\d+$/, ''), 'prefix', limit);
      else ids = await repo.profileIdsByUsernameBase(`~${term.replace(/\s+/g, '_')}`, 'prefix', limit);
    } else {
      const name = query.fullname !== undefined ? { fullname: query.fullname } : { first: query.first ?? '', middle: query.middle, last: query.last ?? '' };
      ids = await repo.profileIdsByUsernameBase(tildeBase(name), 'exact', limit);
    }
    const profiles: Profile[] = [];
    for (const id of ids.slice(query.offset ?? 0)) {
      const profile = await repo.findProfile(id);
      // As the real platform's search: every profile but deleted, merged and blocked ones.
      if (profile && profile.ddate === null && !profile.mergedInto && profile.state !== 'Blocked') profiles.push(await this.#presentTo(profile, viewer));
    }
    return { profiles };
  }

  /**
   * `POST /profiles/search`: profiles by ids (sorted by id; unknown ones left out), or by
   * the emails they hold, each with the address it was found by in `email`.
   */
  async searchProfilesBy(input: ProfileSearchInput, viewer: Viewer): Promise<{ profiles: Profile[] }> {
    const repo = this.#d.repo;
    const profiles: Profile[] = [];
    if (input.ids) {
      // Sorted by id, as the real platform answers.
      for (const id of [...new Set(input.ids)].sort()) {
        let profile = await repo.findProfileByUsername(id);
        if (profile?.mergedInto) profile = await repo.findProfile(profile.mergedInto);
        if (profile && (profile.ddate === null || viewer.isSuperUser || viewer.isModerator)) profiles.push(await this.#presentTo(profile, viewer));
      }
      return { profiles };
    }
    const confirmedOnly = input.confirmedEmails !== undefined;
    for (const { email, profileId } of await repo.holdersOfEmails(input.confirmedEmails ?? input.emails ?? [], confirmedOnly)) {
      const profile = await repo.findProfile(profileId);
      if (!profile || profile.mergedInto || (profile.ddate !== null && !viewer.isSuperUser && !viewer.isModerator)) continue;
      const shown = await this.#presentTo(profile, viewer);
      // The caller named the address: the answer says which profile holds it, and nothing more.
      profiles.push({ ...shown, email, ...(confirmedOnly ? { confirmedEmails: [...new Set([...(shown.confirmedEmails ?? []), email])] } : {}) });
    }
    return { profiles };
  }

  /** A profile as `viewer` may see it: emails for its owner, moderators and super users. */
  #presentTo(profile: ProfileRecord, viewer: Viewer): Promise<Profile> {
    const isOwner = profile.id === viewer.profileId;
    return this.present(profile, isOwner || viewer.isModerator || viewer.isSuperUser, isOwner);
  }

  /** A profile as the API shows it; emails only to its owner and to moderators. */
  async present(profile: ProfileRecord, showEmails: boolean, isOwner: boolean, repo = this.#d.repo): Promise<Profile> {
    const emails = showEmails ? await repo.emailsOf(profile.id) : [];
    const preferred = showEmails ? preferredEmail(profile, emails) : undefined;
    const content: ProfileContent = { ...profile.content };
    if (showEmails) {
      content.emails = emails.map((e) => e.email);
      content.emailsConfirmed = emails.filter((e) => e.confirmed).map((e) => e.email);
      if (preferred) content.preferredEmail = preferred;
    }
    return {
      id: profile.id,
      active: ACTIVE_STATES.has(profile.state),
      password: profile.passwordHash !== null,
      invitation: PROFILE_INVITATION,
      ...(preferred ? { email: preferred } : {}),
      ...(showEmails ? { confirmedEmails: content.emailsConfirmed ?? [] } : {}),
      content,
      readers: ['everyone'],
      writers: [profile.id],
      signatures: [profile.id],
      state: profile.state,
      pastStates: profile.pastStates,
      ddate: profile.ddate,
      tcdate: profile.tcdate,
      tmdate: profile.tmdate,
      tauthor: profile.id,
      tokenVersion: profile.tokenVersion,
      ...(profile.termsTimestamp !== null ? { termsTimestamp: profile.termsTimestamp } : {}),
      ...(profile.dobTimestamp !== null ? { dobTimestamp: profile.dobTimestamp } : {}),
      ...(isOwner && profile.lastLogin !== null ? { lastLogIn: profile.lastLogin } : {}),
    };
  }

  async simplify(profile: ProfileRecord, repo = this.#d.repo): Promise<SimplifiedProfile> {
    const { emails, usernames } = await repo.emailsAndUsernamesOf(profile.id);
    const name = profile.content.names?.find((n) => n.preferred) ?? profile.content.names?.[0];
    const preferred = preferredEmail(profile, emails);
    return {
      id: profile.id,
      first: name?.first ?? null,
      middle: name?.middle ?? null,
      last: name?.last ?? null,
      fullname: name?.fullname || profile.id,
      emails: emails.map((e) => e.email),
      ...(preferred ? { preferredEmail: preferred } : {}),
      usernames,
      preferredId: name?.username ?? profile.id,
      state: profile.state,
      ...(profile.termsTimestamp !== null ? { termsTimestamp: profile.termsTimestamp } : {}),
      ...(profile.dobTimestamp !== null ? { dobTimestamp: profile.dobTimestamp } : {}),
      tokenVersion: profile.tokenVersion,
    };
  }

  /** A profile as its simplified view, by id. */
  async simplifiedById(profileId: string): Promise<SimplifiedProfile> {
    const profile = await this.#d.repo.findProfile(profileId);
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${profileId}`);
    return this.simplify(profile);
  }

  /** Every profile, for the operator CLI. */
  async listUsers(): Promise<Array<{ id: string; state: ProfileState; emails: string[] }>> {
    const repo = this.#d.repo;
    const profiles = await repo.listProfiles();
    return Promise.all(
      profiles.map(async (p) => ({ id: p.id, state: p.state, emails: (await repo.emailsOf(p.id)).map((e) => e.email) })),
    );
  }
}

/**
 * The key an account's rate limits count under: the profile's id when the typed id names one
 * (so its emails and usernames share one counter), the canonical typed id otherwise.
 */
export function accountLimitKey(canonicalId: string, profile: ProfileRecord | null): string {
  return profile ? `profile:${profile.id}` : `id:${canonicalId}`;
}

export function preferredEmail(profile: ProfileRecord, emails: Array<{ email: string; confirmed: boolean }>): string | undefined {
  return profile.content.preferredEmail ?? emails.find((e) => e.confirmed)?.email ?? emails[0]?.email;
}

function splitFullname(fullname: string): { first: string; middle?: string; last: string } {
  const words = fullname.trim().split(/\s+/);
  if (words.length === 1) return { first: words[0] ?? '', last: '' };
  return { first: words[0] ?? '', middle: words.slice(1, -1).join(' '), last: words.at(-1) ?? '' };
}

function inactiveMessage(state: ProfileState): string {
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

/**
 * What every accounts service beside the core is built from: the shared dependencies and the
 * core service (sessions, profiles) it builds on.
 */
export abstract class AccountsPart {
  protected readonly d: AccountsDeps;
  protected readonly core: AccountsService;

  constructor(deps: AccountsDeps, core: AccountsService) {
    this.d = deps;
    this.core = core;
  }

  protected now(): number {
    return (this.d.now ?? Date.now)();
  }
}
