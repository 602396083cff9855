import { signInSettingsChangedMail } from '../../mail/messages.ts';
import { AccountsBase } from '../part.ts';
import { preferredEmail } from '../profiles.ts';
import type { AccountsRepository } from '../repository.ts';

/**
 * What the multi-factor services share: the audit line and the mail that tell the person of a
 * change to how they sign in (a factor added or removed, a recovery code used).
 */
export abstract class MfaPart extends AccountsBase {
  protected audit(target: string, actor: string, action: string, details?: Record<string, unknown>, repo: AccountsRepository = this.deps.repo, reason?: string): Promise<void> {
    return repo.settings.audit({ actor, action, target, reason, details }, this.now());
  }

  protected async notify(profileId: string, what: string, action: string, actor: string, details?: Record<string, unknown>): Promise<void> {
    await this.audit(profileId, actor, action, details);
    this.mailChange(profileId, what);
  }

  /** Tells the person of a change to how they sign in, after the answer. */
  protected mailChange(profileId: string, what: string): void {
    const when = new Date(this.now()).toISOString();
    this.deps.mailer.later(async () => {
      const profile = await this.deps.repo.profiles.find(profileId);
      const to = profile ? preferredEmail(profile, await this.deps.repo.emails.emailsOf(profileId)) : undefined;
      if (!to) return;
      await this.deps.mailer.send({ to, ...signInSettingsChangedMail({ what, profileId, when }) });
    });
  }
}
