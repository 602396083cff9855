/**
 * Resetting a forgotten password: asking for the link (`POST /resettable`), the new password
 * (`PUT /reset/{token}`), and a new link for an old one.
 */
import type { Request, RequestHandler, Response } from 'express';
import { AppError } from '../../../shared/index.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { refusalOf, sendPage, type FieldError } from '../render.ts';
import { field, frame, isRefusal, originOf, query, redirect, verificationAnswer, type PageKit, type PageRequest } from './kit.ts';

export function resetPages(kit: PageKit) {
  const { services, config, handle, verification, showsWidget, expiredLink } = kit;

  // ---- password reset ----------------------------------------------------------------------------
  const resetRequestPage = (req: Request, res: Response, page: PageRequest, status: number, values: Record<string, string>, errors?: FieldError[]) =>
    sendPage(res, status, 'reset-request', { ...frame(req, page, 'Reset your password', { errors }), values, verification, siteKey: config.humanVerificationSiteKey }, { widget: showsWidget });
  const webResetRequestForm = handle(async (req, res, page) => resetRequestPage(req, res, page, 200, { email: query(req, 'email') }));
  const webResetRequest = handle(
    async (req, res, page) => {
      const values = { email: field(req, 'email').trim() };
      try {
        await page.caller.accounts.requestReset({ id: values.email, token: verificationAnswer(req) || null });
      } catch (error) {
        const refusal = refusalOf(req, error, (at) => (at === 'id' ? 'email' : at));
        resetRequestPage(req, res, page, refusal.status, values, refusal.errors);
        return;
      }
      redirect(res, `${PAGES_PREFIX}/check-mail?kind=reset&email=${encodeURIComponent(values.email)}`);
    },
    { post: true },
  );

  const resetPage = (req: Request, res: Response, page: PageRequest, status: number, token: string, username: string, logoutOtherSessions: boolean, errors?: FieldError[]) =>
    sendPage(res, status, 'reset', { ...frame(req, page, 'Reset Password', { errors }), token, username, logoutOtherSessions });
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
        resetPage(req, res, page, 400, token, username, logoutOthers, [{ field: 'confirmation', message: 'Passwords must match' }]);
        return;
      }
      const here = page.viewer && !page.viewer.impersonator && page.viewer.profileId === username ? page.viewer : null;
      if (page.viewer?.impersonator) throw new AppError('ForbiddenError', 'A password cannot be reset while impersonating');
      const origin = originOf(req);
      try {
        await services.passwordReset.reset({ token, password }, origin, { endSessions: logoutOthers && !here });
      } catch (error) {
        const refusal = refusalOf(req, error);
        if (refusal.errors.some((e) => e.field === 'token')) return expiredLink(req, res, page, 'reset', token);
        resetPage(req, res, page, refusal.status, token, username, logoutOthers, refusal.errors);
        return;
      }
      if (!here) return redirect(res, `${PAGES_PREFIX}/login`, 'password-reset');
      if (logoutOthers) await page.caller.accounts.logoutOtherDevices();
      redirect(res, `${PAGES_PREFIX}/security`, logoutOthers ? 'password-updated-others-out' : 'password-updated');
    },
    { post: true },
  );
  const webResetResend = handle(
    async (req, res) => {
      const sent = await services.passwordReset.requestFromLink(field(req, 'token'), originOf(req));
      if (!sent) return redirect(res, `${PAGES_PREFIX}/reset`);
      redirect(res, `${PAGES_PREFIX}/check-mail?kind=link&to=${encodeURIComponent(sent.maskedEmail)}`);
    },
    { post: true },
  );

  return { webResetRequestForm, webResetRequest, webResetForm, webReset, webResetResend } satisfies Record<string, RequestHandler>;
}
