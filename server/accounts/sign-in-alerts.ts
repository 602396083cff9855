import { AppError, type NotMeLink, type NotMeResult } from '../../shared/index.ts';
import { utcMinute } from '../../shared/time.ts';
import { newBrowserSignInMail, passwordResetMail } from '../mail/messages.ts';
import { hashSecret, randomToken } from '../secrets.ts';
import { maskEmail } from './ids.ts';
import type { MfaRepository } from './mfa/repository.ts';
import { AccountsPart, type AccountsCore } from './core.ts';
import { AccountsBase, type AccountsDeps } from './service-base.ts';
import { preferredEmail } from './profiles.ts';
import { normaliseEmail, type AccountsRepository, type ProfileRecord } from './repository.ts';
import { PasskeysRepository } from './passkeys/repository.ts';
import { describeDevice, SIGN_INS_KEPT_MS } from './security.ts';
import { deviceDetails } from './sessions.ts';
import type { RequestOrigin } from './viewer.ts';

/** How long a "This was not me" link works. */
export const NOT_ME_SECONDS = 7 * 24 * 60 * 60;
/** How many of the person's kept sign-ins an API client's sign-in is compared with. */
const SIGN_INS_COMPARED = 200;

const USED_LINK = 'This link has expired or was already used.';

/** "Firefox on Linux (192.0.2.1)", as the mail and the pages name where a sign-in came from. */
export function fromWords(origin: RequestOrigin): string {
  const device = describeDevice(origin.userAgent);
  return `${[device.browser, device.os].filter(Boolean).join(' on ') || 'An unknown browser'} (${origin.address})`;
}

/**
 * The mail on a sign-in from a new browser. "New" is decided per sign-in, in this order:
 * - the first sign-in after activation (the profile has never signed in through `open`): not
 *   mailed, the person has just made the account;
 * - a browser whose device cookie (`device-cookies.ts`) holds an entry the service made for
 *   this account: known, not mailed;
 * - a browser (its User-Agent names one) without such an entry: new, mailed;
 * - anything else, an API client or a script, which keeps no cookie: new only when none of the
 *   person's kept sign-ins (`SIGN_INS_KEPT_MS`) came with the same User-Agent from the same
 *   address, so a script signing in every hour is mailed once.
 * The mail carries one "This was not me" link: a random token kept as its hash, for
 * `NOT_ME_SECONDS`, used once (`NotMeService`).
 */
export class NewBrowserAlerts extends AccountsBase {
  readonly #mfa: MfaRepository;

  constructor(deps: AccountsDeps, mfa: MfaRepository) {
    super(deps);
    this.#mfa = mfa;
  }

  /** After a sign-in opened `sessionId`: mails the person when the browser is new. `before` is the profile as read before the sign-in. */
  async afterSignIn(before: ProfileRecord, sessionId: string, origin: RequestOrigin, device: string | undefined): Promise<void> {
    if (!(await this.isNew(before, sessionId, origin, device))) return;
    const now = this.now();
    const email = preferredEmail(before, await this.deps.repo.emails.emailsOf(before.id));
    if (!email) return;
    const token = randomToken();
    // The link's token and the mail that carries it, together.
    await this.#mfa.transaction(async (mfa, trx) => {
      await mfa.insertAlert({ tokenHash: hashSecret(token), profileId: before.id, sessionId, email, now, expiresAt: now + NOT_ME_SECONDS * 1000 });
      const mail = newBrowserSignInMail({ baseUrl: this.deps.config.baseUrl, profileId: before.id, when: utcMinute(now), from: fromWords(origin), token, validForSeconds: NOT_ME_SECONDS });
      await this.deps.mailer.queue(this.deps.repo.with(trx), { to: email, ...mail });
    });
  }

  async isNew(before: ProfileRecord, sessionId: string, origin: RequestOrigin, device: string | undefined): Promise<boolean> {
    if (before.lastLogin === null) return false;
    if (this.deps.devices.nonceFor(device, before.id) !== null) return false;
    if (isBrowser(origin.userAgent)) return true;
    const since = this.now() - SIGN_INS_KEPT_MS;
    const seen = deviceDetails(origin);
    const entries = await this.deps.repo.settings.auditPageOf(before.id, SIGN_INS_COMPARED);
    // This sign-in's own line is written already: it does not count.
    return !entries.some((e) => e.action === 'sign-in' && e.details?.sessionId !== sessionId && e.at >= since && e.details?.address === seen.address && (e.details?.userAgent ?? null) === (seen.userAgent ?? null));
  }
}

/** Whether a User-Agent is a browser's (bowser also names some HTTP libraries, which do not send `Mozilla/`). */
function isBrowser(userAgent: string | undefined): boolean {
  return userAgent !== undefined && /^(Mozilla|Opera)\//.test(userAgent) && describeDevice(userAgent).browser !== null;
}

/** What "This was not me" asks of the sign-in provider: every application the person allowed loses its consent and its tokens, and is told by back-channel logout. */
export interface PersonsApplications {
  revokeAll(profileId: string): Promise<void>;
}

/**
 * "This was not me": the new-browser mail's link. Its page shows the sign-in it is about
 * (`link`, which changes nothing); confirming (`act`) uses the link up and, for the person:
 * makes the password stop working (whoever signed in knows it), removes what was added to the
 * account from the reported sign-in on (passkeys, second factors, recovery codes, addresses: see
 * `act`), ends every session (the token version moves on, so every token issued before is refused, the
 * sign-in provider's too, and the applications signed in through those sessions are told by
 * back-channel logout), forgets every remembered browser, revokes every application, and mails
 * a password-reset link. Audited.
 */
export class NotMeService extends AccountsPart {
  readonly #mfa: MfaRepository;
  readonly #passkeys: PasskeysRepository;
  readonly #apps: PersonsApplications;

  constructor(deps: AccountsDeps, core: AccountsCore, mfa: MfaRepository, passkeys: PasskeysRepository, apps: PersonsApplications) {
    super(deps, core);
    this.#mfa = mfa;
    this.#passkeys = passkeys;
    this.#apps = apps;
  }

  async link(token: string): Promise<NotMeLink> {
    const alert = await this.#mfa.findAlert(hashSecret(token), this.now());
    if (!alert) return { live: false };
    const session = await this.deps.repo.sessions.find(alert.sessionId);
    const device = describeDevice(session?.userAgent);
    const since = sinceSignIn(alert, session);
    const factors = await this.#mfa.setUpSince(alert.profileId, since);
    const addedSince = {
      passkeys: (await this.#passkeys.addedSince(alert.profileId, since)).map((p) => p.name),
      authenticatorApp: factors.totp,
      emailCodes: factors.emailCodes,
      // As `addressesPutBack` removes them: every address added since, but the alerted one.
      emails: (await this.deps.repo.emails.addedSince(alert.profileId, since)).filter((email) => alert.email === null || email !== normaliseEmail(alert.email)),
    };
    return { live: true, at: session?.createdAt ?? alert.createdAt, browser: device.browser, os: device.os, address: session?.address ?? null, addedSince };
  }

  async act(token: string, origin: RequestOrigin): Promise<NotMeResult> {
    const now = this.now();
    const alert = await this.#mfa.findAlert(hashSecret(token), now);
    if (!alert) throw new AppError('ValidationError', USED_LINK, { path: 'token' });
    const profileId = alert.profileId;
    const since = sinceSignIn(alert, await this.deps.repo.sessions.find(alert.sessionId));
    let resetTo: string | null = null;
    await this.#mfa.transaction(async (mfa, trx) => {
      // The link is used up with what it does: a refusal below (a race on an address) leaves it
      // live, to be clicked again. Of two clicks at once, one acts.
      if (!(await mfa.useAlert(alert.id, profileId, now))) throw new AppError('ValidationError', USED_LINK, { path: 'token' });
      const repo = this.deps.repo.with(trx);
      // Whoever signed in knows the password: it stops working here, so that they cannot sign
      // straight back in; the person chooses a new one from the mailed link. Nor can they come
      // back through what they added: a passkey (which signs in alone), a second factor (which
      // would lock the person out), an address (where the reset link would go).
      await repo.profiles.update(profileId, { passwordHash: null }, now);
      // Links and codes not used yet (an address's confirmation, a reset) may be in their hands.
      await repo.tokens.voidAll(profileId, 'email', now);
      await repo.tokens.voidAll(profileId, 'reset', now);
      const addresses = await addressesPutBack(repo, profileId, since, alert.email, now);
      resetTo = addresses.resetTo;
      const undone = {
        ...(await mfa.undoSetUpSince(profileId, since, now)),
        passkeys: await new PasskeysRepository(trx).removeAddedSince(profileId, since),
        emails: addresses.removed,
        ...(addresses.restored ? { restored: addresses.restored } : {}),
      };
      await this.core.sessions.endAllSessions(repo, profileId, now);
      await repo.sessions.revokeImpersonationsFrom(profileId, now);
      await repo.settings.audit({ actor: profileId, action: 'sign-in:not-me', target: profileId, details: { ...deviceDetails(origin), sessionId: alert.sessionId, undone } }, now);
    });
    await this.#mfa.forgetTrusted(profileId);
    await this.#apps.revokeAll(profileId);
    const maskedEmail = await this.#mailReset(profileId, resetTo);
    return { status: 'ok', maskedEmail };
  }

  /** A reset link to `to` (`addressesPutBack`'s), as `POST /resettable` mails one, now: the person is waiting for it. */
  async #mailReset(profileId: string, email: string | null): Promise<string | null> {
    if (!email) return null;
    const repo = this.deps.repo;
    const profile = await repo.profiles.find(profileId);
    if (!profile || profile.ddate !== null || profile.state === 'Blocked' || profile.state === 'Merged') return null;
    const seconds = this.deps.config.resetTokenSeconds;
    await repo.transaction(async (trx) => {
      const { token } = await this.deps.oneTime.issue(trx, { kind: 'reset', profileId, email, seconds, now: this.now() });
      await this.deps.mailer.queue(trx, { to: email, ...passwordResetMail({ webUrl: this.deps.config.webUrl, profileId, token, validForSeconds: seconds }) });
    });
    return maskEmail(email);
  }
}

/** When whoever signed in could start changing the account: their session's start (the alert is made just after). */
function sinceSignIn(alert: { createdAt: number }, session: { createdAt: number } | null): number {
  return Math.min(alert.createdAt, session?.createdAt ?? alert.createdAt);
}

/**
 * The profile's addresses as they were before `since`, as far as can be told. The address the
 * alert was mailed to (`alerted`; the person clicking its link has just shown they read it) is
 * given back if it was removed, confirmed, with its groups, taken from a profile that only
 * claimed it unconfirmed since (a sign-up parked on it), and made preferred again. Every address
 * added since is removed, and no longer named preferred; even the last confirmed one, when the
 * alerted address could not be given back (another profile proved it since), as it is the
 * intruder's. `resetTo`: where the reset link goes: the alerted address when the profile holds
 * it, otherwise the first confirmed address held before; never one added since, and none at all
 * when there is no such address (the person then needs the operators).
 */
async function addressesPutBack(repo: AccountsRepository, profileId: string, since: number, alerted: string | null, now: number): Promise<{ removed: string[]; restored: string | null; resetTo: string | null }> {
  const own = alerted === null ? null : normaliseEmail(alerted);
  let restored: string | null = null;
  if (own !== null) {
    const holder = await repo.emails.findEmail(own);
    if (holder === null || (holder.profileId !== profileId && !holder.confirmed)) {
      if (holder) await repo.emails.removeEmail(holder.profileId, own);
      await repo.emails.addEmail(profileId, own, true, now);
      restored = own;
    } else if (holder.profileId === profileId && !holder.confirmed) {
      await repo.emails.confirmEmail(profileId, own);
      restored = own;
    }
    if (restored) await repo.groups.linkEmailGroups(profileId, own, now);
  }
  const added = (await repo.emails.addedSince(profileId, since)).filter((email) => email !== own);
  const held = await repo.emails.emailsOf(profileId);
  const ownHeld = own !== null && held.some((e) => e.email === own && e.confirmed);
  const left = held.filter((e) => !added.includes(e.email));
  for (const email of added) await repo.emails.removeEmail(profileId, email);
  const profile = await repo.profiles.find(profileId);
  if (profile) {
    const named = profile.content.preferredEmail;
    const { preferredEmail: _named, ...content } = profile.content;
    if (ownHeld && named !== own) await repo.profiles.update(profileId, { content: { ...content, preferredEmail: own } }, now);
    else if (!ownHeld && named !== undefined && added.includes(normaliseEmail(named))) await repo.profiles.update(profileId, { content }, now);
  }
  const resetTo = ownHeld ? own : (left.find((e) => e.confirmed)?.email ?? null);
  return { removed: added, restored, resetTo };
}
