import type { Logger } from 'pino';
import { AppError } from '../../shared/errors.ts';

/** The only token development mode accepts. */
export const DEVELOPMENT_TOKEN = 'dev-ok';

/**
 * Checks a human-verification token (the answer of a challenge widget on the page) before
 * registration, password-reset requests and uploads past their rate limit.
 *
 * With `HUMAN_VERIFICATION_URL` and `HUMAN_VERIFICATION_SECRET` set, the token is posted to that
 * Turnstile-style `siteverify` endpoint (form fields `secret`, `response`, `remoteip`), which
 * answers `{success: boolean}`. With neither set the service is in development mode and accepts
 * only the token `dev-ok`.
 */
export class HumanVerifier {
  readonly #remote: { url: string; secret: string } | undefined;

  constructor(remote: { url: string; secret: string } | undefined, logger: Logger) {
    this.#remote = remote;
    if (!remote) {
      logger.warn(`human verification is in development mode: only the token "${DEVELOPMENT_TOKEN}" is accepted`);
    }
  }

  get mode(): 'development' | 'remote' {
    return this.#remote ? 'remote' : 'development';
  }

  async verify(token: string | null | undefined, remoteIp?: string): Promise<void> {
    if (!token) {
      throw new AppError('HumanVerificationRequiredError', 'Human verification is required: the token is missing', { path: 'token' });
    }
    if (!(await this.#check(token, remoteIp))) {
      throw new AppError('HumanVerificationRequiredError', 'Human verification failed: the token was not accepted', { path: 'token' });
    }
  }

  async #check(token: string, remoteIp: string | undefined): Promise<boolean> {
    if (!this.#remote) return token === DEVELOPMENT_TOKEN;
    const form = new URLSearchParams({ secret: this.#remote.secret, response: token });
    if (remoteIp) form.set('remoteip', remoteIp);
    let answer: unknown;
    try {
      const res = await fetch(this.#remote.url, { method: 'POST', body: form, signal: AbortSignal.timeout(10_000) });
      answer = await res.json();
    } catch {
      throw new AppError('ServiceUnavailableError', 'Human verification is not available right now. Please try again.');
    }
    return typeof answer === 'object' && answer !== null && (answer as { success?: unknown }).success === true;
  }
}
