import {
  EmailSetupResult,
  MfaChallengeInput,
  MfaChallengeResult,
  MfaChangeResult,
  MfaPreferredInput,
  MfaStatus,
  MfaVerifyInput,
  MfaVerifyResult,
  PasskeyIdParam,
  PasskeyListResult,
  PasskeyVerifyInput,
  PasskeyVerifyResult,
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
    .mutation(({ ctx, input }) => ctx.services.mfa.challenge(input, ctx.origin)),

  verify: publicProcedure
    .input(MfaVerifyInput)
    .output(MfaVerifyResult)
    .mutation(async ({ ctx, input }) => {
      const outcome = await ctx.services.mfa.verify(input, ctx.origin);
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

  totpInit: mine.output(TotpInitResult).mutation(({ ctx }) => ctx.services.mfa.totpInit(ctx.user)),

  totpVerify: mine
    .input(TotpVerifyInput)
    .output(TotpVerifyResult)
    .mutation(({ ctx, input }) => ctx.services.mfa.totpVerify(ctx.user, input.code)),

  totpDelete: mine.output(MfaChangeResult).mutation(({ ctx }) => ctx.services.mfa.totpDelete(ctx.user)),

  emailSetup: mine.output(EmailSetupResult).mutation(({ ctx }) => ctx.services.mfa.emailSetup(ctx.user)),

  emailDelete: mine.output(MfaChangeResult).mutation(({ ctx }) => ctx.services.mfa.emailDelete(ctx.user)),

  regenerateRecoveryCodes: mine.output(RecoveryCodesResult).mutation(({ ctx }) => ctx.services.mfa.regenerateRecoveryCodes(ctx.user)),

  forgetTrustedDevices: mine.output(MfaStatus).mutation(({ ctx }) => ctx.services.mfa.forgetTrustedDevices(ctx.user)),

  passkeyInit: mine.output(WebAuthnOptions).mutation(({ ctx }) => ctx.services.mfa.passkeyInit(ctx.user)),

  passkeyVerify: mine
    .input(PasskeyVerifyInput)
    .output(PasskeyVerifyResult)
    .mutation(({ ctx, input }) => ctx.services.mfa.passkeyVerify(ctx.user, input.response, input.name)),

  passkeys: authedProcedure.output(PasskeyListResult).query(({ ctx }) => ctx.services.mfa.passkeyList(ctx.user)),

  passkeyDelete: mine
    .input(PasskeyIdParam)
    .output(MfaChangeResult)
    .mutation(({ ctx, input }) => ctx.services.mfa.passkeyDelete(ctx.user, input.credentialId)),

  reauthenticate: mine
    .input(ReauthenticateInput)
    .output(ReauthenticateResult)
    .mutation(({ ctx, input }) => ctx.services.mfa.reauthenticate(ctx.user, input, ctx.origin)),
});
