import type { AuthenticationResponseJSON } from '@simplewebauthn/server';
import { AppError, type MfaFactorMethod, type MfaMethod, type PasskeyAssertion } from '../../../shared/index.ts';
import { verificationCodeMail } from '../../mail/messages.ts';
import type { AccountsDeps } from '../service-base.ts';
import { preferredEmail } from '../profiles.ts';
import { auditFailure } from '../security.ts';
import { deviceDetails } from '../sessions.ts';
import type { RequestOrigin } from '../viewer.ts';
import type { AccountsRepository, ProfileRecord } from '../repository.ts';
import { type CodeHasher, newEmailCode, typedDigits, typedRecoveryCode } from './codes.ts';
import { MfaServiceBase } from './service-base.ts';
import type { PasskeyFactor, PasskeyProof } from './passkey-factor.ts';
import type { MfaRepository } from './repository.ts';
import { totpStep } from './totp.ts';
import type { SecretBox } from '../../secrets.ts';

/** How long an emailed code is valid. */
export const EMAIL_CODE_SECONDS = 10 * 60;
/** Wrong codes in a row before the person is locked out, and for how long. */
export const MAX_FAILED_ATTEMPTS = 5;
export const LOCK_SECONDS = 15 * 60;

export const INVALID_CODE = 'Invalid verification code';

/** What proved the person at a second step, for the OpenID Connect `amr` claim (RFC 8176). */
export type SecondFactorProof = { method: 'totp' | 'emailOtp' | 'recovery' } | { method: 'passkey'; passkey: PasskeyProof };

export interface SecondFactorDeps {
  mfa: MfaRepository;
  passkeys: PasskeyFactor;
  box: SecretBox;
  codes: CodeHasher;
}

/**
 * A person's second factors as a sign-in or a re-authentication meets them: which are on, and
 * checking a code (TOTP, emailed, recovery) or a passkey's assertion under the lockout. Both the
 * sign-in (`accounts/sign-in.ts`) and re-authentication (`service.ts`) check codes here, so the
 * lockout is the same for both.
 */
export class SecondFactors extends MfaServiceBase {
  readonly #factorDeps: SecondFactorDeps;

  constructor(deps: AccountsDeps, factors: SecondFactorDeps) {
    super(deps);
    this.#factorDeps = factors;
  }

  /** The factors a person has on, in a fixed order. */
  async methodsOf(profileId: string): Promise<MfaFactorMethod[]> {
    return (await this.summary(profileId)).methods;
  }

  /**
   * The factors a person has on, in a fixed order, and the preferred one among them (the stored
   * choice while it is on, otherwise the first; null when none is on), from one reading of each.
   */
  async summary(profileId: string): Promise<{ methods: MfaFactorMethod[]; preferred: MfaFactorMethod | null }> {
    const [factors, passkeys] = await Promise.all([this.#factorDeps.mfa.factors(profileId), this.#factorDeps.passkeys.count(profileId)]);
    const methods: MfaFactorMethod[] = [];
    if (factors?.totpSecret) methods.push('totp');
    if (factors?.emailEnabledAt !== null && factors?.emailEnabledAt !== undefined) methods.push('emailOtp');
    if (passkeys > 0) methods.push('passkey');
    return { methods, preferred: methods.find((m) => m === factors?.preferredMethod) ?? methods[0] ?? null };
  }

  /** The method when the person has it on (recovery codes: when any factor is on); otherwise a 400. */
  async usable(profileId: string, method: MfaMethod): Promise<MfaMethod> {
    const methods = await this.methodsOf(profileId);
    if (method === 'recovery' ? methods.length > 0 : methods.includes(method)) return method;
    throw new AppError('BadRequestError', `The method ${method} is not set up for this account`, { path: 'method' });
  }

  /**
   * The key of the caller's own allowance of second-step attempts, when it has one: a browser that
   * signed in to the account before (its device cookie). Null for everyone else, who share the
   * person's lockout.
   */
  ownAllowance(profile: ProfileRecord, device: string | undefined): string | null {
    const nonce = this.deps.devices.nonceFor(device, profile.id);
    return nonce === null ? null : `device:${nonce}`;
  }

  /**
   * Checks a second factor of the person, under the lockout: every attempt is counted before
   * the code is checked; `MAX_FAILED_ATTEMPTS` wrong ones in a row lock the person out for
   * `LOCK_SECONDS`; a right one clears the count. `challengeKey` names the passkey ceremony.
   * With `ownAllowance` (a browser that signed in before, or a signed-in session), attempts count
   * against that allowance alone (`mfaDevice`): strangers' wrong codes, which lock the person,
   * never lock its owner out. A wrong code is refused with `details.triesLeft` (how many more
   * wrong ones the lockout allows) and written to the person's activity log with `origin`.
   */
  async check(profile: ProfileRecord, method: MfaMethod, code: string | PasskeyAssertion, challengeKey: string, ownAllowance: string | null = null, origin?: RequestOrigin): Promise<SecondFactorProof> {
    const usable = await this.usable(profile.id, method);
    if (ownAllowance !== null) return this.#checkWithOwnAllowance(profile, usable, code, challengeKey, ownAllowance, origin);
    const now = this.now();
    await this.refuseIfLocked(profile.id);
    const attempt = await this.#factorDeps.mfa.beginAttempt(profile.id, now);
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
      await this.#recordWrong(profile.id, usable, origin);
      if (attempt.count >= MAX_FAILED_ATTEMPTS) {
        const until = now + LOCK_SECONDS * 1000;
        await this.#factorDeps.mfa.lock(profile.id, until);
        await this.audit(profile.id, 'system', 'mfa.locked', { until });
        this.deps.metrics?.lockout('second_step');
        throw locked(until, now);
      }
      throw withTriesLeft(refusal ?? wrongCode(), MAX_FAILED_ATTEMPTS - attempt.count);
    }
    await this.#factorDeps.mfa.clearFailures(profile.id);
    return proof;
  }

  async #checkWithOwnAllowance(profile: ProfileRecord, method: MfaMethod, code: string | PasskeyAssertion, challengeKey: string, key: string, origin?: RequestOrigin): Promise<SecondFactorProof> {
    const now = this.now();
    let left: number;
    try {
      left = (await this.deps.limits.consume('mfaDevice', key)).remaining;
    } catch (error) {
      if (error instanceof AppError && error.name === 'TooManyError') throw locked(now + Number(error.details?.retryAfter ?? LOCK_SECONDS) * 1000, now);
      throw error;
    }
    // Counted already: a passkey assertion that does not verify is refused with its reason.
    let proof: SecondFactorProof | null = null;
    let refusal: AppError | null = null;
    try {
      proof = await this.#check(profile, method, code, challengeKey);
    } catch (error) {
      if (!(error instanceof AppError) || error.status !== 400) throw error;
      refusal = error;
    }
    // As for the person: the last wrong code of the allowance locks (this browser only).
    if (proof === null) {
      await this.#recordWrong(profile.id, method, origin);
      if (left > 0) throw withTriesLeft(refusal ?? wrongCode(), left);
      this.deps.metrics?.lockout('second_step_browser');
      throw locked(now + LOCK_SECONDS * 1000, now);
    }
    await this.deps.limits.refund('mfaDevice', key);
    // The person proved it: strangers' wrong codes so far no longer count towards their lockout.
    await this.#factorDeps.mfa.clearFailures(profile.id);
    return proof;
  }

  async #check(profile: ProfileRecord, method: MfaMethod, code: string | PasskeyAssertion, challengeKey: string): Promise<SecondFactorProof | null> {
    const now = this.now();
    if (method === 'passkey') {
      if (typeof code !== 'object') return null;
      const passkey = await this.#factorDeps.passkeys.authenticate(code as AuthenticationResponseJSON, { userId: profile.id, challengeKey });
      return passkey.userId === profile.id ? { method, passkey } : null;
    }
    if (typeof code !== 'string') return null;
    if (method === 'totp') {
      const factors = await this.#factorDeps.mfa.factors(profile.id);
      const secret = factors?.totpSecret ? this.#factorDeps.box.open(factors.totpSecret, profile.id) : null;
      if (secret === null) return null;
      const step = totpStep(secret, typedDigits(code), now);
      return step !== null && (await this.#factorDeps.mfa.acceptTotpStep(profile.id, step)) ? { method } : null;
    }
    if (method === 'emailOtp') {
      const digits = typedDigits(code);
      if (!/^\d{6}$/.test(digits)) return null;
      return (await this.#factorDeps.mfa.useEmailCode(profile.id, this.#factorDeps.codes.hash('email', profile.id, digits), now)) ? { method } : null;
    }
    const recovery = typedRecoveryCode(code);
    if (recovery === null) return null;
    // The code's use, its audit line and the mail that tells of it, together.
    const used = await this.#factorDeps.mfa.transaction(async (mfa, trx) => {
      if (!(await mfa.useRecoveryCode(profile.id, this.#factorDeps.codes.hash('recovery', profile.id, recovery), now))) return false;
      const repo = this.deps.repo.with(trx);
      await this.audit(profile.id, profile.id, 'mfa.recovery.used', undefined, repo);
      await this.mailChange(profile.id, 'A recovery code was used to sign in', repo);
      return true;
    });
    return used ? { method } : null;
  }

  /** A wrong code (or a passkey answer that does not verify) in the person's activity log. */
  async #recordWrong(profileId: string, method: MfaMethod, origin: RequestOrigin | undefined): Promise<void> {
    await auditFailure(this.deps.repo, this.now(), profileId, 'mfa.code.wrong', { method, ...(origin ? deviceDetails(origin) : {}) });
  }

  /** A 429 while the person's second step is locked. */
  async refuseIfLocked(profileId: string): Promise<void> {
    const lockedUntil = (await this.#factorDeps.mfa.factors(profileId))?.lockedUntil ?? null;
    if (lockedUntil !== null && lockedUntil > this.now()) throw locked(lockedUntil, this.now());
  }

  /** Mails the person a 6-digit code (at most five a quarter of an hour), valid `EMAIL_CODE_SECONDS`; a newer one voids it. */
  async sendEmailCode(profile: ProfileRecord, purpose = `finish signing in to ${profile.id}`, ownAllowance?: string): Promise<void> {
    // A browser that signed in before (or a signed-in session) asks on its own allowance: strangers' requests never use it up.
    await this.deps.limits.consume('mfaEmailAccount', ownAllowance ?? `profile:${profile.id}`);
    const to = await this.emailOf(profile);
    const code = newEmailCode();
    const now = this.now();
    await this.#factorDeps.mfa.transaction(async (mfa, trx) => {
      await mfa.putEmailCode(profile.id, this.#factorDeps.codes.hash('email', profile.id, code), now, now + EMAIL_CODE_SECONDS * 1000);
      await this.deps.mailer.queue(this.deps.repo.with(trx), { to, ...verificationCodeMail({ code, purpose, validForSeconds: EMAIL_CODE_SECONDS }) });
    });
  }

  /** Where codes and notices go: the preferred address, or a 400. */
  async emailOf(profile: ProfileRecord, repo: AccountsRepository = this.deps.repo): Promise<string> {
    const email = preferredEmail(profile, await repo.emails.emailsOf(profile.id));
    if (!email) throw new AppError('BadRequestError', 'This account has no email address to send a code to');
    return email;
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

/** The code typed is not the factor's (`details.reason`: the pages tell it by that, not by its words). */
function wrongCode(): AppError {
  return new AppError('BadRequestError', INVALID_CODE, { reason: 'wrong-code' });
}

/** A refused code, with how many more wrong ones the lockout allows (`details.triesLeft`: the pages say "2 tries left"). */
function withTriesLeft(error: AppError, triesLeft: number): AppError {
  return new AppError(error.name, error.message, { ...error.details, triesLeft: Math.max(0, triesLeft) });
}

export function locked(until: number, now: number): AppError {
  const at = new Date(until).toISOString();
  return new AppError('TooManyError', `Account temporarily locked due to too many failed MFA attempts. Try again after ${at}.`, {
    lockedUntil: at,
    retryAfter: Math.max(1, Math.ceil((until - now) / 1000)),
  });
}
