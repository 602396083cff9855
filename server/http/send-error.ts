import type { NextFunction, Request, Response } from 'express';
import { AppError } from '../../shared/errors.ts';
import { toAppError } from '../errors.ts';
import { requestError } from './body.ts';

/** Whether the request has a body that has not been read (all of it) yet. */
export function bodyUnread(req: Request): boolean {
  const hasBody = req.headers['transfer-encoding'] !== undefined || Number(req.headers['content-length']) > 0;
  return hasBody && !req.complete;
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
