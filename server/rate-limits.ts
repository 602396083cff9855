import type { RateLimiterAbstract } from 'rate-limiter-flexible';
import { AppError } from '../shared/errors.ts';
import { RateLimiterRes, type RateLimiterStore } from '../db/knex.ts';

/**
 * Every rate limit of the service: how many tries a key gets in a window. Keys are an account
 * (an email or tilde id, lower-cased) or a client address. The counters are in the database, so
 * every process on it shares them.
 */
export const RATE_LIMITS = {
  /**
   * Password attempts on one account from browsers without its device cookie (`accounts/device-cookies.ts`):
   * past it, each attempt needs human verification (`POST /login`'s `token`) instead of being refused.
   */
  loginAccount: { points: 10, seconds: 15 * 60 },
  /** Password attempts on one account from one browser that signed in to it before (its device cookie), or from one signed-in session. */
  loginDevice: { points: 10, seconds: 15 * 60 },
  /** Password attempts from one address, over all accounts. */
  loginAddress: { points: 100, seconds: 15 * 60 },
  /** Passwordless passkey ceremonies begun from one address (each stores a challenge). */
  passkeyOptionsAddress: { points: 100, seconds: 15 * 60 },
  /** Sign-ups with one email (each one mails that address), and from one client address. */
  registerAccount: { points: 5, seconds: 60 * 60 },
  registerAddress: { points: 20, seconds: 60 * 60 },
  /** Reset mails asked for one account, and from one address. */
  resetAccount: { points: 5, seconds: 60 * 60 },
  /** Reset mails asked for one account from a browser that signed in to it before: its own allowance, which strangers' requests never use up. */
  resetDevice: { points: 5, seconds: 60 * 60 },
  resetAddress: { points: 30, seconds: 60 * 60 },
  /** New passwords set through reset links from one address (made-up tokens count too). */
  setPasswordAddress: { points: 20, seconds: 60 * 60 },
  /** Activation mails re-sent for one account, and from one address. */
  resendAccount: { points: 5, seconds: 60 * 60 },
  resendAddress: { points: 30, seconds: 60 * 60 },
  /** Confirmation codes mailed for one profile, and to one address (whoever asks). */
  confirmEmailAccount: { points: 10, seconds: 60 * 60 },
  confirmEmailAddress: { points: 5, seconds: 60 * 60 },
  /** Wrong 6-digit codes typed for one address, over all its tokens: guessing stays hopeless. */
  wrongCodeAddress: { points: 20, seconds: 24 * 60 * 60 },
  /** Second-factor codes mailed for one person (each `/mfa/challenge` with `emailOtp`). */
  mfaEmailAccount: { points: 5, seconds: 15 * 60 },
  /** Wrong second-step codes from one browser that signed in to the account before: its own lockout, apart from the person's (`mfa/second-factor.ts`). */
  mfaDevice: { points: 5, seconds: 15 * 60 },
  /** Second-step attempts (`/mfa/challenge`, `/mfa/verify`, re-authentication) from one address, over all accounts; the person's own lockout is in `mfa/second-factor.ts`. */
  mfaAddress: { points: 100, seconds: 15 * 60 },
  /** Device requests (RFC 8628, `oidc/device.ts`) from one address: each is stored for ten minutes. */
  deviceAuthorizationAddress: { points: 100, seconds: 15 * 60 },
  /** Wrong user codes typed on the device page by one person, and from one address: a code's 34.6 bits stay out of a guesser's reach. */
  deviceCodeAccount: { points: 10, seconds: 15 * 60 },
  deviceCodeAddress: { points: 100, seconds: 15 * 60 },
  /** Sign-in requests stored for the login and consent pages (`oidc/authorize.ts`), by address: each is a row for ten minutes. */
  authorizationRequestAddress: { points: 1000, seconds: 15 * 60 },
  /** Applications a signed-in person registers from the account pages, by person and by address: each waits in the operators' queue. */
  registerApplicationAccount: { points: 10, seconds: 24 * 60 * 60 },
  registerApplicationAddress: { points: 100, seconds: 24 * 60 * 60 },
} as const;

export type RateLimitName = keyof typeof RATE_LIMITS;

export class RateLimits {
  readonly #limiters: Record<RateLimitName, RateLimiterAbstract>;
  /** One call at a time: a flood of counted requests queues here, not on the database. */
  #queue: Promise<unknown> = Promise.resolve();
  /** Where each refusal is counted, by the limit's name (`metrics/events.ts`). */
  readonly #metrics: { rateLimited(limit: RateLimitName): void } | undefined;

  constructor(store: RateLimiterStore, metrics?: { rateLimited(limit: RateLimitName): void }) {
    this.#metrics = metrics;
    const entries = Object.entries(RATE_LIMITS).map(([name, rule]) => [
      name,
      store.limiter({ keyPrefix: name, points: rule.points, duration: rule.seconds }),
    ]);
    this.#limiters = Object.fromEntries(entries) as Record<RateLimitName, RateLimiterAbstract>;
  }

  #serial<T>(work: () => Promise<T>): Promise<T> {
    const run = this.#queue.then(work, work);
    this.#queue = run.catch(() => undefined);
    return run;
  }

  /** Gives back a try counted by `consume` (a login that turned out right). */
  async refund(name: RateLimitName, key: string): Promise<void> {
    await this.#serial(() => this.#limiters[name].reward(key.toLowerCase(), 1));
  }

  /** Counts one try, answering how many are left; past the limit, a 429 `TooManyError` saying when to try again. */
  async consume(name: RateLimitName, key: string): Promise<{ remaining: number; msBeforeNext: number }> {
    try {
      const res = await this.#serial(() => this.#limiters[name].consume(key.toLowerCase()));
      return { remaining: res.remainingPoints, msBeforeNext: res.msBeforeNext };
    } catch (error) {
      if (!(error instanceof RateLimiterRes)) throw error;
      this.#metrics?.rateLimited(name);
      throw tooMany(error.msBeforeNext);
    }
  }
}

function tooMany(msBeforeNext: number): AppError {
  const retryAfter = Math.max(1, Math.ceil(msBeforeNext / 1000));
  return new AppError('TooManyError', `Too many attempts. Please try again in ${retryAfter} seconds.`, { retryAfter });
}
