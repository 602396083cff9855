/**
 * Confirming an email with its 6-digit code (`PUT /activatelink[/{token}]`), from the mailed
 * link or typed after "Add an email".
 */
import type { Request, RequestHandler, Response } from 'express';
import { PAGES_PREFIX } from '../../config.ts';
import { ActivateLinkInput } from '../../../shared/index.ts';
import { formRefusal, type FormField } from '../form-errors.ts';
import { sendPage, type FieldError } from '../render.ts';
import { field, frame, isRefusal, query, redirect, serviceRefusal, type PageKit, type PageRequest } from './kit.ts';

/** The confirm form's inputs, in order: the code is the API's `token`. */
const CONFIRM_FIELDS: FormField[] = [
  { id: 'email', paths: ['email'], what: 'the email address to confirm, like name@example.org', name: 'The email address' },
  { id: 'code', paths: ['token'], what: 'the 6-digit code from the mail', name: 'The code' },
];

export function confirmEmailPages(kit: PageKit) {
  const { handle } = kit;

  // ---- confirm an email ------------------------------------------------------------------------
  const confirmPage = (req: Request, res: Response, page: PageRequest, status: number, token: string, values: Record<string, string>, errors?: FieldError[], resendTo?: string) =>
    sendPage(res, status, 'confirm', { ...frame(req, page, 'Confirm an email', { errors }), token, values, resendTo });
  /**
   * The page a confirmation mail's link opens (`/confirm?token=`): the address is filled in from
   * the link's token (a live email-confirmation token names it; the service checks it again on
   * posting), so only the code is left to type.
   */
  const webConfirmForm = handle(async (req, res, page) => {
    const token = query(req, 'token');
    // Without a link's token the code is a signed-in person's (after "Add an email"): they sign
    // in first, and come back here, rather than type it all to be sent to sign in on posting.
    if (!token && !page.viewer) {
      // Back to this very page after signing in, the address "Add an email" named included.
      redirect(res, `${PAGES_PREFIX}/login?next=${encodeURIComponent(req.originalUrl)}`, 'sign-in-first');
      return;
    }
    // A link the service cannot read (mangled, cut, made up) names no address: the form is shown
    // empty, as for a link whose address is gone, rather than the link schema's words.
    const linked = query(req, 'email') || (await page.caller.accounts.confirmationLinkAddress({ token }).then((found) => found.email, (error: unknown) => {
      if (isRefusal(error)) return '';
      throw error;
    }));
    confirmPage(req, res, page, 200, token, { email: linked });
  });
  const webConfirm = handle(
    async (req, res, page) => {
      const token = field(req, 'token');
      const values = { email: field(req, 'email').trim(), code: field(req, 'code').trim() };
      if (!token && !page.viewer) {
        redirect(res, `${PAGES_PREFIX}/login?next=${encodeURIComponent(`${PAGES_PREFIX}/confirm`)}`, 'sign-in-first');
        return;
      }
      try {
        await page.caller.accounts.activateLink({ email: values.email, token: values.code, ...(token ? { activationToken: token } : {}) });
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: CONFIRM_FIELDS, schema: ActivateLinkInput, input: { email: values.email, token: values.code } });
        // The service refusing the code itself (one error at `token`; a schema failure is a list
        // of fields, and a code of the wrong shape keeps its own message): a wrong, used or expired
        // code, in the page's words rather than the API's "Token is not valid", which its clients match.
        const refused = serviceRefusal(error);
        if (refused?.errors === undefined && refused?.details?.path === 'token') {
          const left = refused.details.triesLeft;
          const words = typeof left !== 'number' ? 'That code is wrong or has expired' : left > 0 ? `That code is wrong. ${left} ${left === 1 ? 'try' : 'tries'} left before it stops working.` : 'That code is wrong, and it no longer works: ask for a new one.';
          refusal.errors = refusal.errors.map((e) => (e.field === 'code' ? { ...e, message: words } : e));
        }
        // A code that no longer works: a signed-in person gets a new one in one click.
        const resendTo = page.viewer && refusal.errors.some((e) => e.field === 'code') && values.email ? values.email : undefined;
        confirmPage(req, res, page, refusal.status, token, values, refusal.errors, resendTo);
        return;
      }
      redirect(res, page.viewer ? `${PAGES_PREFIX}/emails` : `${PAGES_PREFIX}/login`, 'email-confirmed');
    },
    { post: true },
  );

  return { webConfirmForm, webConfirm } satisfies Record<string, RequestHandler>;
}
