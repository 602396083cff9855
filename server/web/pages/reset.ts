/**
 * Resetting a forgotten password: asking for the link (`POST /resettable`), the new password
 * (`PUT /reset/{token}`), and a new link for an old one.
 */
import type { Request, RequestHandler, Response } from 'express';
import { ResetPasswordInBrowserInput, ResettableRequest } from '../../../shared/index.ts';
import { toAppError } from '../../errors.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { FIELDS, formRefusal } from '../form-errors.ts';
import { sendPage, type FieldError } from '../render.ts';
import { field, frame, isRefusal, query, redirect, serviceRefusal, verificationAnswer, type PageKit, type PageRequest } from './kit.ts';

/** The forms' inputs, in their order (`reset-request.eta`, `reset.eta`). */
const REQUEST_FIELDS = [FIELDS.accountId, FIELDS.token];
const RESET_FIELDS = [FIELDS.newPassword, { id: 'confirmation', paths: [], what: 'the new password again', name: 'The repeated password' }];

export function resetPages(kit: PageKit) {
  const { config, handle, verification, showsWidget, expiredLink } = kit;

  // ---- password reset ----------------------------------------------------------------------------
  const resetRequestPage = (req: Request, res: Response, page: PageRequest, status: number, values: Record<string, string>, errors?: FieldError[]) =>
    sendPage(res, status, 'reset-request', { ...frame(req, page, 'Reset your password', { errors }), values, verification, siteKey: config.humanVerificationSiteKey }, { widget: showsWidget });
  const webResetRequestForm = handle(async (req, res, page) => resetRequestPage(req, res, page, 200, { email: query(req, 'email') }));
  const webResetRequest = handle(
    async (req, res, page) => {
      const values = { email: field(req, 'email').trim() };
      const input = { id: values.email, token: verificationAnswer(req) || null };
      try {
        await page.caller.accounts.requestReset(input);
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: REQUEST_FIELDS, schema: ResettableRequest, input });
        resetRequestPage(req, res, page, refusal.status, values, refusal.errors);
        return;
      }
      redirect(res, `${PAGES_PREFIX}/check-mail?kind=reset&email=${encodeURIComponent(values.email)}`);
    },
    { post: true },
  );

  const resetPage = (req: Request, res: Response, page: PageRequest, status: number, token: string, username: string, logoutOtherSessions: boolean, errors?: FieldError[]) =>
    sendPage(res, status, 'reset', { ...frame(req, page, 'Choose a new password', { errors }), token, username, logoutOtherSessions });
  const webResetForm = handle(async (req, res, page) => {
    const token = query(req, 'token');
    try {
      const { resettable } = await page.caller.accounts.resettable({ token });
      resetPage(req, res, page, 200, token, resettable.username ?? '', true);
    } catch (error) {
      if (isRefusal(error)) return expiredLink(req, res, page, 'reset', token);
      throw error;
    }
  });
  /**
   * The reset form, as the real platform's web client behaves: "Log me out of all other
   * sessions" (ticked by default) ends every session but this browser's when it is signed in to
   * the same account, and every session otherwise; left unticked, the sessions stay.
   */
  const webReset = handle(
    async (req, res, page) => {
      const token = field(req, 'token');
      const logoutOthers = field(req, 'logoutOtherSessions') === 'on';
      let username: string;
      try {
        username = (await page.caller.accounts.resettable({ token })).resettable.username ?? '';
      } catch (error) {
        if (isRefusal(error)) return expiredLink(req, res, page, 'reset', token);
        throw error;
      }
      const password = field(req, 'password');
      if (password !== field(req, 'confirmation')) {
        resetPage(req, res, page, 400, token, username, logoutOthers, [{ field: 'confirmation', message: 'The two passwords are not the same: type the new password twice' }]);
        return;
      }
      let signedInHere: boolean;
      const input = { token, password, logoutOtherSessions: logoutOthers };
      try {
        ({ signedInHere } = await page.caller.accounts.resetPasswordInBrowser(input));
      } catch (error) {
        // An impersonation's refusal is no form error: the error page says it.
        if (toAppError(error, undefined).name === 'ForbiddenError') throw error;
        // A token no longer live (or not one of ours): the old link's page, with a new link in one click.
        const refused = serviceRefusal(error);
        if ((refused?.errors ?? (refused ? [refused] : [])).some((e) => e.details?.path === 'token')) return expiredLink(req, res, page, 'reset', token);
        const refusal = formRefusal(req, error, { fields: RESET_FIELDS, schema: ResetPasswordInBrowserInput, input });
        resetPage(req, res, page, refusal.status, token, username, logoutOthers, refusal.errors);
        return;
      }
      if (!signedInHere) return redirect(res, `${PAGES_PREFIX}/login`, 'password-reset');
      redirect(res, `${PAGES_PREFIX}/security`, logoutOthers ? 'password-updated-others-out' : 'password-updated');
    },
    { post: true },
  );
  const webResetResend = handle(
    async (req, res, page) => {
      const { maskedEmail } = await page.caller.accounts.requestResetFromLink({ token: field(req, 'token') });
      if (maskedEmail === null) return redirect(res, `${PAGES_PREFIX}/reset`);
      redirect(res, `${PAGES_PREFIX}/check-mail?kind=link&to=${encodeURIComponent(maskedEmail)}`);
    },
    { post: true },
  );

  return { webResetRequestForm, webResetRequest, webResetForm, webReset, webResetResend } satisfies Record<string, RequestHandler>;
}
