import { randomUUID } from 'node:crypto';
import { IncomingMessage, ServerResponse, STATUS_CODES, type Server, type ServerOptions } from 'node:http';
import type { Duplex } from 'node:stream';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import cookieParser from 'cookie-parser';
import express, { type Express, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { AppError, type ErrorBody } from '../../shared/errors.ts';
import { checkpointInBackground, migrateToLatest, openDatabase, type Db } from '../../db/knex.ts';
import type { Config } from '../config.ts';
import { toAppError } from '../errors.ts';
import { createLogger, requestLogger } from '../logger.ts';
import { appRouter } from '../router.ts';
import { createServices, type Services } from '../services.ts';
import { Sweeper } from '../sweeper.ts';
import { BODY_DEADLINE_MS, bodyDeadline, JSON_BODY_BYTES, jsonBody } from './body.ts';
import { createHttpContext } from './context.ts';
import { answerPreflight, frontendCors, protocolCors, readOnlyCors } from './cors.ts';
import { docsHandlers } from './docs.ts';
import { fileHandlers } from './files.ts';
import { asTusAnswer, tusHandlers } from './tus.ts';
import { healthHandler, probeHandlers } from './health.ts';
import { NO_METRICS } from '../metrics/events.ts';
import type { AppMetrics } from '../metrics/registry.ts';
import { allowedMethods, answerAllow, directDispatch, middlewareOf, mountRoutes, type RouteMiddleware, type RouteNeeds } from './mount.ts';
import { oauthForm, oauthJson, oidcHandlers, pageForm } from './oidc.ts';
import { webHandlers } from '../web/pages/index.ts';
import { providerPages } from '../web/pages/provider/index.ts';
import { passkeyHandlers } from '../web/pages/passkeys.ts';
import { accountForm, isPagePath, sendMissingPage } from '../web/pages/kit.ts';
import { buildOpenApiDocument } from './openapi.ts';
import { procedureHandler } from './procedure.ts';
import { trpcGuard } from './trpc-guard.ts';
import { routes, type Handlers, type Route } from './routes.ts';
import { refuseCrossSiteWrites, refuseMethodOverride } from './same-origin.ts';
import { errorHandler, notFound, sendError } from './send-error.ts';

export interface App {
  /** The Express app, not listening: hand it to `http.createServer` or `app.listen`. */
  app: Express;
  db: Db;
  services: Services;
  logger: Logger;
  /** The app's metrics (`server/metrics/`), served by `startMetricsServer`; null when `METRICS_PORT` is unset. */
  metrics: AppMetrics | null;
  /**
   * Runs the periodic clean-up now, if this process holds the sweeper's lease (or takes it);
   * true when it swept. The server runs it every ten minutes by itself.
   */
  sweep(): Promise<boolean>;
  /** Releases the database and the mail transport. Call after the HTTP server has closed. */
  close(): Promise<void>;
}

/** tus's paths (`/attachment/tus` and its uploads), in any letter case, as the router matches them. */
const TUS_PATH = /^\/attachment\/tus(?:[/?]|$)/i;

/** The most calls one batched tRPC request may make. */
const MAX_TRPC_BATCH = 10;

/**
 * An answer sent before its request's body was read (a GET that announced a body, an upload
 * refused early) ends the connection once sent: the rest of the body is never read, so a client
 * trickling it cannot hold the connection for the hour uploads are given.
 */
function endUnreadBodies(req: Request, res: Response, next: () => void): void {
  res.on('finish', () => {
    if (!req.complete) req.socket.end();
  });
  next();
}

/**
 * The headers a middleware sets whatever the request (helmet's), worked out once at start-up
 * and then set in one step: helmet's dozen nested middlewares per request were a measurable
 * part of a small request's cost (`npm run bench`, rows 1 and 2).
 */
function onceComputed(middleware: (req: Request, res: Response, next: (error?: unknown) => void) => void) {
  const headers: Array<[string, string | number | readonly string[]]> = [];
  const probe = {
    setHeader: (name: string, value: string | number | readonly string[]) => headers.push([name, value]),
    removeHeader: () => undefined,
    getHeader: () => undefined,
  };
  middleware({} as Request, probe as unknown as Response, () => undefined);
  return (_req: Request, res: Response, next: () => void) => {
    for (const [name, value] of headers) res.setHeader(name, value);
    next();
  };
}

/**
 * The security headers of every answer that is not a document (JSON, the errors of every route
 * but a document's, the provider's protocol endpoints, tus): those OWASP's REST Security Cheat Sheet lists for APIs
 * (`Content-Security-Policy: default-src 'none'; frame-ancestors 'none'`, `X-Frame-Options: DENY`,
 * `X-Content-Type-Options`, `Strict-Transport-Security`; `Cache-Control` is the route's), with
 * helmet's `Referrer-Policy` and `Cross-Origin-Resource-Policy`. Helmet's other defaults govern
 * how a browser shows a document (`Cross-Origin-Opener-Policy`, `Origin-Agent-Cluster`,
 * `X-DNS-Prefetch-Control`, `X-Download-Options`, `X-Permitted-Cross-Domain-Policies`,
 * `X-XSS-Protection`): documents get them on top (`documentHeaders`, `mount.ts`), an answer no
 * browser shows as a page is spared their 500 bytes, which the load generator of `npm run bench`
 * parses too (docs/security.md#security-headers).
 */
function apiHeaders(secure: boolean) {
  return onceComputed(
    helmet({
      contentSecurityPolicy: { useDefaults: false, directives: { defaultSrc: ["'none'"], frameAncestors: ["'none'"] } },
      xFrameOptions: { action: 'deny' },
      strictTransportSecurity: secure,
      crossOriginOpenerPolicy: false,
      originAgentCluster: false,
      xDnsPrefetchControl: false,
      xDownloadOptions: false,
      xPermittedCrossDomainPolicies: false,
      xXssProtection: false,
    }),
  );
}

/**
 * Whether the service's public address is `https:` (behind a proxy that ends TLS, or not). Only
 * then do answers carry `Strict-Transport-Security`, which RFC 6797 §7.2 forbids over plain
 * http (an offline install, a development machine); and only then do pages ask browsers to
 * upgrade their requests, which over plain http would break them.
 */
const servedSecurely = (config: Pick<Config, 'baseUrl'>) => config.baseUrl.startsWith('https:');

/** A request id: the caller's `X-Request-Id` when it is a sane one, a fresh UUID otherwise. */
function requestId(req: Request, res: Response): string {
  const given = req.get('x-request-id');
  const id = given && /^[\w.:-]{1,100}$/.test(given) ? given : randomUUID();
  res.setHeader('X-Request-Id', id);
  return id;
}

/**
 * Requests Node's HTTP parser refuses before Express sees them (a request line and headers
 * past 16 KB, a malformed request line or header) are answered with the Error body, as every
 * other refusal is, instead of Node's bare 400 or 431; so is a request whose body the parser
 * refuses half-way (a malformed chunk) while its answer is not under way: that answer is the
 * refusal, where the connection was closed with nothing written. An `Expect` other than
 * `100-continue` is a 417 Error body, not Node's empty one. Attach it to the HTTP server.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    const inFlight = (socket as { _httpMessage?: ServerResponse })._httpMessage;
    // A connection already gone, or one with an answer under way, is only closed. So is one
    // whose request was read whole (the error is in a request pipelined after it): its answer
    // is that request's, not this refusal.
    if (error.code === 'ECONNRESET' || !socket.writable || (inFlight && (inFlight.headersSent || inFlight.req.complete))) {
      socket.destroy();
      return;
    }
    const refusal =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('RequestTimeoutError', 'The request took too long to arrive')
        : error.code === 'HPE_HEADER_OVERFLOW'
          ? AppError.protocol('BadRequestError', 431, 'The request line and headers are too large')
          : new AppError('BadRequestError', 'Malformed HTTP request');
    if (inFlight) {
      // Nothing more of this connection is read: the parser cannot go on after its error.
      socket.pause();
      // Node tells an answered request nothing of its connection's close: its readers (a body
      // parser, an upload holding its chunk) would wait for the rest of it for ever.
      socket.once('close', () => inFlight.req.destroy());
      answerRefusal(inFlight, refusal.toBody(requestIdOf(inFlight)));
      return;
    }
    // No request reached Express, so none has an id yet: this answer gets one of its own. The
    // answer to a HEAD carries no body (RFC 9110 §9.3.2), when the bytes the parser refused show
    // the method (they do unless the request came in several reads).
    const id = randomUUID();
    const body = JSON.stringify(refusal.toBody(id));
    const head = (error as { rawPacket?: Buffer }).rawPacket?.subarray(0, 5).toString('latin1') === 'HEAD ';
    socket.end(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `X-Request-Id: ${id}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${head ? '' : body}`,
    );
  });
  // Node answers any other expectation itself, with an empty 417, unless this is listened to.
  server.on('checkExpectation', (_req: IncomingMessage, res: ServerResponse) => {
    // 417 has no name of its own in the closed list (`ERROR_STATUS`): HTTP's own status, as tus's are sent.
    const refusal = AppError.protocol('BadRequestError', 417, 'The only expectation this server meets is Expect: 100-continue');
    answerRefusal(res, refusal.toBody(requestIdOf(res)));
  });
}

/** The headers of a representation a handler may have set before a refusal answers instead. */
const REPRESENTATION_HEADERS = ['Content-Encoding', 'Content-Range', 'Content-Disposition', 'ETag', 'Last-Modified'];

/** The id of the request `res` answers: the one the request log gave it (`requestId`), or a new one. */
function requestIdOf(res: ServerResponse): string {
  const given = res.getHeader('X-Request-Id');
  return typeof given === 'string' ? given : randomUUID();
}

/**
 * Answers `res`, which Express may never have seen (or has not answered yet), with `body` and
 * closes the connection after it: Node's own objects only, as `sendError` needs Express's.
 */
function answerRefusal(res: ServerResponse, body: ErrorBody): void {
  const text = JSON.stringify(body);
  for (const header of REPRESENTATION_HEADERS) res.removeHeader(header);
  res.statusCode = body.status;
  res.setHeader('Content-Type', 'application/json; charset=utf-8');
  res.setHeader('X-Request-Id', String(body.details?.reqId ?? ''));
  res.setHeader('Content-Length', Buffer.byteLength(text));
  res.setHeader('Connection', 'close');
  res.end(text);
}

/**
 * requireHost: an HTTP/1.1 request names its `Host` (RFC 9112 §3.2), or is a 400 (the Error
 * body) and the connection is closed. Node's server checks it with a bare 400 unless told not to
 * (`requireHostHeader: false`, `expressMessages`): this check takes its place, in the middleware
 * every request goes through (`before` in `createApp`), ahead of anything that reads `Host`.
 */
function requireHost(req: Request, res: Response, next: () => void): void {
  if (req.httpVersion === '1.1' && req.headers.host === undefined) {
    res.setHeader('Connection', 'close');
    sendError(res, new AppError('BadRequestError', 'An HTTP/1.1 request must name its Host'));
    return;
  }
  next();
}

/**
 * Node's request and response classes for the HTTP server an Express app answers on, made to
 * inherit from that app's own (`app.request`, `app.response`) once, by `answeredBy(app)`.
 * Then the direct dispatch (`directDispatch`, literal paths) need not re-parent each request and
 * response as it arrives (`Object.setPrototypeOf`, a call into V8's runtime each, 4 % of the main
 * thread's time for a JWKS answer); Express's own `app.handle`, which the other requests take,
 * re-parents them all the same. Give `options` to `http.createServer`, which takes them only at
 * its creation, and call `answeredBy` once the app exists; until then, and for a server made
 * without them, requests are re-parented as before. The options also leave the check of `Host`
 * to the app (`requireHost`), which answers with the Error body.
 */
export function expressMessages(): { options: ServerOptions; answeredBy(app: Pick<Express, 'request' | 'response'>): void } {
  class AppRequest extends IncomingMessage {}
  class AppResponse<Request extends IncomingMessage = IncomingMessage> extends ServerResponse<Request> {}
  return {
    // Node's bare 400 for an HTTP/1.1 request without `Host` is the app's Error body (`requireHost`).
    options: { IncomingMessage: AppRequest, ServerResponse: AppResponse, requireHostHeader: false },
    answeredBy(app) {
      // Express's prototypes come down to Node's own, so nothing Node's classes give is lost.
      Object.setPrototypeOf(AppRequest.prototype, app.request);
      Object.setPrototypeOf(AppResponse.prototype, app.response);
    },
  };
}

/** How long slow uploads may take to arrive; every other path is held to a shorter deadline in the app. */
const REQUEST_TIMEOUT_MS = 60 * 60 * 1000;

/**
 * The HTTP server's timeouts. An idle keep-alive connection is kept `KEEP_ALIVE_SECONDS` (75 s
 * by default), longer than the idle timeout of common load balancers (60 s: AWS ALB, nginx,
 * Google's, Azure's 4 min is set higher by its operators), so the balancer, not the service,
 * closes an idle connection: with Node's 5 s default, a request the balancer sends on a
 * connection the service has just closed fails with a 502. Headers may take a second longer
 * than that (at least Node's 60 s), as Node's documentation asks (`headersTimeout` above `keepAliveTimeout`).
 */
export function configureTimeouts(server: Server, config: Pick<Config, 'keepAliveSeconds'>): void {
  server.keepAliveTimeout = config.keepAliveSeconds * 1000;
  // Never below Node's own 60 s, so a short keep-alive does not cut off slow clients' headers.
  server.headersTimeout = Math.max(60_000, server.keepAliveTimeout + 1000);
  server.requestTimeout = Math.max(REQUEST_TIMEOUT_MS, server.headersTimeout + 1000);
}

/** The middleware the route table's entries may ask for, made once. */
function routeMiddleware(config: Config): RouteMiddleware {
  return {
    documentHeaders: onceComputed(
      helmet({
        contentSecurityPolicy: { directives: { upgradeInsecureRequests: servedSecurely(config) ? [] : null } },
        strictTransportSecurity: servedSecurely(config),
      }),
    ),
    sameOrigin: refuseCrossSiteWrites([config.baseUrl, config.webUrl]),
    // Only tus's routes have `octets` bodies: their refusals carry tus's headers.
    sameOriginOctets: asTusAnswer(refuseCrossSiteWrites([config.baseUrl, config.webUrl], { types: ['application/offset+octet-stream'], words: 'application/offset+octet-stream' })),
    bodyDeadline: bodyDeadline(BODY_DEADLINE_MS),
    json: jsonBody(),
    oauthJson: oauthJson(jsonBody()),
    oauthForm,
    pageForm,
    accountForm,
    protocolCors,
    readOnlyCors,
  };
}

/** What answers each entry of the route table, by its kind. */
function routeHandlers(config: Config, services: Services, db: Db): (route: Route) => RequestHandler[] {
  const handlers: Handlers = {
    ...fileHandlers(services, config),
    ...tusHandlers(services, config),
    ...oidcHandlers(services, config),
    ...providerPages(services, config),
    ...webHandlers(services, config),
    ...passkeyHandlers(),
    ...docsHandlers(() => JSON.stringify(buildOpenApiDocument(config))),
    health: healthHandler(db, services.mailer),
    ...probeHandlers(db, services.uploads.store),
  };
  const trpc = createExpressMiddleware({
    router: appRouter,
    createContext: ({ req, res }) => createHttpContext(req, res, services, config),
    // A body tRPC reads itself (not JSON: a form or a byte stream) is bounded as a JSON one is.
    maxBodySize: JSON_BODY_BYTES,
    // One request may not fan out into hundreds of calls (each a sign-in, say).
    maxBatchSize: MAX_TRPC_BATCH,
    // As the REST answers (`procedure.ts`): personal, some with secrets, never cached.
    responseMeta: () => ({ headers: { 'cache-control': 'no-store' } }),
    // Failures outside any procedure (reading the input) reach only the error formatter, which
    // has no logger: an unexpected one is logged here. Those inside were logged already.
    onError: ({ error, req }) => {
      if (!(error.cause instanceof AppError)) toAppError(error, undefined, (req as Request).log);
    },
  });
  return (route) => {
    switch (route.kind) {
      case 'procedure':
        return [procedureHandler(route, services, config)];
      case 'stream':
      case 'oauth':
      case 'page':
      case 'health':
      case 'docs':
        return [handlers[route.handler]];
      case 'preflight':
        return [answerPreflight];
      case 'allow':
        return [answerAllow(allowedMethods(routes, route.path))];
      case 'trpc':
        return [trpcGuard(MAX_TRPC_BATCH, appRouter), trpc];
      default:
        return route satisfies never;
    }
  };
}

/**
 * Builds the service: opens the database, runs pending migrations, wires the services and
 * mounts the route table (`routes.ts`): tRPC at `/trpc`, the REST routes of procedures, the
 * streams, the sign-in provider's endpoints and pages, `/health`, the API document and its
 * reference page. Does not listen.
 */
export async function createApp(config: Config, opts: { logger?: Logger; now?: () => number } = {}): Promise<App> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  // Metrics are kept only when something can read them: a metrics listener is configured.
  // prom-client is loaded only then: a process without a metrics listener never pays for it.
  const metrics = config.metricsPort === undefined ? null : (await import('../metrics/registry.ts')).createMetrics({ routes, logger });
  const db = openDatabase(config);
  metrics?.watchDatabase(db);
  await migrateToLatest(db);
  const services = await createServices(config, db, logger, opts.now, metrics ?? NO_METRICS);
  // Uploads cut by a stop of the server can be completed at once. The server's start only: an
  // admin command (maybe outside the server's container) cannot tell which processes run.
  await services.chunkedUploads.recover();

  if (config.frontendOrigin && config.cookieDomain === undefined && new URL(config.frontendOrigin).hostname !== new URL(config.baseUrl).hostname) {
    logger.warn({ webUrl: config.frontendOrigin }, 'WEB_URL is on another host and COOKIE_DOMAIN is unset: the web application\'s own server will not see the session cookies (docs/security.md#cors)');
  }

  const app = express();
  app.disable('x-powered-by');
  // No ETag hashed from every answer's body: the API's answers are personal and `no-store`, the
  // pages too. What a cache may keep carries an ETag made once with it (`etag.ts`).
  app.set('etag', false);
  app.set('query parser', 'simple');
  // Behind a load balancer every request comes from its address: the client is then the one it
  // names in `X-Forwarded-For`, believed only from the proxies `TRUST_PROXY` lists.
  app.set('trust proxy', config.trustProxy);
  // A method override is refused everywhere; under tus's path the refusal is a tus answer
  // (`Tus-Resumable`, CORS), which a browser's tus client can read.
  const tusRefusal = asTusAnswer(refuseMethodOverride);
  const refuseOverrides: RequestHandler = (req, res, next) => (TUS_PATH.test(req.url) ? tusRefusal : refuseMethodOverride)(req, res, next);
  // What every request goes through before its route's own middleware, in this order.
  const before: RequestHandler[] = [
    // Every answered request into the metrics, by its route template (`metrics/http.ts`).
    ...(metrics ? [metrics.requests] : []),
    // One log line per request, when it is answered (`requestLogger`).
    requestLogger(logger, requestId),
    // An API answer's security headers; a route answering a document adds a document's (`documentHeaders`).
    apiHeaders(servedSecurely(config)),
    requireHost,
    // A web application on another origin (`WEB_URL`) calls the API with the person's cookies.
    ...(config.frontendOrigin ? [frontendCors(config.frontendOrigin)] : []),
    cookieParser(),
    endUnreadBodies,
    refuseOverrides,
  ];
  for (const step of before) app.use(step);

  // Every other piece of middleware is the route's own (its line of the route table); a request
  // that no route takes is a 404 (an OPTIONS request included) after the middleware of its path.
  const use = routeMiddleware(config);
  // A person's browser on a pages' path that is no page gets a page; everything else the API's 404.
  const pagePaths: ReadonlySet<string> = new Set(routes.filter((route) => route.kind === 'page').map((route) => route.path));
  const missing = (req: Request, res: Response) => (isPagePath(req, pagePaths) ? sendMissingPage(req, res) : notFound(req, res));
  const mounting = { middlewareOf: (needs: RouteNeeds) => middlewareOf(needs, use), handlerOf: routeHandlers(config, services, db), notFound: missing };
  mountRoutes(app, routes, mounting);
  app.use(errorHandler);

  // Requests to literal paths skip the router's walk through the table (`directDispatch`); every
  // other request is Express's.
  const direct = directDispatch(app, routes, { ...mounting, before, onError: errorHandler });
  // Express's app function calls `app.handle` (not public in its types) for every request.
  const dispatcher = app as unknown as { handle: (req: Request, res: Response, callback?: () => void) => void };
  const handle = dispatcher.handle.bind(app);
  dispatcher.handle = (req, res, callback) => {
    if (!direct(req, res)) handle(req, res, callback);
  };

  // SQLite's log is copied into its file from a connection of its own, not inside requests' commits.
  const checkpoints = await checkpointInBackground(db, config, logger);
  // One process of the install sweeps at a time (`sweeper.ts`).
  const sweeper = new Sweeper(db, services, logger, opts.now ?? Date.now);
  sweeper.start();
  // Every process tells applications of sessions that ended (`oidc/back-channel.ts`), and sends
  // the outbox's mail when it holds the mail lease (`mail/outbox.ts`).
  services.oidc.logouts.start();
  services.mailer.start();

  return {
    app,
    db,
    services,
    logger,
    metrics,
    sweep: () => sweeper.sweep(),
    async close() {
      await sweeper.stop();
      await services.close();
      await checkpoints?.close();
      await db.destroy();
    },
  };
}
