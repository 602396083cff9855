/**
 * The one place tRPC is initialised. It exports only what procedures are built from.
 */
import { initTRPC } from '@trpc/server';
import { AppError } from '../shared/errors.ts';
import type { Viewer } from './accounts/viewer.ts';
import type { Context } from './context.ts';
import { toAppError, toTRPCError } from './errors.ts';

/** What a procedure declares about itself beyond its input and output. */
export interface ProcedureMeta {
  /**
   * How a mutation behaves in an impersonation session. By default it runs only when the
   * impersonator is a super user (`disallowDataModification` false). `allowed`: always
   * (logout, refresh, impersonate, exit). `refused`: never, for anyone: credential changes.
   */
  whileImpersonating?: 'allowed' | 'refused';
  /** Set by `authedProcedure`: the caller must have a session (the API document says so too). */
  session?: 'required';
}

const t = initTRPC.context<Context>().meta<ProcedureMeta>().create({
  isDev: false,
  /** A tRPC client sees the spec's Error body (name, status, details with the field's path) in `data`. */
  errorFormatter({ shape, error, ctx }) {
    // Errors from procedures arrive as AppErrors already; tRPC's own (an unknown procedure, a
    // malformed input) are named here.
    const app = error.cause instanceof AppError ? error.cause : toAppError(error, undefined);
    return {
      message: app.message,
      code: shape.code,
      data: { code: shape.data.code, httpStatus: app.status, path: shape.data.path, error: app.toBody(ctx?.requestId) },
    };
  },
});

/**
 * What every procedure goes through, in one middleware (each level of tRPC's middleware chain
 * copies the call's options twice, a measurable part of a small request's cost):
 *
 * - Mutations in an impersonation session: see `ProcedureMeta.whileImpersonating`.
 * - Every failure leaves a procedure as a TRPCError whose cause is an AppError: schema failures
 *   are named per field (the raw input tells a missing field from a wrong one), anything
 *   unexpected becomes a logged 500.
 */
const procedureRules = t.middleware(async ({ next, getRawInput, ctx, type, meta }) => {
  if (type === 'mutation' && meta?.whileImpersonating !== 'allowed') {
    try {
      await checkImpersonation(ctx, meta);
    } catch (error) {
      throw toTRPCError(toAppError(error, undefined, ctx.log()));
    }
  }
  const result = await next();
  if (result.ok) return result;
  const app = toAppError(result.error, await getRawInput().catch(() => undefined), ctx.log());
  return { ...result, error: toTRPCError(app) };
});

async function checkImpersonation(ctx: Context, meta: ProcedureMeta | undefined): Promise<void> {
  const viewer = await ctx.viewerIfValid();
  if (!viewer?.impersonator) return;
  if (meta?.whileImpersonating === 'refused') throw new AppError('ForbiddenError', 'Credentials cannot be changed while impersonating');
  if (viewer.readOnly) throw new AppError('ForbiddenError', 'Data cannot be modified while impersonating');
}

const requireSession = t.middleware(async ({ ctx, next }) => {
  const viewer: Viewer = await ctx.viewer();
  return next({ ctx: { ...ctx, user: viewer } });
});

export const router = t.router;
export const createCallerFactory = t.createCallerFactory;
export const publicProcedure = t.procedure.use(procedureRules);
/** A procedure for signed-in callers: `ctx.user` is the caller, or the request gets 401. */
export const authedProcedure = publicProcedure.use(requireSession).meta({ session: 'required' });
