import {
  EmailSetupResult,
  MfaChallengeInput,
  MfaChallengeResult,
  MfaChangeResult,
  MfaPreferredInput,
  MfaStatus,
  MfaPendingMethodsInput,
  MfaPendingMethodsResult,
  MfaVerifyInput,
  MfaVerifyResult,
  PasskeyIdParam,
  PasskeyListResult,
  PasskeyVerifyInput,
  PasskeyVerifyResult,
  ReauthChallengeResult,
  ReauthenticateInput,
  ReauthenticateResult,
  RecoveryCodesResult,
  TotpInitResult,
  TotpVerifyInput,
  TotpVerifyResult,
  WebAuthnOptions,
} from '../../../shared/index.ts';
import { authedProcedure, publicProcedure, router } from '../../trpc.ts';

/**
 * Multi-factor sign-in's procedures, joined into the accounts router as `accounts.mfa.*`.
 * Changes to a person's factors are refused in an impersonation: only the person may make them.
 */
const mine = authedProcedure.meta({ whileImpersonating: 'refused' });

export const mfaRouter = router({
  // ---- the second step of a sign-in ------------------------------------------------------------------
  challenge: publicProcedure
    .input(MfaChallengeInput)
    .output(MfaChallengeResult)
    .mutation(({ ctx, input }) => ctx.services.signIn.challenge(input, ctx.origin, ctx.credentials.device)),

  /** The methods of a pending sign-in, for the pages' second step (none: it expired or was finished). */
  pendingMethods: publicProcedure
    .input(MfaPendingMethodsInput)
    .output(MfaPendingMethodsResult)
    .query(async ({ ctx, input }) => ({ methods: await ctx.services.signIn.pendingMethods(input.mfaPendingToken) })),

  verify: publicProcedure
    .input(MfaVerifyInput)
    .output(MfaVerifyResult)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.services.signIn.verify(input, ctx.origin, ctx.credentials);
      ctx.cookies.set(outcome.session);
      if (outcome.trustedDevice) ctx.cookies.trustDevice?.(outcome.trustedDevice);
      return outcome.session.result;
    }),

  // ---- management, signed in ----------------------------------------------------------------------
  status: authedProcedure.output(MfaStatus).query(async ({ ctx }) => ctx.services.mfa.status(ctx.user)),

  setPreferred: mine
    .input(MfaPreferredInput)
    .output(MfaStatus)
    .mutation(({ ctx, input }) => ctx.services.mfa.setPreferred(ctx.user, input.method)),

  totpInit: mine.output(TotpInitResult).mutation(({ ctx }) => ctx.services.mfa.totpInit(ctx.user, ctx.credentials.refreshToken)),

  totpVerify: mine
    .input(TotpVerifyInput)
    .output(TotpVerifyResult)
    .mutation(({ ctx, input }) => ctx.services.mfa.totpVerify(ctx.user, input.code, ctx.credentials.refreshToken)),

  /** The setup waiting for its first code, shown again after a wrong one (the account page); null when none is. As fresh a proof as `totpInit`'s: it answers the secret. */
  totpWaiting: authedProcedure.output(TotpInitResult.nullable()).query(({ ctx }) => ctx.services.mfa.totpWaiting(ctx.user, ctx.credentials.refreshToken)),

  totpDelete: mine.output(MfaChangeResult).mutation(({ ctx }) => ctx.services.mfa.totpDelete(ctx.user)),

  emailSetup: mine.output(EmailSetupResult).mutation(({ ctx }) => ctx.services.mfa.emailSetup(ctx.user, ctx.credentials.refreshToken)),

  emailDelete: mine.output(MfaChangeResult).mutation(({ ctx }) => ctx.services.mfa.emailDelete(ctx.user)),

  regenerateRecoveryCodes: mine.output(RecoveryCodesResult).mutation(({ ctx }) => ctx.services.mfa.regenerateRecoveryCodes(ctx.user, ctx.credentials.refreshToken)),

  forgetTrustedDevices: mine.output(MfaStatus).mutation(({ ctx }) => ctx.services.mfa.forgetTrustedDevices(ctx.user)),

  passkeyInit: mine.output(WebAuthnOptions).mutation(({ ctx }) => ctx.services.mfa.passkeyInit(ctx.user, ctx.credentials.refreshToken)),

  passkeyVerify: mine
    .input(PasskeyVerifyInput)
    .output(PasskeyVerifyResult)
    .mutation(({ ctx, input }) => ctx.services.mfa.passkeyVerify(ctx.user, input.response, input.name, ctx.credentials.refreshToken)),

  passkeys: authedProcedure.output(PasskeyListResult).query(({ ctx }) => ctx.services.mfa.passkeyList(ctx.user)),

  passkeyDelete: mine
    .input(PasskeyIdParam)
    .output(MfaChangeResult)
    .mutation(({ ctx, input }) => ctx.services.mfa.passkeyDelete(ctx.user, input.credentialId)),

  reauthChallenge: mine.output(ReauthChallengeResult).mutation(({ ctx }) => ctx.services.mfa.reauthChallenge(ctx.user)),

  reauthenticate: mine
    .input(ReauthenticateInput)
    .output(ReauthenticateResult)
    .mutation(({ ctx, input }) => ctx.services.mfa.reauthenticate(ctx.user, input, ctx.origin)),
});
