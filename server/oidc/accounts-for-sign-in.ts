import type { OidcScope } from '../../shared/index.ts';
import type { SessionHolder } from '../accounts/session-rule.ts';

/** A person as the provider sees them: who, and what the session rule (`canHoldSession`) reads. */
export interface SignInProfile extends SessionHolder {
  id: string;
}

/** The claims about a person that scopes release, besides `sub`, in the order they are sent. */
export interface PersonClaims {
  /** `profile` scope. */
  name?: string;
  /** `email` scope, when the person has an address. */
  email?: string;
  email_verified?: boolean;
}

/**
 * What the provider asks of the accounts area. Profiles and their addresses are accounts' tables;
 * the provider reads them only through this (implemented by `accounts/sign-in-view.ts`).
 */
export interface AccountsForSignIn {
  /**
   * The person a code or token was issued to, with the claims `scopes` release about them, from
   * one reading of the profile (UserInfo and the token endpoint need both); null when there is
   * no such profile.
   */
  profileWithClaims(profileId: string, scopes: readonly OidcScope[]): Promise<{ profile: SignInProfile; claims: PersonClaims } | null>;
  /**
   * How the person's sign-in at `authTime` (ms) was proved: RFC 8176 `amr` and an `acr`; null
   * when it is not known (a session opened by activation, or before this was recorded).
   */
  signInProof(profileId: string, authTime: number): Promise<{ amr: string[]; acr: string } | null>;
  /**
   * Tells the person's activity log what happened with an application: `app:granted` (a consent
   * given or widened), `app:revoked` (withdrawn), and that the sign-in of session `sessionId`
   * was made on `client`'s sign-in page (`signedInThrough`).
   */
  recordApplication(profileId: string, action: 'app:granted' | 'app:revoked', client: { clientId: string; name: string; scopes?: readonly string[] }): Promise<void>;
  signedInThrough(profileId: string, sessionId: string, clientName: string): Promise<void>;
}
