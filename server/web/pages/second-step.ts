/**
 * The second step of a sign-in, after the password, and "Confirm it is you": how each method is
 * named, a refusal as a person reads it (the lockout in the pages' own words and time), and the
 * one second-step page (`templates/second-step.eta`) that both the account pages'
 * (`/account/login`) and the sign-in provider's login (`/oidc/login`) show.
 */
import type { Request } from 'express';
import type { MfaVerifyInput } from '../../../shared/index.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { LOCK_SECONDS } from '../../accounts/mfa/second-factor.ts';
import { toAppError } from '../../errors.ts';
import { jsonFieldValue } from '../passkey-forms.ts';
import { refusalOf, when, type FieldError } from '../render.ts';
import { serviceRefusal, type Caller } from './kit.ts';

/** The second step's form as both sign-in pages post it. */
export interface SecondStepForm {
  token: string;
  method: string;
  /** A typed code, or a passkey's answer as JSON text (`/webauthn/passkey.js`). */
  code: string;
  /** `send-email`: "Send me a code by email"; anything else checks the code. */
  step: string;
  rememberDevice: boolean;
}

/**
 * The methods of a pending sign-in, as `POST /mfa/verify`'s procedures see it: none when it
 * expired, was finished, or the token is not one of ours (a refusal of its shape included).
 */
export async function pendingMethods(caller: Caller, token: string): Promise<string[]> {
  try {
    return (await caller.accounts.mfa.pendingMethods({ mfaPendingToken: token })).methods;
  } catch (error) {
    if (serviceRefusal(error)) return [];
    throw error;
  }
}

/**
 * Submits the second step through the procedures `POST /mfa/challenge` and `POST /mfa/verify`
 * call (the latter sets the session's cookies, and the remembered-device cookie when asked):
 * `sent` when a code was mailed, `verified` when the person is signed in. A refusal is thrown.
 */
export async function submitSecondStep(caller: Caller, form: SecondStepForm): Promise<'sent' | 'verified'> {
  if (form.step === 'send-email') {
    await caller.accounts.mfa.challenge({ mfaPendingToken: form.token, method: 'emailOtp' });
    return 'sent';
  }
  const code = form.method === 'passkey' ? jsonFieldValue(form.code) : form.code;
  // The procedure checks the method and the code's shape.
  await caller.accounts.mfa.verify({ mfaPendingToken: form.token, method: form.method, code, rememberDevice: form.rememberDevice } as MfaVerifyInput);
  return 'verified';
}

/** A pending sign-in's second step: its token, the person's methods, the one to check, and "remember this device". */
export interface PendingStep {
  token: string;
  methods: string[];
  method: string;
  rememberDevice?: boolean;
}

/**
 * Where the second step is shown, and the little that differs between the two places: the
 * account pages show a refusal in the layout's error summary (the Code field tied to it by the
 * field template) and name the mail button "Send me a code by email"; the provider's page shows
 * its refusal on one line (`stepError`) and names it "Send a code by email", as each place's
 * tests (test/web/two-step.test.ts, test/oidc/mfa.test.ts) and the clients' habits expect.
 */
export type StepPlace = { kind: 'account'; next: string } | { kind: 'provider'; interactionId: string; clientName: string; error?: string | undefined };

/**
 * The data of `templates/second-step.eta` (besides the page's frame): the code methods with the
 * preferred one checked (or the first when the passkey is preferred, whose button comes first),
 * the passkey button, the mail button.
 */
export function secondStepData(step: PendingStep, place: StepPlace, sent = false): Record<string, unknown> {
  const choices = [...step.methods.filter((m) => m !== 'passkey'), 'recovery'].map((m) => ({ value: m, label: METHOD_WORDS[m] ?? m }));
  const method = choices.some((c) => c.value === step.method) ? step.method : (choices[0]?.value ?? 'recovery');
  const common = {
    token: step.token,
    choices,
    method,
    passkey: step.methods.includes('passkey'),
    canMail: step.methods.includes('emailOtp'),
    rememberDevice: step.rememberDevice === true,
    sent,
  };
  if (place.kind === 'account') {
    return {
      ...common,
      action: `${PAGES_PREFIX}/login`,
      hidden: place.next ? [{ name: 'next', value: place.next }] : [],
      intro: 'Your password was right. This account asks for a second step.',
      sendLabel: 'Send me a code by email',
      restart: `${PAGES_PREFIX}/login`,
    };
  }
  return {
    ...common,
    action: '/oidc/login',
    hidden: [{ name: 'interaction', value: place.interactionId }],
    intro: `Signing in to ${place.clientName} needs a second step.`,
    sendLabel: 'Send a code by email',
    stepError: place.error ?? '',
    // A refusal of a typed code is tied to the Code field (not a passkey's, which has none).
    codeError: Boolean(place.error) && step.method !== 'passkey',
  };
}

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
  // A wrong code says how many more the lockout allows (`details.triesLeft`, the service's count).
  const triesLeft = app.status === 400 && typeof app.details?.triesLeft === 'number' ? app.details.triesLeft : null;
  const errors = triesLeft === null ? refusal.errors : refusal.errors.map((e) => ({ ...e, message: triesLeftWords(app.details?.reason === 'wrong-code' ? 'Wrong code.' : e.message, triesLeft) }));
  // Only a refusal of what was typed (400): not a 5xx, not "confirm again", not a rate limit.
  if (field === '' || app.status !== 400) return { status: refusal.status, errors: errors.map((e) => ({ ...e, field: '' })) };
  return { status: refusal.status, errors: errors.map((e) => (e.field === '' && typeof app.details?.path !== 'string' ? { ...e, field } : e)) };
}

/** "Wrong code. 2 tries left before sign-in is locked for 15 minutes." */
export function triesLeftWords(refused: string, triesLeft: number): string {
  const minutes = LOCK_SECONDS / 60;
  if (triesLeft <= 0) return `${refused} The next wrong code locks sign-in for ${minutes} minutes.`;
  return `${refused} ${triesLeft} ${triesLeft === 1 ? 'try' : 'tries'} left before sign-in is locked for ${minutes} minutes.`;
}
