/**
 * Activating a profile from the mailed link (`GET /activatable/{token}`, `PUT /activate/{token}`):
 * the names with their profile ids on request, the emails (another one confirmed on the same
 * page), the position and institution; and a new link for an old one.
 */
import type { Request, RequestHandler, Response } from 'express';
import { ActivateRequest, ActivationCodeInput, joinedFullname, type ActivatableResult, type ProfileContent } from '../../../shared/index.ts';
import { PAGES_PREFIX } from '../../config.ts';
import { FIELDS, formRefusal, inFieldOrder, type FormField } from '../form-errors.ts';
import { refusalOf, sendPage, when, type FieldError } from '../render.ts';
import { field, frame, isRefusal, query, redirect, type PageKit, type PageRequest } from './kit.ts';

/** "Type the code"'s inputs, in its order (`activation-code.eta`). */
const CODE_FIELDS: FormField[] = [FIELDS.accountId, { id: 'code', paths: ['code'], what: 'the 6-digit code from the mail', name: 'The code', words: { invalid_format: 'The code is 6 digits, from the sign-up mail' } }];

/** The activation form's inputs, in its order (`activate.eta`), with the API paths each answers for. */
const name = (prefix: string, index: number, part: 'first' | 'middle' | 'last', what: string): FormField => ({
  id: `${prefix}${part}`,
  paths: [`content/names/${index}/${part}`],
  what,
  name: `The ${part} name`,
});
const history = (id: string, at: string, what: string, label: string, words?: FormField['words']): FormField => ({ id, paths: [`content/history/0/${at}`], what, name: label, ...(words ? { words } : {}) });
const YEAR_WORDS = { invalid_union: 'Enter a year of four digits, 1900 to 2099', invalid_type: 'Enter a year of four digits, 1900 to 2099', too_small: 'Enter a year of four digits, 1900 to 2099', too_big: 'Enter a year of four digits, 1900 to 2099' };
const ACTIVATE_FIELDS: FormField[] = [
  name('', 0, 'first', 'your first name'),
  name('', 0, 'middle', 'your middle name'),
  name('', 0, 'last', 'your last name'),
  name('other-', 1, 'first', 'the other name’s first name'),
  name('other-', 1, 'middle', 'the other name’s middle name'),
  name('other-', 1, 'last', 'the other name’s last name'),
  { id: 'alternate', paths: ['alternate', 'email'], what: 'an email address like name@example.org', name: 'The email address' },
  { id: 'code', paths: ['token'], what: 'the 6-digit code from the mail', name: 'The code' },
  history('position', 'position', 'your position', 'The position'),
  history('institution', 'institution/name', 'your institution', 'The institution'),
  history('domain', 'institution/domain', 'your institution’s domain, e.g. cam.ac.uk', 'The domain'),
  history('start', 'start', 'the year you started (four digits)', 'The year', YEAR_WORDS),
  history('end', 'end', 'the year it ended (four digits)', 'The year', YEAR_WORDS),
  { id: 'homepage', paths: ['content/homepage'], what: 'a web address like https://example.org', name: 'The homepage', words: { invalid_format: 'Enter a web address like https://example.org' } },
];

const yearOf = (text: string): number | '' => (/^\d{4}$/.test(text.trim()) ? Number(text.trim()) : text.trim() === '' ? '' : Number.NaN);

export function activationPages(kit: PageKit) {
  const { handle, expiredLink } = kit;

  interface ActivateView {
    values: Record<string, string>;
    errors?: FieldError[];
    pendingEmail?: string;
    otherUsername?: string;
    /** The profile id the main name would get, when it was changed on the page and previewed. */
    mainUsername?: string;
    notice?: string;
  }
  const activatePage = async (req: Request, res: Response, page: PageRequest, status: number, token: string, data: ActivatableResult, view: ActivateView) => {
    const content = data.profile.content ?? {};
    const confirmed = new Set(content.emailsConfirmed ?? []);
    const emails = (content.emails ?? (data.activatable.groupId ? [data.activatable.groupId] : [])).map((email) => ({ email, confirmed: confirmed.has(email) }));
    const base = frame(req, page, 'Complete your profile', { errors: view.errors, wide: true });
    sendPage(res, status, 'activate', {
      ...base,
      notice: view.notice ?? base.notice,
      token,
      profileId: data.activatable.username,
      values: view.values,
      usernames: { main: view.mainUsername ?? data.activatable.username, mainChanged: view.mainUsername !== undefined, other: view.otherUsername },
      emails,
      pendingEmail: view.pendingEmail,
      positions: data.prefixed_positions,
      institutions: data.institutions,
      expiresAt: when(Date.parse(data.activatable.expireAt ?? '') || 0),
    });
  };
  const activateValues = (req: Request) =>
    Object.fromEntries(
      ['first', 'middle', 'last', 'other-first', 'other-middle', 'other-last', 'alternate', 'position', 'institution', 'domain', 'start', 'end', 'homepage'].map((name) => [
        name.replace(/-(\w)/, (_m, c: string) => c.toUpperCase()),
        field(req, name).trim(),
      ]),
    );
  /** An API path of the activation input as the page's input id. */
  const activationField = (at: string) => {
    const history = /^content\/history\/\d+\/(?:institution\/)?(\w+)/.exec(at);
    if (history) return history[1] === 'name' ? 'institution' : (history[1] ?? '');
    const name = /^content\/names\/(\d+)\/(\w+)/.exec(at);
    if (name) return `${name[1] === '0' ? '' : 'other-'}${name[2]}`;
    if (at === 'alternate' || at === 'email') return 'alternate';
    if (at === 'token') return 'code';
    return at.replace(/^content\//, '');
  };

  /** What the activation page shows for a token, or null once the old-link page was sent instead. */
  const activatableOrExpired = async (req: Request, res: Response, page: PageRequest, token: string): Promise<ActivatableResult | null> => {
    try {
      return await page.caller.accounts.activatable({ token });
    } catch (error) {
      if (!isRefusal(error)) throw error;
      await expiredLink(req, res, page, 'activation', token);
      return null;
    }
  };

  const webActivateForm = handle(async (req, res, page) => {
    const token = query(req, 'token');
    const data = await activatableOrExpired(req, res, page, token);
    if (!data) return;
    const name = data.profile.content?.names?.[0];
    await activatePage(req, res, page, 200, token, data, { values: { first: name?.first ?? '', middle: name?.middle ?? '', last: name?.last ?? '' } });
  });

  const webActivate = handle(
    async (req, res, page) => {
      const token = field(req, 'token');
      const data = await activatableOrExpired(req, res, page, token);
      if (!data) return;
      const values = activateValues(req);
      const intent = field(req, 'intent') || 'activate';
      const pendingEmail = field(req, 'pendingEmail') || undefined;
      const again = (status: number, view: Partial<ActivateView>) => activatePage(req, res, page, status, token, data, { values, pendingEmail, ...view });
      const otherName = { first: values.otherFirst ?? '', middle: values.otherMiddle ?? '', last: values.otherLast ?? '' };
      const hasOther = Boolean(otherName.first || otherName.last);
      let activateInput: { token: string; content: ProfileContent } | undefined;
      try {
        switch (intent) {
          case 'preview': {
            // The main name's id as signed up, unless the name was changed here: then the next
            // free id of the changed name, which activating gives it (`activation.ts`).
            const signedUp = data.profile.content?.names?.[0];
            const mainName = { first: values.first ?? '', middle: values.middle ?? '', last: values.last ?? '' };
            const mainChanged = Boolean(mainName.first && mainName.last) && (mainName.first !== (signedUp?.first ?? '') || mainName.middle !== (signedUp?.middle ?? '') || mainName.last !== (signedUp?.last ?? ''));
            if (!hasOther && !mainChanged) return await again(400, { errors: [{ field: 'other-first', message: 'Enter a first and a last name to see its profile id' }] });
            const idOf = async (n: { first: string; middle: string; last: string }) =>
              (await page.caller.accounts.tildeUsername({ first: n.first, ...(n.middle ? { middle: n.middle } : {}), last: n.last })).username;
            return await again(200, { ...(mainChanged ? { mainUsername: await idOf(mainName) } : {}), ...(hasOther ? { otherUsername: await idOf(otherName) } : {}) });
          }
          case 'add-email': {
            const { alternate } = await page.caller.accounts.confirmEmail({ alternate: values.alternate ?? '', activationToken: token });
            return await again(200, { pendingEmail: alternate, notice: `We sent a 6-digit code to ${alternate}.` });
          }
          case 'confirm-email': {
            await page.caller.accounts.activateLink({ email: pendingEmail ?? '', token: field(req, 'code').trim(), activationToken: token });
            const confirmed = await page.caller.accounts.activatable({ token });
            return await activatePage(req, res, page, 200, token, confirmed, { values, notice: `${pendingEmail} is confirmed.` });
          }
          default:
            break;
        }
        const name = (n: { first: string; middle: string; last: string }) => ({ first: n.first, middle: n.middle, last: n.last, fullname: joinedFullname(n) });
        const content: ProfileContent = {
          names: [{ ...name({ first: values.first ?? '', middle: values.middle ?? '', last: values.last ?? '' }), preferred: true }, ...(hasOther ? [name(otherName)] : [])],
          history: [
            {
              position: values.position ?? '',
              institution: { ...(values.institution ? { name: values.institution } : {}), domain: (values.domain ?? '').toLowerCase() },
              start: yearOf(values.start ?? ''),
              ...(values.end ? { end: yearOf(values.end) } : {}),
            },
          ],
          ...(values.homepage ? { homepage: values.homepage } : {}),
        };
        const missing = [
          ['first', 'Enter your first name'],
          ['last', 'Enter your last name'],
          ['position', 'Enter your position'],
          ['institution', 'Enter your institution'],
          ['domain', 'Enter your institution’s domain'],
          ['start', 'Enter the year you started (four digits)'],
        ].filter(([key]) => !values[key as string] || (key === 'start' && !/^\d{4}$/.test(values.start ?? '')));
        if (missing.length > 0) return await again(400, { errors: missing.map(([key, message]) => ({ field: key as string, message: message as string })) });
        activateInput = { token, content };
        const result = await page.caller.accounts.activate(activateInput);
        if (!result.token) {
          sendPage(res, 200, 'message', {
            ...frame(req, page, 'Thank you'),
            heading: 'Your profile is waiting for moderation',
            paragraphs: ['Thank you for completing your profile. Our moderators review new profiles, which usually takes a few days.', 'You will receive an email when it is accepted, and can sign in then.'],
          });
          return;
        }
        redirect(res, `${PAGES_PREFIX}/security`, 'activated');
      } catch (error) {
        // The activation itself: its input's schema issues worded by path and code (`form-errors.ts`); the page's other buttons' refusals are the service's words.
        const other = activateInput ? null : refusalOf(req, error, activationField);
        const refusal = other ? { status: other.status, errors: inFieldOrder(other.errors, ACTIVATE_FIELDS) } : formRefusal(req, error, { fields: ACTIVATE_FIELDS, schema: ActivateRequest, input: activateInput });
        await again(refusal.status, { errors: refusal.errors });
      }
    },
    { post: true },
  );
  const webActivateResend = handle(
    async (req, res, page) => {
      const { maskedEmail } = await page.caller.accounts.resendActivationFromLink({ token: field(req, 'token') });
      if (maskedEmail === null) {
        sendPage(res, 400, 'message', {
          ...frame(req, page, 'Nothing to send'),
          heading: 'There is nothing to activate',
          isError: true,
          paragraphs: ['This link belongs to no account that still waits for activation: it may be active already, or the link was never ours.'],
          action: { href: `${PAGES_PREFIX}/login`, label: 'Sign in' },
        });
        return;
      }
      redirect(res, `${PAGES_PREFIX}/check-mail?kind=link&to=${encodeURIComponent(maskedEmail)}`);
    },
    { post: true },
  );

  // ---- "type the code": the sign-up mail's code instead of its link -------------------------------
  const codePage = (req: Request, res: Response, page: PageRequest, status: number, values: Record<string, string>, errors?: FieldError[]) =>
    sendPage(res, status, 'activation-code', { ...frame(req, page, 'Type the code', { errors }), values });
  const webActivationCodeForm = handle(async (req, res, page) => codePage(req, res, page, 200, { email: query(req, 'email'), code: '' }));
  /** A right code leads to the activation page, by a new link that replaces the mailed one (`ActivationService.linkFromCode`). */
  const webActivationCode = handle(
    async (req, res, page) => {
      const values = { email: field(req, 'email').trim(), code: field(req, 'code').trim() };
      const input = { id: values.email, code: values.code };
      let token: string;
      try {
        ({ token } = await page.caller.accounts.activationFromCode(input));
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: CODE_FIELDS, schema: ActivationCodeInput, input });
        codePage(req, res, page, refusal.status, values, refusal.errors);
        return;
      }
      redirect(res, `${PAGES_PREFIX}/profile/activate?token=${encodeURIComponent(token)}`);
    },
    { post: true },
  );

  return { webActivateForm, webActivate, webActivateResend, webActivationCodeForm, webActivationCode } satisfies Record<string, RequestHandler>;
}
