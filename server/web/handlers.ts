/**
 * The service's own pages (issue 18), under `/account` (`PAGES_PREFIX`): sign up, check your
 * mail, activate, confirm an email, request a reset and reset, sign in, sign out, and
 * "Password & security". Every mailed link (`{WEB_URL}/profile/activate`, `/user/password`,
 * `/confirm`, `/reset`) lands here when `WEB_URL` is left to its default.
 *
 * The handlers only move forms on and off the wire: every rule is the procedure's (called
 * through a tRPC caller on the request's own context, as `POST /login` and the rest are) or the
 * service's that the procedure calls. Every form carries a CSRF token (`csrf.ts`); every POST
 * that succeeds answers with a redirect (post/redirect/get) to a page that says what happened.
 * The session is the API's: the same cookies `POST /login` sets.
 */
import { TRPCError } from '@trpc/server';
import type { Request, RequestHandler, Response } from 'express';
import { z } from 'zod';
import {
  ACCESS_TOKEN_COOKIE,
  AppError,
  MfaFactorMethod,
  REFRESH_TOKEN_COOKIE,
  type ActivatableResult,
  type MfaStatus,
  type ProfileContent,
} from '../../shared/index.ts';
import type { IssuedSession, RequestOrigin, Viewer } from '../accounts/viewer.ts';
import { PAGES_PREFIX, type Config } from '../config.ts';
import { createHttpContext, httpCookies } from '../http/context.ts';
import { TOTP_ISSUER, totpProvisioning } from '../accounts/mfa/totp.ts';
import { toAppError } from '../errors.ts';
import { createCaller } from '../router.ts';
import type { Services } from '../services.ts';
import { checkCsrf, csrfTokenFor } from './csrf.ts';
import { humanVerificationAsked, refusalOf, requestIdOf, sendPage, type FieldError, type PageFrame } from './render.ts';
import { jsonFieldValue, passkeyFormInput } from './passkey-forms.ts';
import { PAGES_STYLESHEET } from './style.ts';

type Caller = ReturnType<typeof createCaller>;

/** What a page handler knows about its request: the caller of procedures, and who is signed in. */
interface PageRequest {
  caller: Caller;
  viewer: Viewer | null;
  /** The signed-in person's name, for the header. */
  signedIn: PageFrame['signedIn'];
  csrf: string;
}

/**
 * The notices a redirect may ask a page to show (`?notice=`): a fixed list, so a link cannot
 * make a page say anything else.
 */
const NOTICES: Record<string, string> = {
  'signed-out': 'You are signed out.',
  'signed-in': 'You are signed in.',
  activated: 'Your profile is active and you are signed in.',
  'password-reset': 'Your password has been updated. Please sign in with your new password to continue.',
  'password-updated': 'Your password has been updated.',
  'password-updated-others-out': 'Your password has been updated and all other sessions have been logged out.',
  'password-changed': 'Your password was changed.',
  'password-changed-others-out': 'Your password was changed, and every other session was signed out.',
  'email-confirmed': 'The email address is confirmed.',
  'email-sent': 'We sent a 6-digit code and a link to that address. Enter the code here, or follow the link.',
  'session-ended': 'The session was ended.',
  'others-ended': 'Every other session was ended.',
  revoked: 'The application can no longer sign you in or read your data.',
  'sign-in-first': 'Please sign in to continue.',
  'preferred-set': 'The method offered first when you sign in was changed.',
  'totp-on': 'Your authenticator app is set up: signing in now asks for one of its codes.',
  'totp-off': 'The authenticator app was removed from signing in.',
  'email-on': 'Codes by email are on: signing in can ask for a code mailed to you.',
  'email-off': 'Codes by email were turned off.',
  'passkey-added': 'Your passkey was added.',
  'passkey-removed': 'The passkey was removed.',
  'devices-forgotten': 'Every remembered browser will ask for the second step again.',
  confirmed: 'Thank you: you can change how you sign in for the next 10 minutes.',
};

/** How the pages name each second-step method. */
const METHOD_WORDS: Record<string, string> = {
  totp: 'A code from your authenticator app',
  emailOtp: 'A code sent to your email',
  passkey: 'Your passkey',
  recovery: 'A recovery code',
};

/**
 * The changes to a person's factors that need a recent proof of the person (the service answers
 * 403 with `details.reauthenticate`): after "Confirm it is you" the page carries on with the one
 * named here (a fixed list: a form cannot make the page do anything else).
 */
const AFTER_CONFIRM = ['totp-setup', 'totp-off', 'email-on', 'email-off', 'passkey-add', 'passkey-remove', 'recovery-codes'] as const;
type AfterConfirm = (typeof AFTER_CONFIRM)[number];

/** What each OpenID Connect scope lets an application see, in plain words. */
const SCOPE_WORDS: Record<string, string> = {
  openid: 'Know who you are (your profile id)',
  profile: 'See your name',
  email: 'See your email address and whether it is confirmed',
};

/** The sections of "Password & security", in order; each is `templates/security/<id>.eta`. */
export const SECURITY_SECTIONS = [
  { id: 'password', title: 'Password' },
  { id: 'two-step', title: 'Two-step verification' },
  { id: 'emails', title: 'Emails' },
  { id: 'sessions', title: 'Sessions and devices' },
  { id: 'applications', title: 'Applications' },
  { id: 'events', title: 'Recent sign-ins and security events' },
];

/** A time as every page shows it: to the minute, in UTC, the same on every screen. */
function when(ms: number): string {
  return `${new Date(ms).toISOString().slice(0, 16).replace('T', ' ')} UTC`;
}

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

/** A string field of the posted form ('' when absent). */
function field(req: Request, name: string): string {
  const value: unknown = (req.body as Record<string, unknown> | undefined)?.[name];
  return typeof value === 'string' ? value : '';
}

/** The human-verification answer of a form: the widget's field (named `token` on our pages, its default name otherwise), or what was typed. */
function verificationAnswer(req: Request): string {
  return field(req, 'token') || field(req, 'cf-turnstile-response');
}

function query(req: Request, name: string): string {
  const value: unknown = req.query[name];
  return typeof value === 'string' ? value : '';
}

/** Whether an error is the service refusing the request (a 4xx), not something going wrong (logged, an error page). */
function isRefusal(error: unknown): boolean {
  const cause = error instanceof TRPCError && error.cause ? error.cause : error;
  return cause instanceof AppError && cause.status < 500;
}

/** Whether the service asks for a recent proof of the person first (`#requireFresh`'s 403). */
function needsConfirmation(error: unknown): boolean {
  const app = toAppError(error, undefined);
  return app.status === 403 && typeof app.details?.reauthenticate === 'string';
}

/**
 * A second-step (or "Confirm it is you") refusal as a person reads it: a wrong code (or
 * password) is tied to the field it was typed in, `field` (aria-invalid, and a link in the error
 * summary), whether or not the service's error names a path: "Invalid verification code" names
 * none. A refusal of the method itself, a passkey's (no field to type in), and the lockout (which
 * says until when, in the pages' own time format) stay on the summary alone.
 */
function secondStepErrors(req: Request, error: unknown, field: string): { status: number; errors: FieldError[] } {
  const app = toAppError(error, undefined);
  const refusal = refusalOf(req, error, (at) => (at === 'method' ? '' : field));
  const until = typeof app.details?.lockedUntil === 'string' ? Date.parse(app.details.lockedUntil) : Number.NaN;
  if (!Number.isNaN(until)) {
    return { status: refusal.status, errors: [{ field: '', message: `Account temporarily locked due to too many failed MFA attempts. You can try again after ${when(until)}.` }] };
  }
  // Only a refusal of what was typed (400): not a 5xx, not "confirm again", not a rate limit.
  if (field === '' || app.status !== 400) return { status: refusal.status, errors: refusal.errors.map((e) => ({ ...e, field: '' })) };
  return { status: refusal.status, errors: refusal.errors.map((e) => (e.field === '' && typeof app.details?.path !== 'string' ? { ...e, field } : e)) };
}

/** Where to go after signing in: a page of ours only (never another site: no open redirect). */
function safeNext(next: string): string {
  return next.startsWith(`${PAGES_PREFIX}/`) && !next.startsWith('//') && !next.includes('\\') ? next : `${PAGES_PREFIX}/security`;
}

function redirect(res: Response, to: string, notice?: keyof typeof NOTICES): void {
  const [path = '', fragment] = to.split('#');
  const url = notice ? `${path}${path.includes('?') ? '&' : '?'}notice=${notice}` : path;
  res.redirect(303, fragment ? `${url}#${fragment}` : url);
}

/** Where the request comes from, as the services keep it (rate limits, the session's device, the audit log). */
function originOf(req: Request): RequestOrigin {
  return { address: req.ip ?? req.socket.remoteAddress ?? 'unknown', userAgent: req.get('user-agent') };
}

const yearOf = (text: string): number | '' => (/^\d{4}$/.test(text.trim()) ? Number(text.trim()) : text.trim() === '' ? '' : Number.NaN);

export function webHandlers(services: Services, config: Config) {
  const verification = config.humanVerification ? 'remote' : 'development';
  /** The Turnstile widget (a script and a frame of Cloudflare's) is on the sign-up and reset pages only when a site key is set. */
  const showsWidget = verification === 'remote' && config.humanVerificationSiteKey !== undefined;

  /**
   * The request's context, as a procedure sees it, from the browser's cookies only. An access
   * cookie that expired while the refresh cookie is still good is refreshed here (the same
   * rotation as `POST /refreshToken`), so a person stays signed in on the pages as in the API.
   */
  async function open(req: Request, res: Response): Promise<PageRequest> {
    let ctx = createHttpContext(req, res, services, config, 'cookie');
    let viewer = await ctx.viewerIfValid();
    const refresh: unknown = req.cookies?.[REFRESH_TOKEN_COOKIE];
    if (!viewer && typeof refresh === 'string' && refresh !== '') {
      try {
        const outcome = await services.sessions.refresh({ refreshToken: refresh });
        if ('rotated' in outcome) {
          useSession(req, res, outcome.rotated);
          ctx = createHttpContext(req, res, services, config, 'cookie');
          viewer = await ctx.viewerIfValid();
        }
      } catch {
        // An ended session is a guest: the sign-in page is where it goes.
      }
    }
    const profile = viewer ? await services.profiles.simplifiedById(viewer.profileId).catch(() => null) : null;
    return {
      caller: createCaller(ctx),
      viewer,
      signedIn: viewer && profile ? { name: profile.fullname, id: profile.id } : null,
      csrf: csrfTokenFor(req, res, config),
    };
  }

  /**
   * The one place a session starts on the pages: the cookies `POST /login` sets, and this
   * request's own cookies so that what follows in it sees the new session.
   */
  function useSession(req: Request, res: Response, session: IssuedSession): void {
    httpCookies(res, config).set(session);
    req.cookies = { ...req.cookies, [ACCESS_TOKEN_COOKIE]: session.accessToken, [REFRESH_TOKEN_COOKIE]: session.refreshToken };
  }

  function frame(req: Request, page: PageRequest, title: string, extra: { errors?: FieldError[]; wide?: boolean } = {}): PageFrame {
    const notice = NOTICES[query(req, 'notice')];
    return { title, signedIn: page.signedIn, csrf: page.csrf, requestId: requestIdOf(req), prefix: PAGES_PREFIX, notice, ...extra };
  }

  /** An error page: what went wrong in plain words, and the request id to quote. */
  function errorPage(req: Request, res: Response, page: PageRequest | null, error: unknown): void {
    const refusal = refusalOf(req, error);
    const first = refusal.errors[0]?.message ?? 'Something went wrong.';
    const base: PageFrame = page ? frame(req, page, 'Something went wrong') : { title: 'Something went wrong', signedIn: null, csrf: '', requestId: requestIdOf(req), prefix: PAGES_PREFIX };
    sendPage(res, refusal.status, 'error', { ...base, heading: refusal.status >= 500 ? 'Something went wrong on our side' : 'This did not work', message: first, action: { href: `${PAGES_PREFIX}/`, label: 'Back to your account' } });
  }

  /** A page handler: any error not handled by the page itself is an error page with the request id. */
  const handle =
    (handler: (req: Request, res: Response, page: PageRequest) => Promise<void>, opts: { post?: boolean } = {}): RequestHandler =>
    async (req, res) => {
      let page: PageRequest | null = null;
      try {
        page = await open(req, res);
        if (opts.post) checkCsrf(req, config);
        await handler(req, res, page);
      } catch (error) {
        errorPage(req, res, page, error);
      }
    };

  /** Pages for a signed-in person only: a guest is sent to sign in first, and back after. */
  const signedIn =
    (handler: (req: Request, res: Response, page: PageRequest & { viewer: Viewer }) => Promise<void>, opts: { post?: boolean } = {}) =>
    handle(async (req, res, page) => {
      if (!page.viewer) {
        redirect(res, `${PAGES_PREFIX}/login?next=${encodeURIComponent(opts.post ? `${PAGES_PREFIX}/security` : req.originalUrl)}`, 'sign-in-first');
        return;
      }
      await handler(req, res, page as PageRequest & { viewer: Viewer });
    }, opts);

  // ---- the stylesheet and the front door -----------------------------------------------------------
  const webStylesheet: RequestHandler = (_req, res) => {
    res.type('css').setHeader('Cache-Control', 'public, max-age=3600').send(PAGES_STYLESHEET);
  };
  /** The service's address itself leads a person to the web application: these pages, or the frontend WEB_URL names. */
  const webRoot: RequestHandler = (_req, res) => {
    res.redirect(303, config.webUrl);
  };
  const webHome = handle(async (_req, res, page) => {
    redirect(res, `${PAGES_PREFIX}/${page.viewer ? 'security' : 'login'}`);
  });

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
      try {
        await page.caller.accounts.register({ fullname: values.fullname, email: values.email, password: field(req, 'password'), ...(token ? { token } : {}) });
      } catch (error) {
        const refusal = refusalOf(req, error);
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
    const email = /^[^\s@<>]{1,64}@[\w.-]{1,253}$/u.test(given) ? given : 'the address you gave';
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
      from: config.mailFrom,
      what: kind === 'reset' ? 'a link to choose a new password (if an account has this address)' : 'a link to activate your account',
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

  // ---- activation ----------------------------------------------------------------------------
  /**
   * An old activation or reset link: what it is, and a new one in one click. A person signed in
   * (so active) who opens a used activation link is told so instead: a new link would be for an
   * account that has nothing left to activate.
   */
  const expiredLink = (req: Request, res: Response, page: PageRequest, kind: 'activation' | 'reset', token: string) => {
    if (kind === 'activation' && page.viewer) {
      sendPage(res, 200, 'link-expired', {
        ...frame(req, page, 'Your account is already active'),
        heading: 'Your account is already active',
        message: 'This activation link was used already, and you are signed in: there is nothing left to activate.',
        resend: null,
        other: { href: `${PAGES_PREFIX}/security`, label: 'Go to Password & security' },
        done: true,
      });
      return;
    }
    sendPage(res, 400, 'link-expired', {
      ...frame(req, page, 'This link no longer works'),
      heading: 'This link no longer works',
      message:
        kind === 'activation'
          ? 'This activation link has expired, was already used, or a newer one was sent since. If your account still waits for activation, we can send a new link to the address this one went to.'
          : 'This password-reset link has expired, was already used, or a newer one was sent since. We can send a new link to the address this one went to.',
      resend: token ? { action: `${PAGES_PREFIX}/${kind === 'activation' ? 'profile/activate' : 'user/password'}/resend`, token, label: 'Send me a new link' } : null,
      other: kind === 'activation' ? { href: `${PAGES_PREFIX}/login`, label: 'Already activated? Sign in' } : { href: `${PAGES_PREFIX}/login`, label: 'Remembered it? Sign in' },
    });
  };

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

  const webActivateForm = handle(async (req, res, page) => {
    const token = query(req, 'token');
    let data: ActivatableResult;
    try {
      data = await page.caller.accounts.activatable({ token });
    } catch (error) {
      if (isRefusal(error)) return expiredLink(req, res, page, 'activation', token);
      throw error;
    }
    const name = data.profile.content?.names?.[0];
    await activatePage(req, res, page, 200, token, data, { values: { first: name?.first ?? '', middle: name?.middle ?? '', last: name?.last ?? '' } });
  });

  const webActivate = handle(
    async (req, res, page) => {
      const token = field(req, 'token');
      let data: ActivatableResult;
      try {
        data = await page.caller.accounts.activatable({ token });
      } catch (error) {
        if (isRefusal(error)) return expiredLink(req, res, page, 'activation', token);
        throw error;
      }
      const values = activateValues(req);
      const intent = field(req, 'intent') || 'activate';
      const pendingEmail = field(req, 'pendingEmail') || undefined;
      const again = (status: number, view: Partial<ActivateView>) => activatePage(req, res, page, status, token, data, { values, pendingEmail, ...view });
      const otherName = { first: values.otherFirst ?? '', middle: values.otherMiddle ?? '', last: values.otherLast ?? '' };
      const hasOther = Boolean(otherName.first || otherName.last);
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
            data = await page.caller.accounts.activatable({ token });
            return await activatePage(req, res, page, 200, token, data, { values, notice: `${pendingEmail} is confirmed.` });
          }
          default:
            break;
        }
        const name = (n: { first: string; middle: string; last: string }) => ({ first: n.first, middle: n.middle, last: n.last, fullname: [n.first, n.middle, n.last].filter(Boolean).join(' ') });
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
        const result = await page.caller.accounts.activate({ token, content });
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
        const refusal = refusalOf(req, error, activationField);
        await again(refusal.status, { errors: refusal.errors });
      }
    },
    { post: true },
  );
  const webActivateResend = handle(
    async (req, res, page) => {
      const sent = await services.activation.resendFromLink(field(req, 'token'), originOf(req));
      if (!sent) {
        sendPage(res, 400, 'message', {
          ...frame(req, page, 'Nothing to send'),
          heading: 'There is nothing to activate',
          isError: true,
          paragraphs: ['This link belongs to no account that still waits for activation: it may be active already, or the link was never ours.'],
          action: { href: `${PAGES_PREFIX}/login`, label: 'Sign in' },
        });
        return;
      }
      redirect(res, `${PAGES_PREFIX}/check-mail?kind=link&to=${encodeURIComponent(sent.maskedEmail)}`);
    },
    { post: true },
  );

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
    confirmPage(req, res, page, 200, token, { email: query(req, 'email') || (await services.emails.addressOfLink(token)) });
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
        const refusal = refusalOf(req, error, (at) => (at === 'token' ? 'code' : at));
        // The service's "Token is not valid" (a wrong, used or expired code: the API's words, which
        // its clients match) in the page's words; a code of the wrong shape keeps its own message.
        refusal.errors = refusal.errors.map((e) => (e.field === 'code' && e.message === 'Token is not valid' ? { ...e, message: 'That code is wrong or has expired' } : e));
        // A code that no longer works: a signed-in person gets a new one in one click.
        const resendTo = page.viewer && refusal.errors.some((e) => e.field === 'code') && values.email ? values.email : undefined;
        confirmPage(req, res, page, refusal.status, token, values, refusal.errors, resendTo);
        return;
      }
      redirect(res, page.viewer ? `${PAGES_PREFIX}/security#emails` : `${PAGES_PREFIX}/login`, 'email-confirmed');
    },
    { post: true },
  );

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

  // ---- sign in, sign out -------------------------------------------------------------------------
  /** `verify`: the account's attempts ran out for this browser, so the form asks for human verification (`sessions.ts`). */
  const loginPage = (req: Request, res: Response, page: PageRequest, status: number, values: Record<string, string>, next: string, errors?: FieldError[], verify = false) =>
    sendPage(
      res,
      status,
      'login',
      { ...frame(req, page, 'Sign in', { errors }), values, next, ...(verify ? { verification, siteKey: config.humanVerificationSiteKey } : {}) },
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
  const secondStepPage = (
    req: Request,
    res: Response,
    page: PageRequest,
    status: number,
    step: { token: string; methods: string[]; method: string; next: string; rememberDevice: boolean },
    extra: { errors?: FieldError[]; sent?: boolean } = {},
  ) => {
    const choices = [...step.methods.filter((m) => m !== 'passkey'), 'recovery'].map((m) => ({ value: m, label: METHOD_WORDS[m] ?? m }));
    const method = choices.some((c) => c.value === step.method) ? step.method : (choices[0]?.value ?? 'recovery');
    sendPage(
      res,
      status,
      'login-mfa',
      { ...frame(req, page, 'Confirm it is you', { errors: extra.errors }), ...step, method, choices, passkey: step.methods.includes('passkey'), sent: extra.sent === true },
      { passkeys: true },
    );
  };

  /**
   * The second step's forms: "Send me a code" (`POST /mfa/challenge`'s procedure, method
   * `emailOtp`), and a code, a recovery code or a passkey's answer (`POST /mfa/verify`'s
   * procedure, which sets the session's cookies, and the remembered-device cookie when asked).
   */
  async function secondStep(req: Request, res: Response, page: PageRequest, token: string): Promise<void> {
    const next = field(req, 'next');
    const methods = await services.signIn.pendingMethods(token);
    if (methods.length === 0) {
      loginPage(req, res, page, 400, {}, next, [{ field: '', message: 'This sign-in expired (after 10 minutes) or was finished already. Please sign in again.' }]);
      return;
    }
    const method = MfaFactorMethod.or(z.literal('recovery')).safeParse(field(req, 'method')).data ?? 'totp';
    const rememberDevice = field(req, 'rememberDevice') === 'on';
    const step = { token, methods, method, next, rememberDevice };
    try {
      if (field(req, 'step') === 'send-email') {
        await page.caller.accounts.mfa.challenge({ mfaPendingToken: token, method: 'emailOtp' });
        secondStepPage(req, res, page, 200, { ...step, method: 'emailOtp' }, { sent: true });
        return;
      }
      const code = method === 'passkey' ? jsonFieldValue(field(req, 'code')) : field(req, 'code');
      await page.caller.accounts.mfa.verify({ mfaPendingToken: token, method, code: code as string, rememberDevice });
    } catch (error) {
      const refusal = secondStepErrors(req, error, method === 'passkey' || field(req, 'step') === 'send-email' ? '' : 'code');
      secondStepPage(req, res, page, refusal.status, step, { errors: refusal.errors });
      return;
    }
    redirect(res, safeNext(next));
  }

  /**
   * Sign-in: the password is checked (`signIn.login`, the same gate as `POST /login`, with its rate
   * limits and its audit line); then either the session starts (`useSession`), or, for a person
   * with a second factor on (and a browser not remembered), the second step's page follows.
   */
  const webLogin = handle(
    async (req, res, page) => {
      const pendingToken = field(req, 'mfaPendingToken');
      if (pendingToken !== '') return secondStep(req, res, page, pendingToken);
      const values = { email: field(req, 'email').trim() };
      const next = field(req, 'next');
      let session: IssuedSession;
      try {
        const { credentials } = createHttpContext(req, res, services, config, 'cookie');
        const outcome = await services.signIn.login({ id: values.email, password: field(req, 'password'), token: field(req, 'token') || undefined }, originOf(req), credentials);
        if ('pending' in outcome) {
          const { mfaPendingToken, mfaMethods, preferredMethod } = outcome.pending;
          secondStepPage(req, res, page, 200, { token: mfaPendingToken, methods: mfaMethods, method: preferredMethod, next, rememberDevice: false });
          return;
        }
        session = outcome.session;
      } catch (error) {
        const refusal = refusalOf(req, error, (at) => (at === 'id' ? 'email' : at));
        const verify = humanVerificationAsked(error);
        loginPage(req, res, page, refusal.status, values, next, refusal.errors, verify);
        return;
      }
      useSession(req, res, session);
      redirect(res, safeNext(next));
    },
    { post: true },
  );

  /** "Sign in with a passkey" (no password): `/webauthn/passkey.js` fills the ceremony's id and the passkey's answer and posts the form. */
  const webLoginPasskey = handle(
    async (req, res, page) => {
      const next = field(req, 'next');
      try {
        const input = passkeyFormInput(field(req, 'challengeId'), field(req, 'response'));
        const { session } = await services.passkeySignIn.signIn(input, originOf(req));
        useSession(req, res, session);
      } catch (error) {
        const refusal = refusalOf(req, error, () => '');
        loginPage(req, res, page, refusal.status, {}, next, refusal.errors);
        return;
      }
      redirect(res, safeNext(next));
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

  // ---- password & security -------------------------------------------------------------------------
  const securityPage = async (req: Request, res: Response, page: PageRequest & { viewer: Viewer }, status: number, errors?: FieldError[]) => {
    const [{ sessions }, { events }, { consents }, profile, mfa, { passkeys }] = await Promise.all([
      page.caller.accounts.sessions(),
      page.caller.accounts.securityEvents(),
      page.caller.oidc.consents(),
      services.profiles.simplifiedById(page.viewer.profileId),
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
  const webRevokeApplication = signedIn(
    async (req, res, page) => {
      await page.caller.oidc.withdrawConsent({ clientId: field(req, 'clientId') });
      redirect(res, `${PAGES_PREFIX}/security#applications`, 'revoked');
    },
    { post: true },
  );


  // ---- two-step verification (the factors of issue 17) -----------------------------------------------
  type SignedInPage = PageRequest & { viewer: Viewer };

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
        const profile = await services.profiles.simplifiedById(page.viewer.profileId);
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

  return {
    webStylesheet,
    webRoot,
    webHome,
    webSignupForm,
    webSignup,
    webCheckMail,
    webResendMail,
    webActivateForm,
    webActivate,
    webActivateResend,
    webConfirmForm,
    webConfirm,
    webResetRequestForm,
    webResetRequest,
    webResetForm,
    webReset,
    webResetResend,
    webLoginForm,
    webLogin,
    webLoginPasskey,
    webLogout,
    webSecurity,
    webChangePassword,
    webAddEmail,
    webEndSession,
    webEndOtherSessions,
    webRevokeApplication,
    webMfaPreferred,
    webTotpSetup,
    webTotpVerify,
    webTotpOff,
    webEmailOn,
    webEmailOff,
    webPasskeyAdd,
    webPasskeyRemove,
    webRecoveryCodes,
    webForgetDevices,
    webConfirmIdentityForm,
    webConfirmIdentity,
  } satisfies Record<string, RequestHandler>;
}

export type WebHandlers = ReturnType<typeof webHandlers>;
