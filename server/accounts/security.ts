import Bowser from 'bowser';
import { AppError, type ChangePasswordInput, type SecurityEvent, type SessionInfo } from '../../shared/index.ts';
import { passwordChangedMail } from '../mail/messages.ts';
import { addressKey } from './ids.ts';
import { AccountsPart } from './part.ts';
import { preferredEmail } from './profiles.ts';
import { deviceDetails } from './sessions.ts';
import type { RefreshOutcome, RequestOrigin, Viewer } from './viewer.ts';

/** How many entries of the audit trail the security page shows. */
const EVENTS_SHOWN = 30;

/**
 * How long a sign-in stays in the audit log: every sign-in writes a line, so they are let go
 * after 90 days (the periodic clean-up); every other security event is kept.
 */
export const SIGN_INS_KEPT_MS = 90 * 24 * 60 * 60 * 1000;

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
    const passwordHash = await this.deps.hasher.hash(input.newPassword, addressKey(origin.address));
    const endOthers = input.logoutOtherSessions ?? true;
    const now = this.now();
    await repo.transaction(async (trx) => {
      await trx.profiles.update(profile.id, { passwordHash }, now);
      // A reset link asked for before the change must not undo it.
      await trx.tokens.voidAll(profile.id, 'reset', now);
      await trx.settings.audit({ actor: profile.id, action: 'password:change', target: profile.id, details: { ...deviceDetails(origin), sessionsEnded: endOthers } }, now);
    });
    const email = preferredEmail(profile, await repo.emails.emailsOf(profile.id));
    if (email) {
      this.deps.mailer.post({ to: email, ...passwordChangedMail({ webUrl: this.deps.config.webUrl, profileId: profile.id, otherSessionsEnded: endOthers }) });
    }
    // Exactly what "log out of all other devices" does (the token version moves on, so the
    // sign-in provider's tokens end too); this session gets a fresh token.
    return endOthers ? this.core.sessions.logoutOtherDevices(viewer, refreshToken) : null;
  }

  /** The person's live sessions, this one first. */
  async sessions(viewer: Viewer): Promise<SessionInfo[]> {
    const rows = await this.deps.repo.sessions.liveOf(viewer.profileId, this.now());
    const sessions = rows.map((row) => ({
      id: row.id,
      current: row.id === viewer.sessionId,
      ...describeDevice(row.userAgent),
      address: row.address,
      createdAt: row.createdAt,
      lastSeenAt: row.lastSeenAt,
    }));
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

  /** The newest entries of the person's audit trail: sign-ins, password changes, resets, factors. */
  async events(viewer: Viewer): Promise<SecurityEvent[]> {
    const entries = await this.deps.repo.settings.auditOf(viewer.profileId, EVENTS_SHOWN);
    return entries.map((entry) => {
      const details = entry.details ?? {};
      const text = (key: string) => (typeof details[key] === 'string' ? (details[key] as string) : null);
      const device = describeDevice(text('userAgent'));
      return { action: entry.action, at: entry.at, actor: entry.actor, address: text('address'), browser: device.browser, os: device.os };
    });
  }

  /** Lets go of sign-ins older than `SIGN_INS_KEPT_MS` (the sweeper's). */
  async sweep(): Promise<void> {
    await this.deps.repo.settings.deleteAudit('sign-in', this.now() - SIGN_INS_KEPT_MS);
  }
}
