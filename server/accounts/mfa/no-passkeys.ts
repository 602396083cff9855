import { AppError } from '../../../shared/errors.ts';
import type { PasskeyFactor, PasskeySummary } from './passkey-factor.ts';

/**
 * The `PasskeyFactor` of an install without passkeys: nobody has one, and every ceremony is a
 * 400 "passkeys are not available". Wired in `services.ts` until the passkeys area
 * (`passkeys.ts`, WebAuthn through `@simplewebauthn/server`) lands, which replaces it there.
 */
export class NoPasskeys implements PasskeyFactor {
  async count(): Promise<number> {
    return 0;
  }

  async list(): Promise<PasskeySummary[]> {
    return [];
  }

  async remove(): Promise<boolean> {
    return false;
  }

  async registrationOptions(): Promise<never> {
    throw unavailable();
  }

  async register(): Promise<never> {
    throw unavailable();
  }

  async authenticationOptions(): Promise<never> {
    throw unavailable();
  }

  async authenticate(): Promise<never> {
    throw unavailable();
  }
}

function unavailable(): AppError {
  return new AppError('BadRequestError', 'passkeys are not available');
}
