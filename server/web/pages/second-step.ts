/**
 * The second step of a sign-in, after the password, and "Confirm it is you": how each method is
 * named, and a refusal as a person reads it (the lockout in the pages' own words and time).
 */
import type { Request } from 'express';
import { toAppError } from '../../errors.ts';
import { refusalOf, type FieldError } from '../render.ts';
import { when } from './kit.ts';

/** How the pages name each second-step method. */
export const METHOD_WORDS: Record<string, string> = {
  totp: 'A code from your authenticator app',
  emailOtp: 'A code sent to your email',
  passkey: 'Your passkey',
  recovery: 'A recovery code',
};

/**
 * A second-step (or "Confirm it is you") refusal as a person reads it: a wrong code (or
 * password) is tied to the field it was typed in, `field` (aria-invalid, and a link in the error
 * summary), whether or not the service's error names a path: "Invalid verification code" names
 * none. A refusal of the method itself, a passkey's (no field to type in), and the lockout (which
 * says until when, in the pages' own time format) stay on the summary alone.
 */
export function secondStepErrors(req: Request, error: unknown, field: string): { status: number; errors: FieldError[] } {
  const app = toAppError(error, undefined);
  const refusal = refusalOf(req, error, (at) => (at === 'method' ? '' : field));
  const until = typeof app.details?.lockedUntil === 'string' ? Date.parse(app.details.lockedUntil) : Number.NaN;
  if (!Number.isNaN(until)) {
    return { status: refusal.status, errors: [{ field: '', message: `Account temporarily locked due to too many failed MFA attempts. You can try again after ${when(until)}.` }] };
  }
  // Only a refusal of what was typed (400): not a 5xx, not "confirm again", not a rate limit.
  if (field === '' || app.status !== 400) return { status: refusal.status, errors: refusal.errors.map((e) => ({ ...e, field: '' })) };
  return { status: refusal.status, errors: refusal.errors.map((e) => (e.field === '' && typeof app.details?.path !== 'string' ? { ...e, field } : e)) };
}
