import { AppError, DEFAULT_SESSION_SECONDS } from '../../../shared/index.ts';
import type { AuthenticationResponseJSON, PublicKeyCredentialRequestOptionsJSON } from '@simplewebauthn/server';
import { countedSignIn } from '../../metrics/events.ts';
import { randomToken } from '../../secrets.ts';
import { addressKey } from '../ids.ts';
import { AccountsBase, type AccountsDeps } from '../service-base.ts';
import { preferredEmail } from '../profiles.ts';
import { ACTIVE_STATES } from '../session-rule.ts';
import { inactiveMessage } from '../sessions.ts';
import type { SignInBrowser, SignInService } from '../sign-in.ts';
import type { IssuedSession, RequestOrigin } from '../viewer.ts';
import type { PasskeyFactor, PasskeyProof } from '../mfa/passkey-factor.ts';

type PasskeySignInInput = { challengeId: string; response: AuthenticationResponseJSON; expiresIn?: number | null | undefined };

/**
 * Signing in with a passkey alone (a discoverable credential that verified the person: PIN or
 * biometrics), without a password: through the API (`POST /login/passkey/options`, then
 * `POST /login/passkey`) and on the sign-in provider's login page. A passkey that verified its
 * holder is two factors by itself (something held, and something known or been), so no second
 * step follows: `amr` says `hwk` or `swk`, and `mfa`.
 *
 * Failures count against the address's sign-in limit, as wrong passwords do; beginning a ceremony
 * (which stores a challenge) has a limit of its own.
 */
export class PasskeySignIn extends AccountsBase {
  readonly #passkeys: PasskeyFactor;
  readonly #signIn: Pick<SignInService, 'open'>;

  constructor(deps: AccountsDeps, passkeys: PasskeyFactor, signIn: Pick<SignInService, 'open'>) {
    super(deps);
    this.#passkeys = passkeys;
    this.#signIn = signIn;
  }

  /** Request options for anyone's passkey, and the id of the ceremony to send back with the answer. */
  async options(origin: RequestOrigin): Promise<{ challengeId: string; options: PublicKeyCredentialRequestOptionsJSON }> {
    await this.deps.limits.consume('passkeyOptionsAddress', addressKey(origin.address));
    const challengeId = randomToken();
    const options = await this.#passkeys.authenticationOptions({ userId: null, challengeKey: `sign-in:${challengeId}` });
    return { challengeId, options };
  }

  /** Checks the assertion against its ceremony and opens a session for the passkey's owner (counted in the metrics: `passkey`). */
  signIn(input: PasskeySignInInput, origin: RequestOrigin, browser: SignInBrowser = {}): Promise<{ session: IssuedSession; proof: PasskeyProof }> {
    return countedSignIn(this.deps.metrics, 'passkey', () => this.#signInWithPasskey(input, origin, browser));
  }

  async #signInWithPasskey(input: PasskeySignInInput, origin: RequestOrigin, browser: SignInBrowser): Promise<{ session: IssuedSession; proof: PasskeyProof }> {
    const address = addressKey(origin.address);
    await this.deps.limits.consume('loginAddress', address);
    const proof = await this.#passkeys.authenticate(input.response, { userId: null, challengeKey: `sign-in:${input.challengeId}` });
    await this.deps.limits.refund('loginAddress', address);
    const repo = this.deps.repo;
    const found = await repo.profiles.find(proof.userId);
    const profile = found?.mergedInto ? await repo.profiles.find(found.mergedInto) : found;
    if (!profile || profile.ddate !== null) throw new AppError('BadRequestError', 'This passkey’s account no longer exists');
    if (!ACTIVE_STATES.has(profile.state)) throw new AppError('ForbiddenError', inactiveMessage(profile.state));
    const emails = await repo.emails.emailsOf(profile.id);
    // Recorded with how it was proved, for the sign-in provider's `amr` and `acr`, as a password sign-in is.
    const session = await this.#signIn.open(profile, preferredEmail(profile, emails) ?? profile.id, input.expiresIn ?? DEFAULT_SESSION_SECONDS, passkeyAmr(proof), origin, 'passkey', browser);
    return { session, proof };
  }
}

/** RFC 8176 `amr` values of a passkey sign-in: a device-bound key is `hwk`, a synced one `swk`; with user verification, `mfa` too. */
export function passkeyAmr(proof: Pick<PasskeyProof, 'backedUp' | 'userVerified'>): string[] {
  return [proof.backedUp ? 'swk' : 'hwk', ...(proof.userVerified ? ['mfa'] : [])];
}
