/**
 * "Password & security": the password, the emails, sessions and devices, the applications
 * signed into, the recent security events; and its two-step section's forms (the factors of
 * issue 17), with "Confirm it is you" before a change that needs a recent proof.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { MfaStatus } from '../../../shared/index.ts';
import { TOTP_ISSUER, totpProvisioning } from '../../accounts/mfa/totp.ts';
import { SCOPE_WORDS } from '../../oidc/pages.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { refusalOf, sendPage, when, type FieldError } from '../render.ts';
import { jsonFieldValue } from '../passkey-forms.ts';
import { field, frame, needsConfirmation, query, redirect, type PageKit, type SignedInPage } from './kit.ts';
import { METHOD_WORDS, secondStepErrors } from './second-step.ts';

/**
 * The changes to a person's factors that need a recent proof of the person (the service answers
 * 403 with `details.reauthenticate`): after "Confirm it is you" the page carries on with the one
 * named here (a fixed list: a form cannot make the page do anything else).
 */
const AFTER_CONFIRM = ['totp-setup', 'totp-off', 'email-on', 'email-off', 'passkey-add', 'passkey-remove', 'recovery-codes'] as const;
type AfterConfirm = (typeof AFTER_CONFIRM)[number];

/** What each OpenID Connect scope lets an application see, in plain words. */
/** The sections of "Password & security", in order; each is `templates/security/<id>.eta`. */
export const SECURITY_SECTIONS = [
  { id: 'password', title: 'Password' },
  { id: 'two-step', title: 'Two-step verification' },
  { id: 'emails', title: 'Emails' },
  { id: 'sessions', title: 'Sessions and devices' },
  { id: 'applications', title: 'Applications' },
  { id: 'events', title: 'Recent sign-ins and security events' },
];

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

function eventWords(event: { action: string; actor: string }): string {
  switch (event.action) {
    case 'sign-in':
      return 'Signed in';
    case 'password:change':
      return 'Password changed';
    case 'password:reset':
      return 'Password reset from a mailed link';
    case 'session:end':
      return 'A session was ended';
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
    case 'merge':
      return 'Another profile was merged into this one';
    case 'impersonate':
      return `Impersonated by ${event.actor}`;
    default:
      return event.action.startsWith('moderate:') ? `Moderation: ${event.action.slice('moderate:'.length)}` : event.action;
  }
}

export function securityPages(kit: PageKit) {
  const { signedIn } = kit;

  // ---- password & security -------------------------------------------------------------------------
  /** `values`: what a refused form was sent with, shown again (the application's registration). */
  const securityPage = async (req: Request, res: Response, page: SignedInPage, status: number, errors?: FieldError[], values: Record<string, string> = {}) => {
    const [{ sessions }, { events }, { consents }, profile, mfa, { passkeys }] = await Promise.all([
      page.caller.accounts.sessions(),
      page.caller.accounts.securityEvents(),
      page.caller.oidc.consents(),
      page.caller.accounts.me(),
      page.caller.accounts.mfa.status(),
      page.caller.accounts.mfa.passkeys(),
    ]);
    sendPage(
      res,
      status,
      'security',
      {
        ...frame(req, page, 'Password & security', { errors, wide: true }),
        sections: SECURITY_SECTIONS,
        sessions,
        events,
        consents,
        values,
        emails: profile.emails.map((email) => ({ email, preferred: email === profile.preferredEmail })),
        mfa,
        passkeys,
        methodWords: (m: string) => METHOD_WORDS[m] ?? m,
        when,
        eventWords,
        eventFrom,
        scopeWords: (scope: string) => SCOPE_WORDS[scope] ?? scope,
      },
      { passkeys: true },
    );
  };
  const webSecurity = signedIn(async (req, res, page) => securityPage(req, res, page, 200));
  const webChangePassword = signedIn(
    async (req, res, page) => {
      const logoutOtherSessions = field(req, 'logoutOtherSessions') === 'on';
      if (field(req, 'newPassword') !== field(req, 'confirmation')) {
        return securityPage(req, res, page, 400, [{ field: 'confirmation', message: 'Passwords must match' }]);
      }
      try {
        await page.caller.accounts.changePassword({ currentPassword: field(req, 'currentPassword'), newPassword: field(req, 'newPassword'), logoutOtherSessions });
      } catch (error) {
        const refusal = refusalOf(req, error);
        return securityPage(req, res, page, refusal.status, refusal.errors);
      }
      redirect(res, `${PAGES_PREFIX}/security`, logoutOtherSessions ? 'password-changed-others-out' : 'password-changed');
    },
    { post: true },
  );
  const webAddEmail = signedIn(
    async (req, res, page) => {
      const alternate = field(req, 'alternate').trim();
      try {
        await page.caller.accounts.confirmEmail({ alternate });
      } catch (error) {
        const refusal = refusalOf(req, error);
        return securityPage(req, res, page, refusal.status, refusal.errors);
      }
      redirect(res, `${PAGES_PREFIX}/confirm?email=${encodeURIComponent(alternate)}`, 'email-sent');
    },
    { post: true },
  );
  const webEndSession = signedIn(
    async (req, res, page) => {
      await page.caller.accounts.endSession({ id: field(req, 'id') });
      redirect(res, `${PAGES_PREFIX}/security#sessions`, 'session-ended');
    },
    { post: true },
  );
  const webEndOtherSessions = signedIn(
    async (_req, res, page) => {
      await page.caller.accounts.logoutOtherDevices();
      redirect(res, `${PAGES_PREFIX}/security#sessions`, 'others-ended');
    },
    { post: true },
  );
  /** "Register an application": into the approval queue; its id (and secret, shown once) on the page that follows. */
  const webRegisterApplication = signedIn(
    async (req, res, page) => {
      let registered;
      try {
        registered = await page.caller.oidc.registerApplication({
          name: field(req, 'name'),
          redirectUris: [field(req, 'redirectUri')],
          kind: field(req, 'kind') === 'public' ? 'public' : 'confidential',
          offline: field(req, 'offline') === 'on',
        });
      } catch (error) {
        const refusal = refusalOf(req, error, (at) => (at.startsWith('redirectUris') ? 'appRedirectUri' : 'appName'));
        if (refusal.status >= 500) throw error;
        return securityPage(req, res, page, refusal.status, refusal.errors, { name: field(req, 'name'), redirectUri: field(req, 'redirectUri'), kind: field(req, 'kind'), offline: field(req, 'offline') });
      }
      sendPage(res, 200, 'message', {
        ...frame(req, page, 'Your application is registered'),
        heading: 'Your application is registered',
        paragraphs: [
          'It waits for an operator’s approval before it signs anyone in.',
          `Its client id: ${registered.clientId}`,
          ...(registered.clientSecret ? [`Its client secret: ${registered.clientSecret}`, 'Copy the secret now: it is shown only this once, and only its fingerprint is kept.'] : ['It has no secret: it signs people in with PKCE.']),
        ],
        action: { href: `${PAGES_PREFIX}/security#applications`, label: 'Back to Password & security' },
      });
    },
    { post: true },
  );
  const webRevokeApplication = signedIn(
    async (req, res, page) => {
      await page.caller.oidc.withdrawConsent({ clientId: field(req, 'clientId') });
      redirect(res, `${PAGES_PREFIX}/security#applications`, 'revoked');
    },
    { post: true },
  );


  // ---- two-step verification (the factors of issue 17) -----------------------------------------------

  /** The recovery codes, shown once: answered to the POST that made them (they are kept hashed only, so no later page could show them). */
  const recoveryCodesPage = (req: Request, res: Response, page: SignedInPage, codes: string[], why: string) =>
    sendPage(res, 200, 'recovery-codes', { ...frame(req, page, 'Save your recovery codes'), codes, why });

  /** "Confirm it is you": the password, or a code of a factor the person has; then the change `then` names goes on. */
  const identityPage = async (req: Request, res: Response, page: SignedInPage, status: number, then: AfterConfirm, credentialId: string, extra: { errors?: FieldError[]; sent?: boolean } = {}) => {
    const mfa = await page.caller.accounts.mfa.status();
    const codeMethods: string[] = [...mfa.methods.filter((m) => m !== 'passkey'), ...(mfa.enabled ? ['recovery'] : [])];
    sendPage(res, status, 'confirm-identity', {
      ...frame(req, page, 'Confirm it is you', { errors: extra.errors }),
      then,
      credentialId,
      choices: codeMethods.map((m) => ({ value: m, label: METHOD_WORDS[m] ?? m })),
      canMail: mfa.methods.includes('emailOtp'),
      sent: extra.sent === true,
    });
  };

  /** A change that may need a recent proof: done, or "Confirm it is you" first when the service asks for it. */
  async function change(req: Request, res: Response, page: SignedInPage, then: AfterConfirm | null, credentialId: string, act: () => Promise<void>): Promise<void> {
    try {
      await act();
    } catch (error) {
      if (then && needsConfirmation(error)) return identityPage(req, res, page, 200, then, credentialId);
      const refusal = refusalOf(req, error);
      if (refusal.status >= 500) throw error;
      return securityPage(req, res, page, refusal.status, refusal.errors);
    }
  }

  /** The TOTP setup page: the QR code (the data URL of `totpInit`) and the secret as text, and the code that confirms it. */
  const totpSetupPage = async (req: Request, res: Response, page: SignedInPage, status: number, secret: string, qrCodeDataUrl: string, errors?: FieldError[]) =>
    sendPage(res, status, 'totp-setup', { ...frame(req, page, 'Set up an authenticator app', { errors }), secret, grouped: secret.match(/.{1,4}/g)?.join(' ') ?? secret, qrCodeDataUrl });

  /** The changes "Confirm it is you" carries on with, and every form's own. */
  const actions: Record<AfterConfirm, (req: Request, res: Response, page: SignedInPage, credentialId: string) => Promise<void>> = {
    'totp-setup': (req, res, page) =>
      change(req, res, page, 'totp-setup', '', async () => {
        const init = await page.caller.accounts.mfa.totpInit();
        await totpSetupPage(req, res, page, 200, init.secret, init.qrCodeDataUrl);
      }),
    'totp-off': (req, res, page) =>
      change(req, res, page, 'totp-off', '', async () => {
        await page.caller.accounts.mfa.totpDelete();
        redirect(res, `${PAGES_PREFIX}/security#two-step`, 'totp-off');
      }),
    'email-on': (req, res, page) =>
      change(req, res, page, 'email-on', '', async () => {
        const { recoveryCodes } = await page.caller.accounts.mfa.emailSetup();
        if (recoveryCodes) return recoveryCodesPage(req, res, page, recoveryCodes, 'Codes by email are on. These codes stand in for them if you cannot read your mail.');
        redirect(res, `${PAGES_PREFIX}/security#two-step`, 'email-on');
      }),
    'email-off': (req, res, page) =>
      change(req, res, page, 'email-off', '', async () => {
        await page.caller.accounts.mfa.emailDelete();
        redirect(res, `${PAGES_PREFIX}/security#two-step`, 'email-off');
      }),
    'passkey-remove': (req, res, page, credentialId) =>
      change(req, res, page, 'passkey-remove', credentialId, async () => {
        await page.caller.accounts.mfa.passkeyDelete({ credentialId });
        redirect(res, `${PAGES_PREFIX}/security#two-step`, 'passkey-removed');
      }),
    'recovery-codes': (req, res, page) =>
      change(req, res, page, 'recovery-codes', '', async () => {
        const { recoveryCodes } = await page.caller.accounts.mfa.regenerateRecoveryCodes();
        recoveryCodesPage(req, res, page, recoveryCodes, 'These new codes replace the old ones, which no longer work.');
      }),
    // Adding a passkey runs in the browser (`/webauthn/passkey.js`): once confirmed, the person presses "Add a passkey" again.
    'passkey-add': async (_req, res) => redirect(res, `${PAGES_PREFIX}/security#two-step`, 'confirmed'),
  };
  const afterConfirm = (text: string): AfterConfirm => (AFTER_CONFIRM as readonly string[]).includes(text) ? (text as AfterConfirm) : 'passkey-add';

  const webMfaPreferred = signedIn(
    async (req, res, page) =>
      change(req, res, page, null, '', async () => {
        await page.caller.accounts.mfa.setPreferred({ method: field(req, 'method') as MfaStatus['methods'][number] });
        redirect(res, `${PAGES_PREFIX}/security#two-step`, 'preferred-set');
      }),
    { post: true },
  );
  const webTotpSetup = signedIn(async (req, res, page) => actions['totp-setup'](req, res, page, ''), { post: true });
  const webTotpVerify = signedIn(
    async (req, res, page) => {
      let recoveryCodes: string[] | undefined;
      try {
        ({ recoveryCodes } = await page.caller.accounts.mfa.totpVerify({ code: field(req, 'code') }));
      } catch (error) {
        const refusal = refusalOf(req, error, () => 'code');
        if (refusal.status >= 500) throw error;
        // The secret being set up is kept server-side; the page's hidden copy only shows it again.
        const secret = field(req, 'secret');
        if (!/^[A-Z2-7]{16,64}$/.test(secret)) return securityPage(req, res, page, refusal.status, refusal.errors);
        const profile = await page.caller.accounts.me();
        const { qrCodeDataUrl } = await totpProvisioning(secret, profile.preferredEmail ?? profile.id, TOTP_ISSUER);
        return totpSetupPage(req, res, page, refusal.status, secret, qrCodeDataUrl, refusal.errors);
      }
      if (recoveryCodes) return recoveryCodesPage(req, res, page, recoveryCodes, 'Your authenticator app is set up. These codes stand in for it if you lose it.');
      redirect(res, `${PAGES_PREFIX}/security#two-step`, 'totp-on');
    },
    { post: true },
  );
  const webTotpOff = signedIn(async (req, res, page) => actions['totp-off'](req, res, page, ''), { post: true });
  const webEmailOn = signedIn(async (req, res, page) => actions['email-on'](req, res, page, ''), { post: true });
  const webEmailOff = signedIn(async (req, res, page) => actions['email-off'](req, res, page, ''), { post: true });
  /** "Add a passkey": `/webauthn/passkey.js` ran the ceremony (`POST /mfa/setup/passkey/init`, the authenticator) and posts its answer with the name. */
  const webPasskeyAdd = signedIn(
    async (req, res, page) =>
      change(req, res, page, 'passkey-add', '', async () => {
        const name = field(req, 'name').trim();
        const { recoveryCodes } = await page.caller.accounts.mfa.passkeyVerify({ response: jsonFieldValue(field(req, 'response')) as never, name: name || null });
        if (recoveryCodes) return recoveryCodesPage(req, res, page, recoveryCodes, 'Your passkey was added. These codes stand in for it if you lose it.');
        redirect(res, `${PAGES_PREFIX}/security#two-step`, 'passkey-added');
      }),
    { post: true },
  );
  const webPasskeyRemove = signedIn(async (req, res, page) => actions['passkey-remove'](req, res, page, field(req, 'credentialId')), { post: true });
  const webRecoveryCodes = signedIn(async (req, res, page) => actions['recovery-codes'](req, res, page, ''), { post: true });
  const webForgetDevices = signedIn(
    async (req, res, page) =>
      change(req, res, page, null, '', async () => {
        await page.caller.accounts.mfa.forgetTrustedDevices();
        redirect(res, `${PAGES_PREFIX}/security#two-step`, 'devices-forgotten');
      }),
    { post: true },
  );
  /** The page "Add a passkey" leads to when the service wants a recent proof first (the script cannot show a form). */
  const webConfirmIdentityForm = signedIn(async (req, res, page) => identityPage(req, res, page, 200, afterConfirm(query(req, 'then')), ''));
  /**
   * "Confirm it is you" (`POST /mfa/reauthenticate`'s procedure): the password, or a code
   * ("Send me a code" mails one first); then the change it was asked for goes on.
   */
  const webConfirmIdentity = signedIn(
    async (req, res, page) => {
      const then = afterConfirm(field(req, 'then'));
      const credentialId = field(req, 'credentialId');
      try {
        if (field(req, 'step') === 'send-email') {
          await page.caller.accounts.mfa.reauthChallenge();
          return identityPage(req, res, page, 200, then, credentialId, { sent: true });
        }
        const method = field(req, 'method');
        await page.caller.accounts.mfa.reauthenticate(method === '' || method === 'password' ? { password: field(req, 'password') } : { method: method as 'totp', code: field(req, 'code') });
      } catch (error) {
        const method = field(req, 'method');
        const refusal = secondStepErrors(req, error, field(req, 'step') === 'send-email' ? '' : method === '' || method === 'password' ? 'password' : 'code');
        if (refusal.status >= 500) throw error;
        return identityPage(req, res, page, refusal.status, then, credentialId, { errors: refusal.errors });
      }
      await actions[then](req, res, page, credentialId);
    },
    { post: true },
  );

  return { webSecurity, webChangePassword, webAddEmail, webEndSession, webEndOtherSessions, webRevokeApplication, webRegisterApplication, webMfaPreferred, webTotpSetup, webTotpVerify, webTotpOff, webEmailOn, webEmailOff, webPasskeyAdd, webPasskeyRemove, webRecoveryCodes, webForgetDevices, webConfirmIdentityForm, webConfirmIdentity } satisfies Record<string, RequestHandler>;
}
