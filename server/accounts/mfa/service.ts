import { randomUUID } from 'node:crypto';
import type { AuthenticationResponseJSON, RegistrationResponseJSON } from '@simplewebauthn/server';
import {
  AppError,
  DEFAULT_SESSION_SECONDS,
  type LoginInput,
  type MfaChallengeInput,
  type MfaChallengeResult,
  type MfaFactorMethod,
  type MfaMethod,
  type MfaPendingResult,
  type MfaStatus,
  type MfaVerifyInput,
  type PasskeyAssertion,
  type PasskeyAttestation,
  type ReauthenticateInput,
  type TotpInitResult,
} from '../../../shared/index.ts';
import { hashSecret, randomToken } from '../../secrets.ts';
import { addressKey } from '../ids.ts';
import { AccountsBase, type AccountsDeps } from '../part.ts';
import { preferredEmail } from '../profiles.ts';
import { type AccountsRepository, normaliseId, type ProfileRecord } from '../repository.ts';
import { canHoldSession } from '../session-rule.ts';
import type { SessionService } from '../sessions.ts';
import type { BrowserCookies, IssuedSession, RequestOrigin, Viewer } from '../viewer.ts';
import { type CodeHasher, newEmailCode, newRecoveryCode, RECOVERY_CODE_COUNT, typedDigits, typedRecoveryCode } from './codes.ts';
import type { PasskeyFactor, PasskeyProof } from './passkey-factor.ts';
import type { MfaRepository } from './repository.ts';
import { newTotpSecret, type SecretBox, totpProvisioning, totpStep } from './totp.ts';

/** How long a sign-in waits for its second factor. */
export const PENDING_SECONDS = 10 * 60;
/** How long an emailed code is valid. */
export const EMAIL_CODE_SECONDS = 10 * 60;
/** Wrong codes in a row before the person is locked out, and for how long. */
export const MAX_FAILED_ATTEMPTS = 5;
export const LOCK_SECONDS = 15 * 60;
/** How long a browser is remembered ("remember this device"). */
export const TRUSTED_DEVICE_SECONDS = 30 * 24 * 60 * 60;
/** How recent a proof of the person must be to turn a factor off, regenerate codes or add a passkey. */
export const REAUTH_SECONDS = 10 * 60;
/** How long a TOTP secret being set up waits for its first code. */
const TOTP_SETUP_SECONDS = 15 * 60;

const INVALID_CODE = 'Invalid verification code';
const INVALID_PENDING = 'The sign-in has expired or was already completed. Please log in again.';

/** A remembered browser's cookie, for the transport to set. */
export interface TrustedDeviceCookie {
  token: string;
  seconds: number;
}

/** What proved the person at a second step, for the OpenID Connect `amr` claim (RFC 8176). */
export type SecondFactorProof = { method: 'totp' | 'emailOtp' | 'recovery' } | { method: 'passkey'; passkey: PasskeyProof };

export interface MfaServiceDeps {
  mfa: MfaRepository;
  sessions: SessionService;
  passkeys: PasskeyFactor;
  box: SecretBox;
  codes: CodeHasher;
  /** The name authenticator apps show for this service. */
  issuer: string;
}

/**
 * Multi-factor sign-in: the second step of `POST /login` (`/mfa/challenge`, `/mfa/verify`), the
 * factors a person manages (TOTP, emailed codes, passkeys through `PasskeyFactor`, recovery
 * codes), remembered browsers, the lockout and re-authentication. Every factor change is mailed
 * to the person and written to the audit log.
 */
export class MfaService extends AccountsBase {
  readonly #m: MfaServiceDeps;

  constructor(deps: AccountsDeps, mfa: MfaServiceDeps) {
    super(deps);
    this.#m = mfa;
  }

  // ---- what a person has ----------------------------------------------------------------------------

  /** The factors a person has on, in a fixed order. */
  async methodsOf(profileId: string): Promise<MfaFactorMethod[]> {
    const factors = await this.#m.mfa.factors(profileId);
    const methods: MfaFactorMethod[] = [];
    if (factors?.totpSecret) methods.push('totp');
    if (factors?.emailEnabledAt !== null && factors?.emailEnabledAt !== undefined) methods.push('emailOtp');
    if ((await this.#m.passkeys.count(profileId)) > 0) methods.push('passkey');
    return methods;
  }

  async #preferred(profileId: string, methods: MfaFactorMethod[]): Promise<MfaFactorMethod | null> {
    const stored = (await this.#m.mfa.factors(profileId))?.preferredMethod;
    return methods.find((m) => m === stored) ?? methods[0] ?? null;
  }

  async status(viewer: Viewer): Promise<MfaStatus> {
    const id = viewer.profileId;
    const methods = await this.methodsOf(id);
    return {
      enabled: methods.length > 0,
      methods,
      preferredMethod: await this.#preferred(id, methods),
      recoveryCodesRemaining: methods.length > 0 ? await this.#m.mfa.recoveryCodesRemaining(id) : 0,
      trustedDevicesCount: methods.length > 0 ? await this.#m.mfa.trustedCount(id, viewer.tokenVersion, this.now()) : 0,
    };
  }

  // ---- sign-in ----------------------------------------------------------------------------------

  /**
   * `POST /login`: the password, then either a session (no factor on, or a remembered browser) or
   * a pending sign-in waiting for the second factor. No session or cookie exists until then.
   */
  async login(input: LoginInput, origin: RequestOrigin, browser: BrowserCookies): Promise<{ session: IssuedSession } | { pending: MfaPendingResult }> {
    const { profile, loginEmail } = await this.#m.sessions.checkPassword(input, origin, browser.device);
    const accessSeconds = input.expiresIn ?? DEFAULT_SESSION_SECONDS;
    const next = await this.afterPassword(profile, browser.trustedDevice);
    if (next === null) return { session: await this.#open(profile, loginEmail, accessSeconds, null, origin) };
    return { pending: await this.#pending(profile, loginEmail, accessSeconds, next) };
  }

  /**
   * What a sign-in whose password was right needs next: null when no second factor (none is on,
   * or this browser is remembered), otherwise the person's methods and preferred one.
   */
  async afterPassword(profile: ProfileRecord, trustedDevice: string | undefined): Promise<{ methods: MfaFactorMethod[]; preferred: MfaFactorMethod } | null> {
    const methods = await this.methodsOf(profile.id);
    const preferred = await this.#preferred(profile.id, methods);
    if (preferred === null) return null;
    if (trustedDevice && (await this.#m.mfa.useTrusted(profile.id, profile.tokenVersion, hashSecret(trustedDevice), this.now()))) return null;
    return { methods, preferred };
  }

  async #pending(profile: ProfileRecord, loginEmail: string, accessSeconds: number, next: { methods: MfaFactorMethod[]; preferred: MfaFactorMethod }): Promise<MfaPendingResult> {
    const token = randomToken();
    const now = this.now();
    await this.#m.mfa.insertPending({
      id: randomUUID(),
      tokenHash: hashSecret(token),
      profileId: profile.id,
      loginEmail,
      tokenVersion: profile.tokenVersion,
      accessSeconds,
      expiresAt: now + PENDING_SECONDS * 1000,
      now,
    });
    return { mfaPending: true, mfaPendingToken: token, mfaMethods: next.methods, preferredMethod: next.preferred };
  }

  /** The methods of the person a live pending sign-in is for; none when the token is not live. */
  async pendingMethods(token: string): Promise<MfaFactorMethod[]> {
    const pending = await this.#m.mfa.findPending(hashSecret(token), this.now());
    return pending ? this.methodsOf(pending.profileId) : [];
  }

  /** The pending sign-in a token names, with its profile (still able to sign in), or a 400. */
  async #livePending(token: string): Promise<{ pending: Awaited<ReturnType<MfaRepository['findPending']>> & object; profile: ProfileRecord }> {
    const pending = await this.#m.mfa.findPending(hashSecret(token), this.now());
    if (!pending) throw new AppError('BadRequestError', INVALID_PENDING);
    const profile = await this.d.repo.profiles.find(pending.profileId);
    if (!profile || !canHoldSession(profile, pending.tokenVersion)) throw new AppError('BadRequestError', INVALID_PENDING);
    return { pending, profile };
  }

  /** `POST /mfa/challenge`: mails a code (`emailOtp`), or answers WebAuthn request options (`passkey`). */
  async challenge(input: MfaChallengeInput, origin: RequestOrigin, device?: string): Promise<MfaChallengeResult> {
    await this.d.limits.consume('mfaAddress', addressKey(origin.address));
    const { pending, profile } = await this.#livePending(input.mfaPendingToken);
    // The person's lockout (strangers' wrong codes may have set it) does not hold back a browser that signed in before.
    if (this.#ownAllowance(profile, device) === null) await this.#refuseIfLocked(profile.id);
    const method = await this.#usable(profile.id, input.method);
    switch (method) {
      case 'emailOtp':
        await this.#sendEmailCode(profile);
        return { method, sent: true, expiresIn: EMAIL_CODE_SECONDS };
      case 'passkey':
        return { ...(await this.#m.passkeys.authenticationOptions({ userId: profile.id, challengeKey: pending.id })) };
      case 'totp':
      case 'recovery':
        return { method, sent: false };
    }
  }

  /**
   * `POST /mfa/verify`: the second factor; a right one uses the pending sign-in up and opens the
   * session exactly as `POST /login` does. `rememberDevice` also gives the browser a cookie
   * that skips the second factor for 30 days.
   */
  async verify(input: MfaVerifyInput, origin: RequestOrigin, device?: string): Promise<{ session: IssuedSession; trustedDevice?: TrustedDeviceCookie; proof: SecondFactorProof }> {
    await this.d.limits.consume('mfaAddress', addressKey(origin.address));
    const { pending, profile } = await this.#livePending(input.mfaPendingToken);
    const proof = await this.checkSecondFactor(profile, input.method, input.code, pending.id, this.#ownAllowance(profile, device));
    await this.d.limits.refund('mfaAddress', addressKey(origin.address));
    if (!(await this.#m.mfa.consumePending(pending.id, this.now()))) throw new AppError('BadRequestError', INVALID_PENDING);
    const session = await this.#open(profile, pending.loginEmail, pending.accessSeconds, proof, origin);
    const trustedDevice = input.rememberDevice ? await this.rememberDevice(profile) : undefined;
    return { session, proof, ...(trustedDevice ? { trustedDevice } : {}) };
  }

  /** Opens the session and records how its sign-in was proved (for the sign-in provider's `amr`). */
  async #open(profile: ProfileRecord, loginEmail: string, accessSeconds: number, proof: SecondFactorProof | null, origin: RequestOrigin): Promise<IssuedSession> {
    const session = await this.#m.sessions.startSession(profile, loginEmail, accessSeconds, origin);
    const viewer = await this.#m.sessions.authenticate(session.accessToken);
    await this.#m.mfa.recordSignIn(viewer.sessionId, viewer.profileId, viewer.authTime, amrOf(proof));
    return session;
  }

  /**
   * A new remembered browser of the person: the cookie's secret (only its hash is kept). It holds
   * until the person's token version moves on (a password reset, a logout of every device).
   */
  async rememberDevice(profile: Pick<ProfileRecord, 'id' | 'tokenVersion'>): Promise<TrustedDeviceCookie> {
    const token = randomToken();
    const now = this.now();
    await this.#m.mfa.insertTrusted(profile.id, profile.tokenVersion, hashSecret(token), now, now + TRUSTED_DEVICE_SECONDS * 1000);
    return { token, seconds: TRUSTED_DEVICE_SECONDS };
  }

  /**
   * The key of the caller's own allowance of second-step attempts, when it has one: a browser that
   * signed in to the account before (its device cookie). Null for everyone else, who share the
   * person's lockout.
   */
  #ownAllowance(profile: ProfileRecord, device: string | undefined): string | null {
    const nonce = this.d.devices.nonceFor(device, profile.id);
    return nonce === null ? null : `device:${nonce}`;
  }

  /**
   * Checks a second factor of the person, under the lockout: every attempt is counted before
   * the code is checked; `MAX_FAILED_ATTEMPTS` wrong ones in a row lock the person out for
   * `LOCK_SECONDS`; a right one clears the count. `challengeKey` names the passkey ceremony.
   * With `ownAllowance` (a browser that signed in before, or a signed-in session), attempts count
   * against that allowance alone (`mfaDevice`): strangers' wrong codes, which lock the person,
   * never lock its owner out.
   */
  async checkSecondFactor(profile: ProfileRecord, method: MfaMethod, code: string | PasskeyAssertion, challengeKey: string, ownAllowance: string | null = null): Promise<SecondFactorProof> {
    const usable = await this.#usable(profile.id, method);
    if (ownAllowance !== null) return this.#checkWithOwnAllowance(profile, usable, code, challengeKey, ownAllowance);
    const now = this.now();
    await this.#refuseIfLocked(profile.id);
    const attempt = await this.#m.mfa.beginAttempt(profile.id, now);
    // Another attempt may have locked the person since the check above (simultaneous guesses).
    if (attempt.lockedUntil !== null && attempt.lockedUntil > now) throw locked(attempt.lockedUntil, now);
    if (attempt.count > MAX_FAILED_ATTEMPTS) throw locked(now + LOCK_SECONDS * 1000, now);
    let proof: SecondFactorProof | null = null;
    let refusal: AppError | null = null;
    try {
      proof = await this.#check(profile, usable, code, challengeKey);
    } catch (error) {
      // A passkey assertion that does not verify counts as a wrong code, and keeps its reason.
      if (!(error instanceof AppError) || error.status !== 400) throw error;
      refusal = error;
    }
    if (proof === null) {
      if (attempt.count >= MAX_FAILED_ATTEMPTS) {
        const until = now + LOCK_SECONDS * 1000;
        await this.#m.mfa.lock(profile.id, until);
        await this.#audit(profile.id, 'system', 'mfa.locked', { until });
        throw locked(until, now);
      }
      throw refusal ?? new AppError('BadRequestError', INVALID_CODE);
    }
    await this.#m.mfa.clearFailures(profile.id);
    return proof;
  }

  async #checkWithOwnAllowance(profile: ProfileRecord, method: MfaMethod, code: string | PasskeyAssertion, challengeKey: string, key: string): Promise<SecondFactorProof> {
    const now = this.now();
    let left: number;
    try {
      left = (await this.d.limits.consume('mfaDevice', key)).remaining;
    } catch (error) {
      if (error instanceof AppError && error.name === 'TooManyError') throw locked(now + Number(error.details?.retryAfter ?? LOCK_SECONDS) * 1000, now);
      throw error;
    }
    // Counted already: a passkey assertion that does not verify is refused with its reason.
    let proof: SecondFactorProof | null = null;
    try {
      proof = await this.#check(profile, method, code, challengeKey);
    } catch (error) {
      if (left > 0 || !(error instanceof AppError) || error.status !== 400) throw error;
    }
    // As for the person: the last wrong code of the allowance locks (this browser only).
    if (proof === null) throw left > 0 ? new AppError('BadRequestError', INVALID_CODE) : locked(now + LOCK_SECONDS * 1000, now);
    await this.d.limits.refund('mfaDevice', key);
    // The person proved it: strangers' wrong codes so far no longer count towards their lockout.
    await this.#m.mfa.clearFailures(profile.id);
    return proof;
  }

  async #check(profile: ProfileRecord, method: MfaMethod, code: string | PasskeyAssertion, challengeKey: string): Promise<SecondFactorProof | null> {
    const now = this.now();
    if (method === 'passkey') {
      if (typeof code !== 'object') return null;
      const passkey = await this.#m.passkeys.authenticate(code as AuthenticationResponseJSON, { userId: profile.id, challengeKey });
      return passkey.userId === profile.id ? { method, passkey } : null;
    }
    if (typeof code !== 'string') return null;
    if (method === 'totp') {
      const factors = await this.#m.mfa.factors(profile.id);
      const secret = factors?.totpSecret ? this.#m.box.open(factors.totpSecret, profile.id) : null;
      if (secret === null) return null;
      const step = totpStep(secret, typedDigits(code), now);
      return step !== null && (await this.#m.mfa.acceptTotpStep(profile.id, step)) ? { method } : null;
    }
    if (method === 'emailOtp') {
      const digits = typedDigits(code);
      if (!/^\d{6}$/.test(digits)) return null;
      return (await this.#m.mfa.useEmailCode(profile.id, this.#m.codes.hash('email', profile.id, digits), now)) ? { method } : null;
    }
    const recovery = typedRecoveryCode(code);
    if (recovery === null || !(await this.#m.mfa.useRecoveryCode(profile.id, this.#m.codes.hash('recovery', profile.id, recovery), now))) return null;
    await this.#notify(profile.id, 'A recovery code was used to sign in', 'mfa.recovery.used', profile.id);
    return { method };
  }

  /** The method when the person has it on (recovery codes: when any factor is on); otherwise a 400. */
  async #usable(profileId: string, method: MfaMethod): Promise<MfaMethod> {
    const methods = await this.methodsOf(profileId);
    if (method === 'recovery' ? methods.length > 0 : methods.includes(method)) return method;
    throw new AppError('BadRequestError', `The method ${method} is not set up for this account`, { path: 'method' });
  }

  async #refuseIfLocked(profileId: string): Promise<void> {
    const lockedUntil = (await this.#m.mfa.factors(profileId))?.lockedUntil ?? null;
    if (lockedUntil !== null && lockedUntil > this.now()) throw locked(lockedUntil, this.now());
  }

  async #sendEmailCode(profile: ProfileRecord, purpose = `finish signing in to ${profile.id}`): Promise<void> {
    await this.d.limits.consume('mfaEmailAccount', `profile:${profile.id}`);
    const to = await this.#emailOf(profile);
    const code = newEmailCode();
    const now = this.now();
    await this.#m.mfa.putEmailCode(profile.id, this.#m.codes.hash('email', profile.id, code), now, now + EMAIL_CODE_SECONDS * 1000);
    this.d.mailer.post({
      to,
      subject: 'Verification Code',
      text:
        `Your verification code is: **${code}**\n\n` +
        `Enter it to ${purpose}. It is valid for ${EMAIL_CODE_SECONDS / 60} minutes, and a newer code replaces it.\n\n` +
        'If you did not try to sign in, someone knows your password: please change it.\n',
    });
  }

  async #emailOf(profile: ProfileRecord, repo: AccountsRepository = this.d.repo): Promise<string> {
    const email = preferredEmail(profile, await repo.emails.emailsOf(profile.id));
    if (!email) throw new AppError('BadRequestError', 'This account has no email address to send a code to');
    return email;
  }

  // ---- managing the factors ----------------------------------------------------------------------

  async setPreferred(viewer: Viewer, method: MfaFactorMethod): Promise<MfaStatus> {
    const methods = await this.methodsOf(viewer.profileId);
    if (!methods.includes(method)) throw new AppError('BadRequestError', `The method ${method} is not set up for this account`, { path: 'method' });
    await this.#m.mfa.setPreferred(viewer.profileId, method, this.now());
    await this.#audit(viewer.profileId, viewer.profileId, 'mfa.preferred', { method });
    return this.status(viewer);
  }

  /** `POST /mfa/setup/totp/init`: a new secret, kept (sealed) until a code from it is verified. */
  async totpInit(viewer: Viewer, refreshToken: string | undefined): Promise<TotpInitResult> {
    const profile = await this.#profile(viewer.profileId);
    // Adding a factor needs a recent proof of the person (`#requireFreshToAdd`). Replacing an
    // app turns the old one off, which needs it anyway.
    await this.#requireFreshToAdd(viewer, refreshToken);
    const secret = newTotpSecret();
    await this.#m.mfa.setTotpPending(profile.id, this.#m.box.seal(secret, profile.id), this.now());
    const label = (await this.#emailOf(profile).catch(() => null)) ?? profile.id;
    return { secret, ...(await totpProvisioning(secret, label, this.#m.issuer)) };
  }

  /** `POST /mfa/setup/totp/verify`: a code from the secret being set up turns TOTP on. */
  async totpVerify(viewer: Viewer, code: string, refreshToken: string | undefined): Promise<{ totpEnabled: true; recoveryCodes?: string[] }> {
    await this.#requireFreshToAdd(viewer, refreshToken);
    const id = viewer.profileId;
    const now = this.now();
    const factors = await this.#m.mfa.factors(id);
    const sealed = factors?.totpPendingSecret ?? null;
    const fresh = sealed !== null && factors?.totpPendingAt != null && now - factors.totpPendingAt <= TOTP_SETUP_SECONDS * 1000;
    const secret = fresh ? this.#m.box.open(sealed, id) : null;
    if (secret === null || sealed === null) throw new AppError('BadRequestError', 'Start the TOTP setup again: no setup is waiting for a code');
    if (totpStep(secret, typedDigits(code), now) === null) throw new AppError('BadRequestError', INVALID_CODE, { path: 'code' });
    const recoveryCodes = await this.#enableFactor(viewer, 'mfa.totp.enabled', 'An authenticator app was set up for signing in', (mfa) =>
      mfa.enableTotp(id, sealed, now),
    );
    return { totpEnabled: true, ...(recoveryCodes ? { recoveryCodes } : {}) };
  }

  async totpDelete(viewer: Viewer): Promise<{ status: 'ok'; enabled: boolean }> {
    await this.#requireFresh(viewer);
    if (!(await this.methodsOf(viewer.profileId)).includes('totp')) throw new AppError('BadRequestError', 'TOTP is not set up for this account');
    return this.#disableFactor(viewer, 'mfa.totp.disabled', 'The authenticator app was removed from signing in', (mfa) => mfa.disableTotp(viewer.profileId, this.now()));
  }

  /** `POST /mfa/setup/email`: codes mailed to the person's preferred address (which is confirmed already). */
  async emailSetup(viewer: Viewer, refreshToken: string | undefined): Promise<{ emailOtpEnabled: true; recoveryCodes?: string[] }> {
    const profile = await this.#profile(viewer.profileId);
    await this.#emailOf(profile);
    if ((await this.methodsOf(profile.id)).includes('emailOtp')) return { emailOtpEnabled: true };
    await this.#requireFreshToAdd(viewer, refreshToken);
    const recoveryCodes = await this.#enableFactor(viewer, 'mfa.email.enabled', 'Codes by email were turned on for signing in', (mfa) => mfa.setEmail(profile.id, this.now(), this.now()));
    return { emailOtpEnabled: true, ...(recoveryCodes ? { recoveryCodes } : {}) };
  }

  async emailDelete(viewer: Viewer): Promise<{ status: 'ok'; enabled: boolean }> {
    await this.#requireFresh(viewer);
    if (!(await this.methodsOf(viewer.profileId)).includes('emailOtp')) throw new AppError('BadRequestError', 'Codes by email are not set up for this account');
    return this.#disableFactor(viewer, 'mfa.email.disabled', 'Codes by email were turned off for signing in', async (mfa) => {
      await mfa.setEmail(viewer.profileId, null, this.now());
      await mfa.deleteEmailCode(viewer.profileId);
    });
  }

  async regenerateRecoveryCodes(viewer: Viewer, refreshToken: string | undefined): Promise<{ recoveryCodes: string[] }> {
    await this.#requireFreshToAdd(viewer, refreshToken);
    if ((await this.methodsOf(viewer.profileId)).length === 0) throw new AppError('BadRequestError', 'Turn on a second factor first: recovery codes stand in for one');
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await this.#m.mfa.transaction(async (mfa, trx) => {
      await mfa.replaceRecoveryCodes(viewer.profileId, codes.map((c) => this.#m.codes.hash('recovery', viewer.profileId, c)), this.now());
      await this.#audit(viewer.profileId, viewer.profileId, 'mfa.recovery.regenerated', undefined, this.d.repo.with(trx));
    });
    this.#mail(viewer.profileId, 'New recovery codes were made; the old ones no longer work');
    return { recoveryCodes: codes };
  }

  /** `DELETE /mfa/trusted-devices`: every remembered browser asks for the second factor again. */
  async forgetTrustedDevices(viewer: Viewer): Promise<MfaStatus> {
    const forgotten = await this.#m.mfa.forgetTrusted(viewer.profileId);
    await this.#audit(viewer.profileId, viewer.profileId, 'mfa.trusted-devices.forgotten', { forgotten });
    return this.status(viewer);
  }

  // ---- passkeys (through PasskeyFactor) ---------------------------------------------------------

  async passkeyInit(viewer: Viewer, refreshToken: string | undefined): Promise<Record<string, unknown> & { challenge: string }> {
    await this.#requireFreshToAdd(viewer, refreshToken);
    return { ...(await this.#m.passkeys.registrationOptions(viewer.profileId)) };
  }

  async passkeyVerify(viewer: Viewer, response: PasskeyAttestation, name: string | null | undefined, refreshToken: string | undefined) {
    await this.#requireFreshToAdd(viewer, refreshToken);
    const wasOn = (await this.methodsOf(viewer.profileId)).length > 0;
    const passkey = await this.#m.passkeys.register(viewer.profileId, response as RegistrationResponseJSON, name?.trim() || 'Passkey');
    const recoveryCodes = wasOn ? null : await this.#firstRecoveryCodes(viewer.profileId);
    await this.#notify(viewer.profileId, `A passkey ("${passkey.name}") was added for signing in`, 'mfa.passkey.added', viewer.profileId, { credentialId: passkey.credentialId });
    return { passkey, ...(recoveryCodes ? { recoveryCodes } : {}) };
  }

  async passkeyList(viewer: Viewer) {
    return { passkeys: await this.#m.passkeys.list(viewer.profileId) };
  }

  async passkeyDelete(viewer: Viewer, credentialId: string): Promise<{ status: 'ok'; enabled: boolean }> {
    await this.#requireFresh(viewer);
    if (!(await this.#m.passkeys.remove(viewer.profileId, credentialId))) throw new AppError('NotFoundError', 'No such passkey');
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
      await this.d.limits.consume('loginDevice', own);
      if (!(await this.d.hasher.verify(input.password, profile.passwordHash, addressKey(origin.address)))) {
        throw new AppError('BadRequestError', 'Invalid password', { path: 'password' });
      }
      await this.d.limits.refund('loginDevice', own);
    } else {
      await this.d.limits.consume('mfaAddress', addressKey(origin.address));
      await this.checkSecondFactor(profile, input.method, input.code, `reauth:${viewer.sessionId}`, own);
      await this.d.limits.refund('mfaAddress', addressKey(origin.address));
    }
    const now = this.now();
    await this.#m.mfa.setReauth(viewer.sessionId, now);
    return { reauthenticatedUntil: now + REAUTH_SECONDS * 1000 };
  }

  /** `POST /mfa/reauthenticate/challenge`: mails a code to a signed-in person who has codes by email on. */
  async reauthChallenge(viewer: Viewer): Promise<{ method: 'emailOtp'; sent: true; expiresIn: number }> {
    const profile = await this.#profile(viewer.profileId);
    await this.#usable(profile.id, 'emailOtp');
    await this.#refuseIfLocked(profile.id);
    await this.#sendEmailCode(profile, 'confirm a change to how you sign in');
    return { method: 'emailOtp', sent: true, expiresIn: EMAIL_CODE_SECONDS };
  }

  /** A 403 unless the session was opened, or its holder proved again, within `REAUTH_SECONDS`. */
  async #requireFresh(viewer: Viewer): Promise<void> {
    const now = this.now();
    const last = Math.max(viewer.authTime, (await this.#m.mfa.reauthAt(viewer.sessionId)) ?? 0);
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
    const reauthAt = await this.#m.mfa.reauthAt(viewer.sessionId);
    if (reauthAt !== null && now - reauthAt <= REAUTH_SECONDS * 1000) return;
    if (now - viewer.authTime <= REAUTH_SECONDS * 1000 && (await this.#m.sessions.holdsRefreshCookie(viewer.sessionId, refreshToken))) return;
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
    const found = await this.d.repo.profiles.findByIdOrEmail(normaliseId(idOrEmail));
    const profile = found?.mergedInto ? await this.d.repo.profiles.find(found.mergedInto) : found;
    if (!profile) throw new AppError('NotFoundError', `No profile ${idOrEmail}`);
    const removed = await this.methodsOf(profile.id);
    for (const passkey of await this.#m.passkeys.list(profile.id)) await this.#m.passkeys.remove(profile.id, passkey.credentialId);
    await this.#m.mfa.transaction(async (mfa, trx) => {
      await mfa.removeEverything(profile.id);
      await this.#audit(profile.id, 'operator', 'mfa.disabled-by-operator', { removed }, this.d.repo.with(trx), reason);
    });
    this.#mail(profile.id, 'An operator turned multi-factor sign-in off for your account, at your request');
    return { profileId: profile.id, removed };
  }

  /**
   * Forgets what is no longer needed, a day after it ended (so an authorization code issued
   * just before a logout still finds how its sign-in was proved).
   */
  async sweep(): Promise<void> {
    await this.#m.mfa.deleteEnded(this.now() - 24 * 60 * 60 * 1000);
  }

  // ---- helpers -------------------------------------------------------------------------------------

  async #profile(profileId: string): Promise<ProfileRecord> {
    const profile = await this.d.repo.profiles.find(profileId);
    if (!profile) throw new AppError('UnauthorizedError', 'You must be logged in to do this.');
    return profile;
  }

  /** Recovery codes for a person turning the first factor on (nothing kept from before). */
  async #firstRecoveryCodes(profileId: string, mfa = this.#m.mfa): Promise<string[]> {
    const codes = Array.from({ length: RECOVERY_CODE_COUNT }, newRecoveryCode);
    await mfa.replaceRecoveryCodes(profileId, codes.map((c) => this.#m.codes.hash('recovery', profileId, c)), this.now());
    return codes;
  }

  /** Turns a factor on in one transaction, with fresh recovery codes when it is the first one. */
  async #enableFactor(viewer: Viewer, action: string, what: string, write: (mfa: MfaRepository) => Promise<void>): Promise<string[] | null> {
    const wasOn = (await this.methodsOf(viewer.profileId)).length > 0;
    const codes = await this.#m.mfa.transaction(async (mfa, trx) => {
      await write(mfa);
      const fresh = wasOn ? null : await this.#firstRecoveryCodes(viewer.profileId, mfa);
      await this.#audit(viewer.profileId, viewer.profileId, action, undefined, this.d.repo.with(trx));
      return fresh;
    });
    this.#mail(viewer.profileId, what);
    return codes;
  }

  /** Turns a factor off in one transaction; when none is left, recovery codes and remembered browsers go too. */
  async #disableFactor(viewer: Viewer, action: string, what: string, write: (mfa: MfaRepository) => Promise<void>, details?: Record<string, unknown>): Promise<{ status: 'ok'; enabled: boolean }> {
    const id = viewer.profileId;
    await this.#m.mfa.transaction(async (mfa, trx) => {
      await write(mfa);
      await this.#audit(id, id, action, details, this.d.repo.with(trx));
    });
    const enabled = (await this.methodsOf(id)).length > 0;
    if (!enabled) {
      await this.#m.mfa.transaction(async (mfa) => {
        await mfa.replaceRecoveryCodes(id, [], this.now());
        await mfa.forgetTrusted(id);
        await mfa.setPreferred(id, null, this.now());
      });
    }
    this.#mail(id, enabled ? what : `${what}. Multi-factor sign-in is now off for your account`);
    return { status: 'ok', enabled };
  }

  async #notify(profileId: string, what: string, action: string, actor: string, details?: Record<string, unknown>): Promise<void> {
    await this.#audit(profileId, actor, action, details);
    this.#mail(profileId, what);
  }

  #audit(target: string, actor: string, action: string, details?: Record<string, unknown>, repo: AccountsRepository = this.d.repo, reason?: string): Promise<void> {
    return repo.settings.audit({ actor, action, target, reason, details }, this.now());
  }

  /** Tells the person of a change to how they sign in, after the answer. */
  #mail(profileId: string, what: string): void {
    const when = new Date(this.now()).toISOString();
    this.d.mailer.later(async () => {
      const profile = await this.d.repo.profiles.find(profileId);
      const to = profile ? preferredEmail(profile, await this.d.repo.emails.emailsOf(profileId)) : undefined;
      if (!to) return;
      await this.d.mailer.send({
        to,
        subject: 'Your sign-in settings changed',
        text:
          `${what} (account ${profileId}, ${when}).\n\n` +
          'If this was not you, change your password now and contact the support team: someone may have access to your account.\n',
      });
    });
  }
}

/**
 * RFC 8176 `amr` of a sign-in: `pwd`, and with a second factor `otp` (TOTP, an emailed code, a
 * recovery code) or `hwk`/`swk` (a device-bound or a synced passkey), and then `mfa`. A browser
 * remembered for the second factor signs in with `pwd` only.
 */
export function amrOf(proof: SecondFactorProof | null): string[] {
  if (proof === null) return ['pwd'];
  if (proof.method === 'passkey') return ['pwd', proof.passkey.backedUp ? 'swk' : 'hwk', 'mfa'];
  return ['pwd', 'otp', 'mfa'];
}

/** The ID token's `acr`: `2` for two factors, `1` for one (documented in the README). */
export function acrOf(amr: readonly string[]): string {
  return amr.includes('mfa') ? '2' : '1';
}

function locked(until: number, now: number): AppError {
  const at = new Date(until).toISOString();
  return new AppError('TooManyError', `Account temporarily locked due to too many failed MFA attempts. Try again after ${at}.`, {
    lockedUntil: at,
    retryAfter: Math.max(1, Math.ceil((until - now) / 1000)),
  });
}
