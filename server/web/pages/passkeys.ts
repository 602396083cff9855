/**
 * What a browser needs for passkeys on our own pages:
 * - `GET /webauthn/browser.js`: `@simplewebauthn/browser`'s UMD bundle, served from the package
 *   on disk (never a CDN: the service works offline), as `/docs` serves Swagger UI's files;
 * - `GET /webauthn/passkey.js` (and its hashed name under `/assets/`): the one small script of our
 *   pages (`server/web/assets/passkey.js`: the login pages' "Sign in with a passkey" button, their
 *   second step's "Use your passkey", the account pages' "Add a passkey", and the page below); a
 *   file, not inline, so the pages' CSP allows only our own scripts;
 * - `GET /mfa/webauthn-auth?pendingToken=&callbackPort=`: the page the real platform's Python
 *   client opens in a browser for a pending sign-in's passkey step (openreview-py
 *   `openreview/mfa.py`): it runs the ceremony (`POST /mfa/challenge`, the authenticator,
 *   `POST /mfa/verify`) and posts `token` and `user` (JSON) as a form to the client's listener at
 *   `http://127.0.0.1:{callbackPort}`, the only place its CSP lets a form go.
 */
import { createRequire } from 'node:module';
import path from 'node:path';
import type { RequestHandler } from 'express';
import { AppError, WebAuthnAuthQuery } from '../../../shared/index.ts';
import { ASSETS, serveUnhashed } from '../assets.ts';
import { pagePolicy, renderPage, sendHtml } from '../render.ts';
import { sendError } from '../../http/send-error.ts';
import { installedFile } from '../../http/installed-file.ts';

// The package exports only its entry (`script/index.js`), so its bundle is found beside it.
const BROWSER_BUNDLE = path.join(path.dirname(createRequire(import.meta.url).resolve('@simplewebauthn/browser')), '..', 'dist/bundle/index.umd.min.js');

/** A page of ours with scripts: only our own, and forms only to `formAction`. */
function sendPage(res: Parameters<RequestHandler>[1], status: number, html: string, formAction: string): void {
  sendHtml(res, status, html, pagePolicy({ formAction: [formAction], scripts: true }));
}

export function passkeyHandlers() {
  const webauthnBrowserScript = installedFile(BROWSER_BUNDLE, 'text/javascript; charset=utf-8');
  const passkeyScript = serveUnhashed(ASSETS.passkeyJs);
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
