/** The root router: the only place area routers are joined. */
import { accountsRouter } from './accounts/router.ts';
import { attachmentsRouter } from './attachments/router.ts';
import { oidcRouter } from './oidc/router.ts';
import { createCallerFactory, router } from './trpc.ts';
import { venueRouter } from './venue/router.ts';

export const appRouter = router({
  accounts: accountsRouter,
  venue: venueRouter,
  attachments: attachmentsRouter,
  oidc: oidcRouter,
});

export type AppRouter = typeof appRouter;
export const createCaller = createCallerFactory(appRouter);
