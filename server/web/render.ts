/**
 * How a page leaves the server: an `eta` template (which escapes every `<%= %>` by default:
 * `autoEscape` is on and no template prints user data raw) inside the one layout, with a
 * strict Content-Security-Policy (no script but our own files: the pages' behaviours on every
 * account page, the passkey scripts where there are passkey buttons), `no-store`, and the request id, which
 * every error page shows so that a person can quote it.
 */
import { Eta } from 'eta';
import type { Request, Response } from 'express';
import { PAGES_PREFIX, type Config } from '../config.ts';
import { causeOf, toAppError } from '../errors.ts';
import { AppError } from '../../shared/errors.ts';
import { utcMinute } from '../../shared/time.ts';
import { ASSETS } from './assets.ts';
import { fromRoot } from '../root.ts';

const views = fromRoot('server', 'web', 'templates');

/** Where every page links the stylesheet and the passkey script: their hashed names (`assets.ts`). */
const ASSET_URLS = { pagesCss: ASSETS.pagesCss.url, pagesJs: ASSETS.pagesJs.url, passkeyJs: ASSETS.passkeyJs.url, compareCss: ASSETS.compareCss.url };

/** One engine per process; templates are compiled once and cached. */
const eta = new Eta({ views, autoEscape: true, cache: true, autoTrim: [false, 'nl'] });

/** What every page's template may read, besides its own data. */
export interface PageFrame {
  title: string;
  /** The signed-in person's name and id, for the header; null for a guest. */
  signedIn: { name: string; id: string } | null;
  csrf: string;
  requestId: string;
  prefix: string;
  /** A one-line notice after a redirect (post/redirect/get), shown in a status region. */
  notice?: string | undefined;
  /** The refusal to show in the error summary, and the fields it names. */
  errors?: FieldError[] | undefined;
  wide?: boolean;
}

export interface FieldError {
  /** The input's id, for the summary's link; empty when no one field is at fault. */
  field: string;
  message: string;
}

/** How a page asks for human verification: Turnstile's widget when configured, else the development stand-in. */
export function verificationMode(config: Pick<Config, 'humanVerification'>): 'remote' | 'development' {
  return config.humanVerification ? 'remote' : 'development';
}

/** Where the Turnstile widget comes from: the only script and frame a page may load, and only a page that shows it. */
export const TURNSTILE_ORIGIN = 'https://challenges.cloudflare.com';

/**
 * The pages' Content-Security-Policy: nothing but our stylesheet and images, and forms sent only
 * to `formAction` (this origin by default); `scripts`: the page may run our own scripts
 * (`/webauthn/browser.js`, `/webauthn/passkey.js`, the pages' behaviours); `connect`: they may
 * call our API (the passkey buttons; by default, as `scripts`);
 * `widget`: the page shows the human-verification widget, whose script and frame are Turnstile's;
 * `frames`: the page frames our own files (the comparison of two revisions).
 * Each widens the policy only as far as it needs.
 */
export function pagePolicy(opts: { formAction?: string[]; scripts?: boolean; connect?: boolean; widget?: boolean; frames?: boolean } = {}): string {
  const scripts = [...(opts.scripts ? ["'self'"] : []), ...(opts.widget ? [TURNSTILE_ORIGIN] : [])];
  return [
    "default-src 'none'",
    "style-src 'self'",
    "img-src 'self' data:",
    `form-action ${(opts.formAction ?? ["'self'"]).join(' ')}`,
    "frame-ancestors 'none'",
    "base-uri 'none'",
    ...(scripts.length > 0 ? [`script-src ${scripts.join(' ')}`] : []),
    ...(opts.widget ? [`frame-src ${TURNSTILE_ORIGIN}`] : opts.frames ? ["frame-src 'self'"] : []),
    ...((opts.connect ?? opts.scripts) ? ["connect-src 'self'"] : []),
  ].join('; ');
}

/** Sends a page's HTML with the pages' headers: its policy (`pagePolicy`), never cached, no referrer. */
export function sendHtml(res: Response, status: number, html: string, policy: string): void {
  res.status(status).setHeader('Content-Security-Policy', policy).setHeader('Cache-Control', 'no-store').setHeader('Referrer-Policy', 'no-referrer').type('html').send(html);
}

/**
 * Sends a rendered account page; `widget`, `passkeys`: see `pagePolicy`. Every account page may
 * run our own scripts (the layout loads the pages' behaviours, `assets.ts`); only a page with
 * passkey buttons may also call the API from a script.
 */
export function sendPage(res: Response, status: number, template: string, data: PageFrame & Record<string, unknown>, opts: { widget?: boolean; passkeys?: boolean } = {}): void {
  // `status`: the layout shows the request id to quote only for our own failures (5xx), never for a typing mistake.
  const html = eta.render(template, { ...data, status, prefix: PAGES_PREFIX, assets: ASSET_URLS });
  sendHtml(res, status, html, pagePolicy({ scripts: true, connect: opts.passkeys === true, widget: opts.widget === true }));
}

/**
 * A page as HTML text, for handlers that send it with headers of their own (the sign-in
 * provider's pages, `server/web/pages/provider/views.ts`): the same engine, layout and stylesheet, for a guest
 * (no header navigation, no error summary: those pages show their own one-line error, with the
 * `requestId` their caller passes, from `requestIdOf`).
 */
export function renderPage(template: string, data: { title: string } & Record<string, unknown>): string {
  return eta.render(template, { signedIn: null, requestId: '', ...data, csrf: data.csrf ?? '', prefix: PAGES_PREFIX, assets: ASSET_URLS });
}

/**
 * A time as every page writes it: to the minute, in UTC, the same on every screen. A template
 * puts it in `<time datetime="<%= iso(ms) %>" data-local>`, and the pages' behaviours show it in
 * the reader's own time zone (`assets/behaviours/local-times.js`).
 */
export function when(ms: number): string {
  return utcMinute(ms);
}

/** A time as a `<time datetime>` attribute holds it (ISO 8601, UTC). */
export function iso(ms: number): string {
  return new Date(ms).toISOString();
}

/** The request id every page shows on an error (the same as the log line's and `X-Request-Id`). */
export function requestIdOf(req: Request): string {
  return String(req.id);
}

/**
 * The refusal as a person reads it: every problem of an `AppError` (its message, and the field
 * its path names, mapped to the page's input ids by `fieldOf`), or a generic one for anything
 * unexpected, which `toAppError` logs with the request id.
 */
export function refusalOf(req: Request, error: unknown, fieldOf: (path: string) => string = defaultField): { status: number; errors: FieldError[] } {
  const app = toAppError(error, undefined, req.log);
  const items = app.errors ?? [{ message: app.message, details: app.details }];
  const errors = items.map((item) => {
    const at = item.details?.path;
    return { field: typeof at === 'string' ? fieldOf(at) : '', message: item.message };
  });
  return { status: app.status, errors };
}

/**
 * Whether a refused sign-in asks for human verification: the account's attempts ran out for this
 * browser (`details.humanVerification`), or the verification sent was not accepted.
 */
export function humanVerificationAsked(error: unknown): boolean {
  const cause = causeOf(error);
  return cause instanceof AppError && (cause.details?.humanVerification === 'required' || cause.name === 'HumanVerificationRequiredError');
}

/** An API path (`content/names/0/first`) as an input id (`content-names-0-first`). */
function defaultField(at: string): string {
  return at.replaceAll('/', '-');
}
