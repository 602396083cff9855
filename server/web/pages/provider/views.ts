/**
 * The pages a person sees while signing in to another application: the login page (with "Sign
 * in with a passkey"), the second step, the consent page and the error page. They are `eta`
 * templates (`server/web/templates/oidc/`) inside the account pages' one layout and stylesheet,
 * rendered by the account pages' renderer, which escapes every value by construction. Every form
 * carries a CSRF token; the one script (`server/web/assets/passkey.js`) only adds the passkey buttons.
 * Every error these pages show comes with the request's id, to quote to support.
 */
import { renderPage } from '../../render.ts';
import { scopeWords } from '../../../oidc/interactions.ts';
import { secondStepData } from '../second-step.ts';

/** `verification`: the account's attempts ran out for this browser, so the form asks for human verification too. */
export function loginPage(opts: {
  interactionId: string;
  csrf: string;
  clientName: string;
  resetUrl: string;
  requestId: string;
  /** The refusal, in the account pages' error summary (`FieldError`s, in the form's order: `server/web/form-errors.ts`). */
  errors?: Array<{ field: string; message: string }>;
  /** The refusal's status: the request id to quote shows only for our own failures (5xx), as on the account pages. */
  status?: number;
  /** A person whose password was right but whose account waits for activation: the ways to finish it. */
  inactive?: boolean;
  email?: string;
  verification?: 'development' | 'remote';
  siteKey?: string | undefined;
}): string {
  return renderPage('oidc/login', { title: 'Sign in', ...opts, email: opts.email ?? '' });
}

/**
 * The second step after the password, for a person with multi-factor sign-in on: the account
 * pages' own second-step page (`server/web/pages/second-step.ts`), posting to `/oidc/login`.
 */
export function secondStepPage(opts: {
  interactionId: string;
  csrf: string;
  clientName: string;
  mfaPendingToken: string;
  methods: string[];
  method: string;
  /** Shown with the error only when it is something going wrong on our side (empty otherwise). */
  requestId: string;
  error?: string | undefined;
  /** A code was just mailed. */
  sent?: boolean;
}): string {
  const step = { token: opts.mfaPendingToken, methods: opts.methods, method: opts.method };
  return renderPage('second-step', {
    title: 'Confirm it is you',
    csrf: opts.csrf,
    requestId: opts.requestId,
    ...secondStepData(step, { kind: 'provider', interactionId: opts.interactionId, clientName: opts.clientName, error: opts.error }, opts.sent === true),
  });
}

export function consentPage(opts: { interactionId: string; csrf: string; clientName: string; scopes: string[]; userName: string }): string {
  return renderPage('oidc/consent', { title: `${opts.clientName} wants to sign you in`, ...opts, scopes: opts.scopes.map(scopeWords) });
}

/** RP-initiated logout's question, when the application's request does not show whose session it ends (no `id_token_hint`). */
export function signOutPage(opts: { csrf: string; userName: string; clientName: string; clientId: string; postLogoutRedirectUri: string; state: string }): string {
  return renderPage('oidc/sign-out', { title: 'Sign out?', ...opts });
}

/** After signing out, when the application registered no address to come back to. */
export function signedOutPage(opts: { clientName: string }): string {
  return renderPage('oidc/signed-out', { title: 'You are signed out', ...opts });
}

/**
 * The answer to an application that asked for it posted (`response_mode=form_post`): a form of
 * the answer's values to its redirect URI, which the pages' script sends at once
 * (`behaviours/auto-submit.js`); without it, the person presses Continue.
 */
export function formPostPage(post: { action: string; fields: Array<[string, string]> }): string {
  return renderPage('oidc/form-post', { title: 'Returning to the application', action: post.action, fields: post.fields });
}

/** The error page, with the request id to quote (the same as the log line's and `X-Request-Id`). */
export function errorPage(message: string, requestId: string): string {
  return renderPage('oidc/error', { title: 'Sign-in error', message, requestId });
}
