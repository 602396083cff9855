import {
  ActivationCodeInput,
  ActivationCodeResult,
  ActivatableQuery,
  ActivatableRequest,
  ActivatableResult,
  ActivateLinkRequest,
  ActivateLinkResult,
  ActivateRequest,
  ActivateResult,
  ChangePasswordInput,
  ChangePasswordResult,
  EndSessionInput,
  SecurityEventsInput,
  SecurityEventsResult,
  NotMeInput,
  NotMeLink,
  NotMeResult,
  SessionsResult,
  ConfirmEmailRequest,
  ConfirmEmailResult,
  Empty,
  IdResult,
  ImpersonateInput,
  ImpersonatorsResult,
  SetImpersonatorsInput,
  ImpersonateResult,
  LoginInput,
  PasskeyLoginInput,
  PasskeyLoginOptionsResult,
  LoginResult,
  ModerateProfileInput,
  Profile,
  ProfileSearchInput,
  ProfileSearchQuery,
  ProfileSearchResult,
  ProfilesQuery,
  ProfilesResult,
  ProfileEditorOptions,
  UpdateProfileInput,
  RegisterInput,
  RegisterResult,
  ResetPasswordRequest,
  ResetPasswordInBrowserInput,
  ResetPasswordInBrowserResult,
  OldLinkInput,
  OwnLinkResult,
  NewLinkResult,
  LinkAddressResult,
  ResettableQuery,
  ResettableRequest,
  ResettableResult,
  SessionResult,
  SimplifiedProfile,
  StatusResult,
  TildeUsernameQuery,
  TildeUsernameResult,
  DataExport,
  DeletionRequested,
  DeletionStatus,
  EmailUndoInput,
  EmailUndoPreview,
  EmailUndoResult,
  OwnEmailInput,
  OwnEmailsResult,
  RequestDeletionInput,
} from '../../shared/index.ts';
import type { Context } from '../context.ts';
import { authedProcedure, publicProcedure, router } from '../trpc.ts';
import { mfaRouter } from './mfa/router.ts';

/**
 * The caller of a step of activation: none when the bearer sent is the activation token itself.
 * openreview-py's `get_activatable` keeps that token as its session token (client.py:458-462) and
 * sends it with every later call, where it opens no session: the step is then a guest's, as it
 * would be without the header.
 */
function activatingViewer(ctx: Context, activationToken: string | undefined) {
  return activationToken !== undefined && ctx.credentials.accessToken === activationToken ? Promise.resolve(null) : ctx.optionalViewer();
}

export const accountsRouter = router({
  // ---- sign-up and activation ----------------------------------------------------------------
  register: publicProcedure
    .input(RegisterInput)
    .output(RegisterResult)
    .mutation(({ ctx, input }) => ctx.services.signUp.register(input, ctx.origin)),

  activatable: publicProcedure
    .input(ActivatableQuery)
    .output(ActivatableResult)
    .query(({ ctx, input }) => ctx.services.activation.activatable(input.token)),

  activate: publicProcedure
    .input(ActivateRequest)
    .output(ActivateResult)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.services.activation.activate(input, ctx.origin);
      if (outcome.session) ctx.cookies.set(outcome.session);
      return outcome.result;
    }),

  resendActivation: publicProcedure
    .input(ActivatableRequest)
    .output(IdResult)
    .mutation(({ ctx, input }) => ctx.services.activation.resend(input.id, ctx.origin)),

  /** The activation page's "Send me a new link" for an old link (`activation.ts`). */
  resendActivationFromLink: publicProcedure
    .input(OldLinkInput)
    .output(NewLinkResult)
    .mutation(async ({ ctx, input }) => ({ maskedEmail: (await ctx.services.activation.resendFromLink(input.token, ctx.origin))?.maskedEmail ?? null })),

  /** "Type the code": the sign-up mail's code, with its address, for a new activation link's token (`ActivationService.linkFromCode`). */
  activationFromCode: publicProcedure
    .input(ActivationCodeInput)
    .output(ActivationCodeResult)
    .mutation(({ ctx, input }) => ctx.services.activation.linkFromCode(input)),

  /** The activation page, for a signed-in person: whether an old activation link is their own (`activation.ts`). */
  ownActivationLink: authedProcedure
    .input(OldLinkInput)
    .output(OwnLinkResult)
    .query(async ({ ctx, input }) => ({ own: await ctx.services.activation.isOwnUsedLink(input.token, ctx.user) })),

  tildeUsername: publicProcedure
    .input(TildeUsernameQuery)
    .output(TildeUsernameResult)
    .query(async ({ ctx, input }) => ({ username: await ctx.services.signUp.nextUsername(input) })),

  // ---- sessions ---------------------------------------------------------------------------------
  /** With a second factor on, no session yet: `{mfaPending, mfaPendingToken, …}` for `mfa.verify`. */
  login: publicProcedure
    .input(LoginInput)
    .output(LoginResult)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.services.signIn.login(input, ctx.origin, ctx.credentials);
      if ('pending' in outcome) return outcome.pending;
      ctx.cookies.set(outcome.session);
      return outcome.session.result;
    }),

  // Passkeys without a password (`passkeys/passwordless.ts`): the same answer and cookies as `login`.
  passkeyLoginOptions: publicProcedure
    .output(PasskeyLoginOptionsResult)
    .mutation(({ ctx }) => ctx.services.passkeySignIn.options(ctx.origin)),

  passkeyLogin: publicProcedure
    .input(PasskeyLoginInput)
    .output(SessionResult)
    .mutation(async ({ ctx, input }) => {
      const { session } = await ctx.services.passkeySignIn.signIn(input, ctx.origin, ctx.credentials);
      ctx.cookies.set(session);
      return session.result;
    }),
  /** Multi-factor sign-in: the second step and the factors (`mfa/router.ts`). */
  mfa: mfaRouter,

  refreshToken: publicProcedure
    .meta({ whileImpersonating: 'allowed' })
    .output(SessionResult)
    .mutation(async ({ ctx }) => {
      const outcome = await ctx.services.sessions.refresh({
        refreshToken: ctx.credentials.refreshToken,
        viewer: ctx.credentials.refreshToken ? undefined : await ctx.viewer(),
      });
      // Only a rotation sets cookies: a bearer-only refresh or a simultaneous second refresh
      // gets a new access token in the body and no refresh token.
      if ('rotated' in outcome) {
        ctx.cookies.set(outcome.rotated);
        return outcome.rotated.result;
      }
      return outcome.accessOnly;
    }),

  logout: publicProcedure
    .meta({ whileImpersonating: 'allowed' })
    .output(Empty)
    .mutation(async ({ ctx }) => {
      await ctx.services.sessions.logout({ viewer: await ctx.viewerIfValid(), refreshToken: ctx.credentials.refreshToken });
      ctx.cookies.clear();
      return {};
    }),

  logoutOtherDevices: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .output(SessionResult)
    .mutation(async ({ ctx }) => {
      const outcome = await ctx.services.sessions.logoutOtherDevices(ctx.user, ctx.credentials.refreshToken);
      if ('rotated' in outcome) {
        ctx.cookies.set(outcome.rotated);
        return outcome.rotated.result;
      }
      return outcome.accessOnly;
    }),

  // ---- passwords and emails ----------------------------------------------------------------------
  requestReset: publicProcedure
    .input(ResettableRequest)
    .output(IdResult)
    .mutation(({ ctx, input }) => ctx.services.passwordReset.request(input, ctx.origin, ctx.credentials.device)),

  resettable: publicProcedure
    .input(ResettableQuery)
    .output(ResettableResult)
    .query(({ ctx, input }) => ctx.services.passwordReset.resettable(input.token)),

  resetPassword: publicProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(ResetPasswordRequest)
    .output(StatusResult)
    .mutation(async ({ ctx, input }) => {
      // A browser signed in to the same account keeps its session (`PasswordResetService.reset`).
      const outcome = await ctx.services.passwordReset.reset(input, ctx.origin, { viewer: await ctx.viewerIfValid(), refreshToken: ctx.credentials.refreshToken });
      if (outcome.rotated) ctx.cookies.set(outcome.rotated);
      return { status: 'ok' };
    }),

  // The reset page's form (not in the spec): "Log me out of all other sessions" unticked keeps
  // every session. Its impersonation refusal is the service's.
  resetPasswordInBrowser: publicProcedure
    .meta({ whileImpersonating: 'allowed' })
    .input(ResetPasswordInBrowserInput)
    .output(ResetPasswordInBrowserResult)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.services.passwordReset.resetInBrowser(input, ctx.origin, { viewer: await ctx.optionalViewer(), refreshToken: ctx.credentials.refreshToken });
      if (outcome.rotated) ctx.cookies.set(outcome.rotated);
      return { status: 'ok' as const, signedInHere: outcome.signedInHere };
    }),

  /** The reset page's "Send me a new link" for an old link. */
  requestResetFromLink: publicProcedure
    .input(OldLinkInput)
    .output(NewLinkResult)
    .mutation(async ({ ctx, input }) => ({ maskedEmail: (await ctx.services.passwordReset.requestFromLink(input.token, ctx.origin, ctx.credentials.device))?.maskedEmail ?? null })),

  /** The address a confirmation mail's link names, for the page it opens. */
  confirmationLinkAddress: publicProcedure
    .input(OldLinkInput)
    .output(LinkAddressResult)
    .query(async ({ ctx, input }) => ({ email: await ctx.services.emails.addressOfLink(input.token) })),

  confirmEmail: publicProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(ConfirmEmailRequest)
    .output(ConfirmEmailResult)
    .mutation(async ({ ctx, input }) => ctx.services.emails.requestConfirmation(input, await activatingViewer(ctx, input.activationToken), ctx.credentials.refreshToken)),

  activateLink: publicProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(ActivateLinkRequest)
    .output(ActivateLinkResult)
    .mutation(async ({ ctx, input }) => ctx.services.emails.confirm(input, await activatingViewer(ctx, input.activationToken), ctx.origin)),

  // ---- a person's emails and data (issue 27: `email-changes.ts`, `your-data.ts`, `account-deletion.ts`) ----
  ownEmails: authedProcedure.output(OwnEmailsResult).query(({ ctx }) => ctx.services.emails.changes.list(ctx.user)),

  removeEmail: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(OwnEmailInput)
    .output(OwnEmailsResult)
    .mutation(({ ctx, input }) => ctx.services.emails.changes.remove(ctx.user, input.email, ctx.origin, ctx.credentials.refreshToken)),

  setPreferredEmail: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(OwnEmailInput)
    .output(OwnEmailsResult)
    .mutation(({ ctx, input }) => ctx.services.emails.changes.setPreferred(ctx.user, input.email, ctx.origin, ctx.credentials.refreshToken)),

  /** What a mailed undo link would undo: the undo page's GET, which changes nothing. */
  emailUndo: publicProcedure
    .input(EmailUndoInput)
    .output(EmailUndoPreview)
    .query(({ ctx, input }) => ctx.services.emails.changes.preview(input.token)),

  undoEmailChange: publicProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(EmailUndoInput)
    .output(EmailUndoResult)
    .mutation(({ ctx, input }) => ctx.services.emails.changes.undo(input.token, ctx.origin)),

  exportData: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .output(DataExport)
    .query(({ ctx }) => ctx.services.yourData.export(ctx.user)),

  deletionStatus: authedProcedure.output(DeletionStatus).query(({ ctx }) => ctx.services.accountDeletion.status(ctx.user)),

  requestDeletion: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(RequestDeletionInput)
    .output(DeletionRequested)
    .mutation(async ({ ctx, input }) => {
      const answer = await ctx.services.accountDeletion.request(ctx.user, input, ctx.origin);
      // Every session ended, this one too: the browser's cookies go with it.
      ctx.cookies.clear();
      return answer;
    }),

  // ---- password & security (the security page; not in the spec) ---------------------------------
  changePassword: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(ChangePasswordInput)
    .output(ChangePasswordResult)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.services.security.changePassword(ctx.user, input, ctx.origin, ctx.credentials.refreshToken);
      if (outcome && 'rotated' in outcome) {
        ctx.cookies.set(outcome.rotated);
        return { status: 'ok' as const, token: outcome.rotated.result.token };
      }
      return { status: 'ok' as const, ...(outcome ? { token: outcome.accessOnly.token } : {}) };
    }),

  sessions: authedProcedure.output(SessionsResult).query(async ({ ctx }) => ({ sessions: await ctx.services.security.sessions(ctx.user) })),

  endSession: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(EndSessionInput)
    .output(Empty)
    .mutation(async ({ ctx, input }) => {
      await ctx.services.security.endSession(ctx.user, input.id);
      return {};
    }),

  securityEvents: authedProcedure
    .input(SecurityEventsInput)
    .output(SecurityEventsResult)
    .query(({ ctx, input }) => ctx.services.security.events(ctx.user, input?.before)),

  /** "This was not me" (the new-browser mail's link): the sign-in it is about; changes nothing. */
  notMeLink: publicProcedure
    .input(NotMeInput)
    .output(NotMeLink)
    .query(({ ctx, input }) => ctx.services.notMe.link(input.token)),

  /** "This was not me", confirmed: every session ends, every application is revoked, a reset link is mailed (`sign-in-alerts.ts`). */
  notMe: publicProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(NotMeInput)
    .output(NotMeResult)
    .mutation(({ ctx, input }) => ctx.services.notMe.act(input.token, ctx.origin)),

  // ---- profiles, moderation, impersonation -----------------------------------------------------
  /** The signed-in person's own profile in short (id, name, preferred email): the pages' header, an app's "signed in as". */
  me: authedProcedure.output(SimplifiedProfile).query(({ ctx }) => ctx.services.profiles.simplifiedById(ctx.user.profileId)),

  profiles: authedProcedure
    .input(ProfilesQuery.optional())
    .output(ProfilesResult)
    .query(({ ctx, input }) => ctx.services.profiles.profiles(input ?? {}, ctx.user)),

  /**
   * Edit a profile (`profile-editor.ts`): the caller's own, a super user's any. A super user's
   * impersonation may edit the person's profile, a read-only one may not (the default rule of
   * `trpc.ts`): the profile is data, not a credential. The emails it names change by their own
   * procedures' rules (`setPreferredEmail`, `removeEmail`: the refresh cookie, never impersonated).
   */
  updateProfile: authedProcedure
    .input(UpdateProfileInput)
    .output(Profile)
    .mutation(({ ctx, input }) => ctx.services.profileEditor.update(input, ctx.user, ctx.origin, ctx.credentials.refreshToken)),

  /** What the profile page offers: positions, and institutions with their domains. */
  profileEditorOptions: authedProcedure.output(ProfileEditorOptions).query(({ ctx }) => ctx.services.profileEditor.options()),

  searchProfiles: authedProcedure
    .input(ProfileSearchQuery)
    .output(ProfileSearchResult)
    .query(({ ctx, input }) => ctx.services.profiles.searchProfiles(input, ctx.user)),

  searchProfilesBy: authedProcedure
    .input(ProfileSearchInput)
    .output(ProfilesResult)
    .mutation(({ ctx, input }) => ctx.services.profiles.searchProfilesBy(input, ctx.user)),

  moderate: authedProcedure
    .input(ModerateProfileInput)
    .output(Profile)
    .mutation(({ ctx, input }) => ctx.services.moderation.moderate(input, ctx.user)),

  /** Super users: who may impersonate a person (`impersonation.ts`). */
  setImpersonators: authedProcedure
    .meta({ whileImpersonating: 'refused' })
    .input(SetImpersonatorsInput)
    .output(ImpersonatorsResult)
    .mutation(({ ctx, input }) => ctx.services.impersonation.setImpersonators(input, ctx.user)),

  impersonate: authedProcedure
    .meta({ whileImpersonating: 'allowed' })
    .input(ImpersonateInput)
    .output(ImpersonateResult)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.services.impersonation.impersonate(input.groupId, ctx.user, ctx.credentials.refreshToken);
      if (outcome.session) ctx.cookies.set(outcome.session);
      return outcome.result;
    }),

  exitImpersonation: authedProcedure
    .meta({ whileImpersonating: 'allowed' })
    .output(SessionResult)
    .mutation(async ({ ctx }) => {
      const session = await ctx.services.impersonation.exit(ctx.user, ctx.credentials.refreshToken);
      ctx.cookies.set(session);
      return session.result;
    }),
});
