import type { RegistrationResponseJSON } from '@simplewebauthn/server';
import { AppError, type MfaFactorMethod, type MfaStatus, type PasskeyAttestation, type ReauthenticateInput, type TotpInitResult } from '../../../shared/index.ts';
import { addressKey } from '../ids.ts';
import type { AccountsDeps } from '../service-base.ts';
import { normaliseId, type ProfileRecord } from '../repository.ts';
import type { SessionService } from '../sessions.ts';
import type { RequestOrigin, Viewer } from '../viewer.ts';
import { type CodeHasher, newRecoveryCode, RECOVERY_CODE_COUNT, typedDigits } from './codes.ts';
import { MfaServiceBase } from './service-base.ts';
import type { PasskeyFactor } from './passkey-factor.ts';
import type { MfaRepository } from './repository.ts';
import { EMAIL_CODE_SECONDS, INVALID_CODE, type SecondFactors } from './second-factor.ts';
import { newTotpSecret, totpProvisioning, totpStep } from './totp.ts';
import type { SecretBox } from '../../secrets.ts';

/** How recent a proof of the person must be to turn a factor off, regenerate codes or add a passkey. */
export const REAUTH_SECONDS = 10 * 60;
/** How long a TOTP secret being set up waits for its first code. */
const TOTP_SETUP_SECONDS = 15 * 60;

export interface MfaServiceDeps {
  mfa: MfaRepository;
  /** The factors as a sign-in meets them, and their checks under the lockout (re-authentication uses them). */
  factors: SecondFactors;
  sessions: SessionService;
  passkeys: PasskeyFactor;
  box: SecretBox;
  codes: CodeHasher;
  /** The name authenticator apps show for this service. */
  issuer: string;
}

/**
 * The factors a person manages (TOTP, emailed codes, passkeys through `PasskeyFactor`, recovery
 * codes, remembered browsers), re-authentication, and the operator's way out. Every factor change
 * is mailed to the person and written to the audit log. Signing in with them is `sign-in.ts`'s.
 */
export class MfaService extends MfaServiceBase {
  readonly #mfaDeps: MfaServiceDeps;

  constructor(deps: AccountsDeps, mfa: MfaServiceDeps) {
    super(deps);
    this.#mfaDeps = mfa;
  }

  // ---- what a person has ----------------------------------------------------------------------------

  /** The factors a person has on, in a fixed order. */
  methodsOf(profileId: string): Promise<MfaFactorMethod[]> {
    return this.#mfaDeps.factors.methodsOf(profileId);
  }

  async status(viewer: Viewer): Promise<MfaStatus> {
    const id = viewer.profileId;
    const { methods, preferred } = await this.#mfaDeps.factors.summary(id);
    return {
      enabled: methods.length > 0,
      methods,
      preferredMethod: preferred,
      recoveryCodesRemaining: methods.length > 0 ? await this.#mfaDeps.mfa.recoveryCodesRemaining(id) : 0,
      trustedDevicesCount: methods.length > 0 ? await this.#mfaDeps.mfa.trustedCount(id, viewer.tokenVersion, this.now()) : 0,
    };
  }

  // ---- managing the factors ----------------------------------------------------------------------

  async setPreferred(viewer: Viewer, method: MfaFactorMethod): Promise<MfaStatus> {
    const methods = await this.#mfaDeps.factors.methodsOf(viewer.profileId);
    if (!methods.includes(method)) throw new AppError('BadRequestError', `The method ${method} is not set up for this account`, { path: 'method' });
    await this.#mfaDeps.mfa.setPreferred(viewer.profileId, method, this.now());
    await this.audit(viewer.profileId, viewer.profileId, 'mfa.preferred', { method });
    return this.status(viewer);
  }

  /** `POST /mfa/setup/totp/init`: a new secret, kept (sealed) until a code from it is verified. */
  async totpInit(viewer: Viewer, refreshToken: string | undefined): Promise<TotpInitResult> {
    const profile = await this.#profile(viewer.profileId);
    // Adding a factor needs a recent proof of the person (`#requireFreshToAdd`). Replacing an
    // app turns the old one off, which needs it anyway.
    await this.#requireFreshToAdd(viewer, refreshToken);
    const secret = newTotpSecret();
    await this.#mfaDeps.mfa.setTotpPending(profile.id, this.#mfaDeps.box.seal(secret, profile.id), this.now());
    const label = (await this.#mfaDeps.factors.emailOf(profile).catch(() => null)) ?? profile.id;
    return { secret, ...(await totpProvisioning(secret, label, this.#mfaDeps.issuer)) };
  }

  /** `POST /mfa/setup/totp/verify`: a code from the secret being set up turns TOTP on. */
  async totpVerify(viewer: Viewer, code: string, refreshToken: string | undefined): Promise<{ totpEnabled: true; recoveryCodes?: string[] }> {
    await this.#requireFreshToAdd(viewer, refreshToken);
    const id = viewer.profileId;
    const now = this.now();
    const waiting = await this.#waitingTotp(id, now);
    if (waiting === null) throw new AppError('BadRequestError', 'Start the TOTP setup again: no setup is waiting for a code');
    const { sealed, secret } = waiting;
    if (totpStep(secret, typedDigits(code), now) === null) throw new AppError('BadRequestError', INVALID_CODE, { path: 'code' });
    const recoveryCodes = await this.#enableFactor(viewer, 'mfa.totp.enabled', 'An authenticator app was set up for signing in', (mfa) =>
      mfa.enableTotp(id, sealed, now),
    );
    this.deps.metrics?.mfaEnrolled('totp');
    return { totpEnabled: true, ...(recoveryCodes ? { recoveryCodes } : {}) };
  }

  /**
   * The TOTP setup waiting for its first code, shown again (the account page after a wrong
   * code), from the secret kept server-side; null when none is waiting or it expired.
   */
  async totpWaiting(viewer: Viewer, refreshToken: string | undefined): Promise<TotpInitResult | null> {
    // It answers the secret, as `totpInit` does: the same recent proof of the person, and never
    // to an impersonator (a query, so the procedures' impersonation guard, which stops
    // mutations, does not see it).
    if (viewer.impersonator) throw new AppError('ForbiddenError', 'Credentials cannot be changed while impersonating');
    await this.#requireFreshToAdd(viewer, refreshToken);
    const waiting = await this.#waitingTotp(viewer.profileId, this.now());
    if (waiting === null) return null;
    const profile = await this.#profile(viewer.profileId);
    const label = (await this.#mfaDeps.factors.emailOf(profile).catch(() => null)) ?? profile.id;
    return { secret: waiting.secret, ...(await totpProvisioning(waiting.secret, label, this.#mfaDeps.issuer)) };
  }

  /** The secret of the TOTP setup waiting for its first code (sealed and open), unless none is or it is older than `TOTP_SETUP_SECONDS`. */
  async #waitingTotp(id: string, now: number): Promise<{ sealed: string; secret: string } | null> {
    const factors = await this.#mfaDeps.mfa.factors(id);
    const sealed = factors?.totpPendingSecret ?? null;
    const fresh = sealed !== null && factors?.totpPendingAt != null && now - factors.totpPendingAt <= TOTP_SETUP_SECONDS * 1000;
    const secret = fresh ? this.#mfaDeps.box.open(sealed, id) : null;
    return sealed !== null && secret !== null ? { sealed, secret } : null;
  }

  async totpDelete(viewer: Viewer): Promise<{ status: 'ok'; enabled: boolean }> {
    await this.#requireFresh(viewer);
    if (!(await this.#mfaDeps.factors.methodsOf(viewer.profileId)).includes('totp')) throw new AppError('BadRequestError', 'TOTP is not set up for this account');
    return this.#disableFactor(viewer, 'mfa.totp.disabled', 'The authenticator app was removed from signing in', (mfa) => mfa.disableTotp(viewer.profileId, this.now()));
  }

  /** `POST /mfa/setup/email`: codes mailed to the person's preferred address (which is confirmed already). */
  async emailSetup(viewer: Viewer, refreshToken: string | undefined): Promise<{ emailOtpEnabled: true; recoveryCodes?: string[] }> {
    const profile = await this.#profile(viewer.profileId);
    await this.#mfaDeps.factors.emailOf(profile);
    if ((await this.#mfaDeps.factors.methodsOf(profile.id)).includes('emailOtp')) return { emailOtpEnabled: true };
    await this.#requireFreshToAdd(viewer, refreshToken);
    const recoveryCodes = await this.#enableFactor(viewer, 'mfa.email.enabled', 'Codes by email were turned on for signing in', (mfa) => mfa.setEmail(profile.id, this.now(), this.now()));
    this.deps.metrics?.mfaEnrolled('email_code');
    return { emailOtpEnabled: true, ...(recoveryCodes ? { recoveryCodes } : {}) };
  }

  async emailDelete(viewer: Viewer): Promise<{ status: 'ok'; enabled: boolean }> {
    await this.#requireFresh(viewer);
    if (!(await this.#mfaDeps.factors.methodsOf(viewer.profileId)).includes('emailOtp')) throw new AppError('BadRequestError', 'Codes by email are not set up for this account');
    return this.#disableFactor(viewer, 'mfa.email.disabled', 'Codes by email were turned off for signing in', async (mfa) => {
      await mfa.setEmail(viewer.profileId, null, this.now());
      await mfa.deleteEmailCode(viewer.profileId);
    });
  }

  async regenerateRecoveryCodes(viewer: Viewer, refreshToken: string | undefined): Promise<{ recoveryCodes: string[] }> {
    await this.#requireFreshToAdd(viewer, refreshToken);
    if ((await this.#mfaDeps.factors.methodsOf(viewer.profileId)).length === 0) throw new AppError('BadRequestError', 'Turn on a second factor first: recovery codes stand in for one');
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await this.#mfaDeps.mfa.transaction(async (mfa, trx) => {
      await mfa.replaceRecoveryCodes(viewer.profileId, codes.map((c) => this.#mfaDeps.codes.hash('recovery', viewer.profileId, c)), this.now());
      await this.audit(viewer.profileId, viewer.profileId, 'mfa.recovery.regenerated', undefined, this.deps.repo.with(trx));
      await this.mailChange(viewer.profileId, 'New recovery codes were made; the old ones no longer work', this.deps.repo.with(trx));
    });
    return { recoveryCodes: codes };
  }

  /** `DELETE /mfa/trusted-devices`: every remembered browser asks for the second factor again. */
  async forgetTrustedDevices(viewer: Viewer): Promise<MfaStatus> {
    const forgotten = await this.#mfaDeps.mfa.forgetTrusted(viewer.profileId);
    await this.audit(viewer.profileId, viewer.profileId, 'mfa.trusted-devices.forgotten', { forgotten });
    return this.status(viewer);
  }

  // ---- passkeys (through PasskeyFactor) ---------------------------------------------------------

  async passkeyInit(viewer: Viewer, refreshToken: string | undefined): Promise<Record<string, unknown> & { challenge: string }> {
    await this.#requireFreshToAdd(viewer, refreshToken);
    return { ...(await this.#mfaDeps.passkeys.registrationOptions(viewer.profileId)) };
  }

  async passkeyVerify(viewer: Viewer, response: PasskeyAttestation, name: string | null | undefined, refreshToken: string | undefined) {
    await this.#requireFreshToAdd(viewer, refreshToken);
    const wasOn = (await this.#mfaDeps.factors.methodsOf(viewer.profileId)).length > 0;
    const passkey = await this.#mfaDeps.passkeys.register(viewer.profileId, response as RegistrationResponseJSON, name?.trim() || 'Passkey');
    const recoveryCodes = wasOn ? null : await this.#firstRecoveryCodes(viewer.profileId);
    await this.notify(viewer.profileId, `A passkey ("${passkey.name}") was added for signing in`, 'mfa.passkey.added', viewer.profileId, { credentialId: passkey.credentialId });
    this.deps.metrics?.mfaEnrolled('passkey');
    return { passkey, ...(recoveryCodes ? { recoveryCodes } : {}) };
  }

  async passkeyList(viewer: Viewer) {
    return { passkeys: await this.#mfaDeps.passkeys.list(viewer.profileId) };
  }

  async passkeyDelete(viewer: Viewer, credentialId: string): Promise<{ status: 'ok'; enabled: boolean }> {
    await this.#requireFresh(viewer);
    if (!(await this.#mfaDeps.passkeys.remove(viewer.profileId, credentialId))) throw new AppError('NotFoundError', 'No such passkey');
    return this.#disableFactor(viewer, 'mfa.passkey.removed', 'A passkey was removed from signing in', async () => undefined, { credentialId });
  }

  // ---- re-authentication ------------------------------------------------------------------------------

  /** `POST /mfa/reauthenticate`: the password, or a code of a factor, proves the person again for ten minutes. */
  async reauthenticate(viewer: Viewer, input: ReauthenticateInput, origin: RequestOrigin): Promise<{ reauthenticatedUntil: number }> {
    const profile = await this.#profile(viewer.profileId);
    // A signed-in session has its own allowance: strangers' wrong passwords or codes for the
    // account (which count against the account's) never keep its owner from proving it again.
    const own = `session:${viewer.sessionId}`;
    if ('password' in input) {
      await this.deps.limits.consume('loginDevice', own);
      await this.deps.limits.consume('loginAddress', addressKey(origin.address));
      if (!(await this.deps.hasher.verify(input.password, profile.passwordHash, addressKey(origin.address)))) {
        throw new AppError('BadRequestError', 'Invalid password', { path: 'password' });
      }
      await this.deps.limits.refund('loginDevice', own);
      await this.deps.limits.refund('loginAddress', addressKey(origin.address));
    } else {
      await this.deps.limits.consume('mfaAddress', addressKey(origin.address));
      await this.#mfaDeps.factors.check(profile, input.method, input.code, `reauth:${viewer.sessionId}`, own, origin);
      await this.deps.limits.refund('mfaAddress', addressKey(origin.address));
    }
    const now = this.now();
    await this.#mfaDeps.mfa.setReauth(viewer.sessionId, now);
    return { reauthenticatedUntil: now + REAUTH_SECONDS * 1000 };
  }

  /** `POST /mfa/reauthenticate/challenge`: mails a code to a signed-in person who has codes by email on. */
  async reauthChallenge(viewer: Viewer): Promise<{ method: 'emailOtp'; sent: true; expiresIn: number }> {
    const profile = await this.#profile(viewer.profileId);
    await this.#mfaDeps.factors.usable(profile.id, 'emailOtp');
    // The signed-in session has its own allowance (as `reauthenticate` counts its codes): a stranger's lock or requests do not hold it back.
    await this.#mfaDeps.factors.sendEmailCode(profile, 'confirm a change to how you sign in', `session:${viewer.sessionId}`);
    return { method: 'emailOtp', sent: true, expiresIn: EMAIL_CODE_SECONDS };
  }

  /** A 403 unless the session was opened, or its holder proved again, within `REAUTH_SECONDS`. */
  async #requireFresh(viewer: Viewer): Promise<void> {
    const now = this.now();
    const last = Math.max(viewer.authTime, (await this.#mfaDeps.mfa.reauthAt(viewer.sessionId)) ?? 0);
    if (now - last <= REAUTH_SECONDS * 1000) return;
    throw new AppError('ForbiddenError', 'Please confirm it is you: sign out and sign in again, or send your password (or a code) to POST /mfa/reauthenticate; then try again.', {
      reauthenticate: '/mfa/reauthenticate',
    });
  }

  /**
   * Adding a factor, or new recovery codes, outlasts a password reset: whoever adds one keeps the
   * account. So it needs the person, not only a token: a password or code typed within
   * `REAUTH_SECONDS` (`/mfa/reauthenticate`), or a session opened within it and shown with its
   * refresh cookie (the browser or client that signed in), as adding an email does. An access
   * token alone is never enough, however fresh: a thief may have copied it from a new session.
   */
  async #requireFreshToAdd(viewer: Viewer, refreshToken: string | undefined): Promise<void> {
    const now = this.now();
    const reauthAt = await this.#mfaDeps.mfa.reauthAt(viewer.sessionId);
    if (reauthAt !== null && now - reauthAt <= REAUTH_SECONDS * 1000) return;
    if (now - viewer.authTime <= REAUTH_SECONDS * 1000 && (await this.#mfaDeps.sessions.holdsRefreshCookie(viewer.sessionId, refreshToken))) return;
    throw new AppError(
      'ForbiddenError',
      'Please confirm it is you: send your password (or a code) to POST /mfa/reauthenticate, then try again. A fresh sign-in in this browser counts too; an access token alone does not.',
      { reauthenticate: '/mfa/reauthenticate' },
    );
  }

  // ---- the operator ------------------------------------------------------------------------------------

  /**
   * `npm run admin -- mfa off <id>`: for a person who lost every factor and every recovery
   * code. Every factor and remembered browser is removed (passkeys too), audited and mailed.
   */
  async disableForOperator(idOrEmail: string, reason: string): Promise<{ profileId: string; removed: MfaFactorMethod[] }> {
    const found = await this.deps.repo.profiles.findByIdOrEmail(normaliseId(idOrEmail));
    const profile = found?.mergedInto ? await this.deps.repo.profiles.find(found.mergedInto) : found;
    if (!profile) throw new AppError('NotFoundError', `No profile ${idOrEmail}`);
    const removed = await this.#mfaDeps.factors.methodsOf(profile.id);
    for (const passkey of await this.#mfaDeps.passkeys.list(profile.id)) await this.#mfaDeps.passkeys.remove(profile.id, passkey.credentialId);
    await this.#mfaDeps.mfa.transaction(async (mfa, trx) => {
      await mfa.removeEverything(profile.id);
      await this.audit(profile.id, 'operator', 'mfa.disabled-by-operator', { removed }, this.deps.repo.with(trx), reason);
      await this.mailChange(profile.id, 'An operator turned multi-factor sign-in off for your account, at your request', this.deps.repo.with(trx));
    });
    return { profileId: profile.id, removed };
  }

  /**
   * Forgets what is no longer needed, a day after it ended (so an authorization code issued
   * just before a logout still finds how its sign-in was proved).
   */
  async sweep(): Promise<void> {
    await this.#mfaDeps.mfa.deleteEnded(this.now() - 24 * 60 * 60 * 1000);
    await this.#mfaDeps.mfa.deleteEndedAlerts(this.now() - 24 * 60 * 60 * 1000);
  }

  // ---- helpers -------------------------------------------------------------------------------------

  async #profile(profileId: string): Promise<ProfileRecord> {
    const profile = await this.deps.repo.profiles.find(profileId);
    if (!profile) throw new AppError('UnauthorizedError', 'You must be logged in to do this.');
    return profile;
  }

  /** Recovery codes for a person turning the first factor on (nothing kept from before). */
  async #firstRecoveryCodes(profileId: string, mfa = this.#mfaDeps.mfa): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await mfa.replaceRecoveryCodes(profileId, codes.map((c) => this.#mfaDeps.codes.hash('recovery', profileId, c)), this.now());
    return codes;
  }

  /** Turns a factor on in one transaction, with fresh recovery codes when it is the first one. */
  async #enableFactor(viewer: Viewer, action: string, what: string, write: (mfa: MfaRepository) => Promise<void>): Promise<string[] | null> {
    const wasOn = (await this.#mfaDeps.factors.methodsOf(viewer.profileId)).length > 0;
    const codes = await this.#mfaDeps.mfa.transaction(async (mfa, trx) => {
      await write(mfa);
      const fresh = wasOn ? null : await this.#firstRecoveryCodes(viewer.profileId, mfa);
      await this.audit(viewer.profileId, viewer.profileId, action, undefined, this.deps.repo.with(trx));
      await this.mailChange(viewer.profileId, what, this.deps.repo.with(trx));
      return fresh;
    });
    return codes;
  }

  /** Turns a factor off in one transaction; when none is left, recovery codes and remembered browsers go too. */
  async #disableFactor(viewer: Viewer, action: string, what: string, write: (mfa: MfaRepository) => Promise<void>, details?: Record<string, unknown>): Promise<{ status: 'ok'; enabled: boolean }> {
    const id = viewer.profileId;
    await this.#mfaDeps.mfa.transaction(async (mfa, trx) => {
      await write(mfa);
      await this.audit(id, id, action, details, this.deps.repo.with(trx));
    });
    const enabled = (await this.#mfaDeps.factors.methodsOf(id)).length > 0;
    await this.#mfaDeps.mfa.transaction(async (mfa, trx) => {
      if (!enabled) {
        await mfa.replaceRecoveryCodes(id, [], this.now());
        await mfa.forgetTrusted(id);
        await mfa.setPreferred(id, null, this.now());
      }
      await this.mailChange(id, enabled ? what : `${what}. Multi-factor sign-in is now off for your account`, this.deps.repo.with(trx));
    });
    return { status: 'ok', enabled };
  }

}
