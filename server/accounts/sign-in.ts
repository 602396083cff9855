import { randomUUID } from 'node:crypto';
import {
  AppError,
  DEFAULT_SESSION_SECONDS,
  type LoginInput,
  type MfaChallengeInput,
  type MfaChallengeResult,
  type MfaFactorMethod,
  type MfaPendingResult,
  type MfaVerifyInput,
  type SignInMethod,
} from '../../shared/index.ts';
import { countedSignIn, secondStepMethod } from '../metrics/events.ts';
import { hashSecret, randomToken } from '../secrets.ts';
import { cancelDeletionOnSignIn } from './account-deletion.ts';
import { addressKey } from './ids.ts';
import { EMAIL_CODE_SECONDS, amrOf, type SecondFactorProof, type SecondFactors } from './mfa/second-factor.ts';
import type { PasskeyFactor } from './mfa/passkey-factor.ts';
import type { MfaRepository } from './mfa/repository.ts';
import { AccountsBase, type AccountsDeps } from './service-base.ts';
import { preferredEmail } from './profiles.ts';
import { normaliseId, type ProfileRecord } from './repository.ts';
import { ACTIVE_STATES, canHoldSession } from './session-rule.ts';
import { auditFailure } from './security.ts';
import { accountLimitKey, deviceDetails, inactiveMessage, type SessionService } from './sessions.ts';
import type { NewBrowserAlerts } from './sign-in-alerts.ts';
import type { BrowserCookies, IssuedSession, RequestOrigin } from './viewer.ts';

/** How long a sign-in waits for its second factor. */
export const PENDING_SECONDS = 10 * 60;
/** How long a browser is remembered ("remember this device"). */
export const TRUSTED_DEVICE_SECONDS = 30 * 24 * 60 * 60;

const WRONG_CREDENTIALS = 'Invalid username or password';
const INVALID_PENDING = 'The sign-in has expired or was already completed. Please log in again.';

/** A remembered browser's cookie, for the transport to set. */
export interface TrustedDeviceCookie {
  token: string;
  seconds: number;
}

/** The allowance a password attempt is counted against: the account's, or one browser's (its device cookie). */
type AttemptCounter = { name: 'loginAccount' | 'loginDevice'; key: string };

export interface SignInDeps {
  sessions: SessionService;
  factors: SecondFactors;
  mfa: MfaRepository;
  passkeys: PasskeyFactor;
  /** The mail on a sign-in from a new browser (`sign-in-alerts.ts`). */
  alerts?: NewBrowserAlerts;
}

/**
 * What a sign-in's browser shows besides its origin: its device cookie (a new browser is mailed),
 * and its refresh cookie (a live session of the same person in it is signed in to again, not
 * joined by a second one: `SessionService.startSession`).
 */
export type SignInBrowser = BrowserCookies & { refreshToken?: string | undefined };

/**
 * Signing in with a password: `POST /login` (and the sign-in pages, the provider's login page),
 * its attempts counted against the account or the browser's own allowance (human verification
 * past the account's), then either the session or a pending sign-in waiting for the second
 * factor (`/mfa/challenge`, `/mfa/verify`), remembered browsers, and `open`, through which every
 * sign-in's session starts (a passkey alone too: `passkeys/passwordless.ts`). Activation and
 * impersonation open sessions of their own kind (`activation.ts`, `impersonation.ts`).
 */
export class SignInService extends AccountsBase {
  readonly #signInDeps: SignInDeps;

  constructor(deps: AccountsDeps, signIn: SignInDeps) {
    super(deps);
    this.#signInDeps = signIn;
  }

  /**
   * The first half of a sign-in (`POST /login` with an email or a tilde id): the id and password
   * are right and the profile may sign in. An unknown id, a wrong password and a deleted profile
   * all get the same 400, which is not a 401 so that clients do not try to refresh.
   */
  async #checkPassword(input: LoginInput, origin: RequestOrigin, device?: string): Promise<{ profile: ProfileRecord; loginEmail: string }> {
    const repo = this.deps.repo;
    const limits = this.deps.limits;
    // The id is made canonical once (white space and invisible characters around it, letter
    // case of an email), and the account's counter is the profile's own, whichever of its
    // emails or usernames is typed: no spelling of an account gets a counter of its own.
    const id = normaliseId(input.id);
    const isTilde = id.startsWith('~');
    const found = await repo.profiles.findByIdOrEmail(id);
    const profile = found?.mergedInto ? await repo.profiles.find(found.mergedInto) : found;
    // A browser that signed in to this account before counts against its own allowance, so that
    // strangers' wrong passwords never lock its owner out (`device-cookies.ts`).
    const deviceNonce = profile ? this.deps.devices.nonceFor(device, profile.id) : null;
    const account = accountLimitKey(id, profile);
    const counter = deviceNonce ? ({ name: 'loginDevice', key: `device:${deviceNonce}` } as const) : ({ name: 'loginAccount', key: account } as const);
    // Every attempt is counted before the password is checked (so parallel guesses cannot all
    // slip under the limit), and given back when the password was right.
    const counted = await this.#countAttempt(counter, account, input.token, origin);
    await limits.consume('loginAddress', addressKey(origin.address));
    const passwordOk = await this.deps.hasher.verify(input.password, profile?.passwordHash ?? null, addressKey(origin.address));
    if (!profile || !passwordOk || profile.ddate !== null) {
      // The person's activity log: a wrong password for an existing account (bounded: `auditFailure`).
      if (profile && profile.ddate === null) await auditFailure(repo, this.now(), profile.id, 'sign-in:failed', deviceDetails(origin));
      throw new AppError('BadRequestError', WRONG_CREDENTIALS);
    }
    await limits.refund(counted.name, counted.key);
    await limits.refund('loginAddress', addressKey(origin.address));
    if (!ACTIVE_STATES.has(profile.state)) {
      // `details.state`: the sign-in pages offer a person not yet active the activation link again and "Type the code".
      throw new AppError('ForbiddenError', inactiveMessage(profile.state), { state: profile.state });
    }
    const emails = await repo.emails.emailsOf(profile.id);
    const loginEmail = isTilde ? (preferredEmail(profile, emails) ?? profile.id) : id;
    return { profile, loginEmail };
  }

  /**
   * Counts a password attempt. Past the account's limit, a browser without the account's device
   * cookie is not refused outright (anyone could keep a person out that way): it is asked to
   * prove it is a person, a 429 with `details.humanVerification: "required"`, and an attempt
   * that carries a verified `token` goes on. A browser whose own allowance (`loginDevice`) ran
   * out falls back to the account's, as any other browser. In development mode (no verification
   * service) the public token `dev-ok` proves nothing, so the account's limit stays a hard one
   * there, outside the test suite.
   */
  async #countAttempt(counter: AttemptCounter, account: string, token: string | null | undefined, origin: RequestOrigin): Promise<AttemptCounter> {
    try {
      await this.deps.limits.consume(counter.name, counter.key);
      return counter;
    } catch (error) {
      if (!(error instanceof AppError) || error.name !== 'TooManyError') throw error;
      if (counter.name === 'loginDevice') return this.#countAttempt({ name: 'loginAccount', key: account }, account, token, origin);
      const retryAfter = Number(error.details?.retryAfter ?? 1);
      if (this.deps.verifier.mode === 'development' && !this.deps.config.testSuite) throw error;
      if (!token) {
        throw new AppError('TooManyError', `Too many sign-in attempts for this account. Please complete the human verification and try again, or try again in ${retryAfter} seconds.`, {
          humanVerification: 'required',
          retryAfter,
        });
      }
      await this.deps.verifier.verify(token, origin.address);
      return counter;
    }
  }

  /**
   * `POST /login`: the password, then either a session (no factor on, or a remembered browser) or
   * a pending sign-in waiting for the second factor. No session or cookie exists until then.
   * Counted in the metrics (`password`), as every sign-in attempt is.
   */
  login(input: LoginInput, origin: RequestOrigin, browser: SignInBrowser): Promise<{ session: IssuedSession } | { pending: MfaPendingResult }> {
    return countedSignIn(this.deps.metrics, 'password', () => this.#login(input, origin, browser), (answer) => ('pending' in answer ? 'second_step_required' : 'success'));
  }

  async #login(input: LoginInput, origin: RequestOrigin, browser: SignInBrowser): Promise<{ session: IssuedSession } | { pending: MfaPendingResult }> {
    const { profile, loginEmail } = await this.#checkPassword(input, origin, browser.device);
    const accessSeconds = input.expiresIn ?? DEFAULT_SESSION_SECONDS;
    const next = await this.afterPassword(profile, browser.trustedDevice);
    if (next === null) {
      // No second step: the person has none, or this browser is remembered for it.
      const method: SignInMethod = (await this.#signInDeps.factors.methodsOf(profile.id)).length > 0 ? 'remembered' : 'password';
      return { session: await this.open(profile, loginEmail, accessSeconds, amrOf(null), origin, method, browser) };
    }
    return { pending: await this.#pending(profile, loginEmail, accessSeconds, next) };
  }

  /**
   * What a sign-in whose password was right needs next: null when no second factor (none is on,
   * or this browser is remembered), otherwise the person's methods and preferred one.
   */
  async afterPassword(profile: ProfileRecord, trustedDevice: string | undefined): Promise<{ methods: MfaFactorMethod[]; preferred: MfaFactorMethod } | null> {
    const { methods, preferred } = await this.#signInDeps.factors.summary(profile.id);
    if (preferred === null) return null;
    if (trustedDevice && (await this.#signInDeps.mfa.useTrusted(profile.id, profile.tokenVersion, hashSecret(trustedDevice), this.now()))) return null;
    return { methods, preferred };
  }

  async #pending(profile: ProfileRecord, loginEmail: string, accessSeconds: number, next: { methods: MfaFactorMethod[]; preferred: MfaFactorMethod }): Promise<MfaPendingResult> {
    const token = randomToken();
    const now = this.now();
    await this.#signInDeps.mfa.insertPending({
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
    const pending = await this.#signInDeps.mfa.findPending(hashSecret(token), this.now());
    return pending ? this.#signInDeps.factors.methodsOf(pending.profileId) : [];
  }

  /** The pending sign-in a token names, with its profile (still able to sign in), or a 400. */
  async #livePending(token: string): Promise<{ pending: Awaited<ReturnType<MfaRepository['findPending']>> & object; profile: ProfileRecord }> {
    const pending = await this.#signInDeps.mfa.findPending(hashSecret(token), this.now());
    if (!pending) throw new AppError('BadRequestError', INVALID_PENDING);
    const profile = await this.deps.repo.profiles.find(pending.profileId);
    if (!profile || !canHoldSession(profile, pending.tokenVersion)) throw new AppError('BadRequestError', INVALID_PENDING);
    return { pending, profile };
  }

  /** `POST /mfa/challenge`: mails a code (`emailOtp`), or answers WebAuthn request options (`passkey`). */
  async challenge(input: MfaChallengeInput, origin: RequestOrigin, device?: string): Promise<MfaChallengeResult> {
    await this.deps.limits.consume('mfaAddress', addressKey(origin.address));
    const { pending, profile } = await this.#livePending(input.mfaPendingToken);
    // The person's lockout (strangers' wrong codes may have set it) does not hold back a browser
    // that signed in before, nor do strangers' requests for mailed codes use up its own.
    const own = this.#signInDeps.factors.ownAllowance(profile, device);
    if (own === null) await this.#signInDeps.factors.refuseIfLocked(profile.id);
    const method = await this.#signInDeps.factors.usable(profile.id, input.method);
    switch (method) {
      case 'emailOtp':
        await this.#signInDeps.factors.sendEmailCode(profile, undefined, own ?? undefined);
        return { method, sent: true, expiresIn: EMAIL_CODE_SECONDS };
      case 'passkey':
        return { ...(await this.#signInDeps.passkeys.authenticationOptions({ userId: profile.id, challengeKey: pending.id })) };
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
  verify(input: MfaVerifyInput, origin: RequestOrigin, browser: SignInBrowser = {}): Promise<{ session: IssuedSession; trustedDevice?: TrustedDeviceCookie; proof: SecondFactorProof }> {
    return countedSignIn(this.deps.metrics, secondStepMethod(input.method), () => this.#verify(input, origin, browser));
  }

  async #verify(input: MfaVerifyInput, origin: RequestOrigin, browser: SignInBrowser): Promise<{ session: IssuedSession; trustedDevice?: TrustedDeviceCookie; proof: SecondFactorProof }> {
    const device = browser.device;
    await this.deps.limits.consume('mfaAddress', addressKey(origin.address));
    const { pending, profile } = await this.#livePending(input.mfaPendingToken);
    const proof = await this.#signInDeps.factors.check(profile, input.method, input.code, pending.id, this.#signInDeps.factors.ownAllowance(profile, device), origin);
    await this.deps.limits.refund('mfaAddress', addressKey(origin.address));
    if (!(await this.#signInDeps.mfa.consumePending(pending.id, this.now()))) throw new AppError('BadRequestError', INVALID_PENDING);
    const session = await this.open(profile, pending.loginEmail, pending.accessSeconds, amrOf(proof), origin, `password+${proof.method}`, browser);
    const trustedDevice = input.rememberDevice ? await this.rememberDevice(profile) : undefined;
    return { session, proof, ...(trustedDevice ? { trustedDevice } : {}) };
  }

  /**
   * Opens the session of a person proved (a password with its second step when one is on, or a
   * passkey alone, `passkeys/passwordless.ts`), records how (the sign-in provider's `amr`), and
   * hands the browser its device-cookie entry (through `startSession`). A browser holding a live
   * session of the person (its refresh cookie) has that session signed in to again: one session
   * per browser. A sign-in from a new browser is mailed (`sign-in-alerts.ts`).
   */
  async open(profile: ProfileRecord, loginEmail: string, accessSeconds: number, amr: string[], origin: RequestOrigin, method: SignInMethod | null = null, browser: SignInBrowser = {}): Promise<IssuedSession> {
    const session = await this.#signInDeps.sessions.startSession(profile, loginEmail, accessSeconds, origin, { method, refreshToken: browser.refreshToken });
    const viewer = await this.#signInDeps.sessions.authenticate(session.accessToken);
    await this.#signInDeps.mfa.recordSignIn(viewer.sessionId, viewer.profileId, viewer.authTime, amr, method);
    // The session is open: a mail that cannot be written now must not make the sign-in fail.
    if (!session.signedInAgain) {
      await this.#signInDeps.alerts?.afterSignIn(profile, viewer.sessionId, origin, browser.device).catch((error: unknown) => this.deps.logger.error({ err: error }, 'the new-browser mail could not be written'));
    }
    // Signing in cancels a deletion the person asked for (`account-deletion.ts`).
    await cancelDeletionOnSignIn(this.deps.repo, profile.id, this.now(), origin);
    return session;
  }

  /**
   * A new remembered browser of the person: the cookie's secret (only its hash is kept). It holds
   * until the person's token version moves on (a password reset, a logout of every device).
   */
  async rememberDevice(profile: Pick<ProfileRecord, 'id' | 'tokenVersion'>): Promise<TrustedDeviceCookie> {
    const token = randomToken();
    const now = this.now();
    await this.#signInDeps.mfa.insertTrusted(profile.id, profile.tokenVersion, hashSecret(token), now, now + TRUSTED_DEVICE_SECONDS * 1000);
    return { token, seconds: TRUSTED_DEVICE_SECONDS };
  }
}
