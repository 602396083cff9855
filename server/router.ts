/** The root router: the only place area routers are joined. */
import { accountsRouter } from './accounts/router.ts';
import { createCallerFactory, router } from './trpc.ts';

export const appRouter = router({
  accounts: accountsRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
