/**
 * The pages a person sees while signing in to another application: plain server-rendered HTML
 * with one small stylesheet, a CSRF token in every form; the one script (`/webauthn/passkey.js`)
 * only adds the passkey button to the login page.
 */

const escape = (text: string) =>
  text.replace(/[&<>"']/g, (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' })[c] ?? c);

/** What each scope means, in plain words. */
const SCOPE_WORDS: Record<string, string> = {
  openid: 'Know who you are (your profile id)',
  profile: 'See your name',
  email: 'See your email address and whether it is confirmed',
};

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

function layout(title: string, body: string): string {
  return `<!doctype html>
<html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1">
<title>${escape(title)}</title><link rel="stylesheet" href="/oidc/pages.css"></head>
<body><main>${body}</main></body></html>`;
}

export function loginPage(opts: { interactionId: string; csrf: string; clientName: string; resetUrl: string; error?: string; email?: string }): string {
  return layout(
    'Sign in',
    `<h1>Sign in to continue to ${escape(opts.clientName)}</h1>
${opts.error ? `<p class="error" role="alert">${escape(opts.error)}</p>` : ''}
<form method="post" action="/oidc/login">
<input type="hidden" name="interaction" value="${escape(opts.interactionId)}">
<input type="hidden" name="csrf" value="${escape(opts.csrf)}">
<label for="email">Email</label>
<input id="email" name="email" type="email" autocomplete="username" required value="${escape(opts.email ?? '')}">
<label for="password">Password</label>
<input id="password" name="password" type="password" autocomplete="current-password" required>
<button type="submit">Sign in</button>
</form>
<p><a href="${escape(opts.resetUrl)}">Forgot your password?</a></p>
${passkeyForm(opts)}`,
  );
}

/**
 * "Sign in with a passkey": hidden until `/webauthn/passkey.js` finds WebAuthn in the browser
 * (without scripts the page is the password form alone). The script fills `challengeId` and
 * `response` from the ceremony and posts the form.
 */
function passkeyForm(opts: { interactionId: string; csrf: string }): string {
  return `<form method="post" action="/oidc/login/passkey" id="passkey-form" hidden>
<input type="hidden" name="interaction" value="${escape(opts.interactionId)}">
<input type="hidden" name="csrf" value="${escape(opts.csrf)}">
<input type="hidden" name="challengeId" value="">
<input type="hidden" name="response" value="">
<p class="error" role="alert" id="passkey-error" hidden></p>
<button type="submit" class="secondary" id="passkey-sign-in">Sign in with a passkey</button>
</form>
<script src="/webauthn/browser.js"></script>
<script src="/webauthn/passkey.js"></script>`;
}

/**
 * The second step with a passkey: hidden until `/webauthn/passkey.js` finds WebAuthn in the
 * browser. The script asks `/mfa/challenge` for the pending sign-in's request options, runs the
 * ceremony and posts the assertion (JSON, in `code`) to `/oidc/login` as the code forms do.
 */
function passkeyStepForm(opts: { interactionId: string; csrf: string; mfaPendingToken: string }): string {
  return `<form method="post" action="/oidc/login" id="passkey-step-form" hidden>
<input type="hidden" name="interaction" value="${escape(opts.interactionId)}">
<input type="hidden" name="csrf" value="${escape(opts.csrf)}">
<input type="hidden" name="mfaPendingToken" value="${escape(opts.mfaPendingToken)}">
<input type="hidden" name="method" value="passkey">
<input type="hidden" name="step" value="verify">
<input type="hidden" name="code" value="">
<p class="error" role="alert" id="passkey-step-form-error" hidden></p>
<button type="submit" class="secondary">Use your passkey</button>
</form>
<script src="/webauthn/browser.js"></script>
<script src="/webauthn/passkey.js"></script>`;
}

/** How the second step names each method. */
const METHOD_WORDS: Record<string, string> = {
  totp: 'A code from your authenticator app',
  emailOtp: 'A code sent to your email',
  recovery: 'A recovery code',
};

/**
 * The second step after the password, for a person with multi-factor sign-in on: a code from an
 * authenticator app or from an email ("Send a code" mails one), or a recovery code, and
 * "remember this device". A passkey, when the person has one, is a form of its own that
 * `/webauthn/passkey.js` shows and fills (`passkeyStepForm`).
 */
export function secondStepPage(opts: {
  interactionId: string;
  csrf: string;
  clientName: string;
  mfaPendingToken: string;
  methods: string[];
  method: string;
  error?: string;
  notice?: string;
}): string {
  const methods = [...opts.methods.filter((m) => m in METHOD_WORDS), 'recovery'];
  const hidden = `<input type="hidden" name="interaction" value="${escape(opts.interactionId)}">
<input type="hidden" name="csrf" value="${escape(opts.csrf)}">
<input type="hidden" name="mfaPendingToken" value="${escape(opts.mfaPendingToken)}">`;
  return layout(
    'Confirm it is you',
    `<h1>Confirm it is you</h1>
<p>Signing in to ${escape(opts.clientName)} needs a second step.</p>
${opts.error ? `<p class="error" role="alert">${escape(opts.error)}</p>` : ''}${opts.notice ? `<p class="notice" role="status">${escape(opts.notice)}</p>` : ''}
<form method="post" action="/oidc/login">
${hidden}
<fieldset><legend>Use</legend>
${methods
  .map(
    (m) =>
      `<label class="choice"><input type="radio" name="method" value="${m}"${m === opts.method ? ' checked' : ''}> ${escape(METHOD_WORDS[m] ?? m)}</label>`,
  )
  .join('\n')}
</fieldset>
<label for="code">Code</label>
<input id="code" name="code" type="text" autocomplete="one-time-code" autocapitalize="characters" spellcheck="false">
<label class="choice"><input type="checkbox" name="rememberDevice" value="on"> Remember this device for 30 days</label>
<div class="actions">
<button type="submit" name="step" value="verify">Verify</button>
${methods.includes('emailOtp') ? '<button type="submit" name="step" value="send-email" class="secondary">Send a code by email</button>' : ''}
</div>
</form>
${opts.methods.includes('passkey') ? passkeyStepForm(opts) : ''}`,
  );
}

export function consentPage(opts: { interactionId: string; csrf: string; clientName: string; scopes: string[]; userName: string }): string {
  return layout(
    `${opts.clientName} wants to sign you in`,
    `<h1>${escape(opts.clientName)} wants to sign you in</h1>
<p>You are signed in as ${escape(opts.userName)}. ${escape(opts.clientName)} will be able to:</p>
<ul>${opts.scopes.map((s) => `<li>${escape(SCOPE_WORDS[s] ?? s)}</li>`).join('')}</ul>
<form method="post" action="/oidc/consent">
<input type="hidden" name="interaction" value="${escape(opts.interactionId)}">
<input type="hidden" name="csrf" value="${escape(opts.csrf)}">
<div class="actions">
<button type="submit" name="decision" value="allow">Allow</button>
<button type="submit" name="decision" value="deny" class="secondary">Deny</button>
</div>
</form>`,
  );
}

export function errorPage(message: string): string {
  return layout('Sign-in error', `<h1>Sign-in error</h1><p class="error" role="alert">${escape(message)}</p>`);
}
