import type { IncomingMessage } from 'node:http';
import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import { toAppError } from '../errors.ts';

/**
 * Whether a request sends a body: `false` for none (no Transfer-Encoding, a Content-Length of 0
 * or none), `true` for a Content-Length over 0, `'chunked'` for a body in chunks, whose length
 * nobody knows before it ends (it may even be empty). The one reading of these two headers.
 */
export function sendsBody(req: IncomingMessage): boolean | 'chunked' {
  if (req.headers['transfer-encoding'] !== undefined) return 'chunked';
  return Number(req.headers['content-length']) > 0;
}

/** Whether the request has a body that has not been read (all of it) yet. */
export function bodyUnread(req: Request): boolean {
  return sendsBody(req) !== false && !req.complete;
}

/** Sends any error as the spec's Error body. */
export function sendError(res: Response, error: unknown, input?: unknown): void {
  const app = requestError(error) ?? toAppError(error, input, res.req.log);
  if (res.headersSent) {
    res.destroy();
    return;
  }
  // Answered before the body was read: the connection is closed after the answer, so the
  // client stops sending and the server never reads the rest.
  if (bodyUnread(res.req)) res.setHeader('Connection', 'close');
  // A client told how long to wait (the Python client honours it) need not guess with backoff.
  const retryAfter = app.details?.retryAfter;
  if (typeof retryAfter === 'number') res.setHeader('Retry-After', String(retryAfter));
  res.status(app.status).json(app.toBody(String(res.req.id)));
}

/** The last middleware: whatever reached Express's error path leaves as an Error body. */
export function errorHandler(error: unknown, req: Request, res: Response, _next: NextFunction): void {
  sendError(res, error, req.body);
}

/** No route matched: a 404 Error body, never an HTML page. */
export function notFound(req: Request, res: Response): void {
  sendError(res, new AppError('NotFoundError', `Route not found: ${req.method} ${req.path}`));
}

/**
 * The AppError for an error a body parser (express.json, express.urlencoded, and the
 * decompression under them) or the router raised about the request itself, or null for any
 * other error. Their `type` (or, for a body that does not decompress, their 4xx status) says
 * what failed, never their message, which may quote the request: their message is not shown.
 */
export function requestError(error: unknown): AppError | null {
  if (error === null || typeof error !== 'object') return null;
  const { type, status, expose } = error as { type?: unknown; status?: unknown; expose?: unknown };
  switch (type) {
    case 'entity.parse.failed':
      return new AppError('BadRequestError', 'Malformed JSON body');
    case 'entity.too.deep':
      return new AppError('BadRequestError', 'The JSON body is nested too deeply');
    case 'entity.too.large':
      return AppError.tooLarge('The request body is too large');
    case 'parameters.too.many':
      return AppError.tooLarge('The form has too many parameters');
    case 'encoding.unsupported':
    case 'charset.unsupported':
      return new AppError('BadRequestError', 'Unsupported body encoding');
    case 'request.aborted':
      return new AppError('BadRequestError', 'The request was aborted');
    case 'request.size.invalid':
      return new AppError('BadRequestError', 'The body is not as long as its Content-Length says');
    default:
      break;
  }
  // The router could not percent-decode a path parameter (`/pdf/%zz`).
  if (error instanceof URIError && status === 400) return new AppError('BadRequestError', 'Malformed percent-encoding in the path');
  // Anything else a body parser marks as the client's (a body that does not decompress, a stream
  // already read): http-errors' `expose` with a 4xx status.
  if (expose === true && typeof status === 'number' && status >= 400 && status < 500) {
    return status === 413 ? AppError.tooLarge('The request body is too large') : new AppError('BadRequestError', 'The request could not be read as sent');
  }
  return null;
}
