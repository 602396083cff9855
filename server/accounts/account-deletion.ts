import { AppError, type DeletionStatus, type ProfileContent, type RequestDeletionInput } from '../../shared/index.ts';
import { utcMinute } from '../../shared/time.ts';
import { deletionRequestedMail } from '../mail/messages.ts';
import { addressKey } from './ids.ts';
import { REAUTH_SECONDS } from './mfa/service.ts';
import { AccountsPart, type AccountsCore } from './core.ts';
import { type AccountsDeps } from './service-base.ts';
import { preferredEmail } from './profiles.ts';
import { normaliseId, type AccountsRepository } from './repository.ts';
import { deviceDetails } from './sessions.ts';
import type { RequestOrigin, Viewer } from './viewer.ts';
import type { PersonElsewhere } from './your-data.ts';

/** How long after asking an account is deleted; signing in before then cancels it. */
export const DELETION_GRACE_MS = 14 * 24 * 60 * 60 * 1000;
/** How many due deletions one sweep carries out. */
const DELETIONS_PER_SWEEP = 50;
/** The name a deleted profile keeps: its notes' signatures still resolve, to no one. */
export const DELETED_NAME = 'Deleted User';

/** When the session was opened, or its holder last proved it is them (`POST /mfa/reauthenticate`). */
export type ReauthAt = (sessionId: string) => Promise<number | null>;

/**
 * Signing in cancels a deletion the person asked for (`SignInService.open`, for every sign-in:
 * a password, its second step, a passkey; not an impersonation or an activation). Audited.
 */
export async function cancelDeletionOnSignIn(repo: AccountsRepository, profileId: string, now: number, origin: RequestOrigin): Promise<boolean> {
  if (!(await repo.deletions.cancel(profileId, now))) return false;
  await repo.settings.audit({ actor: profileId, action: 'account:deletion-cancelled', target: profileId, details: deviceDetails(origin) }, now);
  return true;
}

/**
 * Deleting one's own account. Asking needs the password typed again, or the profile id typed
 * again by a session that proved the person within ten minutes; every session then ends, and
 * the preferred address is mailed the date and how to cancel: signing in within 14 days.
 *
 * When the grace period is over the sweeper anonymises the profile the way the real platform
 * keeps reviews intact: the profile row stays, as a tombstone under the same id, so every note
 * (whose signatures, readers and writers name that id, or an anonymous group it was a member of)
 * and every group membership stays as it was; what made it a person goes. Its names become
 * one placeholder ("Deleted User", username the id itself), and history, links, relations,
 * expertise, pronouns, gender and the birth year go; so do its emails (and their groups), its
 * password, sessions (and the browsers and addresses kept with them), outstanding tokens, second
 * factors, passkeys and remembered browsers, the addresses, browsers and emails in its audit
 * entries, and every application's consent and tokens (each application gets its back-channel
 * logout, as after a revocation). The profile is deleted (`ddate`): it cannot sign in, is hidden
 * from everyone but moderators, and its usernames stay taken (their rows stay, so no one else is
 * ever given the same tilde id, which old notes name).
 */
export class AccountDeletionService extends AccountsPart {
  readonly #elsewhere: PersonElsewhere;
  readonly #reauthAt: ReauthAt;

  constructor(deps: AccountsDeps, core: AccountsCore, elsewhere: PersonElsewhere, reauthAt: ReauthAt) {
    super(deps, core);
    this.#elsewhere = elsewhere;
    this.#reauthAt = reauthAt;
  }

  /** `accounts.deletionStatus`: the pending deletion's date, and whether this session's sign-in cancelled one. */
  async status(viewer: Viewer): Promise<DeletionStatus> {
    const repo = this.deps.repo;
    const [pending, cancelledAt] = await Promise.all([repo.deletions.pending(viewer.profileId), repo.deletions.cancelledAt(viewer.profileId)]);
    // Asking ends every session, so the first session opened after it is the one that cancelled it.
    return { dueAt: pending?.dueAt ?? null, cancelledBySignIn: cancelledAt !== null && cancelledAt >= viewer.authTime };
  }

  /** `accounts.requestDeletion`: see the class. The answer is when the account will be deleted. */
  async request(viewer: Viewer, input: RequestDeletionInput, origin: RequestOrigin): Promise<{ dueAt: number }> {
    if (viewer.impersonator) throw new AppError('ForbiddenError', 'An account cannot be deleted while impersonating');
    const repo = this.deps.repo;
    const profile = await repo.profiles.find(viewer.profileId);
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${viewer.profileId}`);
    if (input.password !== undefined) {
      // Counted as the password change counts it: the form cannot be used to guess the password.
      const own = `session:${viewer.sessionId}`;
      await this.deps.limits.consume('loginDevice', own);
      await this.deps.limits.consume('loginAddress', addressKey(origin.address));
      if (!(await this.deps.hasher.verify(input.password, profile.passwordHash, addressKey(origin.address)))) {
        throw new AppError('ValidationError', 'The password is not correct', { path: 'password' });
      }
      await this.deps.limits.refund('loginDevice', own);
      await this.deps.limits.refund('loginAddress', addressKey(origin.address));
    } else {
      const typed = normaliseId(input.confirmId ?? '');
      const usernames = await repo.emails.usernamesOf(profile.id);
      if (typed !== profile.id && !usernames.includes(typed)) throw new AppError('ValidationError', `Type your profile id, ${profile.id}, to confirm`, { path: 'confirmId' });
      const now = this.now();
      const last = Math.max(viewer.authTime, (await this.#reauthAt(viewer.sessionId)) ?? 0);
      if (now - last > REAUTH_SECONDS * 1000) {
        throw new AppError('ForbiddenError', 'Please confirm it is you: sign out and sign in again, or send your password (or a code) to POST /mfa/reauthenticate; then try again.', {
          reauthenticate: '/mfa/reauthenticate',
        });
      }
    }
    const now = this.now();
    const existing = await repo.deletions.pending(profile.id);
    if (existing) return { dueAt: existing.dueAt };
    const dueAt = now + DELETION_GRACE_MS;
    await repo.transaction(async (trx) => {
      await trx.deletions.request(profile.id, now, dueAt);
      await trx.settings.audit({ actor: profile.id, action: 'account:deletion-requested', target: profile.id, details: { dueAt, ...deviceDetails(origin) } }, now);
      // Signed out everywhere: the next sign-in, wherever it is, is the one that cancels.
      await this.core.sessions.endAllSessions(trx, profile.id, now);
      const email = preferredEmail(profile, await trx.emails.emailsOf(profile.id));
      if (email) await this.deps.mailer.queue(trx, { to: email, ...deletionRequestedMail({ webUrl: this.deps.config.webUrl, profileId: profile.id, when: utcMinute(dueAt) }) });
    });
    return { dueAt };
  }

  /** The sweeper's: anonymises every account whose grace period is over. */
  async sweep(): Promise<number> {
    let done = 0;
    for (const profileId of await this.deps.repo.deletions.due(this.now(), DELETIONS_PER_SWEEP)) {
      if (await this.anonymise(profileId)) done += 1;
    }
    return done;
  }

  /** Carries out a due deletion (see the class); false when it was cancelled or done already. */
  async anonymise(profileId: string): Promise<boolean> {
    const now = this.now();
    if (!(await this.deps.repo.deletions.pending(profileId))) return false;
    // The applications' grants are the sign-in provider's to end, each told by back-channel
    // logout. Before the anonymising: a process killed in between leaves the deletion due, and
    // the next sweep does both again (withdrawing is idempotent); done after it, such a kill left
    // a deleted account's grants with nothing to end them.
    await this.#elsewhere.forgetApplications(profileId);
    const done = await this.deps.repo.transaction(async (repo) => {
      if (!(await repo.deletions.markDeleted(profileId, now))) return false;
      const profile = await repo.profiles.find(profileId);
      if (!profile) return false;
      const content: ProfileContent = { names: [{ fullname: DELETED_NAME, first: 'Deleted', middle: '', last: 'User', username: profile.id, preferred: true }] };
      await repo.deletions.tombstone(profileId, content, now);
      await repo.deletions.removeEmails(profileId);
      await repo.deletions.scrubSessions(profileId, now);
      await repo.deletions.scrubTokens(profileId, now);
      await repo.deletions.removeFactors(profileId);
      await repo.settings.audit({ actor: profileId, action: 'account:deleted', target: profileId }, now);
      await repo.deletions.scrubAudit(profileId);
      return true;
    });
    return done;
  }
}
