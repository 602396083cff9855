import Bowser from 'bowser';
import { AppError, SignInMethod, type ChangePasswordInput, type SecurityEvent, type SecurityEventsResult, type SessionInfo } from '../../shared/index.ts';
import { passwordChangedMail } from '../mail/messages.ts';
import { addressKey } from './ids.ts';
import type { MfaRepository } from './mfa/repository.ts';
import { AccountsPart, type AccountsCore } from './core.ts';
import { type AccountsDeps } from './service-base.ts';
import { preferredEmail } from './profiles.ts';
import { deviceDetails } from './sessions.ts';
import { checkNewPassword, personalContext } from './password-policy.ts';
import type { AccountsRepository } from './repository.ts';
import type { RefreshOutcome, RequestOrigin, Viewer } from './viewer.ts';

/** How many entries of the audit trail the activity page shows at a time ("Older events" shows the next). */
export const EVENTS_SHOWN = 30;

/**
 * How long a sign-in stays in the audit log: every sign-in writes a line, so they are let go
 * after 90 days (the periodic clean-up); every other security event is kept.
 */
export const SIGN_INS_KEPT_MS = 90 * 24 * 60 * 60 * 1000;

/**
 * How many failed sign-ins, and how many wrong second-step codes, are written per account per
 * hour: each is recorded only for an existing account and aged out with the sign-ins
 * (`SIGN_INS_KEPT_MS`), and past this count they are not written, so that strangers guessing
 * cannot fill the log (their attempts are limited anyway: `rate-limits.ts`, the lockout).
 */
export const FAILURES_RECORDED_PER_HOUR = 20;
/** The audit actions let go after `SIGN_INS_KEPT_MS`: sign-ins, failed ones, wrong codes. */
export const AGED_OUT_ACTIONS = ['sign-in', 'sign-in:failed', 'mfa.code.wrong'] as const;

/**
 * Writes a failure about an existing account (a failed sign-in, a wrong code) to the person's
 * activity log, unless `FAILURES_RECORDED_PER_HOUR` of its kind were written in the last hour.
 */
export async function auditFailure(repo: AccountsRepository, now: number, profileId: string, action: (typeof AGED_OUT_ACTIONS)[number], details: Record<string, unknown>): Promise<void> {
  if ((await repo.settings.countAudit(profileId, action, now - 60 * 60 * 1000)) >= FAILURES_RECORDED_PER_HOUR) return;
  await repo.settings.audit({ actor: 'system', action, target: profileId, details }, now);
}

/** A User-Agent read by bowser: the browser, the system and the kind of device, each null when unknown. */
export function describeDevice(userAgent: string | null | undefined): { browser: string | null; os: string | null; platform: string | null } {
  if (!userAgent) return { browser: null, os: null, platform: null };
  const parsed = Bowser.parse(userAgent);
  const join = (name?: string, version?: string) => (name ? [name, version?.split('.')[0]].filter(Boolean).join(' ') : null);
  return {
    browser: join(parsed.browser.name, parsed.browser.version),
    os: join(parsed.os.name, parsed.os.versionName ?? parsed.os.version),
    platform: parsed.platform.type ?? null,
  };
}

/**
 * "Password & security": changing the password while signed in, the person's own sessions and
 * devices, and their recent security events. Sessions opened by impersonating the person are
 * not theirs to list or end.
 */
export class SecurityService extends AccountsPart {
  /** How each session was signed in to (`mfa_sign_ins`); without it, the sessions list does not say. */
  readonly #mfa: MfaRepository | undefined;

  constructor(deps: AccountsDeps, core: AccountsCore, mfa?: MfaRepository) {
    super(deps, core);
    this.#mfa = mfa;
  }

  /**
   * `POST /password`: the current password is checked (counted as a sign-in attempt against the
   * account and the address, so the form cannot be used to guess it), the new one follows the
   * policy; other sessions end unless `logoutOtherSessions` is false. Audited and mailed.
   */
  async changePassword(viewer: Viewer, input: ChangePasswordInput, origin: RequestOrigin, refreshToken?: string): Promise<RefreshOutcome | null> {
    if (viewer.impersonator) throw new AppError('ForbiddenError', 'The password cannot be changed while impersonating');
    const repo = this.deps.repo;
    const profile = await repo.profiles.find(viewer.profileId);
    if (!profile) throw new AppError('NotFoundError', 'Profile not found');
    // The signed-in session's own allowance: strangers' wrong passwords for the account never keep its owner from changing it.
    const own = `session:${viewer.sessionId}`;
    await this.deps.limits.consume('loginDevice', own);
    await this.deps.limits.consume('loginAddress', addressKey(origin.address));
    if (!(await this.deps.hasher.verify(input.currentPassword, profile.passwordHash, addressKey(origin.address)))) {
      throw new AppError('ValidationError', 'The current password is not correct', { path: 'currentPassword' });
    }
    await this.deps.limits.refund('loginDevice', own);
    await this.deps.limits.refund('loginAddress', addressKey(origin.address));
    checkNewPassword(input.newPassword, await personalContext(repo, profile.id), 'newPassword');
    const passwordHash = await this.deps.hasher.hash(input.newPassword, addressKey(origin.address));
    const endOthers = input.logoutOtherSessions ?? true;
    const now = this.now();
    const sessions = this.core.sessions;
    const kept = await repo.transaction(async (trx) => {
      await trx.profiles.update(profile.id, { passwordHash }, now);
      // A reset link asked for before the change must not undo it.
      await trx.tokens.voidAll(profile.id, 'reset', now);
      await trx.settings.audit({ actor: profile.id, action: 'password:change', target: profile.id, details: { ...deviceDetails(origin), sessionsEnded: endOthers ? 'others' : 'none' } }, now);
      const email = preferredEmail(profile, await trx.emails.emailsOf(profile.id));
      if (email) await this.deps.mailer.queue(trx, { to: email, ...passwordChangedMail({ webUrl: this.deps.config.webUrl, profileId: profile.id, otherSessionsEnded: endOthers }) });
      // Exactly what "log out of all other devices" does (the token version moves on, so the
      // sign-in provider's tokens end too), with the new password or not at all.
      return endOthers ? sessions.endOtherSessions(trx, viewer, refreshToken, now) : null;
    });
    // This session gets a fresh token.
    return kept ? sessions.keptSessionTokens(kept, viewer) : null;
  }

  /** The person's live sessions, this one first. */
  async sessions(viewer: Viewer): Promise<SessionInfo[]> {
    const rows = await this.deps.repo.sessions.liveOf(viewer.profileId, this.now());
    const how = (await this.#mfa?.signInMethods(rows.map((row) => row.id))) ?? new Map<string, { method: string | null; client: string | null }>();
    const sessions = rows.map((row) => {
      const method = SignInMethod.safeParse(how.get(row.id)?.method);
      const client = how.get(row.id)?.client;
      return {
        id: row.id,
        current: row.id === viewer.sessionId,
        ...describeDevice(row.userAgent),
        address: row.address,
        createdAt: row.createdAt,
        lastSeenAt: row.lastSeenAt,
        ...(method.success ? { method: method.data } : {}),
        ...(client ? { client } : {}),
      };
    });
    return sessions.sort((a, b) => Number(b.current) - Number(a.current));
  }

  /** Ends one of the person's own sessions (not this one: signing out does that). */
  async endSession(viewer: Viewer, sessionId: string): Promise<void> {
    if (viewer.impersonator) throw new AppError('ForbiddenError', 'Sessions cannot be ended while impersonating');
    if (sessionId === viewer.sessionId) throw new AppError('BadRequestError', 'This is the session you are using: sign out instead', { path: 'id' });
    const now = this.now();
    const ended = await this.deps.repo.transaction(async (repo) => {
      const done = await repo.sessions.revokeOwn(viewer.profileId, sessionId, now);
      if (done) await repo.settings.audit({ actor: viewer.profileId, action: 'session:end', target: viewer.profileId, details: { sessionId } }, now);
      return done;
    });
    if (!ended) throw new AppError('NotFoundError', 'No such session of yours');
  }

  /**
   * A page of the person's activity log, newest first: sign-ins (how each was made, and on which
   * application's page), failed ones and wrong codes, password changes and resets, factors,
   * emails, applications allowed and revoked. `before` pages back (`older` of the page before).
   * Never a secret: the details kept are the address, the browser, the method, names and addresses.
   */
  async events(viewer: Viewer, before?: number): Promise<SecurityEventsResult> {
    const entries = await this.deps.repo.settings.auditPageOf(viewer.profileId, EVENTS_SHOWN + 1, before);
    const shown = entries.slice(0, EVENTS_SHOWN);
    const events = shown.map((entry): SecurityEvent => {
      const details = entry.details ?? {};
      const text = (key: string) => (typeof details[key] === 'string' ? (details[key] as string) : null);
      const device = describeDevice(text('userAgent'));
      const method = entry.action === 'sign-in' ? SignInMethod.safeParse(text('method')).data : undefined;
      const email = text('email');
      const client = text('client');
      const factor = entry.action === 'mfa.code.wrong' ? text('method') : null;
      return {
        id: entry.id,
        action: entry.action,
        at: entry.at,
        actor: entry.actor,
        address: text('address'),
        browser: device.browser,
        os: device.os,
        ...(method ? { method } : {}),
        ...(client ? { client } : {}),
        ...(email ? { email } : {}),
        ...(factor ? { factor } : {}),
      };
    });
    return { events, older: entries.length > EVENTS_SHOWN ? (shown.at(-1)?.id ?? null) : null };
  }

  /** Lets go of sign-ins older than `SIGN_INS_KEPT_MS` (the sweeper's). */
  async sweep(): Promise<void> {
    for (const action of AGED_OUT_ACTIONS) await this.deps.repo.settings.deleteAudit(action, this.now() - SIGN_INS_KEPT_MS);
  }
}
