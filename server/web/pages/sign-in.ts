/**
 * Signing in (the password, then the second step when a factor is on; or a passkey alone) and
 * out: the same sessions and cookies as `POST /login` and `POST /logout`.
 */
import type { Request, RequestHandler, Response } from 'express';
import { z } from 'zod';
import { LoginInput, MfaFactorMethod } from '../../../shared/index.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { FIELDS, formRefusal } from '../form-errors.ts';
import { humanVerificationAsked, refusalOf, sendPage, type FieldError } from '../render.ts';
import { passkeyFormInput } from '../passkey-forms.ts';
// A sign-in that cancelled the account's deletion says so on the page that follows (issue 27).
import { field, frame, query, redirect, safeNext, serviceRefusal, type Notice, type PageKit, type PageRequest } from './kit.ts';
import { pendingMethods, secondStepData, secondStepErrors, submitSecondStep, type PendingStep } from './second-step.ts';

/** The sign-in form's inputs, in its order (`login.eta`). */
const LOGIN_FIELDS = [FIELDS.accountId, FIELDS.password, FIELDS.token];

/**
 * Whether a refused sign-in is a person whose password was right but whose account waits for
 * activation (`details.state`): the page then offers the link again and "Type the code".
 */
export function waitsForActivation(error: unknown): boolean {
  const refused = serviceRefusal(error);
  return refused?.name === 'ForbiddenError' && refused.details?.state === 'Inactive';
}

/**
 * The notice for the page after a sign-in: that it cancelled the account's deletion, when it
 * did (`accounts.deletionStatus`, asked with the session the sign-in set); otherwise none. For
 * the sign-in pages' redirect.
 */
export async function signInNotice(kit: PageKit, req: Request, res: Response): Promise<Notice | undefined> {
  const status = await kit.callerNow(req, res).accounts.deletionStatus().catch(() => null);
  return status?.cancelledBySignIn ? 'deletion-cancelled' : undefined;
}

export function signInPages(kit: PageKit) {
  const { config, handle, verification, showsWidget } = kit;

  // ---- sign in, sign out -------------------------------------------------------------------------
  /** `verify`: the account's attempts ran out for this browser, so the form asks for human verification (`sessions.ts`). */
  const loginPage = (req: Request, res: Response, page: PageRequest, status: number, values: Record<string, string>, next: string, errors?: FieldError[], verify = false, inactive = false) =>
    sendPage(
      res,
      status,
      'login',
      { ...frame(req, page, inactive ? 'Your account is not active yet' : 'Sign in', { errors }), values, next, inactive, ...(verify ? { verification, siteKey: config.humanVerificationSiteKey } : {}) },
      { passkeys: true, widget: verify && showsWidget },
    );
  const webLoginForm = handle(async (req, res, page) => {
    const next = query(req, 'next');
    if (page.viewer && !query(req, 'notice')) return redirect(res, safeNext(next));
    loginPage(req, res, page, 200, {}, next);
  });

  /**
   * The second step, for a sign-in whose password was right: its pending token rides in a hidden
   * field of a form that carries the page's CSRF token (as on the sign-in provider's page); the
   * token alone is worth nothing without the person's second factor, and dies in 10 minutes.
   */
  const secondStepPage = (req: Request, res: Response, page: PageRequest, status: number, step: PendingStep & { next: string }, extra: { errors?: FieldError[]; sent?: boolean } = {}) =>
    sendPage(res, status, 'second-step', { ...frame(req, page, 'Confirm it is you', { errors: extra.errors }), ...secondStepData(step, { kind: 'account', next: step.next }, extra.sent === true) }, { passkeys: true });

  /**
   * The second step's forms: "Send me a code" (`POST /mfa/challenge`'s procedure, method
   * `emailOtp`), and a code, a recovery code or a passkey's answer (`POST /mfa/verify`'s
   * procedure, which sets the session's cookies, and the remembered-device cookie when asked).
   */
  async function secondStep(req: Request, res: Response, page: PageRequest, token: string): Promise<void> {
    const next = field(req, 'next');
    const methods = await pendingMethods(page.caller, token);
    if (methods.length === 0) {
      loginPage(req, res, page, 400, {}, next, [{ field: '', message: 'This sign-in expired (after 10 minutes) or was finished already. Please sign in again.' }]);
      return;
    }
    const method = MfaFactorMethod.or(z.literal('recovery')).safeParse(field(req, 'method')).data ?? 'totp';
    const rememberDevice = field(req, 'rememberDevice') === 'on';
    const step = { token, methods, method, next, rememberDevice };
    try {
      if ((await submitSecondStep(page.caller, { token, method, code: field(req, 'code'), step: field(req, 'step'), rememberDevice })) === 'sent') {
        secondStepPage(req, res, page, 200, { ...step, method: 'emailOtp' }, { sent: true });
        return;
      }
    } catch (error) {
      const refusal = secondStepErrors(req, error, method === 'passkey' || field(req, 'step') === 'send-email' ? '' : 'code');
      secondStepPage(req, res, page, refusal.status, step, { errors: refusal.errors });
      return;
    }
    redirect(res, safeNext(next), await signInNotice(kit, req, res));
  }

  /**
   * Sign-in: the password is checked (`POST /login`'s procedure, with its rate limits and its
   * audit line, which sets the session's cookies); then either the person is signed in, or, for
   * a person with a second factor on (and a browser not remembered), the second step's page follows.
   */
  const webLogin = handle(
    async (req, res, page) => {
      const pendingToken = field(req, 'mfaPendingToken');
      if (pendingToken !== '') return secondStep(req, res, page, pendingToken);
      const values = { email: field(req, 'email').trim() };
      const next = field(req, 'next');
      const input = { id: values.email, password: field(req, 'password'), token: field(req, 'token') || undefined };
      try {
        const outcome = await page.caller.accounts.login(input);
        if ('mfaPending' in outcome) {
          const { mfaPendingToken, mfaMethods, preferredMethod } = outcome;
          secondStepPage(req, res, page, 200, { token: mfaPendingToken, methods: mfaMethods, method: preferredMethod, next, rememberDevice: false });
          return;
        }
      } catch (error) {
        if (waitsForActivation(error)) {
          loginPage(req, res, page, 403, values, next, undefined, false, true);
          return;
        }
        const refusal = formRefusal(req, error, { fields: LOGIN_FIELDS, schema: LoginInput, input });
        const verify = humanVerificationAsked(error);
        loginPage(req, res, page, refusal.status, values, next, refusal.errors, verify);
        return;
      }
      redirect(res, safeNext(next), await signInNotice(kit, req, res));
    },
    { post: true },
  );

  /** "Sign in with a passkey" (no password): `/webauthn/passkey.js` fills the ceremony's id and the passkey's answer and posts the form. */
  const webLoginPasskey = handle(
    async (req, res, page) => {
      const next = field(req, 'next');
      try {
        const input = passkeyFormInput(field(req, 'challengeId'), field(req, 'response'));
        // The procedure sets the session's cookies, as `POST /login/passkey` does.
        await page.caller.accounts.passkeyLogin(input);
      } catch (error) {
        const refusal = refusalOf(req, error, () => '');
        loginPage(req, res, page, refusal.status, {}, next, refusal.errors);
        return;
      }
      redirect(res, safeNext(next), await signInNotice(kit, req, res));
    },
    { post: true },
  );
  const webLogout = handle(
    async (_req, res, page) => {
      await page.caller.accounts.logout();
      redirect(res, `${PAGES_PREFIX}/login`, 'signed-out');
    },
    { post: true },
  );

  return { webLoginForm, webLogin, webLoginPasskey, webLogout } satisfies Record<string, RequestHandler>;
}
