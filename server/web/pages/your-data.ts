/**
 * "Your data" (issue 27): download everything the service holds about the person (one JSON
 * file, `accounts.exportData`, the procedure `GET /user/export` calls), and delete the account
 * (`accounts.requestDeletion`: the password typed again; 14 days in which signing in cancels it).
 */
import type { Request, RequestHandler, Response } from 'express';
import { DELETED_NAME } from '../../accounts/account-deletion.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { RequestDeletionInput } from '../../../shared/index.ts';
import { formRefusal, type FormField } from '../form-errors.ts';
import { iso, sendPage, when, type FieldError } from '../render.ts';
import { field, frame, redirect, type PageKit, type SignedInPage } from './kit.ts';

/** The deletion form's one input: the password typed again (the API's `confirmId` has no input here). */
const DELETE_FIELDS: FormField[] = [{ id: 'password', paths: ['password', 'confirmId'], what: 'your password', name: 'The password' }];

export function yourDataPages(kit: PageKit) {
  const { signedIn } = kit;

  const dataPage = async (req: Request, res: Response, page: SignedInPage, status: number, errors?: FieldError[]) => {
    const { dueAt } = await page.caller.accounts.deletionStatus();
    sendPage(res, status, 'data', { ...frame(req, page, 'Your data', { errors }), dueAt, deletedName: DELETED_NAME, when, iso });
  };

  const webData = signedIn(async (req, res, page) => dataPage(req, res, page, 200));

  /** The download: the export as a JSON attachment, never cached. */
  const webDataExport = signedIn(async (_req, res, page) => {
    const data = await page.caller.accounts.exportData();
    const name = `account-data-${data.profile.id.replace(/[^\w-]/g, '')}-${new Date(data.exportedAt).toISOString().slice(0, 10)}.json`;
    res.status(200);
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('Content-Disposition', `attachment; filename="${name}"`);
    res.setHeader('Cache-Control', 'no-store');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.send(`${JSON.stringify(data, null, 2)}\n`);
  });

  /** "Delete my account": every session ends, so the sign-in page follows with the date. */
  const webDeleteAccount = signedIn(
    async (req, res, page) => {
      const input = { password: field(req, 'password') };
      try {
        await page.caller.accounts.requestDeletion(input);
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: DELETE_FIELDS, schema: RequestDeletionInput, input });
        if (refusal.status >= 500) throw error;
        return dataPage(req, res, page, refusal.status, refusal.errors);
      }
      redirect(res, `${PAGES_PREFIX}/login`, 'deletion-requested');
    },
    { post: true },
  );

  return { webData, webDataExport, webDeleteAccount } satisfies Record<string, RequestHandler>;
}
