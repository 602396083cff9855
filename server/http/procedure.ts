/**
 * The handler of a `procedure` route: it builds the procedure's input from the path, the query
 * string and the body, calls the procedure through a caller (the same code path as a tRPC
 * client's call) and sends its result as JSON.
 */
import type { Request, RequestHandler } from 'express';
import { AppError } from '../../shared/errors.ts';
import type { Config } from '../config.ts';
import { createCaller } from '../router.ts';
import type { Services } from '../services.ts';
import { createHttpContext } from './context.ts';
import type { ProcedureRoute } from './routes.ts';
import { sendError } from './send-error.ts';

type Caller = ReturnType<typeof createCaller>;

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

/** Calls the route's procedure through the caller: the same code path as a tRPC client's call. */
function callRoute(caller: Caller, route: ProcedureRoute, req: Request): Promise<unknown> {
  let target: unknown = caller;
  for (const key of route.procedure.split('.')) target = (target as Record<string, unknown>)[key];
  const procedure = target as (input?: unknown) => Promise<unknown>;
  return route.input === 'none' && Object.keys(req.params).length === 0 ? procedure() : procedure(routeInput(route, req));
}

/** Answers a `procedure` route; any error leaves as the Error body. */
export function procedureHandler(route: ProcedureRoute, services: Services, config: Config): RequestHandler {
  return async (req, res) => {
    try {
      const caller = createCaller(createHttpContext(req, res, services, config));
      const answer = await callRoute(caller, route, req);
      // Answers are personal and some carry secrets (session tokens, a TOTP secret, recovery
      // codes): no cache along the way keeps them.
      res.setHeader('Cache-Control', 'no-store');
      res.json(answer);
    } catch (error) {
      sendError(res, error, route.method === 'get' ? req.query : req.body);
    }
  };
}
