/**
 * "Emails" (issue 27): the person's addresses, which is preferred, "Add an email" (a code is
 * mailed: `POST /user/confirm`'s procedure), "Make preferred" and "Remove"; and the page the
 * old address's mail links to, which shows the change its link undoes and undoes it on a POST
 * (its GET changes nothing). Every rule is the service's (`accounts/email-changes.ts`).
 */
import type { Request, RequestHandler, Response } from 'express';
import { PAGES_PREFIX } from '../../config.ts';
import { ConfirmEmailInput } from '../../../shared/index.ts';
import { formRefusal, type FormField } from '../form-errors.ts';
import { iso, refusalOf, sendPage, when, type FieldError } from '../render.ts';
import { field, frame, query, redirect, type PageKit, type SignedInPage } from './kit.ts';

/** What an undo link undoes, in words. */
function undoWords(change: 'added' | 'removed' | 'preferred', email: string, profileId: string): string {
  switch (change) {
    case 'added':
      return `The address ${email} was added to the account ${profileId}. Undoing it removes that address.`;
    case 'removed':
      return `The address ${email} was removed from the account ${profileId}. Undoing it gives it back, confirmed.`;
    case 'preferred':
      return `Another address was made preferred on the account ${profileId}. Undoing it makes ${email} preferred again.`;
  }
}

/** "Add an email"'s one input. */
const ADD_FIELDS: FormField[] = [{ id: 'alternate', paths: ['alternate'], what: 'the email address to add, like name@example.org', name: 'The email address' }];

export function emailsPages(kit: PageKit) {
  const { signedIn, handle } = kit;

  const emailsPage = async (req: Request, res: Response, page: SignedInPage, status: number, errors?: FieldError[], values: Record<string, string> = {}) => {
    const { emails } = await page.caller.accounts.ownEmails();
    sendPage(res, status, 'emails', { ...frame(req, page, 'Emails', { errors }), emails, values });
  };

  const webEmails = signedIn(async (req, res, page) => emailsPage(req, res, page, 200));

  /** "Add an email" (also the old form's path, `/account/security/emails`): a code and a link are mailed; the confirm page follows. */
  const webEmailsAdd = signedIn(
    async (req, res, page) => {
      const alternate = field(req, 'alternate').trim();
      try {
        await page.caller.accounts.confirmEmail({ alternate });
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: ADD_FIELDS, schema: ConfirmEmailInput, input: { alternate } });
        if (refusal.status >= 500) throw error;
        return emailsPage(req, res, page, refusal.status, refusal.errors, { alternate });
      }
      redirect(res, `${PAGES_PREFIX}/confirm?email=${encodeURIComponent(alternate)}`, 'email-sent');
    },
    { post: true },
  );

  /** "Remove" and "Make preferred": one address each, told to the address that had most to lose. */
  const change = (act: (page: SignedInPage, email: string) => Promise<unknown>, notice: 'email-removed' | 'email-preferred'): RequestHandler =>
    signedIn(
      async (req, res, page) => {
        try {
          await act(page, field(req, 'email'));
        } catch (error) {
          const refusal = refusalOf(req, error, () => 'email');
          if (refusal.status >= 500) throw error;
          return emailsPage(req, res, page, refusal.status, refusal.errors);
        }
        redirect(res, `${PAGES_PREFIX}/emails`, notice);
      },
      { post: true },
    );
  const webEmailsRemove = change((page, email) => page.caller.accounts.removeEmail({ email }), 'email-removed');
  const webEmailsPreferred = change((page, email) => page.caller.accounts.setPreferredEmail({ email }), 'email-preferred');

  /** The undo link's page: what it would undo, and a button. Opened from a mail, signed in or not; the GET changes nothing. */
  const webEmailUndoForm = handle(async (req, res, page) => {
    const token = query(req, 'token');
    const preview = token ? await page.caller.accounts.emailUndo({ token: token.slice(0, 200) }) : ({ live: false } as const);
    sendPage(res, preview.live ? 200 : 400, 'email-undo', {
      ...frame(req, page, 'Undo a change to your emails'),
      preview,
      token,
      what: preview.live ? undoWords(preview.change, preview.email, preview.profileId) : '',
      when,
      iso,
    });
  });

  /** "Undo this change": every session of the account ends; the reset page follows. */
  const webEmailUndo = handle(
    async (req, res, page) => {
      const token = field(req, 'token');
      const used = () => sendPage(res, 400, 'email-undo', { ...frame(req, page, 'Undo a change to your emails'), preview: { live: false }, token: '', what: '', when, iso });
      // A form without a link's token: the page's own words, not the schema's.
      if (token === '') return used();
      try {
        await page.caller.accounts.undoEmailChange({ token: token.slice(0, 200) });
      } catch (error) {
        const refusal = refusalOf(req, error, () => '');
        if (refusal.status >= 500) throw error;
        return sendPage(res, refusal.status, 'email-undo', { ...frame(req, page, 'Undo a change to your emails', { errors: refusal.errors }), preview: { live: false }, token: '', what: '', when, iso });
      }
      redirect(res, `${PAGES_PREFIX}/reset`, 'email-undone');
    },
    { post: true },
  );

  return { webEmails, webEmailsAdd, webEmailsRemove, webEmailsPreferred, webEmailUndoForm, webEmailUndo } satisfies Record<string, RequestHandler>;
}
