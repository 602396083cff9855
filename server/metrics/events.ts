/**
 * What the services tell the metrics (`docs/metrics.md`): small calls with closed lists of label
 * values, so no service imports the metrics library and no label can ever carry an id, an email, a
 * token or a path. `registry.ts` counts them; `NO_METRICS` ignores them (metrics off: no
 * `METRICS_PORT`, the admin command, services built by hand in tests).
 */
import type { MfaMethod, OidcGrantType } from '../../shared/index.ts';
import type { RateLimitName } from '../rate-limits.ts';
import type { MailBacklog } from '../mail/outbox-repository.ts';
import type { DeliveryOutcome } from '../mail/outbox.ts';

/**
 * How a sign-in attempt proved (or tried to prove) the person: `password` (`POST /login`, the
 * account pages', the provider's login page), a second step (`totp`, `email_code`,
 * `recovery_code`, `passkey`), a passkey alone (`passkey`), or a sign-in to an application through
 * the provider (`oidc`).
 */
export type SignInMethod = 'password' | 'totp' | 'email_code' | 'recovery_code' | 'passkey' | 'oidc';

/**
 * `success`: a session was opened (for `oidc`: the application was given its code);
 * `second_step_required`: the password was right and a second factor is asked next;
 * `failure`: no session, for whatever reason (a wrong password or code, an unknown account, an
 * account that may not sign in, a limit or a lockout; for `oidc`: the person refused, or the
 * application asked for a silent sign-in or a second factor the person could not give).
 */
export type SignInOutcome = 'success' | 'failure' | 'second_step_required';

/**
 * The moment a lock begins (not each attempt it then refuses): `second_step`, the person's second
 * step after too many wrong codes (`mfa/second-factor.ts`); `second_step_browser`, one remembered
 * browser's own allowance of wrong codes used up.
 */
export type Lockout = 'second_step' | 'second_step_browser';

/** The factors a person turns on: an authenticator app, codes by mail, a passkey. */
export type MfaFactor = 'totp' | 'email_code' | 'passkey';

/** `whole`: `PUT /attachment`; `chunk`: `PUT /attachment/chunk`; `tus`: a tus `PATCH` (or a creation with its body). */
export type UploadKind = 'whole' | 'chunk' | 'tus';
/** `ok`: answered 2xx; `refused`: the service refused it (4xx); `error`: it failed (5xx). */
export type UploadOutcome = 'ok' | 'refused' | 'error';
/** `done`: the file is stored; `refused`: the file as a whole was refused; `error`: it failed and may be tried again. */
export type AssemblyOutcome = 'done' | 'refused' | 'error';

/** `sent`: delivered; `retry`: a temporary failure, tried again later; `failed`: given up on (`mail/outbox.ts`). */
export type MailDelivery = DeliveryOutcome;

/** What the services count. Every method is cheap and never throws. */
export interface Metrics {
  signIn(method: SignInMethod, outcome: SignInOutcome): void;
  lockout(lock: Lockout): void;
  /** A try the rate limiter said no to (`rate-limits.ts`). */
  rateLimited(limit: RateLimitName): void;
  mfaEnrolled(factor: MfaFactor): void;
  /** Tokens issued at the token endpoint, by grant type and by the client's id (`registry.ts` bounds how many). */
  oidcTokens(grantType: OidcGrantType, clientId: string): void;
  /** An upload request that reached the service with its file: its bytes, and how it ended. */
  upload(kind: UploadKind, bytes: number, outcome: UploadOutcome): void;
  /** A chunk stored (the first time: a chunk sent again is not counted). */
  chunkStored(): void;
  assembly(outcome: AssemblyOutcome): void;
  /** One delivery attempt of the mail outbox's worker. */
  mailDelivery(outcome: MailDelivery): void;
  /** The outbox's backlog, read on each scrape; a failed read is logged and counted, and its gauges are left out. */
  watchMailBacklog(read: () => Promise<MailBacklog>): void;
}

/** The label value of a second-step method. */
export function secondStepMethod(method: MfaMethod): SignInMethod {
  switch (method) {
    case 'totp':
      return 'totp';
    case 'emailOtp':
      return 'email_code';
    case 'recovery':
      return 'recovery_code';
    case 'passkey':
      return 'passkey';
    default:
      return method satisfies never;
  }
}

/**
 * Runs a sign-in attempt and counts it: `outcomeOf` its answer, or `failure` when it throws
 * (the error goes on as it was).
 */
export async function countedSignIn<T>(metrics: Metrics | undefined, method: SignInMethod, attempt: () => Promise<T>, outcomeOf: (answer: T) => SignInOutcome = () => 'success'): Promise<T> {
  let answer: T;
  try {
    answer = await attempt();
  } catch (error) {
    metrics?.signIn(method, 'failure');
    throw error;
  }
  metrics?.signIn(method, outcomeOf(answer));
  return answer;
}

const nothing = () => undefined;

/** Metrics off: every call does nothing. */
export const NO_METRICS: Metrics = {
  signIn: nothing,
  lockout: nothing,
  rateLimited: nothing,
  mfaEnrolled: nothing,
  oidcTokens: nothing,
  upload: nothing,
  chunkStored: nothing,
  assembly: nothing,
  mailDelivery: nothing,
  watchMailBacklog: nothing,
};
