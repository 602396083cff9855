import {
  Empty,
  InteractionConsentInput,
  InteractionInput,
  InteractionResult,
  OidcClient,
  OidcClientIdInput,
  OidcClientInput,
  OidcClientsResult,
  OidcClientStatusInput,
  OidcConsentClientInput,
  OidcConsentsResult,
  RedirectResult,
  DeviceCodeInput,
  DeviceDecision,
  DeviceDecisionInput,
  DeviceRequest,
  RegisterApplicationInput,
  RegisteredApplication,
  AppError,
} from '../../shared/index.ts';
import type { Viewer } from '../accounts/viewer.ts';
import type { Context, Credentials } from '../context.ts';
import { authedProcedure, router } from '../trpc.ts';
import { InvalidRequest, OAuthError } from './errors.ts';

function requireSuperUser(viewer: Viewer): void {
  if (!viewer.isSuperUser) throw new AppError('ForbiddenError', 'Only super users can manage sign-in clients');
}

/**
 * The interaction endpoints answer JSON: a protocol error meant for a page (an unknown, expired or
 * answered interaction) becomes the Error body instead of a 500.
 */
async function asJson<T>(work: Promise<T>): Promise<T> {
  try {
    return await work;
  } catch (error) {
    if (!(error instanceof OAuthError)) throw error;
    throw new AppError(error instanceof InvalidRequest ? 'NotFoundError' : 'ValidationError', error.message, { path: 'interactionId' });
  }
}

/**
 * The provider's JSON procedures: the client registry (super users; operators use
 * `npm run admin -- oidc-client`), a person's consents, and the interaction endpoints a
 * separate frontend uses instead of the built-in login and consent pages.
 */
export const oidcRouter = router({
  clients: authedProcedure.output(OidcClientsResult).query(async ({ ctx }) => {
    requireSuperUser(ctx.user);
    return { clients: await ctx.services.oidc.listClients() };
  }),

  addClient: authedProcedure
    .input(OidcClientInput)
    .output(OidcClient)
    .mutation(({ ctx, input }) => {
      requireSuperUser(ctx.user);
      return ctx.services.oidc.addClient(input);
    }),

  setClientStatus: authedProcedure
    .input(OidcClientStatusInput)
    .output(OidcClient)
    .mutation(({ ctx, input }) => {
      requireSuperUser(ctx.user);
      return ctx.services.oidc.setClientStatus(input.id, input.status);
    }),

  removeClient: authedProcedure
    .input(OidcClientIdInput)
    .output(Empty)
    .mutation(async ({ ctx, input }) => {
      requireSuperUser(ctx.user);
      await ctx.services.oidc.removeClient(input.id);
      return {};
    }),

  /** A signed-in person registers an application (the account pages' form); it waits for approval. */
  registerApplication: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(RegisterApplicationInput)
    .output(RegisteredApplication)
    .mutation(({ ctx, input }) => ctx.services.oidc.registerForPerson(input, { profileId: ctx.user.profileId, address: ctx.origin.address })),

  consents: authedProcedure.output(OidcConsentsResult).query(async ({ ctx }) => ({ consents: await ctx.services.oidc.consents(ctx.user) })),

  withdrawConsent: authedProcedure
    .input(OidcConsentClientInput)
    .output(Empty)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.oidc.withdrawConsent(ctx.user, input.clientId);
      return {};
    }),

  confirmInteraction: authedProcedure
    .input(InteractionInput)
    .output(InteractionResult)
    // An access token may ask what a request needs (a web application's server asks with the
    // one it read from the cookie), but only the browser session completes a sign-in.
    .mutation(async ({ ctx, input }) => asJson(ctx.services.oidc.confirm(input.interactionId, ctx.user, await isBrowserSession(ctx)))),

  consentInteraction: authedProcedure
    .input(InteractionConsentInput)
    .output(RedirectResult)
    .mutation(async ({ ctx, input }) => {
      await requireBrowserSession(ctx, 'Signing in to an application');
      return { redirectUri: (await asJson(ctx.services.oidc.consent(input.interactionId, ctx.user, input.approved))).redirect };
    }),

  /**
   * The device page's look-up of a user code (RFC 8628): which application asks for what, for the
   * person to confirm. A mutation, as every code typed counts against the person's limit.
   */
  deviceRequest: authedProcedure
    .input(DeviceCodeInput)
    .output(DeviceRequest)
    .mutation(async ({ ctx, input }) => {
      await requireBrowserSession(ctx, 'Signing in on a device');
      return ctx.services.oidc.deviceRequest(ctx.user, input.userCode, ctx.origin.address);
    }),

  /** The person allows or denies a device's request. */
  decideDevice: authedProcedure
    .input(DeviceDecisionInput)
    .output(DeviceDecision)
    .mutation(async ({ ctx, input }) => {
      await requireBrowserSession(ctx, 'Signing in on a device');
      return ctx.services.oidc.decideDevice(ctx.user, input.userCode, input.approved, ctx.origin.address);
    }),
});

/** A 403 unless the request carries the browser session (`isBrowserSession`). */
async function requireBrowserSession(ctx: { user: Viewer; credentials: Credentials; services: Context['services'] }, what: string): Promise<void> {
  if (!(await isBrowserSession(ctx))) throw new AppError('ForbiddenError', `${what} needs your browser session, not an access token`);
}

/**
 * Signing a person in to an application (and consenting for them) takes their browser session,
 * both its cookies: the caller (`ctx.user`, from the access cookie) and that session's current
 * refresh cookie. An access token alone, perhaps a stolen one, in a header or a cookie, would
 * otherwise sign its thief in to every application as that person, for longer than the token lives.
 */
async function isBrowserSession(ctx: { user: Viewer; credentials: Credentials; services: Context['services'] }): Promise<boolean> {
  const { refreshToken, viaBearer } = ctx.credentials;
  return !viaBearer && (await ctx.services.sessions.holdsRefreshCookie(ctx.user.sessionId, refreshToken));
}
