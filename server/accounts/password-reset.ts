import { z } from 'zod';
import { AppError, type ResetPasswordRequest, type ResettableResult } from '../../shared/index.ts';
import { passwordResetMail } from '../mail/messages.ts';
import { addressKey, maskEmail } from './ids.ts';
import { normaliseId } from './repository.ts';
import type { IssuedSession, RequestOrigin, Viewer } from './viewer.ts';
import { AccountsPart, type AccountsCore } from './core.ts';
import { type AccountsDeps } from './service-base.ts';
import type { AccountsRepository, ProfileRecord, TokenRecord } from './repository.ts';
import type { Mail } from '../mail/mailer.ts';
import { checkNewPassword, personalContext } from './password-policy.ts';
import { preferredEmail } from './profiles.ts';
import { accountLimitKey, deviceDetails, type KeptSession } from './sessions.ts';
import { hashSecret } from '../secrets.ts';

const INVALID_RESET = 'Reset token is not valid';
/** The outbox's name for a reset mail asked for (`Mailer.request`). */
const RESET_MAIL = 'password-reset';

/** What a reset mail is asked with: the id as typed (canonical), and the profile when a link named it. */
const ResetMailParams = z.object({ id: z.string(), profileId: z.string().optional() });

/** Password reset by a link mailed to the account's address, after human verification. */
export class PasswordResetService extends AccountsPart {
  constructor(deps: AccountsDeps, core: AccountsCore) {
    super(deps, core);
    deps.mailer.composer(RESET_MAIL, (trx, params) => this.#composeLink(this.deps.repo.with(trx), ResetMailParams.parse(params)));
  }

  /**
   * `POST /resettable`: needs a human-verification token. Mails a reset link; an unknown id gets
   * the same answer and no mail, so the form does not tell who has an account. The id is made
   * canonical first, the account's counter is its profile's (whichever of its ids is typed),
   * and the request writes the same outbox row whoever asked: the lookup, the token and the mail
   * are made after the answer (`mail/outbox.ts`), so a known and an unknown id take the same time. A browser that signed in to the account before (its device cookie) counts
   * against its own allowance: strangers asking for the person's reset mails cannot use up the
   * person's own (`device-cookies.ts`).
   */
  async request(input: { id: string; token?: string | null | undefined }, origin: RequestOrigin, device?: string): Promise<{ id: string }> {
    await this.deps.verifier.verify(input.token, origin.address);
    const id = normaliseId(input.id);
    const repo = this.deps.repo;
    const found = await repo.profiles.findByIdOrEmail(id);
    const profile = found?.mergedInto ? await repo.profiles.find(found.mergedInto) : found;
    const deviceNonce = profile ? this.deps.devices.nonceFor(device, profile.id) : null;
    if (deviceNonce) await this.deps.limits.consume('resetDevice', `device:${deviceNonce}`);
    else await this.deps.limits.consume('resetAccount', accountLimitKey(id, profile));
    await this.deps.limits.consume('resetAddress', addressKey(origin.address));
    await this.deps.mailer.request(repo, RESET_MAIL, { id });
    return { id: input.id };
  }

  /**
   * A new reset mail from an old reset link (expired, used or voided), to the address the old
   * one went to, with the same limits as `request`; no human verification, since its holder has
   * read that mailbox. Answers where it goes (masked), or null for a link that was never ours.
   */
  async requestFromLink(token: string, origin: RequestOrigin, device?: string): Promise<{ maskedEmail: string } | null> {
    const record = await this.deps.repo.tokens.findIssued('reset', hashSecret(token));
    if (!record?.email) return null;
    const deviceNonce = this.deps.devices.nonceFor(device, record.profileId);
    if (deviceNonce) await this.deps.limits.consume('resetDevice', `device:${deviceNonce}`);
    else await this.deps.limits.consume('resetAccount', `profile:${record.profileId}`);
    await this.deps.limits.consume('resetAddress', addressKey(origin.address));
    await this.deps.mailer.request(this.deps.repo, RESET_MAIL, { id: record.email, profileId: record.profileId });
    return { maskedEmail: maskEmail(record.email) };
  }

  /**
   * The reset mail asked for with `params`, in the outbox's transaction: the profile the id names
   * (a merged one's survivor), its token, and the link to the typed address or the preferred one.
   * Nothing for an id without an account that can reset.
   */
  async #composeLink(repo: AccountsRepository, params: z.infer<typeof ResetMailParams>): Promise<Mail | null> {
    const found = params.profileId ? await repo.profiles.find(params.profileId) : await repo.profiles.findByIdOrEmail(params.id);
    const profile = found?.mergedInto ? await repo.profiles.find(found.mergedInto) : found;
    if (!mayReset(profile)) return null;
    const held = await repo.emails.emailsOf(profile.id);
    // The typed address, while the profile still holds it (a link asked for with a profile's id
    // names one that may have been removed since), or the preferred one.
    const email = params.id.includes('@') ? held.find((e) => e.email === normaliseId(params.id))?.email : preferredEmail(profile, held);
    if (!email) return null;
    const seconds = this.deps.config.resetTokenSeconds;
    const { token } = await this.deps.oneTime.issue(repo, { kind: 'reset', profileId: profile.id, email, seconds, now: this.now() });
    return { to: email, ...passwordResetMail({ webUrl: this.deps.config.webUrl, profileId: profile.id, token, validForSeconds: seconds }) };
  }

  /** `GET /resettable/{token}`: what the reset page shows. */
  async resettable(token: string): Promise<ResettableResult> {
    const repo = this.deps.repo;
    const record = await this.#liveReset(repo, token, this.now());
    const group = record.email ? await repo.groups.find(record.email) : null;
    return {
      resettable: {
        action: 'reset',
        token,
        username: record.profileId,
        ...(record.email ? { groupId: record.email } : {}),
        expireAt: new Date(record.expiresAt).toISOString(),
        ...(group ? { group: { id: group.id, members: group.members, ...pickGroupLists(group.data) } } : {}),
      },
    };
  }

  /**
   * `PUT /reset/{token}`: sets the new password, ends every session (the `tokenVersion` moves
   * on) and voids every outstanding reset token, in one transaction, which checks the token
   * again (it may have been used while the password was hashed). A browser signed in to the same
   * account (`browser.viewer`, with that session's refresh cookie) keeps its session, with fresh
   * tokens (`rotated`): the platform's web client resets from a signed-in browser and then asks
   * `POST /logout-all-devices` with its session, which finds the others already ended. Refused in
   * an impersonation: only the person may reset their password.
   */
  async reset(request: ResetPasswordRequest, origin: RequestOrigin, browser: SignedInBrowser = { viewer: null }): Promise<{ rotated?: IssuedSession }> {
    return this.#reset(request, origin, browser, true);
  }

  /**
   * The reset page's form, as the platform's web client behaves: "Log me out of all other
   * sessions" (`logoutOtherSessions`) is `reset`; left unticked, every session stays.
   */
  async resetInBrowser(
    request: ResetPasswordRequest & { logoutOtherSessions: boolean },
    origin: RequestOrigin,
    browser: SignedInBrowser,
  ): Promise<{ signedInHere: boolean; rotated?: IssuedSession }> {
    const outcome = await this.#reset({ token: request.token, password: request.password }, origin, browser, request.logoutOtherSessions);
    // Still signed in here: every session stayed, or this one was kept.
    const signedInHere = this.#signedInHere(browser.viewer, outcome.profileId) && (!request.logoutOtherSessions || outcome.kept);
    return { signedInHere, ...(outcome.rotated ? { rotated: outcome.rotated } : {}) };
  }

  async #reset(request: ResetPasswordRequest, origin: RequestOrigin, browser: SignedInBrowser, endSessions: boolean): Promise<{ profileId: string; kept: boolean; rotated?: IssuedSession }> {
    const { viewer } = browser;
    if (viewer?.impersonator) throw new AppError('ForbiddenError', 'A password cannot be reset while impersonating');
    // Every try counts against the address, and a token that is not live is refused before
    // any hashing: made-up tokens cannot fill the hashing queue and starve sign-ins.
    await this.deps.limits.consume('setPasswordAddress', addressKey(origin.address));
    const live = await this.#liveReset(this.deps.repo, request.token, this.now());
    checkNewPassword(request.password, await personalContext(this.deps.repo, live.profileId));
    const passwordHash = await this.deps.hasher.hash(request.password, addressKey(origin.address));
    const now = this.now();
    const sessions = this.core.sessions;
    const { profileId, kept } = await this.deps.repo.transaction(async (repo) => {
      const record = await this.#liveReset(repo, request.token, now);
      await this.deps.oneTime.consume(repo, record, now, INVALID_RESET);
      const profile = (await repo.profiles.find(record.profileId))!;
      await repo.profiles.update(profile.id, { passwordHash }, now);
      await repo.tokens.voidAll(profile.id, 'reset', now);
      let kept: KeptSession | null = null;
      if (endSessions && this.#signedInHere(viewer, profile.id)) kept = await sessions.endOtherSessions(repo, viewer, browser.refreshToken, now);
      // Only the browser's own session is kept, both its cookies (checked in this transaction):
      // an access token alone (perhaps a stolen one, or one planted in this browser) must not
      // outlive the reset, and ends with the rest.
      if (kept?.newRefresh === null) kept = null;
      if (endSessions && !kept) await sessions.endAllSessions(repo, profile.id, now);
      const ended = !endSessions ? 'none' : kept ? 'others' : 'all';
      await repo.settings.audit({ actor: profile.id, action: 'password:reset', target: profile.id, details: { ...deviceDetails(origin), sessionsEnded: ended } }, now);
      return { profileId: profile.id, kept };
    });
    if (!kept || !viewer) return { profileId, kept: false };
    const outcome = await sessions.keptSessionTokens(kept, viewer);
    return { profileId, kept: true, ...('rotated' in outcome ? { rotated: outcome.rotated } : {}) };
  }

  /**
   * A reset token that may still be used: live, its profile one a reset mail may be sent for
   * (`mayReset`: blocked, merged or deleted since, it may not), and the address it was mailed to
   * still the profile's. A link mailed to an address removed since (perhaps because someone else
   * reads that mailbox now) resets nothing. Any other is `INVALID_RESET`, as a used one.
   */
  async #liveReset(repo: AccountsRepository, token: string, now: number): Promise<TokenRecord> {
    const record = await this.deps.oneTime.live(repo, 'reset', token, now, INVALID_RESET);
    const profile = await repo.profiles.find(record.profileId);
    const held = record.email === null || (await repo.emails.emailsOf(record.profileId)).some((e) => e.email === record.email);
    if (!mayReset(profile) || !held) throw new AppError('ValidationError', INVALID_RESET, { path: 'token' });
    return record;
  }

  /** Whether the browser is signed in to the account being reset (`viewer` of that profile). */
  #signedInHere(viewer: Viewer | null, profileId: string): viewer is Viewer {
    return viewer !== null && viewer.profileId === profileId;
  }
}

/** The browser a reset comes from: who it is signed in as (if anyone), and its refresh cookie. */
export interface SignedInBrowser {
  viewer: Viewer | null;
  refreshToken?: string | undefined;
}

const GROUP_LISTS = ['readers', 'writers', 'signatures', 'signatories', 'nonreaders', 'impersonators'] as const;

/** The list fields of a stored group that the Group schema knows. */
export function pickGroupLists(data: Record<string, unknown>): Partial<Record<(typeof GROUP_LISTS)[number], string[]>> {
  const lists: Partial<Record<(typeof GROUP_LISTS)[number], string[]>> = {};
  for (const key of GROUP_LISTS) {
    const value = data[key];
    if (Array.isArray(value) && value.every((v) => typeof v === 'string' && v.length > 0)) lists[key] = value as string[];
  }
  return lists;
}

/** Whether a reset may be mailed for, or used on, `profile`: it exists, is not deleted, blocked or merged. */
function mayReset(profile: ProfileRecord | null | undefined): profile is ProfileRecord {
  return profile !== null && profile !== undefined && profile.ddate === null && profile.state !== 'Blocked' && profile.state !== 'Merged';
}
