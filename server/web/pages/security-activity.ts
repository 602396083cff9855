/**
 * The activity log's words (what each audited action, and each way of signing in, reads as on
 * the pages), and "This was not me": the page the new-browser mail's link opens (it shows the
 * sign-in and changes nothing) and its form (every session ends, every application is revoked,
 * a reset link is mailed; `accounts.notMe`).
 */
import type { RequestHandler } from 'express';
import type { SecurityEvent, SignInMethod } from '../../../shared/index.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { iso, refusalOf, sendPage, when } from '../render.ts';
import { field, frame, query, redirect, serviceRefusal, type PageKit } from './kit.ts';
import { METHOD_WORDS } from './second-step.ts';

/** How each way of signing in reads: "Signed in with <words>". */
const SIGN_IN_WORDS: Record<SignInMethod, string> = {
  password: 'the password',
  'password+totp': 'the password and an authenticator app code',
  'password+emailOtp': 'the password and a code by email',
  'password+passkey': 'the password and a passkey',
  'password+recovery': 'the password and a recovery code',
  passkey: 'a passkey alone',
  remembered: 'the password, in a browser remembered for the second step',
  activation: 'the activation link',
};

export function signInWords(method: string | undefined): string {
  return (method && SIGN_IN_WORDS[method as SignInMethod]) || 'a way not recorded';
}

/**
 * Where a security event came from, for the table's "From" column: "Firefox on Linux
 * (127.0.0.1)", "Unknown browser (127.0.0.1)" when the browser is not known, and "—" when
 * nothing is (a factor changed by the service, which records no browser or address).
 */
export function eventFrom(event: { browser?: string | null; os?: string | null; address?: string | null }): string {
  const device = [event.browser, event.os].filter(Boolean).join(' on ');
  if (!event.address) return device || '—';
  return `${device || 'Unknown browser'} (${event.address})`;
}

/** What an event of the activity log reads as. */
export function eventWords(event: Pick<SecurityEvent, 'action' | 'actor'> & Partial<Pick<SecurityEvent, 'method' | 'client' | 'email' | 'factor'>>): string {
  const email = event.email ?? 'an address';
  const client = event.client ?? 'An application';
  switch (event.action) {
    case 'sign-in':
      return `Signed in${event.method ? ` with ${signInWords(event.method)}` : ''}${event.client ? `, on the sign-in page of ${event.client}` : ''}`;
    case 'sign-in:failed':
      return 'Failed sign-in: wrong password';
    case 'mfa.code.wrong':
      return `Wrong code at the second step${event.factor ? ` (${(METHOD_WORDS[event.factor] ?? event.factor).toLowerCase()})` : ''}`;
    case 'sign-in:not-me':
      return '“This was not me”: the password stopped working, signed out everywhere, applications revoked, a reset link mailed';
    case 'password:change':
      return 'Password changed';
    case 'password:reset':
      return 'Password reset from a mailed link';
    case 'session:end':
      return 'A session was ended';
    case 'app:granted':
      return `${client} was allowed to sign you in`;
    case 'app:revoked':
      return `${client} was revoked`;
    case 'email:added':
      return `Email added: ${email}`;
    case 'email:removed':
      return `Email removed: ${email}`;
    case 'email:preferred':
      return `Preferred email changed to ${email}`;
    case 'email:undone':
      return `An email change was undone (${email})`;
    case 'profile:update':
      return 'Profile edited';
    case 'account:deletion-requested':
      return 'Deleting the account was asked for';
    case 'account:deletion-cancelled':
      return 'Deleting the account was cancelled';
    case 'mfa.totp.enabled':
      return 'Authenticator app set up';
    case 'mfa.totp.disabled':
      return 'Authenticator app removed';
    case 'mfa.email.enabled':
      return 'Codes by email turned on';
    case 'mfa.email.disabled':
      return 'Codes by email turned off';
    case 'mfa.passkey.added':
      return 'Passkey added';
    case 'mfa.passkey.removed':
      return 'Passkey removed';
    case 'mfa.recovery.regenerated':
      return 'New recovery codes made';
    case 'mfa.recovery.used':
      return 'A recovery code was used';
    case 'mfa.locked':
      return 'Two-step sign-in locked after wrong codes';
    case 'mfa.preferred':
      return 'Preferred two-step method changed';
    case 'mfa.trusted-devices.forgotten':
      return 'Remembered browsers forgotten';
    case 'mfa.disabled-by-operator':
      return 'Two-step sign-in turned off by an operator';
    case 'merge':
      return 'Another profile was merged into this one';
    case 'impersonate':
      return `Impersonated by ${event.actor}`;
    default:
      return event.action.startsWith('moderate:') ? `Moderation: ${event.action.slice('moderate:'.length)}` : event.action;
  }
}

export function securityActivityPages(kit: PageKit) {
  const { handle } = kit;

  /** The page a "This was not me" link opens: the sign-in it is about, and the one button. Changes nothing. */
  const webNotMeForm = handle(async (req, res, page) => {
    const token = query(req, 'token');
    const link = token ? await page.caller.accounts.notMeLink({ token }).catch((error: unknown) => {
      if (serviceRefusal(error)) return { live: false };
      throw error;
    }) : { live: false };
    sendPage(res, link.live ? 200 : 400, 'security/not-me', { ...frame(req, page, link.live ? 'Was this you?' : 'This link no longer works'), link, token, when, iso, eventFrom });
  });

  /** "This was not me", confirmed: done through `accounts.notMe`; then the sign-in page says what happened. */
  const webNotMe = handle(
    async (req, res, page) => {
      const token = field(req, 'token');
      try {
        await page.caller.accounts.notMe({ token });
      } catch (error) {
        const refusal = refusalOf(req, error);
        if (refusal.status >= 500) throw error;
        sendPage(res, refusal.status, 'security/not-me', { ...frame(req, page, 'This link no longer works'), link: { live: false }, token: '', when, iso, eventFrom });
        return;
      }
      redirect(res, `${PAGES_PREFIX}/login`, 'not-me-done');
    },
    { post: true },
  );

  return { webNotMeForm, webNotMe } satisfies Record<string, RequestHandler>;
}
