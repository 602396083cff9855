import type { Logger } from 'pino';
import type { Config } from '../config.ts';
import type { Mailer } from '../mail/mailer.ts';
import type { Metrics } from '../metrics/events.ts';
import type { RateLimits } from '../rate-limits.ts';
import type { DeviceCookies } from './device-cookies.ts';
import type { HumanVerifier } from './human-verification.ts';
import type { OneTimeTokens } from './one-time-tokens.ts';
import type { PasswordHasher } from './passwords.ts';
import type { ProfileService } from './profiles.ts';
import type { AccountsRepository } from './repository.ts';
import type { SessionService } from './sessions.ts';
import type { SessionTokens } from './session-tokens.ts';
import type { SignUpService } from './sign-up.ts';

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

/** Members of this group may do anything; the operator CLI adds them (`--role superuser`). */
export const SUPER_USERS_GROUP = 'Service/Superusers';
/** Members of this group decide on profiles; the operator CLI adds them (`--role moderator`). */
export const MODERATORS_GROUP = 'Service/Moderators';

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

/** The three services the others build on: sign-up, sessions, profiles. */
export interface AccountsCore {
  signUp: SignUpService;
  sessions: SessionService;
  profiles: ProfileService;
}

/** What every accounts service beside the core is built from: the shared dependencies and the core. */
export abstract class AccountsPart extends AccountsBase {
  protected readonly core: AccountsCore;

  constructor(deps: AccountsDeps, core: AccountsCore) {
    super(deps);
    this.core = core;
  }
}
