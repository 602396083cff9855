/**
 * Mounts the route table (`routes.ts`): each entry becomes one Express route whose stack is
 * its own middleware, read from the entry, and its handler. No middleware looks at the path:
 * what a route needs is on its line of the table.
 */
import type { Express, Request, RequestHandler, Response } from 'express';
import type { Route } from './routes.ts';

/** The middleware an entry may ask for, made once at start-up. */
export interface RouteMiddleware {
  /** A document's security headers (helmet's defaults), over the API answer's every request has. */
  documentHeaders: RequestHandler;
  sameOrigin: RequestHandler;
  /** The same-origin rule of a route whose body is `octets` (tus): that body type is ours too. */
  sameOriginOctets: RequestHandler;
  bodyDeadline: RequestHandler;
  json: RequestHandler;
  /** The JSON parser of an `oauth` route (the registration endpoints): a body it cannot read is OAuth's `invalid_client_metadata`. */
  oauthJson: RequestHandler;
  /** The form parser of an `oauth` route (OAuth's error body) and of a `page` route (an error page). */
  oauthForm: RequestHandler;
  pageForm: RequestHandler;
  /** The form parser of the account pages' forms (`account-form`): larger limits, the account error page. */
  accountForm: RequestHandler;
  protocolCors: RequestHandler;
  readOnlyCors: RequestHandler;
}

/**
 * An entry's middleware, in the order the checks have always run: a document's headers, the same-origin rule, the
 * body deadline, the JSON body, then CORS, then a form body (after CORS, so that a form the
 * provider cannot read is still answered with CORS headers).
 */
export function middlewareOf(route: RouteNeeds, use: RouteMiddleware): RequestHandler[] {
  const body = route.body ?? 'json';
  const stack: RequestHandler[] = [];
  if (answersDocument(route)) stack.push(use.documentHeaders);
  if (route.sameOrigin ?? true) stack.push(body === 'octets' ? use.sameOriginOctets : use.sameOrigin);
  if (route.bodyDeadline ?? true) stack.push(use.bodyDeadline);
  if (body === 'json') stack.push(route.kind === 'oauth' ? use.oauthJson : use.json);
  if (route.cors === 'protocol') stack.push(use.protocolCors);
  if (route.cors === 'read-only') stack.push(use.readOnlyCors);
  if (body === 'form') stack.push(route.kind === 'oauth' ? use.oauthForm : use.pageForm);
  if (body === 'account-form') stack.push(use.accountForm);
  return stack;
}

/**
 * Whether a route's answer is a document a browser may show: a page, the API reference and its
 * files, a downloaded file (a `stream` read). Every other answer is an API's (JSON, an error,
 * OAuth's endpoints, tus, uploads), with the API's headers only (`apiHeaders`, `app.ts`).
 */
function answersDocument(route: RouteNeeds): boolean {
  return route.kind === 'page' || route.kind === 'docs' || (route.kind === 'stream' && route.method === 'get');
}

/** A path segment's rank: a literal (0) is more specific than a parameter (1), which is more than a venue id spanning segments (2). */
function segmentRank(segment: string | undefined): number {
  if (segment === undefined) return -1;
  if (segment.startsWith('*')) return 2;
  return segment.startsWith(':') ? 1 : 0;
}

/**
 * Precedence of two routes: at the first segment whose kind differs, the more specific one
 * wins (`/pdf/compare` before `/pdf/:id`); routes that cannot match the same path are ordered
 * by path and method only so that the order is the same whatever the table's.
 */
export function comparePrecedence(a: Route, b: Route): number {
  const as = a.path.split('/');
  const bs = b.path.split('/');
  for (let i = 0; i < Math.max(as.length, bs.length); i++) {
    const rank = segmentRank(as[i]) - segmentRank(bs[i]);
    if (rank !== 0) return rank;
  }
  const byPath = byCodeUnits(a.path, b.path);
  return byPath !== 0 ? byPath : byCodeUnits(a.method, b.method);
}

/**
 * Plain code-unit order: the same on every machine, whatever its locale, and it never loads the
 * locale data `localeCompare` does (about 3 MB resident, for ASCII paths).
 */
function byCodeUnits(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0;
}

/** The table in the order Express must try it: by precedence, never by the lines' order. */
export function byPrecedence(table: readonly Route[]): Route[] {
  const seen = new Set<string>();
  for (const route of table) {
    const key = `${route.method} ${route.path.toLowerCase()}`;
    if (seen.has(key)) throw new Error(`the route table has ${route.method.toUpperCase()} ${route.path} twice`);
    seen.add(key);
  }
  return [...table].sort(comparePrecedence);
}

/** The `Allow` list of a path, as Express answers `OPTIONS` itself: the table's methods for it, with HEAD for GET. */
export function allowedMethods(table: readonly Route[], path: string): string {
  const methods = new Set<string>();
  for (const route of table) {
    if (route.path !== path || route.method === 'options' || route.method === 'any') continue;
    methods.add(route.method.toUpperCase());
    if (route.method === 'get') methods.add('HEAD');
  }
  return [...methods].sort().join(', ');
}

/** The answer of an `allow` route: exactly the one Express's router gives on its own. */
export function answerAllow(allow: string): RequestHandler {
  return (_req: Request, res: Response) => {
    res.setHeader('Allow', allow);
    res.setHeader('Content-Length', Buffer.byteLength(allow));
    res.setHeader('Content-Type', 'text/plain');
    res.setHeader('X-Content-Type-Options', 'nosniff');
    res.end(allow);
  };
}

/** What an entry says about its middleware; `middlewareOf` turns it into the stack. */
export type RouteNeeds = Pick<Route, 'body' | 'bodyDeadline' | 'cors' | 'sameOrigin'> & { kind?: Route['kind']; method?: Route['method'] };

/**
 * What a method a path does not have (or a path no route has) goes through before its 404: the
 * middleware all of the path's routes have (a form endpoint's other methods are not checked
 * for the same origin; an upload path's have no body deadline and no JSON parser), so that a
 * wrong method is refused as the right one would have been up to its handler.
 */
function sharedNeeds(routes: readonly Route[]): RouteNeeds {
  const all = (need: (route: Route) => boolean) => routes.every(need);
  return {
    body: all((route) => (route.body ?? 'json') === 'json') ? 'json' : 'none',
    bodyDeadline: all((route) => route.bodyDeadline ?? true),
    sameOrigin: all((route) => route.sameOrigin ?? true),
  };
}

export interface Mounting {
  middlewareOf(needs: RouteNeeds): RequestHandler[];
  handlerOf(route: Route): RequestHandler[];
  /** The answer when no route takes the request. */
  notFound: RequestHandler;
}

/**
 * Registers every route of `table` on `app` by precedence, each with its middleware before its
 * handler; then, for each path, its other methods (a 404), and last any other path (a 404
 * after the default middleware). A `trpc` route takes every method and path under its own.
 */
export function mountRoutes(app: Pick<Express, 'use' | 'route' | 'get' | 'post' | 'put' | 'delete' | 'options' | 'head' | 'patch'>, table: readonly Route[], mount: Mounting): void {
  const ordered = byPrecedence(table);
  ordered.forEach((route, i) => {
    const stack = [...mount.middlewareOf(route), ...mount.handlerOf(route)];
    if (route.method === 'any') {
      app.use(route.path, ...stack);
      return;
    }
    app[route.method](route.path, ...stack);
    // Entries of one path are neighbours in the precedence order: after the last, its other methods.
    if (ordered[i + 1]?.path !== route.path) {
      const samePath = ordered.filter((other) => other.path === route.path);
      app.route(route.path).all(...mount.middlewareOf(sharedNeeds(samePath)), mount.notFound);
    }
  });
  app.use(...mount.middlewareOf({}), mount.notFound);
}

/** A request handler or middleware as Express calls it. */
type Step = (req: Request, res: Response, next: (error?: unknown) => void) => unknown;

/**
 * Runs `steps` in order as Express's router would (each calls `next` to go on, or `next(error)`
 * to stop; a step's rejected promise is a `next(error)`), then `done` with the error that
 * stopped them, if any.
 */
function runSteps(steps: readonly Step[], req: Request, res: Response, done: (error?: unknown) => void): void {
  let i = 0;
  const next = (error?: unknown): void => {
    // As the router leaves it: Express's own helpers report through it (`res.sendFile` without a callback).
    req.next = next;
    if (error !== undefined) return done(error);
    const step = steps[i++];
    if (!step) return done();
    try {
      const result = step(req, res, next);
      if (result instanceof Promise) result.catch((e: unknown) => next(e ?? new Error('rejected')));
    } catch (e) {
      next(e ?? new Error('thrown'));
    }
  };
  next();
}

/** The methods `directDispatch` takes: those Express's router matches to their own routes only. */
const DIRECT_METHODS = new Set<Route['method']>(['get', 'post', 'put', 'patch', 'delete']);

/** The pieces of an Express app a direct dispatch borrows: its request and response prototypes. */
interface ExpressPrototypes {
  request: object;
  response: object;
}

/**
 * The requests to literal paths (discovery, the JWKS, userinfo, the authorization and token
 * requests, the session's refresh, the parameterless reads and writes), dispatched without
 * Express's router: a GET, POST, PUT, PATCH or DELETE of exactly a path the table has with that
 * method goes through the same app-wide middleware (`before`: the log line, request id, the API's security
 * headers, cookies, the method-override refusal) and the same route middleware and handler as the
 * router would give it, in the same order, but without trying every earlier layer of the table on
 * the way (up to a few hundred path matches, each with its bookkeeping). Anything else (HEAD and
 * OPTIONS, which Express answers from other methods' routes; a method the path does not have; a
 * path in another letter case or with a trailing slash) answers false and goes to Express as
 * before. A GET or POST under a route that takes every method (`/trpc`, whose first segment no
 * other route can match: `mountedAlone`) is dispatched the same way, its own middleware and
 * handler seeing the URL trimmed of the prefix as the router trims a mounted path. A failure
 * reaches `onError` as it would reach the app's error handler; a request the stack lets through
 * unanswered (none does) reaches `notFound`.
 */
export function directDispatch(
  app: ExpressPrototypes,
  table: readonly Route[],
  mount: Mounting & { before: readonly RequestHandler[]; onError: (error: unknown, req: Request, res: Response, next: () => void) => void },
): (req: Request, res: Response) => boolean {
  const under = table.filter((route) => route.method === 'any').map((route) => route.path);
  // By method, then path: no key string made per request.
  const direct = new Map<string, Map<string, Step[]>>();
  for (const route of byPrecedence(table)) {
    if (!DIRECT_METHODS.has(route.method) || /[:*]/.test(route.path)) continue;
    if (under.some((prefix) => route.path === prefix || route.path.startsWith(`${prefix}/`))) continue;
    const method = route.method.toUpperCase();
    const paths = direct.get(method) ?? new Map<string, Step[]>();
    direct.set(method, paths);
    paths.set(route.path, [...mount.before, ...mount.middlewareOf(route), ...mount.handlerOf(route)] as Step[]);
  }
  const mounted = mountedAlone(table).map((route) => ({ prefix: route.path, steps: [...mount.before, ...mount.middlewareOf(route), ...mount.handlerOf(route)] as Step[] }));
  return (req, res) => {
    const url = req.url ?? '';
    const cut = url.indexOf('?');
    const path = cut < 0 ? url : url.slice(0, cut);
    const steps = direct.get(req.method ?? '')?.get(path);
    const mountedHere = steps || !MOUNTED_METHODS.has(req.method ?? '') ? undefined : mounted.find(({ prefix }) => path === prefix || path.startsWith(`${prefix}/`));
    if (!steps && !mountedHere) return false;
    // What Express's `app.handle` sets up before its router runs.
    req.res = res;
    res.req = req;
    // Unless the server's own classes inherit from the app's already (`expressMessages`, `app.ts`).
    if (!Object.prototype.isPrototypeOf.call(app.request, req)) Object.setPrototypeOf(req, app.request);
    if (!Object.prototype.isPrototypeOf.call(app.response, res)) Object.setPrototypeOf(res, app.response);
    if (!res.locals) res.locals = Object.create(null) as Response['locals'];
    // What its router sets for a route with no parameters.
    req.originalUrl ??= url;
    req.baseUrl = '';
    req.params = {};
    const done = (error?: unknown) => {
      // What its router gives back when a mounted route lets the request go on.
      req.url = url;
      req.baseUrl = '';
      if (error !== undefined) mount.onError(error, req, res, () => undefined);
      else mount.notFound(req, res, () => undefined);
    };
    if (steps) {
      runSteps(steps, req, res, done);
      return true;
    }
    const { prefix, steps: mountedSteps } = mountedHere!;
    const before = mount.before.length;
    // The app-wide middleware sees the whole URL; the mounted route's own, the rest of it, as
    // Express's router trims a mounted path: `req.baseUrl` the prefix, `req.url` what follows.
    const trim: Step = (_req, _res, next) => {
      req.url = url.slice(prefix.length);
      if (!req.url.startsWith('/')) req.url = `/${req.url}`;
      req.baseUrl = prefix;
      next();
    };
    runSteps([...mountedSteps.slice(0, before), trim, ...mountedSteps.slice(before)], req, res, done);
    return true;
  };
}

/** The methods `directDispatch` takes under a route that takes every method: tRPC's queries and mutations. */
const MOUNTED_METHODS = new Set(['GET', 'POST']);

/**
 * The routes taking every method under their path (tRPC's) that Express's router would reach for
 * any path under them, whatever layers it tried first: no other route of the table can match a
 * path under theirs, as every other route's first segment is a literal of another name.
 */
function mountedAlone(table: readonly Route[]): Route[] {
  const firstSegment = (path: string) => path.split('/')[1] ?? '';
  return table.filter(
    (route) =>
      route.method === 'any' &&
      !/[:*]/.test(route.path) &&
      table.every((other) => {
        if (other === route) return true;
        const first = firstSegment(other.path);
        return !/[:*]/.test(first) && first.toLowerCase() !== firstSegment(route.path).toLowerCase();
      }),
  );
}
