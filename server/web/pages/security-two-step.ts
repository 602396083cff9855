/**
 * "Two-step verification" and "Passkeys", the factors of issue 17 on their own pages of
 * "Password & security": the forms of each (TOTP set up and off, codes by email, the preferred
 * method, recovery codes, remembered browsers; passkeys added and removed), the recovery codes
 * shown once, and "Confirm it is you" before a change that needs a recent proof.
 */
import type { Request, RequestHandler, Response } from 'express';
import type { MfaStatus } from '../../../shared/index.ts';
import { refusalOf, sendPage, type FieldError } from '../render.ts';
import { jsonFieldValue } from '../passkey-forms.ts';
import { field, frame, needsConfirmation, query, redirect, type PageKit, type SignedInPage } from './kit.ts';
import { METHOD_WORDS, secondStepErrors } from './second-step.ts';
import { areaPage, areaPath, type SecurityArea } from './security-areas.ts';

/**
 * The changes to a person's factors that need a recent proof of the person (the service answers
 * 403 with `details.reauthenticate`): after "Confirm it is you" the page carries on with the one
 * named here (a fixed list: a form cannot make the page do anything else).
 */
const AFTER_CONFIRM = ['totp-setup', 'totp-off', 'email-on', 'email-off', 'passkey-add', 'passkey-remove', 'recovery-codes'] as const;
type AfterConfirm = (typeof AFTER_CONFIRM)[number];

/**
 * The recovery codes as a text file, for the page's "Download" link: a `data:` address made here,
 * so the link works without script too (the codes are shown once and kept hashed only, so no
 * later request could make the file). The page's policy allows no script to fetch anything.
 */
function recoveryCodesFile(page: SignedInPage, codes: string[]): { href: string; name: string } {
  const who = page.signedIn?.id ?? '';
  const text = [`Recovery codes${who ? ` for ${who}` : ''}`, 'Each code signs you in once in place of your second factor.', '', ...codes, ''].join('\n');
  return { href: `data:text/plain;charset=utf-8,${encodeURIComponent(text)}`, name: `recovery-codes${who ? `-${who.replace(/[^\w~.-]/g, '')}` : ''}.txt` };
}

export function securityTwoStepPages(kit: PageKit) {
  const { signedIn } = kit;

  /** The recovery codes, shown once: answered to the POST that made them (they are kept hashed only, so no later page could show them). */
  const recoveryCodesPage = (req: Request, res: Response, page: SignedInPage, codes: string[], why: string, back: SecurityArea = 'two-step') =>
    sendPage(res, 200, 'recovery-codes', { ...frame(req, page, 'Save your recovery codes'), codes, why, back: areaPath(back), download: recoveryCodesFile(page, codes) });

  /** "Confirm it is you": the password, or a code of a factor the person has; then the change `then` names goes on. */
  const identityPage = async (req: Request, res: Response, page: SignedInPage, status: number, then: AfterConfirm, credentialId: string, extra: { errors?: FieldError[]; sent?: boolean } = {}) => {
    const mfa = await page.caller.accounts.mfa.status();
    const codeMethods: string[] = [...mfa.methods.filter((m) => m !== 'passkey'), ...(mfa.enabled ? ['recovery'] : [])];
    sendPage(res, status, 'confirm-identity', {
      ...frame(req, page, 'Confirm it is you', { errors: extra.errors }),
      then,
      credentialId,
      back: areaPath(then.startsWith('passkey') ? 'passkeys' : 'two-step'),
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
      return areaPage(req, res, page, then?.startsWith('passkey') ? 'passkeys' : 'two-step', refusal.status, refusal.errors);
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
        redirect(res, areaPath('two-step'), 'totp-off');
      }),
    'email-on': (req, res, page) =>
      change(req, res, page, 'email-on', '', async () => {
        const { recoveryCodes } = await page.caller.accounts.mfa.emailSetup();
        if (recoveryCodes) return recoveryCodesPage(req, res, page, recoveryCodes, 'Codes by email are on. These codes stand in for them if you cannot read your mail.');
        redirect(res, areaPath('two-step'), 'email-on');
      }),
    'email-off': (req, res, page) =>
      change(req, res, page, 'email-off', '', async () => {
        await page.caller.accounts.mfa.emailDelete();
        redirect(res, areaPath('two-step'), 'email-off');
      }),
    'passkey-remove': (req, res, page, credentialId) =>
      change(req, res, page, 'passkey-remove', credentialId, async () => {
        await page.caller.accounts.mfa.passkeyDelete({ credentialId });
        redirect(res, areaPath('passkeys'), 'passkey-removed');
      }),
    'recovery-codes': (req, res, page) =>
      change(req, res, page, 'recovery-codes', '', async () => {
        const { recoveryCodes } = await page.caller.accounts.mfa.regenerateRecoveryCodes();
        recoveryCodesPage(req, res, page, recoveryCodes, 'These new codes replace the old ones, which no longer work.');
      }),
    // Adding a passkey runs in the browser (`/webauthn/passkey.js`): once confirmed, the person presses "Add a passkey" again.
    'passkey-add': async (_req, res) => redirect(res, areaPath('passkeys'), 'confirmed'),
  };
  const afterConfirm = (text: string): AfterConfirm => (AFTER_CONFIRM as readonly string[]).includes(text) ? (text as AfterConfirm) : 'passkey-add';

  const webMfaPreferred = signedIn(
    async (req, res, page) =>
      change(req, res, page, null, '', async () => {
        await page.caller.accounts.mfa.setPreferred({ method: field(req, 'method') as MfaStatus['methods'][number] });
        redirect(res, areaPath('two-step'), 'preferred-set');
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
        // The setup shown again from the secret kept server-side (none waiting: the area's page).
        const waiting = await page.caller.accounts.mfa.totpWaiting();
        if (!waiting) return areaPage(req, res, page, 'two-step', refusal.status, refusal.errors);
        return totpSetupPage(req, res, page, refusal.status, waiting.secret, waiting.qrCodeDataUrl, refusal.errors);
      }
      if (recoveryCodes) return recoveryCodesPage(req, res, page, recoveryCodes, 'Your authenticator app is set up. These codes stand in for it if you lose it.');
      redirect(res, areaPath('two-step'), 'totp-on');
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
        if (recoveryCodes) return recoveryCodesPage(req, res, page, recoveryCodes, 'Your passkey was added. These codes stand in for it if you lose it.', 'passkeys');
        redirect(res, areaPath('passkeys'), 'passkey-added');
      }),
    { post: true },
  );
  const webPasskeyRemove = signedIn(async (req, res, page) => actions['passkey-remove'](req, res, page, field(req, 'credentialId')), { post: true });
  const webRecoveryCodes = signedIn(async (req, res, page) => actions['recovery-codes'](req, res, page, ''), { post: true });
  const webForgetDevices = signedIn(
    async (req, res, page) =>
      change(req, res, page, null, '', async () => {
        await page.caller.accounts.mfa.forgetTrustedDevices();
        redirect(res, areaPath('two-step'), 'devices-forgotten');
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

  return { webMfaPreferred, webTotpSetup, webTotpVerify, webTotpOff, webEmailOn, webEmailOff, webPasskeyAdd, webPasskeyRemove, webRecoveryCodes, webForgetDevices, webConfirmIdentityForm, webConfirmIdentity } satisfies Record<string, RequestHandler>;
}
