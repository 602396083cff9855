import { signInSettingsChangedMail } from '../../mail/messages.ts';
import { AccountsBase } from '../service-base.ts';
import { preferredEmail } from '../profiles.ts';
import type { AccountsRepository } from '../repository.ts';

/**
 * What the multi-factor services share: the audit line and the mail that tell the person of a
 * change to how they sign in (a factor added or removed, a recovery code used).
 */
export abstract class MfaServiceBase extends AccountsBase {
  protected audit(target: string, actor: string, action: string, details?: Record<string, unknown>, repo: AccountsRepository = this.deps.repo, reason?: string): Promise<void> {
    return repo.settings.audit({ actor, action, target, reason, details }, this.now());
  }

  /** The audit line and the mail of a change, together. */
  protected async notify(profileId: string, what: string, action: string, actor: string, details?: Record<string, unknown>): Promise<void> {
    await this.deps.repo.transaction(async (repo) => {
      await this.audit(profileId, actor, action, details, repo);
      await this.mailChange(profileId, what, repo);
    });
  }

  /** Tells the person of a change to how they sign in, in `repo`'s transaction (the change's). */
  protected async mailChange(profileId: string, what: string, repo: AccountsRepository = this.deps.repo): Promise<void> {
    const when = new Date(this.now()).toISOString();
    const profile = await repo.profiles.find(profileId);
    const to = profile ? preferredEmail(profile, await repo.emails.emailsOf(profileId)) : undefined;
    if (to) await this.deps.mailer.queue(repo, { to, ...signInSettingsChangedMail({ what, profileId, when }) });
  }
}
