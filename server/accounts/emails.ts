import {
  AppError,
  Email,
  parseOrThrow,
  type ActivateLinkRequest,
  type ActivateLinkResult,
  type ConfirmEmailRequest,
  type Name,
  type ProfileContent,
  type ProfileReference,
  type ProfileState,
} from '../../shared/index.ts';
import type { AccountsRepository, ProfileRecord, TokenRecord } from './repository.ts';
import { normaliseEmail } from './repository.ts';
import { duplicateProfileMail, emailConfirmationMail } from '../mail/messages.ts';
import { hashSecret } from '../secrets.ts';
import type { RequestOrigin, Viewer } from './viewer.ts';
import type { EmailChangeService } from './email-changes.ts';
import { AccountsPart, type AccountsCore } from './core.ts';
import { type AccountsDeps } from './service-base.ts';
import { preferredEmail } from './profiles.ts';
import { ACTIVE_STATES } from './session-rule.ts';

/** The states of profiles a merge may fold together: active ones, and one never activated. */
const MERGEABLE_STATES: ReadonlySet<ProfileState> = new Set(['Active', 'Active Institutional', 'Active Automatic', 'Inactive']);

const INVALID_CODE = 'Token is not valid';
const GUEST_NEEDS_TOKEN = 'Guest user must pass activation token';

/**
 * Alternate emails: a profile asks to add an address, a 6-digit code is mailed to it, and the
 * code confirms it. When the address already belongs to another profile, confirming it merges
 * that profile into the one that asked.
 */
export class EmailService extends AccountsPart {
  /** Whether a profile signs in with a second factor (`mfa/second-factor.ts`): such a profile is never merged by a mailed code. */
  readonly #hasSecondFactor: (profileId: string) => Promise<boolean>;

  /** Removing, making preferred, and telling the preferred address that one was added (`email-changes.ts`). */
  readonly changes: EmailChangeService;

  constructor(deps: AccountsDeps, core: AccountsCore, hasSecondFactor: (profileId: string) => Promise<boolean>, changes: EmailChangeService) {
    super(deps, core);
    this.#hasSecondFactor = hasSecondFactor;
    this.changes = changes;
  }

  /**
   * Confirming an address that belongs to another profile merges that profile into the asker's,
   * on a code mailed to the address: proof of the mailbox alone. A profile with a second factor
   * on is worth more than its mailbox, so it is not merged this way (that would hand whoever
   * reads the mail the account its owner protected); its owner signs in to it, with the factor,
   * and turns the factor off first, or asks the operators.
   */
  async #refuseMergingProtected(otherId: string, email: string): Promise<void> {
    if (await this.#hasSecondFactor(otherId)) {
      throw new AppError('ForbiddenError', `${email} belongs to a profile protected by two-step verification, which cannot be merged by an emailed code: sign in to that profile to manage it, or ask the operators`, { path: 'alternate' });
    }
  }

  /**
   * Whose emails these are: the signed-in caller, or a guest activating their profile with its
   * activation token. Nobody changes emails while impersonating.
   */
  async #asker(activationToken: string | undefined, viewer: Viewer | null, refreshToken: string | undefined): Promise<string> {
    if (activationToken) {
      const record = await this.deps.oneTime.live(this.deps.repo, 'activation', activationToken, this.now(), 'Activation token is not valid');
      return record.profileId;
    }
    if (!viewer) throw new AppError('BadRequestError', GUEST_NEEDS_TOKEN);
    if (viewer.impersonator) throw new AppError('ForbiddenError', 'Emails cannot be changed while impersonating');
    // An address added to an account can reset its password: adding one takes the session
    // itself (its refresh cookie, as a browser or a client that signed in keeps it), never an
    // access token alone, which may be a stolen one.
    if (!(await this.core.sessions.holdsRefreshCookie(viewer.sessionId, refreshToken))) {
      throw new AppError('ForbiddenError', 'Adding an email needs your signed-in session (its refresh cookie), not an access token alone');
    }
    return viewer.profileId;
  }

  /**
   * The address a confirmation mail's link is for, while its token is live (the page the link
   * opens fills it in, so only the code is left to type); empty otherwise. It reveals nothing the
   * link's holder did not get in the same mail.
   */
  async addressOfLink(token: string): Promise<string> {
    if (!token) return '';
    const record = await this.deps.repo.tokens.findLive('email', hashSecret(token), this.now());
    return record?.email ?? '';
  }

  /** `POST /user/confirm[/{activationToken}]`: mails a confirmation code to `alternate`. */
  async requestConfirmation(request: ConfirmEmailRequest, viewer: Viewer | null, refreshToken?: string): Promise<{ alternate: string }> {
    const profileId = await this.#asker(request.activationToken, viewer, refreshToken);
    const repo = this.deps.repo;
    if (request.username && !(await repo.emails.usernamesOf(profileId)).includes(request.username)) {
      throw new AppError('ForbiddenError', `${request.username} is not one of your usernames`, { path: 'username' });
    }
    const alternate = normaliseEmail(parseOrThrow(Email, request.alternate));
    await this.deps.limits.consume('confirmEmailAccount', profileId);
    await this.deps.limits.consume('confirmEmailAddress', alternate);
    const owner = await repo.emails.findEmail(alternate);
    if (owner?.profileId === profileId && owner.confirmed) {
      throw new AppError('ValidationError', `${alternate} is already confirmed`, { path: 'alternate' });
    }
    const duplicate = owner && owner.profileId !== profileId ? owner.profileId : null;
    if (duplicate) await this.#refuseMergingProtected(duplicate, alternate);
    const validForSeconds = this.deps.config.emailTokenSeconds;
    await repo.transaction(async (trx) => {
      const { code, token } = await this.deps.oneTime.issue(trx, { kind: 'email', profileId, email: alternate, seconds: validForSeconds, now: this.now(), duplicateProfile: duplicate });
      await this.deps.mailer.queue(trx, {
        to: alternate,
        ...(duplicate
          ? duplicateProfileMail({ profileId, email: alternate, duplicateId: duplicate, code, validForSeconds })
          : emailConfirmationMail({ pagesUrl: this.deps.config.pagesUrl, profileId, token, code, validForSeconds })),
      });
    });
    return { alternate };
  }

  /**
   * `PUT /activatelink[/{activationToken}]` `{email, token: code}`: confirms the address, or,
   * when the code was mailed to another profile's address, merges that profile into the asker.
   * A wrong code counts (five void the token); a wrong user or a reused code is "Token is not
   * valid". An address added to an active profile is audited and told to its preferred address,
   * with a link that removes it (`EmailChangeService.added`); one added while activating is not.
   */
  async confirm(request: ActivateLinkRequest, viewer: Viewer | null, origin?: RequestOrigin): Promise<ActivateLinkResult> {
    const repo = this.deps.repo;
    const now = this.now();
    const email = normaliseEmail(request.email);
    const invalid = new AppError('ValidationError', INVALID_CODE, { path: 'token' });

    let record: TokenRecord | null;
    if (request.activationToken) {
      const secret = hashSecret(request.activationToken);
      const activation = await repo.tokens.findLive('activation', secret, now);
      if (activation?.email === email) {
        // The registration address of a profile being activated: its code came with the signup mail.
        await this.#checkCode(activation, request.token, email, now);
        await repo.emails.confirmEmail(activation.profileId, email);
        return { confirmedEmail: email };
      }
      if (activation) {
        record = await repo.tokens.findLiveEmail(activation.profileId, email, now);
      } else {
        // The link of an email-confirmation mail: it names the address and the profile.
        record = await repo.tokens.findLive('email', secret, now);
        if (record && (record.email !== email || (viewer && viewer.profileId !== record.profileId))) record = null;
      }
    } else {
      if (!viewer) throw new AppError('BadRequestError', GUEST_NEEDS_TOKEN);
      record = await repo.tokens.findLiveEmail(viewer.profileId, email, now);
    }
    if (!record) throw invalid;
    await this.#checkCode(record, request.token, email, now);
    const { profileId, duplicateProfile } = record;
    const confirmed = record;
    // The factor may have been turned on since the code was mailed.
    if (duplicateProfile) await this.#refuseMergingProtected(duplicateProfile, email);

    const answer = await repo.transaction(async (trx): Promise<ActivateLinkResult> => {
      await this.deps.oneTime.consume(trx, confirmed, now, INVALID_CODE);
      if (duplicateProfile) return this.#merge(trx, profileId, duplicateProfile, email, now);
      const owner = await trx.emails.findEmail(email);
      if (owner && owner.profileId !== profileId) {
        throw new AppError('ValidationError', `${email} now belongs to another profile; ask for a new code`, { path: 'email' });
      }
      if (owner) await trx.emails.confirmEmail(profileId, email);
      else await trx.emails.addEmail(profileId, email, true, now);
      await trx.groups.linkEmailGroups(profileId, email, now);
      // The notice (audit line, undo link, mail) with the addition it reports.
      const profile = await trx.profiles.find(profileId);
      if (profile && ACTIVE_STATES.has(profile.state) && profile.ddate === null) await this.changes.added(profileId, email, origin, trx);
      return { confirmedEmail: email };
    });
    return answer;
  }

  /**
   * A typed code against its token. Wrong codes count twice: per token (five void it) and per
   * address over all tokens, so asking for fresh codes again and again does not let anyone
   * guess their way into merging someone else's profile. Every code counts before it is
   * compared and a right one is given back (as sign-ins do): of codes typed at once, no more
   * than the limit are compared, where "check, then count the wrong ones" let them all through.
   */
  async #checkCode(record: TokenRecord, code: string, email: string, now: number): Promise<void> {
    await this.deps.limits.consume('wrongCodeAddress', email);
    await this.deps.oneTime.checkCode(this.deps.repo, record, code, now, INVALID_CODE);
    await this.deps.limits.refund('wrongCodeAddress', email);
  }

  /**
   * Folds `otherId` into `survivorId`: its names (with their usernames), emails, history,
   * relations and expertise move over, group memberships are rewired, and the other profile
   * becomes `Merged`, its id still resolving to the survivor. Runs inside the caller's transaction.
   */
  async #merge(repo: AccountsRepository, survivorId: string, otherId: string, email: string, now: number): Promise<ProfileReference> {
    const survivor = await repo.profiles.find(survivorId);
    const other = await repo.profiles.find(otherId);
    // A moderator's decision, made (blocked, rejected, limited, deleted) or awaited (Needs
    // Moderation), is never undone by a merge: the emails, usernames and groups of such a profile
    // moved to a live one, or a live one's into it, would escape or spread it.
    const settled = (p: ProfileRecord) => !MERGEABLE_STATES.has(p.state) || p.ddate !== null;
    if (!survivor || !other || settled(survivor) || settled(other) || other.id === survivor.id) {
      throw new AppError('ValidationError', 'These profiles cannot be merged', { path: 'email' });
    }
    // The survivor keeps the address it had as preferred: one it never chose (read as its oldest
    // confirmed address) would otherwise become the other profile's older one, unannounced.
    const kept = preferredEmail(survivor, await repo.emails.emailsOf(survivor.id));
    const content = { ...foldContent(survivor.content, other.content), ...(kept ? { preferredEmail: kept } : {}) };
    await repo.emails.moveEmailsAndUsernames(other.id, survivor.id);
    await repo.emails.confirmEmail(survivor.id, email);
    await repo.groups.rewireMembers(other.id, survivor.id);
    await repo.groups.addMember(survivor.id, email);
    await repo.profiles.update(survivor.id, { content }, now);
    await repo.profiles.update(
      other.id,
      { state: 'Merged', mergedInto: survivor.id, pastStates: [...other.pastStates, { state: 'Merged', date: now, setBy: survivor.id }] },
      now,
    );
    await this.core.sessions.endAllSessions(repo, other.id, now);
    await repo.settings.audit({ actor: survivor.id, action: 'merge', target: other.id, details: { email } }, now);
    return this.#reference(repo, (await repo.profiles.find(survivor.id)) as ProfileRecord);
  }

  async #reference(repo: AccountsRepository, profile: ProfileRecord): Promise<ProfileReference> {
    const presented = await this.core.profiles.present(profile, true, true, repo);
    return {
      id: presented.id,
      signatures: [presented.id],
      invitation: presented.invitation,
      content: presented.content,
      readers: presented.readers,
      writers: presented.writers,
      ...(presented.state ? { state: presented.state } : {}),
      ...(presented.active !== undefined ? { active: presented.active } : {}),
      ...(presented.password !== undefined ? { password: presented.password } : {}),
      ...(presented.tcdate !== undefined ? { tcdate: presented.tcdate } : {}),
      ...(presented.tmdate !== undefined ? { tmdate: presented.tmdate } : {}),
    };
  }
}

/** The survivor's content with the other profile's names, history, relations and expertise added. */
export function foldContent(survivor: ProfileContent, other: ProfileContent): ProfileContent {
  const usernames = new Set((survivor.names ?? []).map((n) => n.username).filter(Boolean));
  const names: Name[] = [
    ...(survivor.names ?? []),
    ...(other.names ?? []).filter((n) => !n.username || !usernames.has(n.username)).map((n) => ({ ...n, preferred: false })),
  ];
  const concat = <T>(a: T[] | null | undefined, b: T[] | null | undefined): T[] | undefined => {
    const all = [...(a ?? []), ...(b ?? [])];
    return all.length > 0 ? all : undefined;
  };
  const history = concat(survivor.history, other.history);
  const relations = concat(survivor.relations, other.relations);
  const expertise = concat(survivor.expertise, other.expertise);
  return {
    ...survivor,
    names,
    ...(history ? { history } : {}),
    ...(relations ? { relations } : {}),
    ...(expertise ? { expertise } : {}),
  };
}
