/**
 * The service's own pages (issue 18), under `/account` (`PAGES_PREFIX`): sign up, check your
 * mail, activate, confirm an email, request a reset and reset, sign in (and its second step),
 * sign out, "Password & security", and the device page (signing in on a device, RFC 8628). Every mailed link (`{WEB_URL}/profile/activate`,
 * `/user/password`, `/confirm`, `/reset`) lands here when `WEB_URL` is left to its default.
 * One file per flow; what they share is `kit.ts`. The route table (`server/http/routes.ts`)
 * names these handlers.
 */
import type { RequestHandler } from 'express';
import { PAGES_PREFIX, type Config } from '../../config.ts';
import type { Services } from '../../services.ts';
import { ASSETS, serveAsset, serveUnhashed } from '../assets.ts';
import { activationPages } from './activation.ts';
import { confirmEmailPages } from './confirm-email.ts';
import { devicePages } from './device.ts';
import { yourDataPages } from './your-data.ts';
import { emailsPages } from './emails.ts';
import { pageKit, redirect } from './kit.ts';
import { profilePages } from './profile.ts';
import { resetPages } from './reset.ts';
import { securityPages } from './security.ts';
import { signInPages } from './sign-in.ts';
import { signUpPages } from './sign-up.ts';

export function webHandlers(services: Services, config: Config) {
  const kit = pageKit(services, config);

  // ---- the assets and the front door -------------------------------------------------------------
  const webStylesheet = serveUnhashed(ASSETS.pagesCss);
  /** The service's address itself leads a person to the web application: these pages, or the frontend WEB_URL names. */
  const webRoot: RequestHandler = (_req, res) => {
    res.redirect(303, config.webUrl);
  };
  const webHome = kit.handle(async (_req, res, page) => {
    redirect(res, `${PAGES_PREFIX}/${page.viewer ? 'security' : 'login'}`);
  });

  return {
    webAsset: serveAsset,
    webStylesheet,
    webRoot,
    webHome,
    ...signUpPages(kit),
    ...activationPages(kit),
    ...confirmEmailPages(kit),
    ...resetPages(kit),
    ...signInPages(kit),
    ...securityPages(kit),
    ...profilePages(kit),
    ...emailsPages(kit),
    ...yourDataPages(kit),
    ...devicePages(kit),
  } satisfies Record<string, RequestHandler>;
}

export type WebHandlers = ReturnType<typeof webHandlers>;
