/**
 * What a browser needs for passkeys on our own pages:
 * - `GET /webauthn/browser.js`: `@simplewebauthn/browser`'s UMD bundle, served from the package
 *   on disk (never a CDN: the service works offline), as `/docs` serves Swagger UI's files;
 * - `GET /webauthn/passkey.js`: the one small script of our pages (the login pages' "Sign in with
 *   a passkey" button, their second step's "Use your passkey", the account pages' "Add a
 *   passkey", and the page below); a file, not
 *   inline, so the pages' CSP allows only our own scripts;
 * - `GET /mfa/webauthn-auth?pendingToken=&callbackPort=`: the page the real platform's Python
 *   client opens in a browser for a pending sign-in's passkey step (openreview-py
 *   `openreview/mfa.py`): it runs the ceremony (`POST /mfa/challenge`, the authenticator,
 *   `POST /mfa/verify`) and posts `token` and `user` (JSON) as a form to the client's listener at
 *   `http://127.0.0.1:{callbackPort}`, the only place its CSP lets a form go.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { RequestHandler } from 'express';
import { AppError, WebAuthnAuthQuery } from '../../shared/index.ts';
import { renderPage } from '../web/render.ts';
import { sendError } from './send-error.ts';

// The package exports only its entry (`script/index.js`), so its bundle is found beside it.
const BROWSER_BUNDLE = path.join(path.dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '..', 'dist/bundle/index.umd.min.js');

/**
 * The script of our passkey buttons. `SimpleWebAuthnBrowser` is the bundle's global. The login
 * page's passkey form stays hidden unless scripts run and the browser has WebAuthn, so without
 * JavaScript the page is the password form alone.
 */
export const PASSKEY_SCRIPT = `(function () {
  'use strict';
  var webauthn = window.SimpleWebAuthnBrowser;
  var supported = Boolean(webauthn && window.PublicKeyCredential);

  function postJson(url, body) {
    return fetch(url, {
      method: 'POST',
      credentials: 'same-origin',
      headers: body === undefined ? {} : { 'Content-Type': 'application/json' },
      body: body === undefined ? undefined : JSON.stringify(body),
    }).then(function (res) {
      return res.json().catch(function () { return {}; }).then(function (data) {
        if (!res.ok) {
          var failure = new Error(data.message || 'The server answered ' + res.status);
          failure.status = res.status;
          failure.details = data.details;
          throw failure;
        }
        return data;
      });
    });
  }
  function explain(error) {
    if (error && error.name === 'NotAllowedError') return 'The passkey request was cancelled or timed out. Try again.';
    return (error && error.message) || 'The passkey could not be used.';
  }
  function say(element, text) {
    element.textContent = text;
    element.hidden = !text;
  }

  // The provider's login page: a passwordless sign-in, sent as a form so the page flow goes on as after a password.
  var form = document.getElementById('passkey-form');
  if (form && supported) {
    var formError = document.getElementById('passkey-error');
    form.hidden = false;
    form.addEventListener('submit', function (event) {
      event.preventDefault();
      say(formError, '');
      var challengeId;
      postJson('/login/passkey/options')
        .then(function (begun) {
          challengeId = begun.challengeId;
          return webauthn.startAuthentication({ optionsJSON: begun.options });
        })
        .then(function (answer) {
          form.elements.namedItem('challengeId').value = challengeId;
          form.elements.namedItem('response').value = JSON.stringify(answer);
          form.submit();
        })
        .catch(function (error) { say(formError, explain(error)); });
    });
  }

  // The provider's second step after the password: the pending sign-in's passkey, posted as its code.
  var stepForm = document.getElementById('passkey-step-form');
  if (stepForm && supported) {
    var stepFormError = document.getElementById('passkey-step-form-error');
    stepForm.hidden = false;
    stepForm.addEventListener('submit', function (event) {
      event.preventDefault();
      say(stepFormError, '');
      var token = stepForm.elements.namedItem('mfaPendingToken').value;
      postJson('/mfa/challenge', { mfaPendingToken: token, method: 'passkey' })
        .then(function (options) { return webauthn.startAuthentication({ optionsJSON: options }); })
        .then(function (answer) {
          stepForm.elements.namedItem('code').value = JSON.stringify(answer);
          stepForm.submit();
        })
        .catch(function (error) { say(stepFormError, explain(error)); });
    });
  }

  // The account pages' "Add a passkey": creation options, the authenticator, then the answer
  // posted with the name as a form (the page shows recovery codes when it is the first factor).
  // When the service wants a recent proof first, the page that asks for it is opened instead.
  var addForm = document.getElementById('passkey-add-form');
  if (addForm && supported) {
    var addError = document.getElementById('passkey-add-error');
    addForm.hidden = false;
    addForm.addEventListener('submit', function (event) {
      event.preventDefault();
      say(addError, '');
      postJson('/mfa/setup/passkey/init')
        .then(function (options) { return webauthn.startRegistration({ optionsJSON: options }); })
        .then(function (answer) {
          addForm.elements.namedItem('response').value = JSON.stringify(answer);
          addForm.submit();
        })
        .catch(function (error) {
          if (error && error.status === 403 && error.details && error.details.reauthenticate) {
            window.location.assign(addForm.getAttribute('data-confirm'));
            return;
          }
          say(addError, explain(error));
        });
    });
  }

  // The passkey step of a pending sign-in, for a client listening on this machine.
  var step = document.getElementById('passkey-step');
  if (step) {
    var stepError = document.getElementById('passkey-step-error');
    var status = document.getElementById('passkey-step-status');
    var button = document.getElementById('passkey-step-start');
    var pendingToken = step.getAttribute('data-pending-token');
    var callback = step.getAttribute('data-callback');
    if (!supported) say(stepError, 'This browser cannot use passkeys.');
    button.addEventListener('click', function () {
      say(stepError, '');
      button.disabled = true;
      postJson('/mfa/challenge', { mfaPendingToken: pendingToken, method: 'passkey' })
        .then(function (options) { return webauthn.startAuthentication({ optionsJSON: options }); })
        .then(function (answer) { return postJson('/mfa/verify', { mfaPendingToken: pendingToken, method: 'passkey', code: answer }); })
        .then(function (session) {
          say(status, 'Signed in. Handing the session to your terminal…');
          var handoff = document.createElement('form');
          handoff.method = 'post';
          handoff.action = callback;
          [['token', session.token], ['user', JSON.stringify(session.user)]].forEach(function (pair) {
            var input = document.createElement('input');
            input.type = 'hidden';
            input.name = pair[0];
            input.value = pair[1];
            handoff.appendChild(input);
          });
          document.body.appendChild(handoff);
          handoff.submit();
        })
        .catch(function (error) {
          button.disabled = false;
          say(stepError, explain(error));
        });
    });
  }
})();
`;

/** A page of ours with scripts: only our own, and forms only to `formAction`. */
function sendPage(res: Parameters<RequestHandler>[1], status: number, html: string, formAction: string): void {
  res
    .status(status)
    .setHeader(
      'Content-Security-Policy',
      `default-src 'none'; script-src 'self'; connect-src 'self'; style-src 'self'; img-src 'self' data:; form-action ${formAction}; frame-ancestors 'none'; base-uri 'none'`,
    )
    .setHeader('Cache-Control', 'no-store')
    .setHeader('Referrer-Policy', 'no-referrer')
    .type('html')
    .send(html);
}

export function passkeyHandlers() {
  const webauthnBrowserScript: RequestHandler = (_req, res) => {
    res.sendFile(BROWSER_BUNDLE, { maxAge: '1d', headers: { 'Content-Type': 'text/javascript; charset=utf-8' } });
  };
  const passkeyScript: RequestHandler = (_req, res) => {
    res.type('js').setHeader('Cache-Control', 'public, max-age=3600').send(PASSKEY_SCRIPT);
  };
  const webauthnAuthPage: RequestHandler = (req, res) => {
    const query = WebAuthnAuthQuery.safeParse(req.query);
    if (!query.success) {
      sendError(res, new AppError('ValidationError', 'This page needs pendingToken and callbackPort (1–65535): start again from your terminal'));
      return;
    }
    // The listener of the Python client on the person's own machine (never another host).
    const callback = `http://127.0.0.1:${query.data.callbackPort}/`;
    // The account pages' template and layout (escaped by construction), with this page's own CSP.
    const html = renderPage('webauthn-auth', { title: 'Passkey sign-in', pendingToken: query.data.pendingToken, callback });
    sendPage(res, 200, html, callback);
  };
  return { webauthnBrowserScript, passkeyScript, webauthnAuthPage } satisfies Record<string, RequestHandler>;
}

export type PasskeyHandlers = ReturnType<typeof passkeyHandlers>;
