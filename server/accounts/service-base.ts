import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Mailer } from '../mail/mailer.ts';
import type { Metrics } from '../metrics/events.ts';
import type { RateLimits } from '../rate-limits.ts';
import type { DeviceCookies } from './device-cookies.ts';
import type { HumanVerifier } from './human-verification.ts';
import type { OneTimeTokens } from './one-time-tokens.ts';
import type { PasswordHasher } from './passwords.ts';
import type { AccountsRepository } from './repository.ts';
import type { SessionTokens } from './session-tokens.ts';

/** What every accounts service is built from; services.ts makes one set per process. */
export interface AccountsDeps {
  repo: AccountsRepository;
  hasher: PasswordHasher;
  tokens: SessionTokens;
  oneTime: OneTimeTokens;
  verifier: HumanVerifier;
  /** Signs and reads the browsers' device cookies (per-browser sign-in allowances). */
  devices: DeviceCookies;
  limits: RateLimits;
  mailer: Mailer;
  config: Config;
  logger: Logger;
  /** What sign-ins, lockouts and enrolments are counted into (`metrics/events.ts`); unset, nothing is. */
  metrics?: Metrics;
  now?: () => number;
}

/** The shared dependencies and the clock, for every accounts service. */
export abstract class AccountsBase {
  protected readonly deps: AccountsDeps;

  constructor(deps: AccountsDeps) {
    this.deps = deps;
  }

  protected now(): number {
    return (this.deps.now ?? Date.now)();
  }
}
