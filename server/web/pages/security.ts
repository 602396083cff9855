/**
 * "Password & security" (issue 27: sub-pages instead of one long page): the overview at
 * `/account/security` (a line on each area, with its link), and one page per area under it:
 * the password, two-step verification and passkeys (`security-two-step.ts`), sessions and
 * devices, applications, and the activity log with "This was not me" (`security-activity.ts`).
 * Every form posts to the path it always had (`/account/security/...`) and redirects back to
 * its area's page (post/redirect/get); a refused form shows its area's page again.
 */
import type { RequestHandler } from 'express';
import { ChangePasswordInput, RegisterApplicationInput } from '../../../shared/index.ts';
import { formRefusal, type FormField } from '../form-errors.ts';
import { sendPage } from '../render.ts';
import { field, frame, redirect, serviceRefusal, type PageKit } from './kit.ts';
import { areaPage, areaPath, SECURITY_AREAS, WORDS, type SecurityArea } from './security-areas.ts';
import { securityActivityPages } from './security-activity.ts';
import { securityTwoStepPages } from './security-two-step.ts';

export { eventFrom } from './security-activity.ts';

/** The kinds "Register an application" offers (`RegisterApplicationInput.kind`); anything else is the first. */
const APPLICATION_KINDS = RegisterApplicationInput.shape.kind.options;

/** The password form's inputs, in order. */
const PASSWORD_FIELDS: FormField[] = [
  { id: 'currentPassword', paths: ['currentPassword'], what: 'your current password', name: 'The current password' },
  { id: 'newPassword', paths: ['newPassword'], what: 'a new password', name: 'The new password' },
  { id: 'confirmation', paths: [], what: 'the new password again', name: 'The confirmation' },
];

export function securityPages(kit: PageKit) {
  const { signedIn } = kit;

  // ---- the overview ----------------------------------------------------------------------------------
  /** `/account/security`: a line on each area, read from the same procedures as the areas' pages. */
  const webSecurity = signedIn(async (req, res, page) => {
    const [{ sessions }, { events }, { consents }, mfa, { passkeys }] = await Promise.all([
      page.caller.accounts.sessions(),
      page.caller.accounts.securityEvents({}),
      page.caller.oidc.consents(),
      page.caller.accounts.mfa.status(),
      page.caller.accounts.mfa.passkeys(),
    ]);
    const passwordChanged = events.find((e) => e.action === 'password:change' || e.action === 'password:reset') ?? null;
    // The latest sign-in but this session's own (written a moment after it opened): another browser's, or this one's before.
    const current = sessions.find((s) => s.current)?.createdAt ?? Number.NaN;
    const lastSignIn = events.find((e) => e.action === 'sign-in' && !(Math.abs(e.at - current) < 5000)) ?? null;
    const failures = events.filter((e) => e.action === 'sign-in:failed' || e.action === 'mfa.code.wrong').length;
    sendPage(res, 200, 'security', {
      ...frame(req, page, 'Password & security', { wide: true }),
      ...WORDS,
      areas: SECURITY_AREAS,
      passwordChanged,
      mfa,
      passkeys,
      sessions,
      consents,
      lastSignIn,
      failures,
    });
  });

  /** One GET handler per area page. */
  const areaHandler = (area: SecurityArea) => signedIn(async (req, res, page) => areaPage(req, res, page, area));

  // ---- password --------------------------------------------------------------------------------------
  const webChangePassword = signedIn(
    async (req, res, page) => {
      const logoutOtherSessions = field(req, 'logoutOtherSessions') === 'on';
      // A refused form comes back as it was sent: the box unticked stays unticked (ticked, unless sent).
      const asSent = { logoutOtherSessions: logoutOtherSessions ? 'on' : 'off' };
      if (field(req, 'newPassword') !== field(req, 'confirmation')) {
        return areaPage(req, res, page, 'password', 400, [{ field: 'confirmation', message: 'Passwords must match' }], asSent);
      }
      const input = { currentPassword: field(req, 'currentPassword'), newPassword: field(req, 'newPassword'), logoutOtherSessions };
      try {
        await page.caller.accounts.changePassword(input);
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: PASSWORD_FIELDS, schema: ChangePasswordInput, input });
        return areaPage(req, res, page, 'password', refusal.status, refusal.errors, asSent);
      }
      redirect(res, areaPath('password'), logoutOtherSessions ? 'password-changed-others-out' : 'password-changed');
    },
    { post: true },
  );

  /** Lets a refusal saying the thing is not there (404) pass: an end or a revocation asked twice. */
  const unlessGone = (error: unknown): void => {
    if (serviceRefusal(error)?.status !== 404) throw error;
  };

  // ---- sessions and devices ------------------------------------------------------------------------------
  const webEndSession = signedIn(
    async (req, res, page) => {
      // Ended already (the button pressed twice, or in another tab): what was asked holds.
      await page.caller.accounts.endSession({ id: field(req, 'id') }).catch(unlessGone);
      redirect(res, areaPath('sessions'), 'session-ended');
    },
    { post: true },
  );
  const webEndOtherSessions = signedIn(
    async (_req, res, page) => {
      await page.caller.accounts.logoutOtherDevices();
      redirect(res, areaPath('sessions'), 'others-ended');
    },
    { post: true },
  );

  // ---- applications ------------------------------------------------------------------------------------
  const APPLICATION_FIELDS: FormField[] = [
    { id: 'appName', paths: ['name'], what: 'a name for the application', name: 'The name' },
    { id: 'appRedirectUri', paths: ['redirectUris', 'redirectUris/0'], what: 'the address people come back to after signing in', name: 'The address' },
  ];
  /** "Register an application": into the approval queue; its id (and secret, shown once) on the page that follows. */
  const webRegisterApplication = signedIn(
    async (req, res, page) => {
      let registered;
      const kind = APPLICATION_KINDS.find((k) => k === field(req, 'kind')) ?? 'confidential';
      const input = {
        name: field(req, 'name'),
        // A device signs people in with a code typed here: the address is left out even when typed.
        redirectUris: kind === 'device' || field(req, 'redirectUri') === '' ? [] : [field(req, 'redirectUri')],
        kind,
        offline: field(req, 'offline') === 'on',
      };
      try {
        registered = await page.caller.oidc.registerApplication(input);
      } catch (error) {
        const refusal = formRefusal(req, error, { fields: APPLICATION_FIELDS, schema: RegisterApplicationInput, input });
        if (refusal.status >= 500) throw error;
        return areaPage(req, res, page, 'apps', refusal.status, refusal.errors, { name: field(req, 'name'), redirectUri: field(req, 'redirectUri'), kind: field(req, 'kind'), offline: field(req, 'offline') });
      }
      sendPage(res, 200, 'message', {
        ...frame(req, page, 'Your application is registered'),
        heading: 'Your application is registered',
        paragraphs: [
          'It waits for an operator’s approval before it signs anyone in.',
          `Its client id: ${registered.clientId}`,
          ...(registered.clientSecret
            ? [`Its client secret: ${registered.clientSecret}`, 'Copy the secret now: it is shown only this once, and only its fingerprint is kept.']
            : kind === 'device'
              ? ['It has no secret: it asks for a code at /oidc/device/auth, and people type it on this service’s device page (RFC 8628).']
              : ['It has no secret: it signs people in with PKCE.']),
        ],
        action: { href: areaPath('apps'), label: 'Back to Applications' },
      });
    },
    { post: true },
  );
  const webRevokeApplication = signedIn(
    async (req, res, page) => {
      await page.caller.oidc.withdrawConsent({ clientId: field(req, 'clientId') }).catch(unlessGone);
      redirect(res, areaPath('apps'), 'revoked');
    },
    { post: true },
  );

  return {
    webSecurity,
    webSecurityPassword: areaHandler('password'),
    webSecurityTwoStep: areaHandler('two-step'),
    webSecurityPasskeys: areaHandler('passkeys'),
    webSecuritySessions: areaHandler('sessions'),
    webSecurityApps: areaHandler('apps'),
    webSecurityActivity: areaHandler('activity'),
    webChangePassword,
    webEndSession,
    webEndOtherSessions,
    webRevokeApplication,
    webRegisterApplication,
    ...securityTwoStepPages(kit),
    ...securityActivityPages(kit),
  } satisfies Record<string, RequestHandler>;
}
