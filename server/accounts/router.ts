import {
  Empty,
  LoginInput,
  ProfilesQuery,
  ProfilesResult,
  RegisterInput,
  RegisterResult,
  SessionResult,
  TildeUsernameQuery,
  TildeUsernameResult,
} from '../../shared/index.ts';
import { authedProcedure, publicProcedure, router } from '../trpc.ts';

export const accountsRouter = router({
  register: publicProcedure
    .input(RegisterInput)
    .output(RegisterResult)
    .mutation(({ ctx, input }) => ctx.services.accounts.register(input)),

  login: publicProcedure
    .input(LoginInput)
    .output(SessionResult)
    .mutation(async ({ ctx, input }) => {
      const session = await ctx.services.accounts.login(input);
      ctx.cookies.set(session);
      return session.result;
    }),

  refreshToken: publicProcedure.output(SessionResult).mutation(async ({ ctx }) => {
    const session = await ctx.services.accounts.refresh({
      refreshToken: ctx.credentials.refreshToken,
      viewer: ctx.credentials.refreshToken ? undefined : await ctx.viewer(),
    });
    ctx.cookies.set(session);
    return session.result;
  }),

  logout: publicProcedure.output(Empty).mutation(async ({ ctx }) => {
    await ctx.services.accounts.logout(await ctx.optionalViewer());
    ctx.cookies.clear();
    return {};
  }),

  logoutOtherDevices: authedProcedure.output(SessionResult).mutation(async ({ ctx }) => {
    const session = await ctx.services.accounts.logoutOtherDevices(ctx.user);
    ctx.cookies.set(session);
    return session.result;
  }),

  profiles: authedProcedure
    .input(ProfilesQuery.optional())
    .output(ProfilesResult)
    .query(({ ctx, input }) => ctx.services.accounts.profiles(input ?? {}, ctx.user)),

  tildeUsername: publicProcedure
    .input(TildeUsernameQuery)
    .output(TildeUsernameResult)
    .query(async ({ ctx, input }) => ({ username: await ctx.services.accounts.nextUsername(input) })),
});
