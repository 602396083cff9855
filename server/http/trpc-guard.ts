/**
 * What tRPC's endpoint (`/trpc`) refuses before tRPC reads the request. tRPC answers what it
 * cannot make calls of (a method it has no meaning for, a Content-Type it does not read, a path
 * it cannot decode, a batch it will not run, a Host it cannot make a URL of) outside its own
 * error format: `text/plain`, no Content-Type at all, or a 500 for a method undici will not build
 * a `Request` of (`TRACE`). Each is refused here with the spec's Error body, as every other
 * refusal of the service is. What tRPC answers once it has its calls (an unknown procedure, bad
 * input, a procedure's own error) stays tRPC's: its typed client reads that format.
 *
 * Each check mirrors the rule of tRPC's own (`@trpc/server`: `incomingMessageToRequest.ts`,
 * `contentType.ts`, `resolveResponse.ts`). Two rules are ours: the depth of a query's input
 * (`checkQueryInput`), and a batch mixing queries and mutations refused whole, where tRPC answers
 * each of its calls (no client of ours sends one: the bundled client batches nothing).
 */
import type { AnyTRPCProcedure, AnyTRPCRouter } from '@trpc/server';
import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import { MAX_JSON_DEPTH, nestsDeeperThan } from './body.ts';

/** What tRPC reads a call's input from, by the Content-Type's type alone (`contentType.ts`). */
type InputKind = 'json' | 'form' | 'bytes';

/** What the checks read of the request, worked out once. */
interface TrpcRequest {
  req: Request;
  /** The URL tRPC builds from `Host` and the path. */
  url: URL;
  /** The procedure's path as tRPC takes it: the last segment, percent-decoded. */
  path: string;
  kind: InputKind;
}

/**
 * checkMethod: a query is a GET, a mutation a POST; tRPC has no meaning for any other method
 * (`HEAD` got an empty 204 whatever the path, `TRACE` a 500). As a method a REST path does not
 * have (`mountRoutes`, `mount.ts`), it is an unknown route: 404, not 405.
 */
function checkMethod(req: Request): void {
  if (req.method !== 'GET' && req.method !== 'POST') {
    throw new AppError('NotFoundError', `Route not found: ${req.method} ${req.originalUrl.split('?', 1)[0]}`);
  }
}

/**
 * checkUrl: tRPC makes the request's URL of its `Host` header (`localhost` without one) and the
 * path under `/trpc` (`createURL`); a Host that is no host (`[::1`, `a b`, `x:99999`) makes none.
 */
function checkUrl(req: Request): URL {
  try {
    // The scheme does not change whether a URL can be made: tRPC's `https:` for TLS is left out.
    return new URL(req.url, `http://${req.headers.host ?? 'localhost'}`);
  } catch {
    throw new AppError('BadRequestError', 'The Host header and path do not make a URL');
  }
}

/** checkPath: the procedure's path is the last segment of the URL's path, percent-decoded (`decodePath`). */
function checkPath(req: Request): string {
  try {
    return decodeURIComponent(req.path.slice(req.path.lastIndexOf('/') + 1));
  } catch {
    throw new AppError('BadRequestError', 'Malformed percent-encoding in the path');
  }
}

/**
 * checkInputKind: tRPC reads a body of `application/json`, `multipart/form-data` or
 * `application/octet-stream` (the type before any `;`, in any letter case), the last two from a
 * POST only; a GET is a query, read as JSON, whatever else its Content-Type says. A POST with
 * any other Content-Type, or none, has no input tRPC can read.
 */
function checkInputKind(req: Request): InputKind {
  const type = req.headers['content-type']?.split(';', 1)[0]?.trim().toLowerCase();
  const kind: InputKind | undefined = type === 'application/json' ? 'json' : type === 'multipart/form-data' ? 'form' : type === 'application/octet-stream' ? 'bytes' : undefined;
  if (req.method === 'GET') {
    if (kind === 'form' || kind === 'bytes') throw new AppError('BadRequestError', 'A form or a byte stream is sent with POST');
    return 'json';
  }
  if (kind === undefined) throw new AppError('BadRequestError', 'The body must be JSON (or multipart, or a byte stream, where a procedure takes one)');
  return kind;
}

/**
 * checkQueryInput: a query's input (`?input=`, JSON in the query string) nested deeper than
 * `MAX_JSON_DEPTH` is refused, as a JSON body is.
 */
function checkQueryInput(req: Request): void {
  const input: unknown = req.query.input;
  const values = Array.isArray(input) ? input : [input];
  if (values.some((value) => typeof value === 'string' && nestsDeeperThan(value, MAX_JSON_DEPTH))) {
    throw new AppError('BadRequestError', 'The input is nested too deeply');
  }
}

/** Whether tRPC takes the request as a batch: a JSON call with `batch=1` (a form or bytes never is). */
function isBatch(call: TrpcRequest): boolean {
  return call.kind === 'json' && call.url.searchParams.get('batch') === '1';
}

/**
 * checkStreamed: a streamed answer (`trpc-accept: application/jsonl`, or, without that header,
 * an `Accept` listing it) is for a batch only.
 */
function checkStreamed(call: TrpcRequest): void {
  const { headers } = call.req;
  const accept = headers['trpc-accept'] ?? (headers.accept?.split(',').some((type) => type.trim() === 'application/jsonl') ? 'application/jsonl' : undefined);
  if (accept === 'application/jsonl' && !isBatch(call)) throw new AppError('BadRequestError', 'A streamed answer is for a batch (of one call, or more)');
}

/**
 * The procedures that answer up to a thousand notes each: a batch calls each of them once at
 * most, so one request cannot ask for ten thousand (the notes' reads wait their turn too:
 * `NoteService`'s gate).
 */
const ONCE_A_BATCH = new Set(['venue.notes', 'venue.noteEdits']);

/**
 * checkBatch: a batch calls each procedure its decoded path lists, split on `,` (so `%2C`
 * separates too): at most `maxBatch` of them, each of `ONCE_A_BATCH` once at most, and all
 * queries or all mutations (procedures unknown to the router are left to tRPC's 404).
 */
function checkBatch(call: TrpcRequest, maxBatch: number, typeOf: (path: string) => string | undefined): void {
  if (!isBatch(call)) return;
  const paths = call.path.split(',');
  if (paths.length > maxBatch) throw new AppError('BadRequestError', `A batch may hold at most ${maxBatch} calls`);
  const twice = paths.find((path, i) => ONCE_A_BATCH.has(path) && paths.indexOf(path) !== i);
  if (twice) throw new AppError('BadRequestError', `A batch may call ${twice} once at most`);
  const types = new Set(paths.map(typeOf).filter((type) => type !== undefined));
  if (types.size > 1) throw new AppError('BadRequestError', 'A batch holds queries or mutations, not both');
}

/** checkConnectionParams: a JSON call's `?connectionParams=`, when sent, is JSON: null, or an object of strings. */
function checkConnectionParams(call: TrpcRequest): void {
  const sent = call.url.searchParams.get('connectionParams');
  if (call.kind !== 'json' || sent === null) return;
  let params: unknown;
  try {
    params = JSON.parse(sent);
  } catch {
    params = undefined;
  }
  const valid = params === null || (typeof params === 'object' && !Array.isArray(params) && Object.values(params).every((value) => typeof value === 'string'));
  if (!valid) throw new AppError('BadRequestError', 'connectionParams must be a JSON object of strings');
}

/**
 * The middleware before tRPC's: the checks above, in order; the first that fails answers. A
 * procedure's type comes from `router`'s flat list of procedures (no router of ours is lazy).
 */
export function trpcGuard(maxBatch: number, router: AnyTRPCRouter) {
  const procedures = router._def.procedures as Record<string, AnyTRPCProcedure | undefined>;
  const typeOf = (path: string) => (Object.hasOwn(procedures, path) ? procedures[path]?._def.type : undefined);
  return (req: Request, _res: Response, next: NextFunction): void => {
    try {
      checkMethod(req);
      const url = checkUrl(req);
      const path = checkPath(req);
      const kind = checkInputKind(req);
      checkQueryInput(req);
      const call = { req, url, path, kind };
      checkBatch(call, maxBatch, typeOf);
      checkStreamed(call);
      checkConnectionParams(call);
    } catch (error) {
      next(error);
      return;
    }
    next();
  };
}
