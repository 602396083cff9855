/**
 * Passkeys: WebAuthn credentials, their ceremonies and counters, with `@simplewebauthn/server`.
 * Implements `PasskeyFactor` (`passkey-factor.ts`), which multi-factor sign-in and the
 * passwordless sign-in (`passwordless.ts`) ask.
 *
 * Rules:
 * - Every ceremony's challenge is random, stored under a key, used once (taken by the check,
 *   whatever its outcome) and valid for `CEREMONY_MS`.
 * - A passkey is made for `config.webauthn.rpId` on one of `config.webauthn.origins`, as a
 *   discoverable credential (so it can sign in without a password); attestation is not asked.
 * - An assertion is checked against the challenge of its ceremony, the credential's stored public
 *   key, the origin and the rpId; when a person is named, the passkey must be theirs; a
 *   passwordless sign-in needs user verification. The signature counter must move forward
 *   (or stay 0, for authenticators that keep none): one that did not is a cloned authenticator
 *   or a replay, and is refused.
 * - Binary fields arrive base64url, as WebAuthn libraries send them, or plain base64, as the real
 *   platform's web client sends them (`btoa`); both are read. Challenges and user handles are
 *   drawn so that their base64url text holds no `-` or `_` (about two bits fewer of 256), so a
 *   client decoding them with `atob` reads the same bytes.
 */
import { randomBytes } from 'node:crypto';
import type {
  AuthenticationResponseJSON,
  AuthenticatorTransport,
  PublicKeyCredentialCreationOptionsJSON,
  PublicKeyCredentialRequestOptionsJSON,
  RegistrationResponseJSON,
} from '@simplewebauthn/server';

/**
 * The WebAuthn library, loaded at the first ceremony: most processes (the operator's commands,
 * a server nobody adds a passkey to) never need it, and it is a tenth of a second of every start.
 */
const webauthn = () => import('@simplewebauthn/server');
import type { Logger } from 'pino';
import { AppError } from '../../../shared/errors.ts';
import type { WebAuthnSettings } from '../../config.ts';
import { preferredEmail } from '../profiles.ts';
import type { AccountsRepository } from '../repository.ts';
import type { PasskeyFactor, PasskeyProof, PasskeySummary } from '../mfa/passkey-factor.ts';
import type { PasskeyRecord, PasskeysRepository } from './repository.ts';

/** How long a ceremony (its challenge) lasts: the browser's own timeout, and a little. */
export const CEREMONY_MS = 5 * 60 * 1000;
const MAX_NAME = 100;

/** What the refusals say; tests and clients read them. */
export const PASSKEY_ERRORS = {
  noChallenge: 'The passkey challenge is unknown, already used or expired: ask for a new one',
  notRegistered: 'This passkey is not registered',
  notYours: 'This passkey is not one of this account’s passkeys',
  noPasskeys: 'No passkey is set up for this account',
  counter: 'The passkey’s signature counter did not move forward: the assertion was replayed or the authenticator cloned',
  userVerification: 'The passkey did not verify the person (PIN or biometrics): a sign-in without a password needs it',
  alreadyRegistered: 'This passkey is already registered',
  invalid: 'The passkey answer could not be verified',
} as const;

const refuse = (message: string, details?: Record<string, unknown>) => new AppError('ValidationError', message, details);

/** A base64 or base64url text as base64url (no padding). */
export function toBase64Url(text: string): string {
  return text.replace(/\+/g, '-').replace(/\//g, '_').replace(/=+$/, '');
}

/** Random bytes whose base64url text is also plain base64 of the same bytes (no `-`, `_`). */
function plainRandom(bytes: number): Uint8Array<ArrayBuffer> {
  for (;;) {
    const value = randomBytes(bytes);
    if (!/[-_]/.test(value.toString('base64url'))) return new Uint8Array(value);
  }
}

function normaliseAssertion(response: AuthenticationResponseJSON): AuthenticationResponseJSON {
  const r = response.response;
  return {
    ...response,
    id: toBase64Url(response.id),
    rawId: toBase64Url(response.rawId),
    response: {
      ...r,
      clientDataJSON: toBase64Url(r.clientDataJSON),
      authenticatorData: toBase64Url(r.authenticatorData),
      signature: toBase64Url(r.signature),
      ...(r.userHandle ? { userHandle: toBase64Url(r.userHandle) } : {}),
    },
    clientExtensionResults: response.clientExtensionResults ?? {},
  };
}

function normaliseAttestation(response: RegistrationResponseJSON): RegistrationResponseJSON {
  const r = response.response;
  return {
    ...response,
    id: toBase64Url(response.id),
    rawId: toBase64Url(response.rawId),
    response: {
      ...r,
      clientDataJSON: toBase64Url(r.clientDataJSON),
      attestationObject: toBase64Url(r.attestationObject),
      ...(r.authenticatorData ? { authenticatorData: toBase64Url(r.authenticatorData) } : {}),
      ...(r.publicKey ? { publicKey: toBase64Url(r.publicKey) } : {}),
    },
    clientExtensionResults: response.clientExtensionResults ?? {},
  };
}

/** The flags and signature counter of authenticator data (WebAuthn §6.1): byte 32, bytes 33–36. */
function authenticatorFacts(base64url: string): { userVerified: boolean; counter: number } | null {
  const data = Buffer.from(base64url, 'base64url');
  if (data.length < 37) return null;
  return { userVerified: (data.readUInt8(32) & 0x04) !== 0, counter: data.readUInt32BE(33) };
}

const summary = (p: PasskeyRecord): PasskeySummary => ({ credentialId: p.credentialId, name: p.name, createdAt: p.createdAt, lastUsedAt: p.lastUsedAt });

/** The library's reason, for the log and the error's details; never a secret (it names ids and origins). */
const reasonOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

export interface PasskeyDeps {
  passkeys: PasskeysRepository;
  /** To name the person in creation options (their email and full name). */
  accounts: AccountsRepository;
  settings: WebAuthnSettings;
  logger: Logger;
  now: () => number;
}

export class PasskeyService implements PasskeyFactor {
  readonly #deps: PasskeyDeps;

  constructor(deps: PasskeyDeps) {
    this.#deps = deps;
  }

  count(userId: string): Promise<number> {
    return this.#deps.passkeys.countOf(userId);
  }

  async list(userId: string): Promise<PasskeySummary[]> {
    return (await this.#deps.passkeys.listOf(userId)).map(summary);
  }

  async registrationOptions(userId: string): Promise<PublicKeyCredentialCreationOptionsJSON> {
    const { passkeys, accounts, settings } = this.#deps;
    const profile = await accounts.profiles.find(userId);
    if (!profile) throw new AppError('NotFoundError', `Profile Not Found: ${userId}`);
    const emails = await accounts.emails.emailsOf(profile.id);
    const name = profile.content.names?.find((n) => n.preferred) ?? profile.content.names?.[0];
    const handle = await passkeys.ensureUserHandle(profile.id, Buffer.from(plainRandom(32)).toString('base64url'));
    const existing = await passkeys.listOf(profile.id);
    const challenge = plainRandom(32);
    const options = await (await webauthn()).generateRegistrationOptions({
      rpName: settings.rpName,
      rpID: settings.rpId,
      userName: preferredEmail(profile, emails) ?? profile.id,
      userDisplayName: name?.fullname || profile.id,
      userID: new Uint8Array(Buffer.from(handle, 'base64url')),
      challenge,
      timeout: CEREMONY_MS,
      attestationType: 'none',
      // One passkey per authenticator: the browser refuses to make a second one on a device that has one.
      excludeCredentials: existing.map((p) => ({ id: p.credentialId, transports: p.transports })),
      // Discoverable, so the passkey can also sign in without a password.
      authenticatorSelection: { residentKey: 'required', userVerification: 'preferred' },
    });
    await passkeys.putChallenge(`registration:${profile.id}`, {
      kind: 'registration',
      challenge: options.challenge,
      profileId: profile.id,
      expiresAt: this.#deps.now() + CEREMONY_MS,
    });
    return options;
  }

  async register(userId: string, response: RegistrationResponseJSON, name: string): Promise<PasskeySummary> {
    const { passkeys, settings } = this.#deps;
    const stored = await this.#takeChallenge(`registration:${userId}`, 'registration', userId);
    let verified;
    try {
      verified = await (await webauthn()).verifyRegistrationResponse({
        response: normaliseAttestation(response),
        expectedChallenge: stored.challenge,
        expectedOrigin: settings.origins,
        expectedRPID: settings.rpId,
        // A second factor need not verify the person; a passwordless sign-in asks for it then.
        requireUserVerification: false,
      });
    } catch (error) {
      this.#deps.logger.info({ reason: reasonOf(error) }, 'passkey registration refused');
      throw refuse(PASSKEY_ERRORS.invalid, { reason: reasonOf(error) });
    }
    if (!verified.verified) throw refuse(PASSKEY_ERRORS.invalid);
    const info = verified.registrationInfo;
    const now = this.#deps.now();
    const count = await passkeys.countOf(userId);
    const record: PasskeyRecord = {
      credentialId: info.credential.id,
      profileId: userId,
      publicKey: Buffer.from(info.credential.publicKey).toString('base64url'),
      counter: info.credential.counter,
      transports: info.credential.transports ?? response.response.transports ?? [],
      backedUp: info.credentialBackedUp,
      deviceType: info.credentialDeviceType,
      name: name.trim().slice(0, MAX_NAME) || `Passkey ${count + 1}`,
      createdAt: now,
      lastUsedAt: null,
    };
    if (!(await passkeys.insert(record))) throw refuse(PASSKEY_ERRORS.alreadyRegistered);
    return summary(record);
  }

  remove(userId: string, credentialId: string): Promise<boolean> {
    return this.#deps.passkeys.remove(userId, toBase64Url(credentialId));
  }

  async authenticationOptions(opts: { userId: string | null; challengeKey: string }): Promise<PublicKeyCredentialRequestOptionsJSON> {
    const { passkeys, settings } = this.#deps;
    let allowCredentials: Array<{ id: string; transports: AuthenticatorTransport[] }> | undefined;
    if (opts.userId !== null) {
      const mine = await passkeys.listOf(opts.userId);
      if (mine.length === 0) throw refuse(PASSKEY_ERRORS.noPasskeys);
      allowCredentials = mine.map((p) => ({ id: p.credentialId, transports: p.transports as AuthenticatorTransport[] }));
    }
    const options = await (await webauthn()).generateAuthenticationOptions({
      rpID: settings.rpId,
      challenge: plainRandom(32),
      timeout: CEREMONY_MS,
      // No list: the browser offers the person's discoverable passkeys for this site.
      ...(allowCredentials ? { allowCredentials } : {}),
      // A passkey alone replaces the password and the second factor, so it must verify the
      // person; as a second factor after the password, presence is enough.
      userVerification: opts.userId === null ? 'required' : 'preferred',
    });
    await passkeys.putChallenge(`authentication:${opts.challengeKey}`, {
      kind: 'authentication',
      challenge: options.challenge,
      profileId: opts.userId,
      expiresAt: this.#deps.now() + CEREMONY_MS,
    });
    // The real platform's clients read `allowCredentials` as a list, also when it is empty.
    return { ...options, allowCredentials: options.allowCredentials ?? [] };
  }

  async authenticate(raw: AuthenticationResponseJSON, opts: { userId: string | null; challengeKey: string }): Promise<PasskeyProof> {
    const { passkeys, settings } = this.#deps;
    const response = normaliseAssertion(raw);
    // Taken first, so a failed attempt uses the challenge up too: every try needs new options.
    const stored = await this.#takeChallenge(`authentication:${opts.challengeKey}`, 'authentication', opts.userId);
    const passkey = await passkeys.find(response.id);
    if (!passkey) throw refuse(PASSKEY_ERRORS.notRegistered);
    if (opts.userId !== null && passkey.profileId !== opts.userId) throw refuse(PASSKEY_ERRORS.notYours);
    if (response.response.userHandle) {
      const handle = await passkeys.userHandleOf(passkey.profileId);
      if (handle !== response.response.userHandle) throw refuse(PASSKEY_ERRORS.notYours);
    }
    const passwordless = opts.userId === null;
    const { verifyAuthenticationResponse } = await webauthn();
    const check = (counter: number, requireUserVerification: boolean) =>
      verifyAuthenticationResponse({
        response,
        expectedChallenge: stored.challenge,
        expectedOrigin: settings.origins,
        expectedRPID: settings.rpId,
        credential: {
          id: passkey.credentialId,
          publicKey: new Uint8Array(Buffer.from(passkey.publicKey, 'base64url')),
          counter,
          transports: passkey.transports as AuthenticatorTransport[],
        },
        requireUserVerification,
      });
    let verified;
    try {
      verified = await check(passkey.counter, passwordless);
    } catch (error) {
      const reason = reasonOf(error);
      this.#deps.logger.info({ reason, credentialId: passkey.credentialId }, 'passkey assertion refused');
      // Which rule it broke, without reading the library's message: checked again without the
      // counter and user-verification rules, a signature that holds broke one of those two.
      const signed = await check(0, false).then((r) => r.verified, () => false);
      const facts = authenticatorFacts(response.response.authenticatorData);
      if (signed && facts && (facts.counter > 0 || passkey.counter > 0) && facts.counter <= passkey.counter) throw refuse(PASSKEY_ERRORS.counter);
      if (signed && facts && passwordless && !facts.userVerified) throw refuse(PASSKEY_ERRORS.userVerification);
      throw refuse(PASSKEY_ERRORS.invalid, { reason });
    }
    if (!verified.verified) throw refuse(PASSKEY_ERRORS.invalid);
    const info = verified.authenticationInfo;
    // The library refuses a counter that went backwards; this refuses a second use of the same
    // counter value that raced this one past that check.
    const recorded = await passkeys.recordUse(passkey.credentialId, passkey.counter, { counter: info.newCounter, backedUp: info.credentialBackedUp, at: this.#deps.now() });
    if (!recorded && info.newCounter !== 0) throw refuse(PASSKEY_ERRORS.counter);
    return { userId: passkey.profileId, credentialId: passkey.credentialId, userVerified: info.userVerified, backedUp: info.credentialBackedUp };
  }

  /** Deletes expired challenges. */
  sweep(): Promise<void> {
    return this.#deps.passkeys.sweep(this.#deps.now());
  }

  async #takeChallenge(key: string, kind: 'registration' | 'authentication', profileId: string | null) {
    const stored = await this.#deps.passkeys.takeChallenge(key);
    if (!stored || stored.kind !== kind || stored.expiresAt <= this.#deps.now() || stored.profileId !== profileId) {
      throw refuse(PASSKEY_ERRORS.noChallenge);
    }
    return stored;
  }
}
