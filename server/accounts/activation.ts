import {
  AppError,
  type ActivationCodeInput,
  type ActivatableResult,
  type ActivateRequest,
  type ActivateResult,
  type Name,
  type ProfileContent,
  type ProfileState,
} from '../../shared/index.ts';
import { POSITIONS } from '../../db/seeds/institutions.ts';
import type { AccountsRepository, ProfileRecord } from './repository.ts';
import { activationPendingMail } from '../mail/messages.ts';
import { addressKey, maskEmail } from './ids.ts';
import { normaliseEmail, normaliseId } from './repository.ts';
import type { IssuedSession, RequestOrigin, Viewer } from './viewer.ts';
import { AccountsPart } from './core.ts';
import { ACTIVATION_MAIL } from './sign-up.ts';
import { accountLimitKey, deviceDetails } from './sessions.ts';
import { hasBirthDate } from './profile-editor.ts';
import { hashSecret } from '../secrets.ts';
import { tildeBase, usernameForName, withFullname } from './tilde.ts';

const INVALID_ACTIVATION = 'Activation token is not valid';
/** A wrong, used or expired sign-up code, and an id with no activation waiting, look alike. */
const INVALID_CODE = 'That code is wrong or has expired';

/** The setting that sends new profiles without an institutional email to moderation. */
export const MODERATION_SETTING = 'moderation';

/** Whether an email's domain is an institution's domain or one of its subdomains. */
export function isInstitutional(email: string, domains: readonly string[]): boolean {
  const domain = email.slice(email.lastIndexOf('@') + 1).toLowerCase();
  return domains.some((d) => domain === d || domain.endsWith(`.${d}`));
}

export interface ActivationOutcome {
  result: ActivateResult;
  /** Set when the person is now signed in. */
  session?: IssuedSession;
}

/** Activation of a new profile from the link mailed at registration, and its re-sending. */
export class ActivationService extends AccountsPart {
  /** The profile an activation token is for, with what the activation page offers. */
  async #pending(repo: AccountsRepository, token: string) {
    const now = this.now();
    const record = await this.deps.oneTime.live(repo, 'activation', token, now, INVALID_ACTIVATION);
    const profile = await repo.profiles.find(record.profileId);
    if (!profile || profile.state !== 'Inactive' || profile.ddate !== null) {
      throw new AppError('ValidationError', INVALID_ACTIVATION, { path: 'token' });
    }
    return { record, profile };
  }

  /** `GET /activatable/{token}`. */
  async activatable(token: string): Promise<ActivatableResult> {
    const repo = this.deps.repo;
    const { record, profile } = await this.#pending(repo, token);
    return {
      profile: await this.core.profiles.present(profile, true, true),
      activatable: {
        action: 'activate',
        token,
        username: profile.id,
        ...(record.email ? { groupId: record.email } : {}),
        expireAt: new Date(record.expiresAt).toISOString(),
        user: { id: record.email ?? profile.id, profile: { id: profile.id } },
      },
      prefixed_positions: [...POSITIONS],
      institutions: await repo.settings.institutionDomains(),
    };
  }

  /**
   * `PUT /activate/{token}`: stores the profile content, confirms the registration email and
   * sets the state: `Active Institutional` when a confirmed email belongs to a listed
   * institution, otherwise `Active Automatic` with moderation off or `Needs Moderation` with it
   * on. One transaction: the token is used up only if everything else is written too.
   */
  async activate(request: ActivateRequest, origin: RequestOrigin): Promise<ActivationOutcome> {
    const content = request.content ?? {};
    if (!content.history?.length) {
      throw new AppError('MissingRequiredError', 'At least one history entry with an institution is required', {
        path: 'content/history',
      });
    }
    const moderation = await this.moderation();
    const now = this.now();
    const outcome = await this.deps.repo.transaction(async (repo) => {
      const { record, profile } = await this.#pending(repo, request.token);
      await this.deps.oneTime.consume(repo, record, now, INVALID_ACTIVATION);
      if (record.email) await repo.emails.confirmEmail(profile.id, record.email);
      const emails = await repo.emails.emailsOf(profile.id);
      const confirmed = emails.filter((e) => e.confirmed).map((e) => e.email);
      const domains = await repo.settings.institutionDomains();
      const state: ProfileState = confirmed.some((email) => isInstitutional(email, domains))
        ? 'Active Institutional'
        : moderation
          ? 'Needs Moderation'
          : 'Active Automatic';
      const stored = await this.#withNames(repo, profile, content, confirmed);
      await repo.profiles.update(
        profile.id,
        // A date of birth given here starts the window in which its owner may still correct it
        // (`profile-editor.ts`), as the spec's `dobTimestamp` says.
        { state, content: stored, pastStates: [...profile.pastStates, { state, date: now, setBy: profile.id }], ...(hasBirthDate(stored) ? { dobTimestamp: now } : {}) },
        now,
      );
      const updated = (await repo.profiles.find(profile.id)) as ProfileRecord;
      const loginEmail = record.email ?? confirmed[0] ?? profile.id;
      if (state === 'Needs Moderation') {
        await this.deps.mailer.queue(repo, { to: loginEmail, ...activationPendingMail() });
        return { result: { user: { id: loginEmail, profile: await this.core.profiles.simplify(updated, repo) } }, loginEmail };
      }
      // The first session of the person: with its browser and address, and in the audit log as a
      // sign-in, as every other sign-in is (the security page lists both).
      const session = await this.core.sessions.issueSession(updated, { loginEmail, accessSeconds: 60 * 60, origin }, repo);
      await repo.settings.audit({ actor: profile.id, action: 'sign-in', target: profile.id, details: deviceDetails(origin) }, now);
      return { result: session.result, session, loginEmail };
    });
    return outcome.session ? { result: outcome.result, session: outcome.session } : { result: outcome.result };
  }

  /**
   * The content as stored: emails come from the email table, never from the body; names keep
   * their usernames, and a new name gets the next free tilde username of its own.
   */
  async #withNames(repo: AccountsRepository, profile: ProfileRecord, content: ProfileContent, confirmed: string[]): Promise<ProfileContent> {
    const { emails: _emails, emailsConfirmed: _confirmed, preferredEmail, ...rest } = content;
    const owned = new Set(await repo.emails.usernamesOf(profile.id));
    const names: Name[] = [];
    for (const [i, name] of (content.names ?? profile.content.names ?? []).entries()) {
      if (name.username && !owned.has(name.username)) {
        throw new AppError('ValidationError', `The username ${name.username} does not belong to this profile`, { path: 'content/names' });
      }
      if (name.username) {
        names.push(withFullname(name));
        continue;
      }
      const base = tildeBase(name, `content/names/${i}/`);
      names.push(withFullname({ ...name, username: await usernameForName(repo.emails, profile.id, owned, base, new Set(names.map((n) => n.username))) }));
    }
    if (names.length === 0) throw new AppError('MissingRequiredError', 'At least one name is required', { path: 'content/names' });
    if (!names.some((n) => n.preferred)) names[0] = { ...names[0], preferred: true };
    const preferred = preferredEmail && confirmed.includes(normaliseEmail(preferredEmail)) ? normaliseEmail(preferredEmail) : undefined;
    return { ...rest, names, ...(preferred ? { preferredEmail: preferred } : {}) };
  }

  /**
   * `POST /activatable`: mails a new activation link. An unknown id, or an account that is
   * already active, gets the same answer and no mail. The id is made canonical first, the
   * account's counter is its profile's, and the request writes the same outbox row whatever the
   * id: the token and the mail are made after the answer, so every id takes the same time.
   */
  async resend(typed: string, origin: RequestOrigin): Promise<{ id: string }> {
    const limits = this.deps.limits;
    const id = normaliseId(typed);
    const repo = this.deps.repo;
    const profile = await repo.profiles.findByIdOrEmail(id);
    await limits.consume('resendAccount', accountLimitKey(id, profile));
    await limits.consume('resendAddress', addressKey(origin.address));
    await this.deps.mailer.request(repo, ACTIVATION_MAIL, { id });
    return { id: typed };
  }

  /**
   * A new activation mail from an old link (expired, used or voided): to the address the old
   * one went to, as `resend` would send it for that address, with the same limits. Its holder
   * has read that mailbox, so no human verification is asked. Answers where the mail goes
   * (masked), or null for a link that was never ours or a profile that no longer waits.
   */
  async resendFromLink(token: string, origin: RequestOrigin): Promise<{ maskedEmail: string } | null> {
    const record = await this.deps.repo.tokens.findIssued('activation', hashSecret(token));
    const profile = record ? await this.deps.repo.profiles.find(record.profileId) : null;
    if (!record?.email || !profile || profile.state !== 'Inactive' || profile.ddate !== null) return null;
    await this.resend(record.email, origin);
    return { maskedEmail: maskEmail(record.email) };
  }

  /**
   * "Type the code": the 6-digit code of the sign-up mail, with the address it went to (or the
   * profile id), instead of the link. A right code replaces the mailed link by a new one, whose
   * token the activation page opens (it expires when the mailed one would have). The code is as
   * hard to guess as the email-confirmation code: every try counts per address before it is
   * compared (twenty wrong a day: `wrongCodeAddress`) and a right one is given back, and five
   * wrong codes void the token (`one-time-tokens.ts`). An unknown id, a profile that no longer
   * waits, a wrong, used or expired code all get the same 400 at `code`.
   */
  async linkFromCode(input: ActivationCodeInput): Promise<{ token: string }> {
    const repo = this.deps.repo;
    const now = this.now();
    const id = normaliseId(input.id);
    const profile = await repo.profiles.findByIdOrEmail(id);
    const waiting = profile && profile.state === 'Inactive' && profile.ddate === null ? await repo.tokens.findLiveOf('activation', profile.id, now) : null;
    const record = waiting && (!id.includes('@') || waiting.email === id) ? waiting : null;
    const counted = record?.email ?? id;
    await this.deps.limits.consume('wrongCodeAddress', counted);
    if (!record) throw new AppError('ValidationError', INVALID_CODE, { path: 'code' });
    await this.deps.oneTime.checkCode(repo, record, input.code, now, INVALID_CODE).catch((error: unknown) => {
      throw error instanceof AppError ? new AppError('ValidationError', INVALID_CODE, { path: 'code' }) : error;
    });
    await this.deps.limits.refund('wrongCodeAddress', counted);
    return repo.transaction(async (trx) => {
      await this.deps.oneTime.consume(trx, record, now, INVALID_CODE);
      const seconds = Math.max(1, Math.floor((record.expiresAt - now) / 1000));
      const { token } = await this.deps.oneTime.issue(trx, { kind: 'activation', profileId: record.profileId, email: record.email, seconds, now });
      return { token };
    });
  }

  /**
   * Whether an activation link (any state: live, used or expired) was made for the signed-in
   * person, whose account is active: the page then says there is nothing left to activate,
   * instead of offering a new link. Anyone else's link answers false.
   */
  async isOwnUsedLink(token: string, viewer: Viewer): Promise<boolean> {
    const record = await this.deps.repo.tokens.findIssued('activation', hashSecret(token));
    return record !== null && record !== undefined && record.profileId === viewer.profileId;
  }

  // ---- operator settings ------------------------------------------------------------------------

  /** Whether new profiles without an institutional email wait for moderation (default: off). */
  async moderation(): Promise<boolean> {
    return (await this.deps.repo.settings.get(MODERATION_SETTING)) === 'on';
  }

  async setModeration(on: boolean): Promise<void> {
    await this.deps.repo.settings.set(MODERATION_SETTING, on ? 'on' : 'off');
  }

  async addInstitution(domain: string, name: string, country: string | null): Promise<void> {
    await this.deps.repo.settings.addInstitution(domain, name, country);
  }

  async institutionDomains(): Promise<string[]> {
    return this.deps.repo.settings.institutionDomains();
  }
}

