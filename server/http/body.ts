import express, { type NextFunction, type Request, type Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import { requestError, sendError, sendsBody } from './send-error.ts';

/** The largest JSON body (uploads stream theirs, see `files.ts`). */
export const JSON_BODY_LIMIT = '1mb';
/** The largest byte count of `JSON_BODY_LIMIT`, for parsers that take a number (tRPC's own). */
export const JSON_BODY_BYTES = 1024 * 1024;
/**
 * How deeply arrays and objects may nest in a JSON input. Every input of the API nests a few
 * levels (a note's content: 4); a body nested thousands deep parses fine but then overflows
 * the stack of whatever walks it recursively (`JSON.stringify`, a schema, a logger), which
 * was a 500 that was not even logged.
 */
export const MAX_JSON_DEPTH = 64;

/**
 * Whether the JSON text `bytes` nests arrays and objects deeper than `max`: one pass over the
 * bytes, no recursion, so it is safe whatever the input. Brackets inside strings do not count.
 */
export function nestsDeeperThan(bytes: Uint8Array | string, max: number): boolean {
  if (bytes.length <= max) return false;
  const at = typeof bytes === 'string' ? (i: number) => bytes.charCodeAt(i) : (i: number) => bytes[i] as number;
  let depth = 0;
  let inString = false;
  for (let i = 0; i < bytes.length; i++) {
    const c = at(i);
    if (inString) {
      if (c === 0x5c /* \ */) i++;
      else if (c === 0x22 /* " */) inString = false;
    } else if (c === 0x22) {
      inString = true;
    } else if (c === 0x5b /* [ */ || c === 0x7b /* { */) {
      if (++depth > max) return true;
    } else if (c === 0x5d /* ] */ || c === 0x7d /* } */) {
      depth--;
    }
  }
  return false;
}

/** The error a body parser's `verify` throws for a body nested too deeply: `sendError` names it. */
function tooDeep(): Error {
  return Object.assign(new Error('The JSON body is nested too deeply'), { type: 'entity.too.deep' });
}

/**
 * The JSON body parser of the routes whose body is `json` (the route table's default). A body
 * is refused before it is parsed if it nests deeper than `MAX_JSON_DEPTH`.
 */
export function jsonBody() {
  return withLengthCheck(
    'application/json',
    JSON_BODY_BYTES,
    express.json({
      limit: JSON_BODY_LIMIT,
      verify: (_req, _res, buffer) => {
        if (nestsDeeperThan(buffer, MAX_JSON_DEPTH)) throw tooDeep();
      },
    }),
  );
}

/** Why a form could not be read (too many parameters, too large, not decodable), never the parser's own words. */
export function formError(error: unknown): AppError {
  return requestError(error) ?? new AppError('BadRequestError', 'The form could not be read');
}

/** How long a request other than an upload may take to send its body. */
export const BODY_DEADLINE_MS = 60_000;

/**
 * The server lets a request take an hour to arrive (`requestTimeout` in main.ts), for slow
 * uploads; every route with a body deadline (all but uploads) must have its body in within
 * `ms`, or gets a 408 and is closed.
 */
export function bodyDeadline(ms: number) {
  return (req: Request, res: Response, next: () => void) => {
    // A request without a body (most GETs) has nothing to wait for: no timer, no listeners.
    if (sendsBody(req) === false || req.complete) return next();
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
 * A body parser that first refuses, at once, a body of its type announcing more than `limit`
 * bytes. The parser would refuse it too, but only after reading and throwing away the whole
 * body (a gigabyte, or until the body deadline): the 413 would come late or never.
 */
export function withLengthCheck(type: string, limit: number, parse: (req: Request, res: Response, next: NextFunction) => void) {
  return (req: Request, res: Response, next: NextFunction) => {
    const length = Number(req.headers['content-length']);
    if (length > limit && req.is(type)) {
      next(AppError.tooLarge('The request body is too large'));
      return;
    }
    parse(req, res, next);
  };
}
