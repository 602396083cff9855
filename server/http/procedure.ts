/**
 * The handler of a `procedure` route: it builds the procedure's input from the path, the query
 * string and the body, calls the procedure as tRPC's HTTP adapter calls it (`callProcedure`, the
 * door tRPC keeps for adapters: the same middleware, schemas and errors as a tRPC client's call)
 * and sends its result as JSON. Not through a caller (`createCaller`): its proxies are built
 * anew for every request, a measurable part of a small request's cost (docs/performance.md).
 */
import { callProcedure } from '@trpc/server/unstable-core-do-not-import';
import type { Request, RequestHandler } from 'express';
import { AppError } from '../../shared/errors.ts';
import type { Config } from '../config.ts';
import { appRouter } from '../router.ts';
import type { Services } from '../services.ts';
import { createHttpContext } from './context.ts';
import type { ProcedureRoute } from './routes.ts';
import { sendError } from './send-error.ts';

/** The path's parameters by their input names; a venue id's segments are joined again. */
function pathParams(route: ProcedureRoute, req: Request): Record<string, string> {
  const params: Record<string, string> = {};
  for (const [name, value] of Object.entries(req.params as Record<string, string | string[]>)) {
    params[route.rename?.[name] ?? name] = Array.isArray(value) ? value.join('/') : String(value);
  }
  return params;
}

/**
 * The procedure's input: the body or the query string with the path parameters added. A body
 * that already has such a key is refused, so a path parameter cannot be smuggled in through
 * the body. The procedure's schema checks the rest, exactly as for a tRPC call.
 */
function routeInput(route: ProcedureRoute, req: Request): unknown {
  const params = pathParams(route, req);
  const body: unknown = req.body;
  const sentBody = body !== undefined && !(typeof body === 'object' && body !== null && !Array.isArray(body) && Object.keys(body).length === 0);
  const source: unknown = route.input === 'body' || (route.input === 'query-or-body' && sentBody) ? body : route.input === 'none' ? undefined : req.query;
  if (Object.keys(params).length === 0) return source;
  if (source === undefined) return params;
  if (source === null || typeof source !== 'object' || Array.isArray(source)) return source;
  for (const key of Object.keys(params)) {
    if (key in source) throw new AppError('AdditionalPropertiesError', `The property ${key} must NOT be present`, { path: key });
  }
  return { ...source, ...params };
}

/** The kind of the route's procedure (a query or a mutation); a route naming no procedure stops the start. */
function procedureType(route: ProcedureRoute): 'query' | 'mutation' {
  // At run time the router keeps its procedures by their dotted paths, as `callProcedure` reads them.
  const procedures = appRouter._def.procedures as unknown as Record<string, { _def: { type: string } } | undefined>;
  const type = procedures[route.procedure]?._def.type;
  if (type !== 'query' && type !== 'mutation') throw new Error(`The route ${route.method.toUpperCase()} ${route.path} names no query or mutation: ${route.procedure}`);
  return type;
}

/** Answers a `procedure` route; any error leaves as the Error body. */
export function procedureHandler(route: ProcedureRoute, services: Services, config: Config): RequestHandler {
  const type = procedureType(route);
  return async (req, res) => {
    try {
      const input = route.input === 'none' && Object.keys(req.params).length === 0 ? undefined : routeInput(route, req);
      const ctx = createHttpContext(req, res, services, config);
      const answer = await callProcedure({ router: appRouter, path: route.procedure, type, ctx, getRawInput: async () => input, signal: undefined, batchIndex: 0 });
      // Answers are personal and some carry secrets (session tokens, a TOTP secret, recovery
      // codes): no cache along the way keeps them.
      res.setHeader('Cache-Control', 'no-store');
      res.json(answer);
    } catch (error) {
      sendError(res, error, route.method === 'get' ? req.query : req.body);
    }
  };
}
