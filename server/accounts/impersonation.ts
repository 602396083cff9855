import { AppError, type Impersonator, type ImpersonateResult, type ImpersonatorsResult, type SetImpersonatorsInput } from '../../shared/index.ts';
import type { AccountsRepository, ProfileRecord } from './repository.ts';
import type { IssuedSession, Viewer } from './viewer.ts';
import { AccountsPart } from './core.ts';
import { SUPER_USERS_GROUP } from './roles.ts';
import { preferredEmail } from './profiles.ts';
import { canHoldSession, sessionEnded } from './session-rule.ts';

/** How long an impersonation session's access token lasts. */
const IMPERSONATION_SECONDS = 60 * 60;

export interface ImpersonationOutcome {
  result: ImpersonateResult;
  /** The session's cookies to set; none for a caller who showed only an access token. */
  session?: IssuedSession;
}

/**
 * Acting as another user, for support and venue organisers.
 *
 * Rules:
 * - a super user may impersonate anyone but another super user;
 * - anyone else only a person whose own `~` group (the profile's id or one of its usernames)
 *   names them in its `impersonators`: directly (one of their tilde ids or confirmed emails) or
 *   through a group they belong to. Membership of a group never grants power over that member:
 *   an organiser can add anyone to their venue's groups, so a group's `impersonators` reach
 *   only the group's own profile, never its members. A `~` group's lists are set by super users
 *   (and the person's own registration), never by a venue's organisers;
 * - one nested impersonation is kept (impersonating again while impersonating); a third
 *   level is refused;
 * - only a super user's impersonation may change data; credentials never change while
 *   impersonating (see the procedures' `whileImpersonating` meta);
 * - the target's `tokenVersion` is in the token, so the target's password reset or
 *   logout-all ends the impersonation too.
 */
export class ImpersonationService extends AccountsPart {
  /**
   * `POST /impersonate`. A caller holding their session's refresh cookie gets the impersonation
   * session's cookies; one with only an access token gets an access token that expires no later
   * than the one they showed, and no refresh token.
   */
  async impersonate(groupId: string, viewer: Viewer, refreshToken?: string): Promise<ImpersonationOutcome> {
    if (viewer.impersonator?.impersonator) {
      throw new AppError('ForbiddenError', 'Impersonation can be nested only once');
    }
    const repo = this.deps.repo;
    const target = await this.#target(repo, groupId);
    if (target.id === viewer.profileId) throw new AppError('ValidationError', 'You cannot impersonate yourself', { path: 'groupId' });
    // Whether the caller may impersonate the target comes before the target's state and rank:
    // one who may not hears the same 403 for any profile, and learns nothing of who the super
    // users are or whose profile is blocked (an unknown id is still a 404, as a profile search
    // tells a signed-in person anyway).
    const callerIds = await this.#callerIdentities(repo, viewer.profileId);
    // Not the caller themself, whose own group may name a group they belong to.
    let granting = (await this.#grantingProfiles(repo, callerIds)).filter((id) => id !== viewer.profileId);
    if (!viewer.isSuperUser && !(await this.#grants(repo, target.id, callerIds))) {
      throw new AppError('ForbiddenError', `You are not allowed to impersonate ${groupId}`);
    }
    // A nested impersonation is its first impersonator's too: one allowed to impersonate B only
    // does not reach whomever B may impersonate. So the people the calling session may
    // impersonate (`impersonatables`) are those both may.
    const first = viewer.impersonator;
    if (first && !first.isSuperUser) {
      const firstIds = first.profile ? await this.#callerIdentities(repo, first.profile.id) : new Set<string>();
      if (!(await this.#grants(repo, target.id, firstIds))) throw new AppError('ForbiddenError', `You are not allowed to impersonate ${groupId}`);
      const reached: string[] = [];
      for (const id of granting) if (await this.#grants(repo, id, firstIds)) reached.push(id);
      granting = reached;
    }
    if (!canHoldSession(target)) {
      throw new AppError('ValidationError', `${groupId} is not an active profile`, { path: 'groupId' });
    }
    if (await repo.groups.isMember(SUPER_USERS_GROUP, target.id)) {
      throw new AppError('ForbiddenError', 'Super users cannot be impersonated');
    }

    const caller = await repo.profiles.find(viewer.profileId);
    if (!caller) throw sessionEnded();
    const me: Impersonator = {
      id: viewer.loginEmail,
      isSuperUser: viewer.isSuperUser,
      isPrivilegedUser: viewer.isSuperUser || viewer.isModerator,
      profile: await this.core.profiles.simplify(caller),
    };
    const impersonator: Impersonator = viewer.impersonator ? { ...me, impersonator: viewer.impersonator } : me;
    const readOnly = !viewer.isSuperUser || viewer.readOnly;
    const loginEmail = preferredEmail(target, await repo.emails.emailsOf(target.id)) ?? target.id;
    const now = this.now();
    const withCookie = await this.core.sessions.holdsRefreshCookie(viewer.sessionId, refreshToken);
    const session = await repo.transaction(async (trx) => {
      const issued = await this.core.sessions.issueSession(
        target,
        {
          loginEmail,
          accessSeconds: IMPERSONATION_SECONDS,
          impersonator,
          parentSessionId: viewer.sessionId,
          readOnly,
          ...(withCookie ? {} : { accessNotAfter: viewer.accessExpiresAt }),
        },
        trx,
      );
      await trx.settings.audit({ actor: viewer.profileId, action: 'impersonate', target: target.id, details: { readOnly } }, now);
      return issued;
    });
    return {
      ...(withCookie ? { session } : {}),
      result: {
        token: session.result.token,
        user: {
          id: loginEmail,
          profile: session.result.user.profile,
          disallowDataModification: readOnly,
          impersonatables: granting,
          impersonator,
        },
      },
    };
  }

  /**
   * `POST /impersonate/exit`: ends the impersonation session and resumes the impersonator's own,
   * rotating its refresh cookie. Only for the holder of the impersonation session's refresh
   * cookie (the browser that impersonates): an access token alone must not become the
   * impersonator's own session. Such a caller ends the impersonation with `POST /logout`.
   */
  async exit(viewer: Viewer, refreshToken?: string): Promise<IssuedSession> {
    if (!viewer.impersonator || !viewer.parentSessionId) {
      throw new AppError('BadRequestError', 'You are not impersonating anyone');
    }
    if (!(await this.core.sessions.holdsRefreshCookie(viewer.sessionId, refreshToken))) {
      throw new AppError('ForbiddenError', "Resuming your own session needs this session's refresh cookie; to end the impersonation, log out");
    }
    const repo = this.deps.repo;
    const now = this.now();
    // Only the request that ends the impersonation resumes the session under it: exits sent at
    // once would each rotate its refresh cookie, and all but the last cookie would then read as
    // stolen and end that session too.
    if (!(await repo.sessions.revoke(viewer.sessionId, now))) throw sessionEnded();
    await repo.settings.audit({ actor: viewer.impersonator.profile?.id ?? viewer.impersonator.id, action: 'impersonate:exit', target: viewer.profileId }, now);
    return this.core.sessions.resumeSession(await repo.sessions.find(viewer.parentSessionId), null);
  }

  /**
   * `PUT /impersonators` and `npm run admin -- impersonators set`: who may impersonate a person,
   * kept in the `impersonators` of the person's own `~` group (its profile id), the only list
   * `#grants` reads. Super users only (`actor` null: the operator's command line); audited.
   * The other lists of the group and its members stay as they are.
   */
  async setImpersonators(input: SetImpersonatorsInput, actor: Viewer | null): Promise<ImpersonatorsResult> {
    if (actor && !actor.isSuperUser) throw new AppError('ForbiddenError', 'Only super users can set who may impersonate a person');
    const impersonators = [...new Set(input.impersonators.map((id) => (id.includes('@') ? id.trim().toLowerCase() : id.trim())))];
    return this.deps.repo.transaction(async (repo) => {
      const direct = await repo.profiles.findByIdOrEmail(input.user);
      const profile = direct?.mergedInto ? await repo.profiles.find(direct.mergedInto) : direct;
      if (!profile) throw new AppError('NotFoundError', `No profile ${input.user}`, { path: 'user' });
      if (impersonators.includes(profile.id)) throw new AppError('ValidationError', 'A person cannot be their own impersonator', { path: 'impersonators' });
      const now = this.now();
      const group = await repo.groups.find(profile.id);
      await repo.groups.upsert(profile.id, { ...(group?.data ?? {}), impersonators }, [], now);
      await repo.settings.audit({ actor: actor?.profileId ?? 'operator', action: 'impersonators.set', target: profile.id, details: { impersonators } }, now);
      return { id: profile.id, impersonators };
    });
  }

  /** The profile named by a tilde id, an email, or a group standing for one profile (`~Id`, an email). */
  async #target(repo: AccountsRepository, groupId: string): Promise<ProfileRecord> {
    const direct = await repo.profiles.findByIdOrEmail(groupId);
    const profile = direct?.mergedInto ? await repo.profiles.find(direct.mergedInto) : direct;
    if (profile) return profile;
    const group = await repo.groups.find(groupId);
    if (group) {
      throw new AppError('ValidationError', `${groupId} is a group: impersonate one of its members`, { path: 'groupId' });
    }
    throw new AppError('NotFoundError', `Group Not Found: ${groupId}`);
  }

  /** The tilde ids of a profile: its id and its usernames. Its own groups are named by these. */
  async #tildeIdsOf(repo: AccountsRepository, profileId: string): Promise<string[]> {
    return [...new Set([profileId, ...(await repo.emails.usernamesOf(profileId))])];
  }

  /**
   * Every id an `impersonators` list may name the caller by: their tilde ids, their confirmed
   * emails (an unconfirmed address proves nothing: anyone can type someone else's), and the
   * groups any of those belong to directly.
   */
  async #callerIdentities(repo: AccountsRepository, profileId: string): Promise<Set<string>> {
    const confirmed = (await repo.emails.emailsOf(profileId)).filter((e) => e.confirmed).map((e) => e.email);
    const ids = [...(await this.#tildeIdsOf(repo, profileId)), ...confirmed];
    return new Set([...ids, ...(await repo.groups.groupsOf(ids))]);
  }

  /** Whether one of the target's own `~` groups names the caller in its `impersonators`. */
  async #grants(repo: AccountsRepository, targetId: string, me: Set<string>): Promise<boolean> {
    for (const id of await this.#tildeIdsOf(repo, targetId)) {
      const impersonators = (await repo.groups.find(id))?.data.impersonators;
      if (Array.isArray(impersonators) && impersonators.some((i) => typeof i === 'string' && me.has(i))) return true;
    }
    return false;
  }

  /**
   * `impersonatables`: the people a grant lets the caller impersonate, by profile id: whose own
   * `~` group (their id or a username) names the caller, who can hold a session, and who are no
   * super users (whom nobody impersonates). A super user's list holds only those too.
   */
  async #grantingProfiles(repo: AccountsRepository, me: Set<string>): Promise<string[]> {
    const naming = (await repo.groups.groupsWithImpersonators()).filter((g) => g.id.startsWith('~') && g.impersonators.some((i) => me.has(i)));
    const granting = new Set<string>();
    for (const group of naming) {
      const profile = await repo.profiles.findByUsername(group.id);
      if (profile && !profile.mergedInto && canHoldSession(profile) && !(await repo.groups.isMember(SUPER_USERS_GROUP, profile.id))) granting.add(profile.id);
    }
    return [...granting];
  }
}
