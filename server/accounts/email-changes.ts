import { AppError, type EmailChangeKind, type EmailUndoPreview, type EmailUndoResult, type OwnEmailsResult } from '../../shared/index.ts';
import { emailChangedMail } from '../mail/messages.ts';
import { hashSecret } from '../secrets.ts';
import { AccountsPart } from './core.ts';
import { preferredEmail } from './profiles.ts';
import { normaliseEmail, type AccountsRepository, type EmailRecord, type ProfileRecord, type TokenRecord } from './repository.ts';
import type { EmailUndoKind } from './repository/tokens.ts';
import { deviceDetails } from './sessions.ts';
import type { RequestOrigin, Viewer } from './viewer.ts';

/** How long the mailed link that undoes a change of a person's emails works. */
export const EMAIL_UNDO_SECONDS = 7 * 24 * 60 * 60;

const UNDO_INVALID = 'This link has expired, was already used, or the change was undone already';

const KIND_OF: Record<EmailChangeKind, EmailUndoKind> = { added: 'undo-email-added', removed: 'undo-email-removed', preferred: 'undo-email-preferred' };
const CHANGE_OF: Record<EmailUndoKind, EmailChangeKind> = { 'undo-email-added': 'added', 'undo-email-removed': 'removed', 'undo-email-preferred': 'preferred' };

/**
 * A person's own emails beyond adding one (`emails.ts`): removing one, making one preferred, and
 * undoing any change from the link mailed to the address that had most to lose by it.
 *
 * The rules:
 * - only the person, in their own signed-in session (its refresh cookie, as adding an email
 *   needs: an address can reset the password), never while impersonated;
 * - the last confirmed address cannot be removed, nor the preferred one (another is made
 *   preferred first, as on the real platform, whose support refuses to remove a preferred email);
 * - the preferred address must be a confirmed one of the person's;
 * - every change is told, with a link that undoes it for seven days (a one-time token kept as a
 *   hash): a removed address is told of its removal; the preferred address before a change is
 *   told of the change; the preferred address is told that another was added.
 *
 * Undoing is for a change the person did not make, so it treats the account as taken over: it
 * ends every session (the token version moves on, so the person's applications are told by
 * back-channel logout, as after a reset) and the page offers a password reset. The link's holder
 * proved only the mailbox the link went to, so undoing only ever gives that mailbox its place
 * back (an address restored, the preferred one restored) or takes away what was added.
 */
export class EmailChangeService extends AccountsPart {
  /** The caller, as the person themself in their own session; the rule is `#asker`'s in `emails.ts`. */
  async #self(viewer: Viewer, refreshToken: string | undefined): Promise<ProfileRecord> {
    if (viewer.impersonator) throw new AppError('ForbiddenError', 'Emails cannot be changed while impersonating');
    if (!(await this.core.sessions.holdsRefreshCookie(viewer.sessionId, refreshToken))) {
      throw new AppError('ForbiddenError', 'Changing your emails needs your signed-in session (its refresh cookie), not an access token alone');
    }
    const profile = await this.deps.repo.profiles.find(viewer.profileId);
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${viewer.profileId}`);
    return profile;
  }

  /** Refuses (403) a caller who may not change their emails (`#self`), before an edit writes anything (`profile-editor.ts`). */
  async mayChange(viewer: Viewer, refreshToken: string | undefined): Promise<void> {
    await this.#self(viewer, refreshToken);
  }

  /** The caller's addresses, confirmed or not, and which is preferred. */
  async list(viewer: Viewer): Promise<OwnEmailsResult> {
    const repo = this.deps.repo;
    const profile = await repo.profiles.find(viewer.profileId);
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${viewer.profileId}`);
    const emails = await repo.emails.emailsOf(profile.id);
    const preferred = preferredEmail(profile, emails);
    return { emails: emails.map((e) => ({ email: e.email, confirmed: e.confirmed, preferred: e.email === preferred })) };
  }

  /** `accounts.removeEmail`: see the class's rules. The removed address is told, with its undo link. */
  async remove(viewer: Viewer, email: string, origin: RequestOrigin, refreshToken: string | undefined): Promise<OwnEmailsResult> {
    const profile = await this.#self(viewer, refreshToken);
    const now = this.now();
    await this.deps.repo.transaction((repo) => this.removeIn(repo, profile.id, email, origin, now));
    return this.list(viewer);
  }

  /** `accounts.setPreferredEmail`: a confirmed address of the caller's; the preferred one before is told. */
  async setPreferred(viewer: Viewer, email: string, origin: RequestOrigin, refreshToken: string | undefined): Promise<OwnEmailsResult> {
    const profile = await this.#self(viewer, refreshToken);
    const now = this.now();
    await this.deps.repo.transaction((repo) => this.setPreferredIn(repo, profile.id, email, origin, now));
    return this.list(viewer);
  }

  /**
   * The removal, in the transaction `repo`: `remove`'s, and a profile save's (`profile-editor.ts`),
   * which makes it in the save's own transaction, after the content, so that a refusal leaves
   * nothing of the save written. Its caller checked who asks (`#self`, `mayChange`). With
   * `onlyUnconfirmed`, an address confirmed by now is left as it is (the save's rule).
   */
  async removeIn(repo: AccountsRepository, profileId: string, email: string, origin: RequestOrigin, now: number, opts: { onlyUnconfirmed?: boolean } = {}): Promise<void> {
    const address = normaliseEmail(email);
    const { profile, emails, held } = await this.#held(repo, profileId, address);
    if (opts.onlyUnconfirmed && held.confirmed) return;
    if (preferredEmail(profile, emails) === address) {
      throw new AppError('ValidationError', `${address} is your preferred address: make another one preferred first`, { path: 'email', reason: 'preferred' });
    }
    if (held.confirmed && !emails.some((e) => e.confirmed && e.email !== address)) {
      throw new AppError('ValidationError', `${address} is your last confirmed address and cannot be removed`, { path: 'email', reason: 'last-confirmed' });
    }
    await repo.emails.removeEmail(profileId, address);
    await repo.settings.audit({ actor: profileId, action: 'email:removed', target: profileId, details: { email: address, ...deviceDetails(origin) } }, now);
    // An address never confirmed was nobody's proven mailbox: there is no one to tell.
    if (held.confirmed) await this.#tell(repo, profileId, 'removed', address, address, now);
  }

  /** Making an address preferred, in the transaction `repo`: `setPreferred`'s, and a profile save's, as `removeIn`. */
  async setPreferredIn(repo: AccountsRepository, profileId: string, email: string, origin: RequestOrigin, now: number): Promise<void> {
    const address = normaliseEmail(email);
    const { profile: current, emails, held } = await this.#held(repo, profileId, address);
    if (!held.confirmed) throw unconfirmedPreferred(address, 'email');
    const before = preferredEmail(current, emails);
    if (before === address) return;
    await repo.profiles.update(profileId, { content: { ...current.content, preferredEmail: address } }, now);
    await repo.settings.audit({ actor: profileId, action: 'email:preferred', target: profileId, details: { email: address, ...(before ? { previous: before } : {}), ...deviceDetails(origin) } }, now);
    if (before) await this.#tell(repo, profileId, 'preferred', address, before, now);
  }

  /** The profile, its addresses, and the one of them `address` is (a 404 when it holds none such), as of `repo`. */
  async #held(repo: AccountsRepository, profileId: string, address: string): Promise<{ profile: ProfileRecord; emails: EmailRecord[]; held: EmailRecord }> {
    const profile = await repo.profiles.find(profileId);
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${profileId}`);
    const emails = await repo.emails.emailsOf(profileId);
    const held = emails.find((e) => e.email === address);
    if (!held) throw new AppError('NotFoundError', `${address} is not one of your addresses`, { path: 'email' });
    return { profile, emails, held };
  }

  /**
   * After an address was added to an active profile (`EmailService.confirm`; not while a profile
   * is being activated, which is no change to tell anyone of): audited, and the preferred address
   * is told, with a link that removes the added one; in `repo`'s transaction, the addition's.
   */
  async added(profileId: string, email: string, origin: RequestOrigin | undefined, repo: AccountsRepository): Promise<void> {
    const now = this.now();
    const profile = await repo.profiles.find(profileId);
    if (!profile) return;
    await repo.settings.audit({ actor: profileId, action: 'email:added', target: profileId, details: { email, ...(origin ? deviceDetails(origin) : {}) } }, now);
    const preferred = preferredEmail(profile, (await repo.emails.emailsOf(profileId)).filter((e) => e.confirmed && e.email !== email));
    if (preferred && preferred !== email) await this.#tell(repo, profileId, 'added', email, preferred, now);
  }

  /** Mails `to` what changed (`email` names the address changed) with a new undo link, in `repo`'s transaction. */
  async #tell(repo: AccountsRepository, profileId: string, change: EmailChangeKind, email: string, to: string, now: number): Promise<void> {
    // The token names the address it gives back (removed, preferred) or takes away (added).
    const restores = change === 'added' ? email : to;
    const { token } = await this.deps.oneTime.issueLink(repo, { kind: KIND_OF[change], profileId, email: restores, seconds: EMAIL_UNDO_SECONDS, now });
    await this.deps.mailer.queue(repo, { to, ...emailChangedMail({ pagesUrl: this.deps.config.pagesUrl, profileId, change, email, token, validForSeconds: EMAIL_UNDO_SECONDS }) });
  }

  /** The live undo token a secret is, of whichever change. */
  async #live(token: string): Promise<TokenRecord | null> {
    const hash = hashSecret(token);
    for (const kind of Object.values(KIND_OF)) {
      const record = await this.deps.repo.tokens.findLive(kind, hash, this.now());
      if (record) return record;
    }
    return null;
  }

  /** `accounts.emailUndo` (the page's GET): what the link would undo. Changes nothing. */
  async preview(token: string): Promise<EmailUndoPreview> {
    const record = await this.#live(token);
    const profile = record ? await this.deps.repo.profiles.find(record.profileId) : null;
    if (!record || !record.email || !profile || profile.ddate !== null) return { live: false };
    return { live: true, change: CHANGE_OF[record.kind as EmailUndoKind], email: record.email, profileId: record.profileId, expiresAt: record.expiresAt };
  }

  /**
   * `accounts.undoEmailChange` (the page's POST): undoes the change, uses the link up, ends every
   * session of the person and audits it (`email:undone`). A used, expired or unknown link is a 400
   * and nothing changes.
   */
  async undo(token: string, origin: RequestOrigin): Promise<EmailUndoResult> {
    const record = await this.#live(token);
    const now = this.now();
    if (!record || !record.email) throw new AppError('ValidationError', UNDO_INVALID, { path: 'token' });
    const email = record.email;
    const change = CHANGE_OF[record.kind as EmailUndoKind];
    await this.deps.repo.transaction(async (repo) => {
      await this.deps.oneTime.consume(repo, record, now, UNDO_INVALID);
      const profile = await repo.profiles.find(record.profileId);
      if (!profile || profile.ddate !== null) throw new AppError('ValidationError', UNDO_INVALID, { path: 'token' });
      switch (change) {
        case 'added': {
          const emails = await repo.emails.emailsOf(profile.id);
          // The rule removal follows: never the last confirmed address. When the one added is
          // all that is left (the old one was removed since), the link about that removal gives
          // the old one back first; this link stays usable (nothing is written, it is not used up).
          if (emails.some((e) => e.email === email) && !emails.some((e) => e.confirmed && e.email !== email)) {
            throw new AppError('ValidationError', `${email} is the only confirmed address left on the account, so it cannot be taken away yet: first use the link in the mail saying your address was removed, which gives it back, then this one`, { path: 'token', reason: 'last-confirmed' });
          }
          if (await repo.emails.removeEmail(profile.id, email)) {
            if (preferredEmail(profile, emails) === email) {
              const next = emails.find((e) => e.confirmed && e.email !== email)?.email;
              const { preferredEmail: _gone, ...content } = profile.content;
              await repo.profiles.update(profile.id, { content: next ? { ...content, preferredEmail: next } : content }, now);
            }
          }
          break;
        }
        case 'removed':
          await this.#restore(repo, profile.id, email, now);
          break;
        case 'preferred':
          await this.#restore(repo, profile.id, email, now);
          await repo.profiles.update(profile.id, { content: { ...profile.content, preferredEmail: email } }, now);
          break;
      }
      // A change the person did not make: whoever made it is signed out, everywhere.
      await this.core.sessions.endAllSessions(repo, profile.id, now);
      await repo.settings.audit({ actor: profile.id, action: 'email:undone', target: profile.id, details: { email, change, ...deviceDetails(origin) } }, now);
    });
    return { change, email, sessionsEnded: true };
  }

  /** The address back on the profile, confirmed (the link proved its mailbox), unless another profile took it since. */
  async #restore(repo: AccountsRepository, profileId: string, email: string, now: number): Promise<void> {
    const owner = await repo.emails.findEmail(email);
    if (owner && owner.profileId !== profileId) {
      throw new AppError('ValidationError', `${email} now belongs to another profile and cannot be given back`, { path: 'token' });
    }
    if (owner) await repo.emails.confirmEmail(profileId, email);
    else await repo.emails.addEmail(profileId, email, true, now);
    await repo.groups.linkEmailGroups(profileId, email, now);
  }
}

/** The refusal of an address not confirmed yet as the preferred one (here, and before a profile edit writes anything: `profile-editor.ts`). */
export function unconfirmedPreferred(address: string, path: string): AppError {
  return new AppError('ValidationError', `${address} is not confirmed yet: confirm it with its code first`, { path, reason: 'unconfirmed' });
}
