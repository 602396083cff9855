/**
 * What every account page shares: opening a page request (the caller of procedures on the
 * request's own context, who is signed in, the CSRF token), the frame every template reads,
 * `handle` and `signedIn` (a page handler whose unhandled errors are an error page), reading
 * the form and the query, the notices a redirect may ask for, and the page an old link shows.
 *
 * The pages only move forms on and off the wire: every rule is the procedure's (called through
 * a tRPC caller on the request's own context, as `POST /login` and the rest are) or the
 * service's that the procedure calls. Every form carries a CSRF token (`../csrf.ts`); every POST
 * that succeeds answers with a redirect (post/redirect/get) to a page that says what happened.
 * The session is the API's: the same cookies `POST /login` sets.
 */
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import { AppError } from '../../../shared/index.ts';
import type { Viewer } from '../../accounts/viewer.ts';
import { PAGES_PREFIX, type Config } from '../../config.ts';
import { formError, withLengthCheck } from '../../http/body.ts';
import { createHttpContext, formValue } from '../../http/context.ts';
import { causeOf, toAppError } from '../../errors.ts';
import { createCaller } from '../../router.ts';
import type { Services } from '../../services.ts';
import { checkCsrf, csrfTokenFor } from '../csrf.ts';
import { refusalOf, requestIdOf, sendPage, verificationMode, type FieldError, type PageFrame } from '../render.ts';

export type Caller = ReturnType<typeof createCaller>;

/** What a page handler knows about its request: the caller of procedures, and who is signed in. */
export interface PageRequest {
  caller: Caller;
  viewer: Viewer | null;
  /** The signed-in person's name, for the header. */
  signedIn: PageFrame['signedIn'];
  csrf: string;
}
export type SignedInPage = PageRequest & { viewer: Viewer };
export type PageHandler<P extends PageRequest = PageRequest> = (req: Request, res: Response, page: P) => Promise<void>;

/**
 * The notices a redirect may ask a page to show (`?notice=`): a fixed list, so a link cannot
 * make a page say anything else.
 */
export const NOTICES = {
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
  'profile-saved': 'Your profile was saved.',
  // ---- signing in on a device (RFC 8628) ----
  'device-allowed': 'Done: go back to your device, which is signed in within a few seconds. You can revoke it under Applications.',
  'device-denied': 'The device was not signed in.',
  // ---- security (issue 27) ----
  'not-me-done': 'Every session of your account was ended and every application revoked. We mailed you a link to choose a new password.',
  // ---- emails and your data (issue 27) ----
  'email-removed': 'The address was removed. It was mailed a link that undoes this for seven days.',
  'email-preferred': 'The preferred address was changed. The one before was mailed a link that undoes this for seven days.',
  'email-undone': 'The change was undone and your account was signed out everywhere. If someone else made it, reset your password now.',
  'deletion-requested': 'Your account will be deleted in 14 days, and you are signed out everywhere. Signing in before then cancels the deletion.',
  'deletion-cancelled': 'You signed in, so your account will not be deleted: the deletion you asked for is cancelled.',
} as const satisfies Record<string, string>;
export type Notice = keyof typeof NOTICES;

/** A string field of the posted form ('' when absent). */
export function field(req: Request, name: string): string {
  return formValue(req, name) ?? '';
}

/** The human-verification answer of a form: the widget's field (named `token` on our pages, its default name otherwise), or what was typed. */
export function verificationAnswer(req: Request): string {
  return field(req, 'token') || field(req, 'cf-turnstile-response');
}

export function query(req: Request, name: string): string {
  const value: unknown = req.query[name];
  return typeof value === 'string' ? value : '';
}

/**
 * The service's refusal (a 4xx) an error carries, as a procedure called through a caller throws
 * it; null for something going wrong (logged, an error page).
 */
export function serviceRefusal(error: unknown): AppError | null {
  const cause = causeOf(error);
  return cause instanceof AppError && cause.status < 500 ? cause : null;
}

/** Whether an error is the service refusing the request (a 4xx), not something going wrong. */
export function isRefusal(error: unknown): boolean {
  return serviceRefusal(error) !== null;
}

/**
 * Where to go after signing in: an account page only (never another site: no open redirect; nor
 * another part of this one, `/account/../oidc/logout`: the path is read as a browser resolves it).
 */
export function safeNext(next: string): string {
  const fallback = `${PAGES_PREFIX}/security`;
  if (!next.startsWith(`${PAGES_PREFIX}/`) || next.includes('\\')) return fallback;
  // A path of ours (it starts with one) resolved as a browser would, dot segments and all.
  const url = new URL(next, 'http://pages.invalid');
  return url.pathname.startsWith(`${PAGES_PREFIX}/`) ? `${url.pathname}${url.search}${url.hash}` : fallback;
}

export function redirect(res: Response, to: string, notice?: Notice): void {
  const [path = '', fragment] = to.split('#');
  const url = notice ? `${path}${path.includes('?') ? '&' : '?'}notice=${notice}` : path;
  res.redirect(303, fragment ? `${url}#${fragment}` : url);
}

export function frame(req: Request, page: PageRequest, title: string, extra: { errors?: FieldError[] | undefined; wide?: boolean } = {}): PageFrame {
  const notice = (NOTICES as Record<string, string>)[query(req, 'notice')];
  return { title, signedIn: page.signedIn, csrf: page.csrf, requestId: requestIdOf(req), prefix: PAGES_PREFIX, notice, ...extra };
}

/** An error page: what went wrong in plain words, and the request id to quote (`page`: the page's frame, when it was opened). */
function errorPage(req: Request, res: Response, page: PageRequest | null, error: unknown): void {
  const refusal = refusalOf(req, error);
  const first = refusal.errors[0]?.message ?? 'Something went wrong.';
  // The title says what the heading says (WCAG 2.4.2): ours, or the request's.
  const heading = refusal.status >= 500 ? 'Something went wrong on our side' : 'This did not work';
  const base: PageFrame = page ? frame(req, page, heading) : { title: heading, signedIn: null, csrf: '', requestId: requestIdOf(req), prefix: PAGES_PREFIX };
  sendPage(res, refusal.status, 'error', { ...base, heading, message: first, action: { href: `${PAGES_PREFIX}/`, label: 'Back to your account' } });
}


/** The pages' tools bound to the install: opening a request, handlers, the session, the old-link page. */
export function pageKit(services: Services, config: Config) {
  const verification = verificationMode(config);
  /** The Turnstile widget (a script and a frame of Cloudflare's) is on the sign-up and reset pages only when a site key is set. */
  const showsWidget = verification === 'remote' && config.humanVerificationSiteKey !== undefined;

  /**
   * The request's context, as a procedure sees it, from the browser's cookies only. An access
   * cookie that expired while the refresh cookie is still good is refreshed here (the same
   * procedure as `POST /refreshToken`, whose new cookies are this request's own from then on),
   * so a person stays signed in on the pages as in the API.
   */
  async function open(req: Request, res: Response): Promise<PageRequest> {
    let ctx = createHttpContext(req, res, services, config, 'cookie');
    let viewer = await ctx.viewerIfValid();
    if (!viewer && ctx.credentials.refreshToken !== undefined) {
      try {
        await createCaller(ctx).accounts.refreshToken();
        ctx = createHttpContext(req, res, services, config, 'cookie');
        viewer = await ctx.viewerIfValid();
      } catch {
        // An ended session is a guest: the sign-in page is where it goes.
      }
    }
    const caller = createCaller(ctx);
    const profile = viewer ? await caller.accounts.me().catch(() => null) : null;
    return {
      caller,
      viewer,
      signedIn: viewer && profile ? { name: profile.fullname, id: profile.id } : null,
      csrf: csrfTokenFor(req, res, config),
    };
  }

  /** A page handler: any error not handled by the page itself is an error page with the request id. */
  const handle =
    (handler: PageHandler, opts: { post?: boolean } = {}): RequestHandler =>
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
  const signedIn = (handler: PageHandler<SignedInPage>, opts: { post?: boolean } = {}): RequestHandler =>
    handle(async (req, res, page) => {
      if (!page.viewer) {
        redirect(res, `${PAGES_PREFIX}/login?next=${encodeURIComponent(opts.post ? `${PAGES_PREFIX}/security` : req.originalUrl)}`, 'sign-in-first');
        return;
      }
      await handler(req, res, page as SignedInPage);
    }, opts);

  /**
   * An old activation or reset link: what it is, and a new one in one click. A person signed in
   * (so active) who opens their own old activation link (`accounts.ownActivationLink`) is told so
   * instead: a new link would be for an account that has nothing left to activate.
   */
  const expiredLink = async (req: Request, res: Response, page: PageRequest, kind: 'activation' | 'reset', token: string) => {
    // A token the lookup refuses (too long to be one of ours) is nobody's: the ordinary page.
    const own = kind === 'activation' && page.viewer !== null && token !== '' && (await page.caller.accounts.ownActivationLink({ token }).catch(() => ({ own: false }))).own;
    if (own) {
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

  /**
   * A caller on the request's cookies as they are now: after a procedure that set a session (a
   * sign-in), the page's own caller still holds the request's first credentials.
   */
  const callerNow = (req: Request, res: Response): Caller => createCaller(createHttpContext(req, res, services, config, 'cookie'));

  return { config, verification, showsWidget, handle, signedIn, expiredLink, callerNow };
}

export type PageKit = ReturnType<typeof pageKit>;

/** Whether the service asks for a recent proof of the person first (`#requireFresh`'s 403). */
export function needsConfirmation(error: unknown): boolean {
  const app = toAppError(error, undefined);
  return app.status === 403 && typeof app.details?.reauthenticate === 'string';
}

/**
 * Whether a request that reached no route is a person's browser on one of the pages' paths (a
 * GET or HEAD under `/account`, or of a path the route table gives a page, `pagePaths`, such as
 * the provider's `/oidc/logout/confirm`): what a refused form left in the address bar, a bookmark
 * of a page shown at a form's address. It gets a page, not the API's JSON 404.
 */
export function isPagePath(req: Request, pagePaths: ReadonlySet<string>): boolean {
  if (req.method !== 'GET' && req.method !== 'HEAD') return false;
  return req.path === PAGES_PREFIX || req.path.startsWith(`${PAGES_PREFIX}/`) || pagePaths.has(req.path.toLowerCase());
}

/** The page for a pages' path that is not one (`isPagePath`): 404, with the way to the account's pages. */
export function sendMissingPage(req: Request, res: Response): void {
  sendPage(res, 404, 'message', {
    title: 'Page not found',
    signedIn: null,
    csrf: '',
    requestId: requestIdOf(req),
    prefix: PAGES_PREFIX,
    heading: 'There is no page here',
    isError: true,
    paragraphs: ['This address is not a page of this service: it may be a form’s address, which is only sent, or a link that was mistyped.'],
    action: { href: `${PAGES_PREFIX}/security`, label: 'Go to your account' },
  });
}

/** The largest form of the account pages: a profile of many rows, with long texts. */
const ACCOUNT_FORM_BYTES = 1024 * 1024;
/** The most fields one form of the account pages may post: a profile's positions take 5 each, its relations 6. */
const ACCOUNT_FORM_FIELDS = 2000;
const parseAccountForm = withLengthCheck(
  'application/x-www-form-urlencoded',
  ACCOUNT_FORM_BYTES,
  express.urlencoded({ extended: false, limit: ACCOUNT_FORM_BYTES, parameterLimit: ACCOUNT_FORM_FIELDS }),
);

/**
 * The form of an account page (`account-form` routes): read with limits a profile of many rows
 * stays within (the sign-in provider's forms, a few fields each, have their own of 50 fields);
 * one it cannot read is an account error page, in plain words.
 */
export function accountForm(req: Request, res: Response, next: NextFunction): void {
  parseAccountForm(req, res, (error?: unknown) => {
    if (error) errorPage(req, res, null, formError(error));
    else next();
  });
}
