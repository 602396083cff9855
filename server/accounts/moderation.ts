import { AppError, type ModerateProfileInput, type ModerationDecision, type PastState, type Profile, type ProfileState } from '../../shared/index.ts';
import { profileAcceptedMail, profileRejectedMail } from '../mail/messages.ts';
import type { AccountsRepository, ProfileRecord } from './repository.ts';
import type { Viewer } from './viewer.ts';
import { AccountsPart } from './core.ts';
import { SUPER_USERS_GROUP } from './roles.ts';
import { preferredEmail } from './profiles.ts';
import { normaliseId } from './ids.ts';

/**
 * What each moderation decision does, by the profile's current state. A decision not listed
 * for a state makes no sense there and gets a 400; a `Merged` profile takes no decision.
 *
 * | decision | allowed when                                          | result                                   |
 * |----------|-------------------------------------------------------|------------------------------------------|
 * | accept   | Needs Moderation, Rejected, Limited                   | Active (mail unless sendMail is false)   |
 * | reject   | Needs Moderation                                      | Rejected (mail with `reason` unless sendMail is false) |
 * | block    | any state but Blocked                                 | Blocked; every session ends              |
 * | unblock  | Blocked                                               | the state before the block (Inactive if never activated) |
 * | delete   | not deleted (ddate unset)                             | state kept, ddate set: no login, hidden; every session ends |
 * | restore  | deleted (ddate set), not anonymised at its owner's request | state kept, ddate cleared           |
 * | limit    | Active, Active Institutional, Active Automatic        | Limited: may log in, may not author notes |
 */
export function decide(
  profile: Pick<ProfileRecord, 'state' | 'ddate' | 'pastStates'>,
  decision: ModerationDecision,
  now: number,
): { state: ProfileState; ddate: number | null; endSessions: boolean } {
  const { state, ddate } = profile;
  const refuse = (): never => {
    throw new AppError('ValidationError', `Cannot ${decision} a profile in state ${state}${ddate !== null ? ' (deleted)' : ''}`, {
      path: 'decision',
    });
  };
  if (state === 'Merged') refuse();
  switch (decision) {
    case 'accept':
      if (state !== 'Needs Moderation' && state !== 'Rejected' && state !== 'Limited') refuse();
      return { state: 'Active', ddate, endSessions: false };
    case 'reject':
      if (state !== 'Needs Moderation') refuse();
      return { state: 'Rejected', ddate, endSessions: false };
    case 'block':
      if (state === 'Blocked') refuse();
      return { state: 'Blocked', ddate, endSessions: true };
    case 'unblock':
      if (state !== 'Blocked') refuse();
      return { state: stateBeforeBlock(profile.pastStates), ddate, endSessions: false };
    case 'delete':
      if (ddate !== null) refuse();
      return { state, ddate: now, endSessions: true };
    case 'restore':
      if (ddate === null) refuse();
      return { state, ddate: null, endSessions: false };
    case 'limit':
      if (state !== 'Active' && state !== 'Active Institutional' && state !== 'Active Automatic') refuse();
      return { state: 'Limited', ddate, endSessions: false };
  }
}

/** The last state before the most recent block; a profile never activated goes back to Inactive. */
export function stateBeforeBlock(pastStates: readonly PastState[]): ProfileState {
  const lastBlock = pastStates.map((p) => p.state).lastIndexOf('Blocked');
  const before = pastStates.slice(0, lastBlock === -1 ? pastStates.length : lastBlock).filter((p) => p.state !== 'Blocked');
  return before.at(-1)?.state ?? 'Inactive';
}

/** `POST /profile/moderate`, for moderators and super users. Every decision is audited. */
export class ModerationService extends AccountsPart {
  async moderate(input: ModerateProfileInput, viewer: Viewer): Promise<Profile> {
    if (!viewer.isModerator && !viewer.isSuperUser) {
      throw new AppError('ForbiddenError', 'Only moderators can moderate profiles');
    }
    const now = this.now();
    const { profile } = await this.deps.repo.transaction(async (repo) => {
      const target = await findTarget(repo, input.id);
      if (await repo.groups.isMember(SUPER_USERS_GROUP, target.id)) {
        if (!viewer.isSuperUser) throw new AppError('ForbiddenError', 'Only super users can moderate a super user');
      }
      // An account its owner deleted has nothing left to give back (no name, address or
      // password): restoring it would only make an empty profile that nobody can sign in to.
      if (input.decision === 'restore' && (await repo.deletions.anonymised(target.id))) {
        throw new AppError('ValidationError', `Cannot restore ${target.id}: it was deleted at its owner's request and anonymised`, { path: 'id' });
      }
      const next = decide(target, input.decision, now);
      const pastStates: PastState[] =
        next.state !== target.state ? [...target.pastStates, { state: next.state, date: now, setBy: viewer.profileId }] : target.pastStates;
      await repo.profiles.update(target.id, { state: next.state, ddate: next.ddate, pastStates }, now);
      if (next.endSessions) await this.core.sessions.endAllSessions(repo, target.id, now);
      await repo.settings.audit({ actor: viewer.profileId, action: `moderate:${input.decision}`, target: target.id, reason: input.reason ?? null }, now);
      const updated = (await repo.profiles.find(target.id)) as ProfileRecord;
      const mailTo = preferredEmail(updated, await repo.emails.emailsOf(updated.id));
      if (mailTo && input.sendMail !== false && (input.decision === 'reject' || input.decision === 'accept')) {
        await this.deps.mailer.queue(repo, { to: mailTo, ...(input.decision === 'accept' ? profileAcceptedMail() : profileRejectedMail({ reason: input.reason })) });
      }
      return { profile: updated };
    });
    return this.core.profiles.present(profile, true, false);
  }
}

/**
 * The profile a decision names: by its own id first, so a merged profile is itself (and takes no
 * decision), not the survivor its usernames moved to; else by any username or address.
 */
async function findTarget(repo: AccountsRepository, id: string): Promise<ProfileRecord> {
  const profile = (await repo.profiles.find(normaliseId(id))) ?? (await repo.profiles.findByIdOrEmail(id));
  if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${id}`);
  return profile;
}
