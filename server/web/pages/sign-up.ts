/**
 * Sign up, and "Check your mail" (with its one-click resend): `POST /register`'s procedure, and
 * `POST /resendActivation`'s and `POST /resettable`'s for the mail sent again.
 */
import type { Request, RequestHandler, Response } from 'express';
import { RegisterInput } from '../../../shared/index.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { FIELDS, formRefusal } from '../form-errors.ts';
import { sendPage, type FieldError } from '../render.ts';
import { field, frame, query, redirect, verificationAnswer, type PageKit, type PageRequest } from './kit.ts';

/** The sign-up form's inputs, in its order (`signup.eta`). */
const SIGNUP_FIELDS = [FIELDS.fullname, FIELDS.email, FIELDS.newPassword, FIELDS.token];

export function signUpPages(kit: PageKit) {
  const { config, handle, verification, showsWidget } = kit;

  // ---- sign up, check your mail -----------------------------------------------------------------
  const signupPage = (req: Request, res: Response, page: PageRequest, status: number, values: Record<string, string>, errors?: FieldError[]) =>
    sendPage(res, status, 'signup', {
      ...frame(req, page, 'Create your account', { errors }),
      values,
      verification,
      siteKey: config.humanVerificationSiteKey,
      verificationOptional: config.signupWithoutHumanVerification,
    }, { widget: showsWidget });
  const webSignupForm = handle(async (req, res, page) => signupPage(req, res, page, 200, {}));
  const webSignup = handle(
    async (req, res, page) => {
      const values = { fullname: field(req, 'fullname'), email: field(req, 'email').trim() };
      const token = verificationAnswer(req);
      const input = { fullname: values.fullname, email: values.email, password: field(req, 'password'), ...(token ? { token } : {}) };
      try {
        await page.caller.accounts.register(input);
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: SIGNUP_FIELDS, schema: RegisterInput, input });
        signupPage(req, res, page, refusal.status, values, refusal.errors);
        return;
      }
      redirect(res, `${PAGES_PREFIX}/check-mail?kind=signup&email=${encodeURIComponent(values.email)}`);
    },
    { post: true },
  );

  const days = (seconds: number) => (seconds >= 86400 ? `${Math.round(seconds / 86400)} days` : seconds >= 3600 ? `${Math.round(seconds / 3600)} hours` : `${Math.round(seconds / 60)} minutes`);
  const webCheckMail = handle(async (req, res, page) => {
    const kind = query(req, 'kind') === 'reset' ? 'reset' : query(req, 'kind') === 'link' ? 'link' : 'signup';
    // Only an address (or a masked one) is shown: a crafted link cannot make the page say anything else.
    const given = query(req, 'email') || query(req, 'to');
    const shown = /^[^\s@<>]{1,64}@[\w.-]{1,253}$/u.test(given);
    const email = shown ? given : 'the address you gave';
    if (kind === 'link') {
      sendPage(res, 200, 'message', {
        ...frame(req, page, 'Check your mail'),
        heading: 'Check your mail',
        paragraphs: [`A new link is on its way to ${email}, the address the old one went to. It comes from ${config.mailFrom}.`, 'Nothing after a few minutes? Look in your spam or junk folder.'],
      });
      return;
    }
    sendPage(res, 200, 'check-mail', {
      ...frame(req, page, 'Check your mail'),
      kind,
      email,
      /** "Type the code" fills in the address when the page was told it. */
      typed: shown ? given : '',
      from: config.mailFrom,
      what: kind === 'reset' ? 'a link to choose a new password (if an account has this address)' : 'a link and a 6-digit code to activate your account',
      lifetime: days(kind === 'reset' ? config.resetTokenSeconds : config.activationTokenSeconds),
    });
  });
  const webResendMail = handle(
    async (req, res, page) => {
      const email = field(req, 'email');
      if (field(req, 'kind') === 'reset') {
        if (verification === 'remote') {
          redirect(res, `${PAGES_PREFIX}/reset?email=${encodeURIComponent(email)}`);
          return;
        }
        await page.caller.accounts.requestReset({ id: email, token: 'dev-ok' });
        redirect(res, `${PAGES_PREFIX}/check-mail?kind=reset&email=${encodeURIComponent(email)}`);
        return;
      }
      await page.caller.accounts.resendActivation({ id: email });
      redirect(res, `${PAGES_PREFIX}/check-mail?kind=signup&email=${encodeURIComponent(email)}`);
    },
    { post: true },
  );

  return { webSignupForm, webSignup, webCheckMail, webResendMail } satisfies Record<string, RequestHandler>;
}
