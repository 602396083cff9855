import { randomUUID } from 'node:crypto';
import { STATUS_CODES, type Server } from 'node:http';
import type { Duplex } from 'node:stream';
import { createExpressMiddleware } from '@trpc/server/adapters/express';
import cookieParser from 'cookie-parser';
import express, { type Express, type Request, type Response } from 'express';
import helmet from 'helmet';
import type { Logger } from 'pino';
import { pinoHttp } from 'pino-http';
import { AppError } from '../../shared/errors.ts';
import { HealthResult } from '../../shared/index.ts';
import { migrateToLatest, openDatabase, type Db } from '../../db/knex.ts';
import type { Config } from '../config.ts';
import { createLogger, serializeError, serializeRequest } from '../logger.ts';
import { appRouter, createCaller } from '../router.ts';
import { createServices, type Services } from '../services.ts';
import { createHttpContext } from './context.ts';
import { callRoute, routes } from './routes.ts';
import { sameOriginWrites } from './same-origin.ts';
import { docsRoutes } from './docs.ts';
import { fileRoutes, isUploadPath } from './files.ts';
import { isOidcFormPath, OIDC_FORM_PATHS, oidcRoutes } from './oidc.ts';
import { errorHandler, notFound, sendError } from './send-error.ts';
import { JSON_BODY_BYTES, jsonBody, trpcGuard } from './body.ts';
import { toAppError } from '../errors.ts';

export interface App {
  /** The Express app, not listening: hand it to `http.createServer` or `app.listen`. */
  app: Express;
  db: Db;
  services: Services;
  logger: Logger;
  /** Releases the database and the mail transport. Call after the HTTP server has closed. */
  close(): Promise<void>;
}

/** How long a request other than an upload may take to send its body. */
const BODY_DEADLINE_MS = 60_000;
/** The most calls one batched tRPC request may make. */
const MAX_TRPC_BATCH = 10;
/** How often abandoned chunked uploads, and expired sign-in requests, codes and tokens, are swept away. */
const SWEEP_INTERVAL_MS = 10 * 60 * 1000;

/**
 * The server lets a request take an hour to arrive (`requestTimeout` in main.ts), for slow
 * uploads; every other path must have its body in within `ms`, or gets a 408 and is closed.
 */
function bodyDeadline(ms: number, exempt: (path: string) => boolean) {
  return (req: Request, res: Response, next: () => void) => {
    // A request without a body (most GETs) has nothing to wait for: no timer, no listeners.
    const bodiless = req.headers['transfer-encoding'] === undefined && !(Number(req.headers['content-length']) > 0);
    if (bodiless || exempt(req.path) || req.complete) return next();
    const timer = setTimeout(() => {
      if (!req.complete && !res.headersSent) {
        res.setHeader('Connection', 'close');
        sendError(res, new AppError('RequestTimeoutError', 'The request body took too long to arrive'));
        req.destroy();
      }
    }, ms);
    timer.unref();
    req.on('end', () => clearTimeout(timer));
    req.on('close', () => clearTimeout(timer));
    next();
  };
}

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
 * other refusal is, instead of Node's bare 400 or 431. Attach it to the HTTP server.
 */
export function answerClientErrors(server: Server): void {
  server.on('clientError', (error: NodeJS.ErrnoException, socket: Duplex) => {
    // A connection already gone, or one with an answer under way, is only closed.
    if (error.code === 'ECONNRESET' || !socket.writable || (socket as { _httpMessage?: unknown })._httpMessage) {
      socket.destroy();
      return;
    }
    const refusal =
      error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new AppError('RequestTimeoutError', 'The request took too long to arrive')
        : new AppError('BadRequestError', error.code === 'HPE_HEADER_OVERFLOW' ? 'The request line and headers are too large' : 'Malformed HTTP request');
    // No request reached Express, so none has an id yet: this answer gets one of its own.
    const id = randomUUID();
    const body = JSON.stringify(refusal.toBody(id));
    socket.end(
      `HTTP/1.1 ${refusal.status} ${STATUS_CODES[refusal.status] ?? ''}\r\nContent-Type: application/json; charset=utf-8\r\n` +
        `X-Request-Id: ${id}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
    );
  });
}

/**
 * Builds the service: opens the database, runs pending migrations, wires the services and
 * mounts tRPC at `/trpc`, the REST route table, the streaming file routes, the sign-in
 * provider's endpoints and pages, the API document and its reference page, and `/health`. Does not listen.
 */
export async function createApp(config: Config, opts: { logger?: Logger; now?: () => number } = {}): Promise<App> {
  const logger = opts.logger ?? createLogger(config.logLevel);
  const db = openDatabase(config.dataDir);
  await migrateToLatest(db);
  const services = await createServices(config, db, logger, opts.now);
  // Uploads cut by a stop of the server can be completed at once. The server's start only: an
  // admin command (maybe outside the server's container) cannot tell which processes run.
  await services.attachments.recover();

  const app = express();
  app.disable('x-powered-by');
  app.set('query parser', 'simple');
  app.use(
    pinoHttp({
      logger,
      genReqId: requestId,
      // pino-http sets its own serializers on each request's logger: these are the safe ones.
      serializers: {
        req: serializeRequest,
        res: (res: { statusCode: number }) => ({ statusCode: res.statusCode }),
        err: serializeError,
      },
    }),
  );
  // Over plain http (an offline install), asking browsers to upgrade every request to https
  // would break the pages; behind https the upgrade stays on.
  app.use(onceComputed(helmet({ contentSecurityPolicy: { directives: { upgradeInsecureRequests: config.baseUrl.startsWith('https:') ? [] : null } } })));
  app.use(cookieParser());
  app.use(endUnreadBodies);
  app.use(sameOriginWrites([config.baseUrl, config.webUrl], OIDC_FORM_PATHS));
  app.use(bodyDeadline(BODY_DEADLINE_MS, isUploadPath));
  // Uploads stream their own body; the sign-in provider's endpoints read forms (oidc.ts).
  app.use(jsonBody((path) => isUploadPath(path) || isOidcFormPath(path)));

  // Healthy means the database takes a write: one made and rolled back (SQLite then writes
  // nothing to disk). A database that can be read but not written is not healthy.
  app.get('/health', async (_req, res) => {
    try {
      const probe = new Error('health probe: rolled back');
      await db
        .transaction(async (trx) => {
          await trx('rate_limits').insert({ key: 'health:probe', points: 0, expire: 0 }).onConflict('key').merge();
          throw probe;
        })
        .catch((error: unknown) => {
          if (error !== probe) throw error;
        });
      res.json(HealthResult.parse({ status: 'ok', database: 'ok' }));
    } catch (error) {
      res.req.log.error({ err: error }, 'health check: database unavailable');
      sendError(res, new AppError('ServiceUnavailableError', 'The database is not available', { database: 'unavailable' }));
    }
  });

  app.use(
    '/trpc',
    trpcGuard(MAX_TRPC_BATCH),
    createExpressMiddleware({
      router: appRouter,
      createContext: ({ req, res }) => createHttpContext(req, res, services, config),
      // A body tRPC reads itself (not JSON: a form or a byte stream) is bounded as a JSON one is.
      maxBodySize: JSON_BODY_BYTES,
      // One request may not fan out into hundreds of calls (each a sign-in, say).
      maxBatchSize: MAX_TRPC_BATCH,
      // Failures outside any procedure (reading the input) reach only the error formatter, which
      // has no logger: an unexpected one is logged here. Those inside were logged already.
      onError: ({ error, req }) => {
        if (!(error.cause instanceof AppError)) toAppError(error, undefined, (req as Request).log);
      },
    }),
  );

  for (const route of routes) {
    app[route.method](route.path, async (req, res) => {
      try {
        const caller = createCaller(createHttpContext(req, res, services, config));
        res.json(await callRoute(caller, route, req));
      } catch (error) {
        sendError(res, error, route.method === 'get' ? req.query : req.body);
      }
    });
  }

  // Express answers OPTIONS by itself (200, `Allow`) on its routers' paths. Only the sign-in
  // provider's endpoints take cross-origin preflights; anywhere else OPTIONS is an unknown route.
  app.use((req, res, next) => (req.method === 'OPTIONS' && !/^\/(?:oidc|\.well-known)\//i.test(req.path) ? notFound(req, res) : next()));
  app.use(fileRoutes(services, config));
  app.use(oidcRoutes(services, config));
  app.use(docsRoutes(config));

  app.use(notFound);
  app.use(errorHandler);

  const sweeper = setInterval(() => {
    services.attachments.sweep().catch((error: unknown) => logger.error({ err: error }, 'upload sweep failed'));
    services.oidc.sweep().catch((error: unknown) => logger.error({ err: error }, 'sign-in sweep failed'));
  }, SWEEP_INTERVAL_MS);
  sweeper.unref();

  return {
    app,
    db,
    services,
    logger,
    async close() {
      clearInterval(sweeper);
      await services.close();
      await db.destroy();
    },
  };
}
