/**
 * The contract between multi-factor sign-in (`service.ts` of this folder: pending sign-ins,
 * `/mfa/challenge`, `/mfa/verify`, status) and passkeys (`passkeys.ts`: WebAuthn credentials,
 * their ceremonies and counters). Multi-factor sign-in asks only what is here, so either side
 * can change its storage without the other noticing.
 *
 * Binary fields are base64url strings, as `@simplewebauthn/server` and the real platform's
 * clients exchange them.
 */
import type {
  AuthenticationResponseJSON,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';

export interface PasskeySummary {
  credentialId: string;
  name: string;
  /** Epoch milliseconds. */
  createdAt: number;
  lastUsedAt: number | null;
}

/** Who a passkey assertion proved, and how (for `amr`: `hwk` when the key is device-bound, `swk` when synced). */
export interface PasskeyProof {
  userId: string;
  credentialId: string;
  userVerified: boolean;
  backedUp: boolean;
}

export interface PasskeyFactor {
  /** How many passkeys the person has; the `passkey` method is on when this is above 0. */
  count(userId: string): Promise<number>;
  list(userId: string): Promise<PasskeySummary[]>;
  /** Creation options for a new passkey of the person (a stored, single-use challenge). */
  registrationOptions(userId: string): Promise<PublicKeyCredentialCreationOptionsJSON>;
  /** Checks the authenticator's answer to the person's latest creation options and keeps the passkey. */
  register(userId: string, response: RegistrationResponseJSON, name: string): Promise<PasskeySummary>;
  /** False when the person has no such passkey. */
  remove(userId: string, credentialId: string): Promise<boolean>;
  /**
   * Request options: for one person (a second factor; `allowCredentials` lists their passkeys),
   * or for anyone (`userId` null: a passwordless sign-in with a discoverable credential).
   * `challengeKey` names the ceremony (a pending sign-in's id, or a fresh one the caller keeps).
   */
  authenticationOptions(opts: { userId: string | null; challengeKey: string }): Promise<PublicKeyCredentialRequestOptionsJSON>;
  /**
   * Checks an assertion against the challenge stored under `challengeKey` (used once) and, when
   * `userId` is given, that the passkey is that person's; updates the signature counter and
   * refuses a counter that went backwards. Throws the service's ValidationError on any failure.
   */
  authenticate(response: AuthenticationResponseJSON, opts: { userId: string | null; challengeKey: string }): Promise<PasskeyProof>;
}
