import { AccountsBase, type AccountsDeps } from './service-base.ts';
import type { ProfileService } from './profiles.ts';
import type { SessionService } from './sessions.ts';
import type { SignUpService } from './sign-up.ts';

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
