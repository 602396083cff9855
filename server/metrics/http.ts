import { performance } from 'node:perf_hooks';
import type { Request, RequestHandler, Response } from 'express';
import type { Histogram } from 'prom-client';
import type { Route } from '../http/routes.ts';
import { UNMATCHED } from './names.ts';

/** The methods counted by name; any other (Node's parser knows a few dozen) is `other`. */
const METHODS = new Set(['GET', 'HEAD', 'POST', 'PUT', 'DELETE', 'OPTIONS', 'PATCH']);

export type RequestLabels = 'route' | 'method' | 'status';

/**
 * The route template a request was answered by: the path of its line of the route table, never
 * the URL. Express leaves its route on the request (`req.route.path`, the table's path, also for
 * a path's other methods, which its 404 answers); tRPC's route takes every path under its own
 * (`req.baseUrl`, matched whatever the letter case); a request to a literal path answered
 * without the router (`directDispatch` in `http/mount.ts`) has exactly its route's path as its
 * URL's path; and a request refused on its way out of a prefix's router (tRPC's method check),
 * whose `baseUrl` Express has put back by then, is the prefix's by its path. Anything else
 * reached no route: `unmatched`.
 */
export function routeTemplate(table: readonly Route[]): (req: Request) => string {
  const literal = new Set(table.filter((route) => !/[:*]/.test(route.path)).map((route) => route.path));
  const prefixes = new Map(table.filter((route) => route.method === 'any').map((route) => [route.path.toLowerCase(), route.path]));
  return (req) => {
    const matched: unknown = (req.route as { path?: unknown } | undefined)?.path;
    if (typeof matched === 'string') return matched;
    if (req.baseUrl) return prefixes.get(req.baseUrl.toLowerCase()) ?? UNMATCHED;
    const url = req.originalUrl ?? req.url ?? '';
    const cut = url.indexOf('?');
    const path = cut < 0 ? url : url.slice(0, cut);
    if (literal.has(path)) return path;
    // A prefix's request refused on its way out of the prefix's router (tRPC's method check):
    // Express has put `baseUrl` back by the time the answer is finished.
    const lower = path.toLowerCase();
    for (const [prefix, route] of prefixes) if (lower === prefix || lower.startsWith(`${prefix}/`)) return route;
    return UNMATCHED;
  };
}

/**
 * The first step of every request: when its answer is finished, its duration goes into the
 * histogram under its route template, method and status. A request whose connection closed
 * before its answer was finished is not counted. Per request: a clock reading and one listener.
 */
export function requestMetrics(histogram: Histogram<RequestLabels>, table: readonly Route[]): RequestHandler {
  const templateOf = routeTemplate(table);
  return (req: Request, res: Response, next: () => void) => {
    const started = performance.now();
    res.once('finish', () => {
      const method = METHODS.has(req.method) ? req.method : 'other';
      histogram.observe({ route: templateOf(req), method, status: String(res.statusCode) }, (performance.now() - started) / 1000);
    });
    next();
  };
}
