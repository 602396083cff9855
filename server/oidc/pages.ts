/**
 * The pages a person sees while signing in to another application: the login page (with "Sign
 * in with a passkey"), the second step, the consent page and the error page. They are `eta`
 * templates (`server/web/templates/oidc/`) inside the account pages' one layout and stylesheet,
 * rendered by the account pages' renderer, which escapes every value by construction. Every form
 * carries a CSRF token; the one script (`/webauthn/passkey.js`) only adds the passkey buttons.
 * Every error these pages show comes with the request's id, to quote to support.
 */
import { secondStepData } from '../web/pages/second-step.ts';
import { renderPage } from '../web/render.ts';

/** What each scope means, in plain words. */
const SCOPE_WORDS: Record<string, string> = {
  openid: 'Know who you are (your profile id)',
  profile: 'See your name',
  email: 'See your email address and whether it is confirmed',
};

/** The provider's part of the pages' stylesheet (`server/web/style.ts` adds the account pages' own); also served at `/oidc/pages.css`. */
export const STYLESHEET = `
*{box-sizing:border-box}
body{margin:0;font:16px/1.5 system-ui,-apple-system,"Segoe UI",sans-serif;background:#f4f5f7;color:#1d2330}
main{max-width:420px;margin:10vh auto;background:#fff;border:1px solid #dde1e8;border-radius:8px;padding:32px}
h1{font-size:22px;margin:0 0 16px}
label{display:block;font-weight:600;margin:16px 0 4px}
input[type=email],input[type=password],input[type=text]{width:100%;padding:10px;border:1px solid #aab2c0;border-radius:4px;font-size:16px}
fieldset{border:0;padding:0;margin:16px 0 0}
legend{font-weight:600;padding:0}
label.choice{font-weight:400;margin:4px 0;display:flex;gap:8px;align-items:center}
.notice{background:#e8f1fd;border:1px solid #b9d2f5;padding:10px;border-radius:4px}
button{font-size:16px;padding:10px 18px;border-radius:4px;border:1px solid #1f4fbf;background:#1f4fbf;color:#fff;cursor:pointer;margin-top:20px}
button.secondary{background:#fff;color:#1f4fbf}
.actions{display:flex;gap:12px}
.error{background:#fdecea;border:1px solid #f5c2bd;color:#8a1c12;padding:10px;border-radius:4px}
ul{padding-left:20px}
a{color:#1f4fbf}
`;

/** `verification`: the account's attempts ran out for this browser, so the form asks for human verification too. */
export function loginPage(opts: {
  interactionId: string;
  csrf: string;
  clientName: string;
  resetUrl: string;
  requestId: string;
  error?: string;
  email?: string;
  verification?: 'development' | 'remote';
  siteKey?: string | undefined;
}): string {
  return renderPage('oidc/login', { title: 'Sign in', ...opts, email: opts.email ?? '' });
}

/**
 * The second step after the password, for a person with multi-factor sign-in on: the account
 * pages' own second-step page (`server/web/pages/second-step.ts`), posting to `/oidc/login`.
 */
export function secondStepPage(opts: {
  interactionId: string;
  csrf: string;
  clientName: string;
  mfaPendingToken: string;
  methods: string[];
  method: string;
  requestId: string;
  error?: string | undefined;
  /** A code was just mailed. */
  sent?: boolean;
}): string {
  const step = { token: opts.mfaPendingToken, methods: opts.methods, method: opts.method };
  return renderPage('second-step', {
    title: 'Confirm it is you',
    csrf: opts.csrf,
    requestId: opts.requestId,
    ...secondStepData(step, { kind: 'provider', interactionId: opts.interactionId, clientName: opts.clientName, error: opts.error }, opts.sent === true),
  });
}

export function consentPage(opts: { interactionId: string; csrf: string; clientName: string; scopes: string[]; userName: string }): string {
  return renderPage('oidc/consent', { title: `${opts.clientName} wants to sign you in`, ...opts, scopes: opts.scopes.map((s) => SCOPE_WORDS[s] ?? s) });
}

/** The error page, with the request id to quote (the same as the log line's and `X-Request-Id`). */
export function errorPage(message: string, requestId: string): string {
  return renderPage('oidc/error', { title: 'Sign-in error', message, requestId });
}
