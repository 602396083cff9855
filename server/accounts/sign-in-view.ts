import type { OidcScope } from '../../shared/index.ts';
import type { AccountsForSignIn, PersonClaims, SignInProfile } from '../oidc/accounts-for-sign-in.ts';
import { acrOf } from './mfa/second-factor.ts';
import type { MfaRepository } from './mfa/repository.ts';
import type { AccountsRepository } from './repository.ts';
import { preferredEmail } from './profiles.ts';

/** Accounts as the sign-in provider reads them: a person's standing and the claims about them. */
export class SignInView implements AccountsForSignIn {
  readonly #repo: AccountsRepository;
  readonly #mfa: MfaRepository;

  readonly #now: () => number;

  constructor(repo: AccountsRepository, mfa: MfaRepository, now: () => number = Date.now) {
    this.#repo = repo;
    this.#mfa = mfa;
    this.#now = now;
  }

  /** The weakest of the person's sign-ins at that moment (there is normally one). */
  async signInProof(profileId: string, authTime: number): Promise<{ amr: string[]; acr: string } | null> {
    const amr = (await this.#mfa.signInsAt(profileId, authTime))[0];
    return amr ? { amr, acr: acrOf(amr) } : null;
  }

  async recordApplication(profileId: string, action: 'app:granted' | 'app:revoked', client: { clientId: string; name: string; scopes?: readonly string[] }): Promise<void> {
    const details = { clientId: client.clientId, client: client.name, ...(client.scopes ? { scopes: [...client.scopes] } : {}) };
    await this.#repo.settings.audit({ actor: profileId, action, target: profileId, details }, this.#now());
  }

  /** The session's sign-in (its row of `mfa_sign_ins`, and its line of the activity log) was made on an application's sign-in page. */
  async signedInThrough(profileId: string, sessionId: string, clientName: string): Promise<void> {
    await this.#mfa.setSignInClient(sessionId, clientName);
    const recent = await this.#repo.settings.auditPageOf(profileId, 10);
    const line = recent.find((e) => e.action === 'sign-in' && e.details?.sessionId === sessionId);
    if (line) await this.#repo.settings.amendAudit(line.id, { ...line.details, client: clientName.slice(0, 200) });
  }

  /**
   * The person's standing, and the claims `scopes` release: `name`, the preferred name (its full
   * form, or its parts), else the profile id; `email`, the preferred address.
   */
  async profileWithClaims(profileId: string, scopes: readonly OidcScope[]): Promise<{ profile: SignInProfile; claims: PersonClaims } | null> {
    const profile = await this.#repo.profiles.find(profileId);
    if (!profile) return null;
    const claims: PersonClaims = {};
    if (scopes.includes('profile')) {
      const name = profile.content.names?.find((n) => n.preferred) ?? profile.content.names?.[0];
      claims.name = name?.fullname || [name?.first, name?.middle, name?.last].filter(Boolean).join(' ') || profile.id;
    }
    if (scopes.includes('email')) {
      const emails = await this.#repo.emails.emailsOf(profile.id);
      const email = preferredEmail(profile, emails);
      if (email) {
        claims.email = email;
        claims.email_verified = emails.find((e) => e.email === email)?.confirmed ?? false;
      }
    }
    return { profile: { id: profile.id, state: profile.state, ddate: profile.ddate, tokenVersion: profile.tokenVersion }, claims };
  }
}
