/**
 * The provider's login page: the password (and human verification when the account's attempts
 * ran out for this browser), its second step, and "Sign in with a passkey". Signing in goes
 * through the procedures `POST /login`, `POST /mfa/verify` and `POST /login/passkey` call (a
 * tRPC caller on the request's own context, which sets the session's cookies); where the
 * interaction goes next is the protocol's (`OidcService.afterLogin`).
 */
import { AppError } from '../../../../shared/errors.ts';
import { LoginInput } from '../../../../shared/index.ts';
import { createHttpContext } from '../../../http/context.ts';
import { createCaller } from '../../../router.ts';
import { FIELDS, formRefusal } from '../../form-errors.ts';
import { passkeyFormInput } from '../../passkey-forms.ts';
import { humanVerificationAsked, requestIdOf, verificationMode } from '../../render.ts';
import { serviceRefusal } from '../kit.ts';
import { pendingMethods, secondStepErrors, submitSecondStep } from '../second-step.ts';
import { waitsForActivation } from '../sign-in.ts';
import { providerPage, sendProviderPage, type ProviderKit } from './kit.ts';
import { loginPage, secondStepPage } from './views.ts';

/** The provider's login form's inputs, in its order (`templates/oidc/login.eta`), worded as the account pages' (`form-errors.ts`). */
const LOGIN_FIELDS = [FIELDS.accountId, FIELDS.password, FIELDS.token];

export function providerLoginPages(kit: ProviderKit) {
  const { services, config, oidc, csrfFor, checkFormToken, field, resetUrl, signedIn } = kit;

  // ---- the password ----------------------------------------------------------------------------
  const loginForm = providerPage(async (req, res) => {
    const id = typeof req.query.interaction === 'string' ? req.query.interaction : undefined;
    const { interaction, client } = await oidc.interaction(id);
    const csrf = csrfFor(res, interaction.id);
    // Signing in may send the browser straight on to the client (consent given before).
    // The application's `login_hint` (an address or a profile id, as the person would type it) fills the first field.
    sendProviderPage(res, 200, loginPage({ interactionId: interaction.id, csrf, clientName: client.name, resetUrl, requestId: requestIdOf(req), email: interaction.params.loginHint ?? '' }), [
      interaction.params.redirectUri,
    ]);
  }, true);
  const login = providerPage(async (req, res) => {
    const id = field(req, 'interaction') ?? '';
    const { interaction, client } = await oidc.interaction(id);
    checkFormToken(req, interaction.id);
    // The sign-in's procedures, as `POST /login` and `POST /mfa/verify` call them: they set the
    // session's cookies. A request that wants the second step now ignores the remembered browser.
    const context = createHttpContext(req, res, services, config);
    if (oidc.wantsFreshSecondStep(interaction)) context.credentials.trustedDevice = undefined;
    const caller = createCaller(context);
    const targets = [interaction.params.redirectUri];
    /** The login page again with the refusal in the account pages' words and order (`form-errors.ts`); `input`: what was sent to `accounts.login`. */
    const loginAgain = (error: AppError, email = '', input?: unknown) => {
      // The account's attempts ran out for this browser: the form asks for human verification too.
      const verify = humanVerificationAsked(error);
      const verification = verify ? { verification: verificationMode(config), siteKey: config.humanVerificationSiteKey } : {};
      const inactive = waitsForActivation(error);
      const refusal = formRefusal(req, error, { fields: LOGIN_FIELDS, schema: LoginInput, input });
      const html = loginPage({ interactionId: interaction.id, csrf: csrfFor(res, interaction.id), clientName: client.name, resetUrl, requestId: requestIdOf(req), errors: refusal.errors, status: refusal.status, inactive, email, ...verification });
      sendProviderPage(res, error.status, html, targets, verify && config.humanVerification !== undefined && config.humanVerificationSiteKey !== undefined);
    };
    const secondStep = (pending: { token: string; methods: string[]; method: string }, status = 200, message: { error?: string; sent?: boolean } = {}) => {
      // The request id is for something going wrong on our side, not for a mistyped code (as on every page).
      const html = secondStepPage({ interactionId: interaction.id, csrf: csrfFor(res, interaction.id), clientName: client.name, mfaPendingToken: pending.token, methods: pending.methods, method: pending.method, requestId: status >= 500 ? requestIdOf(req) : '', ...message });
      sendProviderPage(res, status, html, targets);
    };

    // The second step: a code (or "send a code by email") for the sign-in whose password was right.
    const mfaPendingToken = field(req, 'mfaPendingToken');
    if (mfaPendingToken !== undefined) {
      const method = field(req, 'method') ?? 'totp';
      // No methods: the sign-in expired or was completed (or the token is not one of ours).
      const pending = { token: mfaPendingToken, methods: await pendingMethods(caller, mfaPendingToken), method };
      try {
        const form = { token: mfaPendingToken, method, code: field(req, 'code') ?? '', step: field(req, 'step') ?? '', rememberDevice: field(req, 'rememberDevice') === 'on' };
        if ((await submitSecondStep(caller, form)) === 'sent') {
          secondStep({ ...pending, method: 'emailOtp' }, 200, { sent: true });
          return;
        }
      } catch (error) {
        const refused = serviceRefusal(error);
        if (!refused) throw error;
        // A sign-in that expired or was completed starts again from the password.
        if (pending.methods.length === 0) loginAgain(refused);
        else secondStep(pending, refused.status, { error: secondStepErrors(req, refused, '').errors.map((e) => e.message).join(' ') });
        return;
      }
      await signedIn(req, res, interaction.id);
      return;
    }

    const email = field(req, 'email') ?? '';
    const input = { id: email, password: field(req, 'password') ?? '', token: field(req, 'token') || undefined };
    try {
      const outcome = await caller.accounts.login(input);
      if ('mfaPending' in outcome) {
        const { mfaPendingToken: token, mfaMethods, preferredMethod } = outcome;
        // The preferred method checked (or, for a passkey, whose button comes first, the first code method: `secondStepData`).
        secondStep({ token, methods: mfaMethods, method: preferredMethod });
        return;
      }
    } catch (error) {
      const refused = serviceRefusal(error);
      if (!refused) throw error;
      loginAgain(refused, email, input);
      return;
    }
    await signedIn(req, res, interaction.id);
  }, true);

  // ---- the login page's passkey sign-in (no password; `/webauthn/passkey.js` posts this form) ------
  const loginPasskey = providerPage(async (req, res) => {
    const id = field(req, 'interaction') ?? '';
    const { interaction, client } = await oidc.interaction(id);
    checkFormToken(req, interaction.id);
    try {
      const input = passkeyFormInput(field(req, 'challengeId'), field(req, 'response'));
      // The procedure sets the session's cookies, as `POST /login/passkey` does.
      await createCaller(createHttpContext(req, res, services, config)).accounts.passkeyLogin(input);
    } catch (error) {
      const refused = serviceRefusal(error);
      if (!refused) throw error;
      const csrf = csrfFor(res, interaction.id);
      const html = loginPage({ interactionId: interaction.id, csrf, clientName: client.name, resetUrl, requestId: requestIdOf(req), errors: [{ field: '', message: refused.message }], status: refused.status });
      sendProviderPage(res, refused.status, html, [interaction.params.redirectUri]);
      return;
    }
    await signedIn(req, res, interaction.id);
  }, true);

  return { loginForm, login, loginPasskey };
}
